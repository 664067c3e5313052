"""A Markdown table, as every section of REPORT.md and the comparison writes it."""

from __future__ import annotations

from typing import Any, Sequence


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    """The table's lines; a cell's ``|`` becomes ``/`` and its line breaks spaces, so a row stays one row."""
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c).replace("|", "/").replace("\n", " ") for c in row) + " |" for row in rows]
    return out
