"""The context a server must hold for the workload: the tokens of its longest request, prompt and output together.

Over the same sample the fit check states its share over (:func:`.plan.fit_of`: :data:`.plan.FIT_SAMPLE` synthetic
requests, every request of a prompts file or trace), a session counted by each turn (its last turn is its longest:
the conversation so far, the new turn and the reply asked), so that a server whose limit on prompt and output together
is :func:`workload_context_tokens` takes every one of them. ``python -m agent.run --parsed-options`` prints it, and
``python -m rigs rehearse --workload FILE`` serves the vLLM rigs at :func:`server_context_tokens`
(``-c max_model_len.<rig>=N``): a shorter context can fit a model on a smaller size, a longer one turns away none of
the workload's requests.

The reference's one fixed prompt (``preset=reference``) has no context of its own here (None): the rigs keep the
context the catalog serves them at, which is what the reference measured.
"""

from __future__ import annotations

import math
from typing import Iterable

from .plan import TrafficPlan, Shape, turn_lengths

CONTEXT_STEP_TOKENS = 256
"""The context is rounded up to a multiple of this: a readable figure (vLLM allocates KV in blocks of 16 tokens) and a
margin for a prompts file's prompts, whose lengths are estimated at one token per unit of their text."""
AGENT_PARTS = frozenset({"counting", "orchestrator", "bfcl"})
"""The parts that send prompts of their own beside the workload's: an agent's tool schemas and transcript, BFCL's
function documents (the quality lane's items are under 128 prompt and 32 output tokens, within any context here)."""
AGENT_PARTS_CONTEXT_TOKENS = 4096
"""The fewest tokens a server is asked to hold when one of :data:`AGENT_PARTS` runs: room for their prompts and
their 512-token replies (an allowance, not a measurement)."""


def longest_request_tokens(plan: TrafficPlan) -> int:
    """The most prompt and output tokens any turn of the plan's sample asks for together."""
    return max(prompt + output for i in range(plan.sample_size) for prompt, output in turn_lengths(plan.request(i)))


def workload_context_tokens(shape: Shape) -> int | None:
    """:func:`longest_request_tokens` rounded up to a multiple of :data:`CONTEXT_STEP_TOKENS`; None for the
    reference's one prompt."""
    if shape.reference:
        return None
    return math.ceil(longest_request_tokens(TrafficPlan(shape)) / CONTEXT_STEP_TOKENS) * CONTEXT_STEP_TOKENS


def server_context_tokens(shape: Shape, parts: Iterable[str]) -> int | None:
    """What a server benchmarked with these parts should hold: the workload's context, at least
    :data:`AGENT_PARTS_CONTEXT_TOKENS` when an agent part runs; None for the reference's one prompt."""
    tokens = workload_context_tokens(shape)
    if tokens is None:
        return None
    return max(tokens, AGENT_PARTS_CONTEXT_TOKENS) if AGENT_PARTS & set(parts) else tokens
