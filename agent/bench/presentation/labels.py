"""How a backend is named wherever the report shows it: its name, with what a reader must know beside it."""

from __future__ import annotations

from ..results.constants import INTERRUPT_SKIPS
from ..results.summary import Summary


def backend_label(summary: Summary, name: str) -> str:
    """``local (constrained, CPU toy model)``: the name and its tags."""
    b = summary.backends.get(name)
    tags = b.tags() if b else []
    return f"{name} ({', '.join(tags)})" if tags else name


def not_run(summary: Summary, part: str, otherwise: str) -> str:
    """What a section with nothing to show says: ``Not run (interrupted).`` when the interrupt is why (the run
    was interrupted and no backend skipped ``part`` for another reason), else ``otherwise``."""
    reasons = [why for b in summary.backends.values() if (why := b.skipped.get(part))]
    interrupted = summary.run.interrupted and all(why in INTERRUPT_SKIPS for why in reasons)
    return "Not run (interrupted)." if interrupted else otherwise
