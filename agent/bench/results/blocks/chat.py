"""The ``chat`` block: time to first token, inter-token gaps, end to end, decode and client rates
at concurrency 1, the cold request, and the aggregate rate of every concurrency level."""

from __future__ import annotations

from ..base import Frozen, Interval, Sparse


class Distribution(Sparse, Frozen):
    """Nearest-rank percentiles of the non-null values (``docs/evidence.md``); ``values`` (rounded)
    is kept where a plot or a reader recomputes from it."""

    p50: float | None
    p90: float | None
    p99: float | None
    n: int
    min: float | None
    max: float | None
    mean: float | None
    values: list[float] | None = None
    mean_ci95: Interval | None = None
    """The mean's 95% Student t interval, its low end held at 0 (none of these figures is negative);
    null for fewer than two values. Written for TTFT, e2e and decode rate, which comparisons use."""


class ColdRequest(Frozen):
    """The backend's first request of the run (the untimed warm-up)."""

    ttft_ms: float | None
    e2e_ms: float | None
    output_tokens: int | None
    error: str | None


class ChatLevel(Frozen):
    """One concurrency level: counts of every request, rates from the successful ones."""

    concurrency: int
    requests: int
    ok: int
    errors: int
    resends: int
    usage_missing: int
    wall_s: float | None
    output_tokens: int
    output_tok_per_s: float | None
    requests_per_s: float | None


class TurnFigures(Frozen):
    """One turn of the multi-turn sessions: its requests, TTFT and prompt as the context grows."""

    turn: int
    requests: int
    ok: int
    ttft_p50_ms: float | None
    ttft_p99_ms: float | None
    prompt_tokens_mean: float | None
    cached_prompt_tokens_mean: float | None
    """Over the requests whose server reported cached tokens (null: none did)."""


class Sessions(Frozen):
    """Multi-turn sessions: TTFT per turn, the first turn against the last."""

    turns: list[TurnFigures]
    first_ttft_p50_ms: float | None
    last_ttft_p50_ms: float | None
    last_over_first: float | None
    """The last turn's TTFT p50 over the first's: how much the growing context costs before the first token."""


class PromptCache(Frozen):
    """Prompt tokens the server read from its prefix cache, over the requests whose server reported them."""

    requests: int
    """Successful chat requests whose reply said how many prompt tokens were cached."""
    cached_prompt_tokens: int
    prompt_tokens: int
    cached_share: float | None


class ReasoningTokens(Frozen):
    """Output tokens spent reasoning before the answer (billed as output, not in the text), over the successful
    requests whose server reported them (``usage.completion_tokens_details.reasoning_tokens``)."""

    requests: int
    output_tokens: int
    reasoning_tokens: int
    answer_tokens: int
    """``output_tokens`` - ``reasoning_tokens``: what the answers themselves took."""
    reasoning_share: float | None


class ChatSummary(Frozen):
    requests: int
    errors: int
    error_reasons: dict[str, int]
    resends: int
    new_connections: int
    streamed: bool
    ttft_ms: Distribution
    itl_ms: Distribution
    e2e_ms: Distribution
    decode_tok_per_s: Distribution
    decode_basis: dict[str, int]
    decode_comparable: bool
    client_tok_per_s: Distribution
    output_tokens: Distribution
    requested_tokens: int | list[int]
    returned_short: int
    usage_missing: int
    input_per_output: float | None
    cold: ColdRequest | None
    levels: list[ChatLevel]
    sessions: Sessions | None = None
    """Per-turn figures, when the requests were turns of sessions (``turn`` in the records)."""
    prompt_cache: PromptCache | None = None
    """Cached prompt tokens, when the server reported them (vLLM's ``cached_tokens``, Bedrock's cache reads)."""
    reasoning: ReasoningTokens | None = None
    """Reasoning tokens within the output tokens, when the server reported them."""
