"""No function longer than 80 lines and no class longer than 250 (docs/ARCHITECTURE.md): a longer one does several
things, split it (the function rule alone moved bulk into classes that nothing counted)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import PROJECT_DIR, parse_file

MAX_LINES = 80
"""From a function's ``def`` line to its last line (decorators left out; docstring and comments count)."""
MAX_CLASS_LINES = 250
"""From a class's ``class`` line to its last line, counted the same way."""
CHECKED = ("rigs", "stacks", "agent")
"""The folders held to the limit: one more folder is one more name here."""


def long_functions(path: Path, root: Path = PROJECT_DIR, kinds: tuple[type, ...] = (ast.FunctionDef, ast.AsyncFunctionDef),
                   limit: int = MAX_LINES) -> list[str]:
    """``file:line name (N lines)`` for each function or method (or each of ``kinds``) in ``path`` over ``limit``."""
    tree = parse_file(path)
    return [f"{path.relative_to(root)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
            for node in ast.walk(tree) if isinstance(node, kinds) and node.end_lineno - node.lineno + 1 > limit]


@pytest.mark.parametrize("folder", CHECKED)
def test_no_function_is_longer_than_80_lines(folder: str) -> None:
    files = sorted((PROJECT_DIR / folder).rglob("*.py"))
    assert files, f"{folder}/ has no Python files"
    assert [hit for path in files for hit in long_functions(path)] == []


def test_a_method_one_line_over_is_found(tmp_path: Path) -> None:
    body = "\n".join(f"        x{n} = {n}" for n in range(MAX_LINES))  # def + 80 lines: 81
    path = tmp_path / "long.py"
    path.write_text(f"class A:\n    def short(self):\n        return 1\n\n    async def long(self):\n{body}\n")
    assert long_functions(path, tmp_path) == ["long.py:5 long (81 lines)"]


@pytest.mark.parametrize("folder", CHECKED)
def test_no_class_is_longer_than_250_lines(folder: str) -> None:
    files = sorted((PROJECT_DIR / folder).rglob("*.py"))
    assert [hit for path in files for hit in long_functions(path, kinds=(ast.ClassDef,), limit=MAX_CLASS_LINES)] == []


def test_a_class_one_line_over_is_found(tmp_path: Path) -> None:
    body = "\n".join(f"    x{n} = {n}" for n in range(MAX_CLASS_LINES))  # class + 250 lines: 251
    path = tmp_path / "big.py"
    path.write_text(f"class Small:\n    x = 1\n\n\nclass Big:\n{body}\n")
    assert long_functions(path, tmp_path, (ast.ClassDef,), MAX_CLASS_LINES) == ["big.py:5 Big (251 lines)"]
