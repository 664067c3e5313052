"""Import rules between packages (docs/ARCHITECTURE.md): agent/ and rigs/ never import aws_cdk."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import PROJECT_DIR

FORBIDDEN = {
    "agent": ("aws_cdk", "cdk_nag", "constructs", "stacks", "app"),
    "rigs": ("aws_cdk", "cdk_nag", "constructs", "stacks", "app", "agent"),
}


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_does_not_import_forbidden_modules(package):
    files = sorted((PROJECT_DIR / package).rglob("*.py"))
    assert files, f"{package}/ has no Python files"
    offenders = {str(f.relative_to(PROJECT_DIR)): sorted(imported_modules(f) & set(FORBIDDEN[package]))
                 for f in files}
    assert {k: v for k, v in offenders.items() if v} == {}
