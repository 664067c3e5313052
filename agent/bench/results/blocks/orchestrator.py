"""The ``orchestrator`` block: the checks on the orchestrator's answer, recomputed from its record."""

from __future__ import annotations

from typing import Literal

from ..base import Frozen, Sparse
from ..records import AskResult

Quote = Literal["exact", "retyped", "altered", "absent"]


class OrchestratorSummary(Sparse, Frozen):
    """``ran`` False with a ``reason`` when there is no orchestrator record; ``seq`` and ``seconds``
    are written only when it ran."""

    ran: bool
    backend: str | None
    constrained: bool
    asked: list[str]
    not_asked: list[str]
    winner_claimed: str | None
    winner_text: Literal["named", "none", "unclear"]
    winner_measured: str | None
    submitted: bool
    submitted_via: Literal["run", "follow-up"] | None
    winner_submitted: str | None
    winner_submitted_raw: str | None
    winner_verdict: Literal["right", "wrong", "unclear", "not submitted", "no successful ask", "failed", "not run"]
    wrong_winner: bool
    submitted_table_quote: Quote
    text_disagrees: bool
    table_matches: bool
    table_quote: Quote
    scoreboard_called: bool
    scoreboard: str | None
    reply: str | None
    asks: list[AskResult]
    error: str | None
    failure: str | None
    follow_up_error: str | None
    follow_up_reply: str | None
    reason: str | None
    seq: int | None = None
    seconds: float | None = None
