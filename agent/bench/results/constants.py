"""Names and defaults the stages share, kept free of pydantic so the command's ``--help`` stays fast."""

from __future__ import annotations

from typing import Any, Mapping

TARGET_KEYS = ("ttft_p99_ms", "itl_p99_ms", "e2e_p99_ms")
"""The limits a latency target may set (``--slo``)."""
LIMIT_LABELS = {"ttft_p99_ms": "TTFT", "itl_p99_ms": "ITL", "e2e_p99_ms": "e2e"}

NOT_RUN_INTERRUPTED = "not run (interrupted)"
"""A part's entry in ``run.json`` ``skipped`` for a backend when the run was interrupted before the part began there."""
CUT_OFF_INTERRUPTED = "cut off by the interrupt (what it recorded is kept)"
"""A part's entry in ``run.json`` ``skipped`` for a backend when the interrupt came while the part ran there."""
INTERRUPT_SKIPS = (NOT_RUN_INTERRUPTED, CUT_OFF_INTERRUPTED)

WORKLOAD_DEFAULTS: Mapping[str, Any] = {
    "output_tokens_per_month": 100_000_000,
    "peak_to_average": 3.0,
    "tool_calls": True,
    "arrival": "poisson",
    "burstiness": 1.0,
}
"""The user's traffic when ``--workload`` does not say; stated in every report that uses them. 100 M
output tokens a month is a small production service (38 tok/s on average); a busiest hour 3x the average
is daytime-heavy interactive traffic; tool calls are needed because the benchmark is about agents (say
``tool_calls=no`` for plain chat). The input tokens per output token have no default of their own: they
follow from the lengths the run sends (with no length given, the reference's prompt and 100 tokens:
0.2), so what is priced is what was measured. Requests arrive as a Poisson process in the open loop (``--rate``),
the default of AIPerf's ``--arrival-pattern`` and of vLLM's ``--burstiness`` (1.0)."""

MODEL_NAME_METADATA = "model_name"
"""A custom server's ``metadata`` key for the catalog's name of the model it serves (``Gemma 4 E2B``), where the
catalog knows the id: no weights are stated for a server the app did not deploy, but the model is still told apart
from another (:mod:`agent.bench.analysis.recommendation.models`)."""

NOT_OFFERED_PREFIX = "not_offered_"
"""A managed backend's ``metadata`` names each feature its endpoint does not offer for its model as
``not_offered_<feature>`` (``not_offered_parallel_tool_calls``), the value the public page that says so (the catalog's
``bedrock_endpoint``): the cases that need it are left out of its accuracy and said so, not counted as failures."""
PARALLEL_TOOL_CALLS = "parallel_tool_calls"

WEIGHTS_METADATA_PREFIX = "weights_"
"""A backend's ``metadata`` (``run.json`` ``backends``) carries what the catalog states it serves as
``weights_model``, ``weights_precision``, ``weights_bytes_per_weight``, ``weights_memory_gib``,
``weights_memory_basis``, ``weights_engine`` and ``weights_source`` (the fields of
:class:`agent.bench.results.blocks.quality.Weights`), all strings; absent when not on file."""

TUNNEL_BOUND_SHARE = 0.7
"""A level whose carried bytes reach this share of its port forwards' measured capacity is bound by the tunnel
(:mod:`agent.reach.tunnel`, :mod:`agent.bench.analysis.blocks.tunnel`)."""
