"""Import rules between packages (docs/ARCHITECTURE.md): agent/ and rigs/ never import aws_cdk; rigs/ has no import cycle."""

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


ACYCLIC = ("rigs",)
"""Packages whose import graph has no cycle, imports made only for type checking and inside functions included."""


def import_graph(package: str, root: Path = PROJECT_DIR) -> dict[str, set[str]]:
    """Module -> the modules of ``package`` it imports (and their packages, whose ``__init__`` runs first)."""
    modules = {}
    for path in (root / package).rglob("*.py"):
        parts = path.relative_to(root).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph = {}
    for name, path in modules.items():
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = here.split(".")
                    base = ".".join(parts[:len(parts) - node.level + 1] + ([node.module] if node.module else []))
                targets.update([base, *(f"{base}.{alias.name}" for alias in node.names)])
        own_packages = {".".join(name.split(".")[:n]) for n in range(1, name.count(".") + 1)}
        edges = set()
        for target in targets:
            while target:
                if target in modules and target != name and target not in own_packages:
                    edges.add(target)
                target = target.rpartition(".")[0]
        graph[name] = edges
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle (``a, b, ..., a``), or [] when there is none."""
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(module: str) -> list[str]:
        state[module] = "open"
        path.append(module)
        for imported in sorted(graph.get(module, ())):
            if state.get(imported) == "open":
                return path[path.index(imported):] + [imported]
            if imported not in state and (cycle := visit(imported)):
                return cycle
        state[module] = "done"
        path.pop()
        return []

    for module in sorted(graph):
        if module not in state and (cycle := visit(module)):
            return cycle
    return []


@pytest.mark.parametrize("package", ACYCLIC)
def test_import_graph_has_no_cycle(package):
    graph = import_graph(package)
    assert len(graph) > 1 and any(graph.values()), f"{package}/: no imports found"
    assert find_cycle(graph) == []


def test_a_cycle_through_a_type_only_import_is_found(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "a.py").write_text("from .sub.b import B\n")
    (package / "sub" / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                          "    from .. import a\n")
    (package / "c.py").write_text("def late():\n    from pkg import a\n")
    graph = import_graph("pkg", tmp_path)
    assert graph == {"pkg": set(), "pkg.sub": set(), "pkg.a": {"pkg.sub", "pkg.sub.b"}, "pkg.sub.b": {"pkg.a"},
                     "pkg.c": {"pkg.a"}}
    assert find_cycle(graph) == ["pkg.a", "pkg.sub.b", "pkg.a"]
