"""How a backend is named wherever the report shows it: its name, with what a reader must know beside it."""

from __future__ import annotations

from ..results.summary import Summary


def backend_label(summary: Summary, name: str) -> str:
    """``local (constrained, CPU toy model)``: the name and its tags."""
    b = summary.backends.get(name)
    tags = b.tags() if b else []
    return f"{name} ({', '.join(tags)})" if tags else name
