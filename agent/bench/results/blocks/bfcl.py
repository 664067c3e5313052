"""The ``bfcl`` block (tool-calling accuracy on BFCL's cases) and the ``bfcl_pairs`` comparisons."""

from __future__ import annotations

from typing import Any, Literal

from ..base import Frozen
from .chat import Distribution


class Rate(Frozen):
    """Right answers over answered cases, with the 95% Wilson interval."""

    cases: int
    correct: int
    accuracy: float | None
    ci95_low: float | None
    ci95_high: float | None


class CategoryRate(Rate):
    errors: int


class BfclCase(Frozen):
    """One case's outcome, with the ``seq`` of its record."""

    seq: int | None
    case: str
    category: str
    outcome: Literal["correct", "wrong_call", "missed_call", "spurious_call", "error", "not_offered"]
    correct: bool | None
    reason: str | None
    text_call: str | None
    calls: list[dict[str, Any]] | None


class BfclSummary(Rate):
    text_calls: int
    missed_calls: int
    spurious_calls: int
    errors: int
    requests: int
    relevant_cases: int
    irrelevance_cases: int
    outcomes: dict[str, int]
    error_reasons: dict[str, int]
    by_category: dict[str, CategoryRate]
    not_offered: dict[str, int] = {}
    """Cases per category not sent because they need what the backend's endpoint does not offer for its model
    (parallel tool calls): left out of every accuracy and every pair, never counted as failures."""
    not_offered_why: list[str] = []
    """What was not offered, and where that is stated."""
    interface: str | None
    constrained: bool
    streamed: bool
    seed: int | None
    output_tokens: Distribution
    prompt_tokens: Distribution
    seconds: Distribution
    detail: list[BfclCase]


class BfclPair(Frozen):
    """McNemar's exact test between two backends on the cases both answered."""

    a: str
    b: str
    cases: int
    only_a: int
    only_b: int
    p_value: float
    verdict: str
    same_verdict: int
    same_calls: int
    differing_cases: list[str]
