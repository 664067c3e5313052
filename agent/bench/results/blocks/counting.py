"""The ``counting`` and ``counting_strict`` blocks: every run's verdict and the counts over the graded runs."""

from __future__ import annotations

from typing import Any, Literal

from ..base import Frozen, Interval
from .chat import Distribution


class CountingRun(Frozen):
    """One run's verdict, with the ``seq`` of its record."""

    run: int
    seq: int | None
    verdict: Literal["correct", "wrong", "unreadable", "failed"]
    correct: bool
    quoted: int | None
    reading: str
    right_filter: bool | None
    first_call_right: bool | None
    last_filter: str | None
    filters: list[str]
    distinct_filters: int
    tool_calls: int
    invalid_tool_calls: int
    text_tool_calls: int
    failure: str | None
    error: str | None
    seconds: float | None
    answer: str
    output_tokens: int | None


class ToolCallVerdict(Frozen):
    """One tool call as the model made it, with the grader's verdict."""

    name: str
    """Tool name the model called."""
    input: Any
    """Arguments exactly as the model sent them."""
    valid: bool
    """Whether the call is well-formed for its tool."""
    reason: str
    """Why it is invalid (empty when valid)."""
    filter: str | None
    """``id <op> <value>`` for a valid ``count_ids`` call, else None."""
    selects_truth: bool | None
    """Whether a valid ``count_ids`` call selects exactly the true ids."""


class InvalidCall(ToolCallVerdict):
    """An invalid call, with the run it was made in."""

    run: int


class TextCall(Frozen):
    """A tool call written as text instead of being made."""

    run: int
    snippet: str


class CountingSummary(Frozen):
    question: str
    ids: list[int]
    truth: int
    truth_filter: str
    tools: Literal["engine", "rows"]
    constrained: bool
    runs: int
    errors: int
    graded: int
    correct: int
    wrong: int
    unreadable: int
    correct_ci95: Interval | None
    right_filter: int | None
    right_filter_ci95: Interval | None
    first_call_right: int | None
    several_filters: int
    tool_calls: int
    invalid_tool_calls: int
    text_tool_calls: int
    text_calls_describing_made_calls: int
    answer_status: dict[str, int]
    failure_reasons: dict[str, int]
    filters_sent: dict[str, int]
    invalid_calls: list[InvalidCall]
    text_calls: list[TextCall]
    seconds: Distribution
    detail: list[CountingRun]
