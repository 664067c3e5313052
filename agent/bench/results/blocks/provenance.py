"""What served each backend: the facts read at run time (``run.json`` ``backends[].provenance``) and the
summary's ``provenance`` block, each fact beside the catalog's expectation with its verdict.

A fact is read from the server over the way the benchmark reached it (vLLM's ``/version``, llama.cpp's
``/props``, ``/v1/models``), from EC2, SageMaker and Bedrock's APIs, or from the rig's own boot report;
one that could not be read is kept with the reason (``not_reported``), never a failure of the run.
"""

from __future__ import annotations

from typing import Literal

from ..base import Frozen, Sparse

FACTS: dict[str, str] = {
    "engine": "engine",
    "engine_version": "engine version",
    "model": "model",
    "context_tokens": "context length (tokens)",
    "instance_type": "instance type",
    "availability_zone": "zone",
    "ami_id": "AMI",
    "accelerator": "accelerator",
    "driver": "accelerator driver",
    "image_digest": "image digest",
    "service_tier": "service tier",
    "route": "route (Bedrock's OpenAI-compatible endpoint)",
    "kv_cache_tokens": "KV cache (tokens)",
    "max_concurrency": "sequences of the context at once",
    "compile_seconds": "Neuron compile at boot (s)",
    "first_answer_seconds": "server start to first answer (s)",
    "region": "region",
}
"""Every fact, in the order the report lists them, with the words it uses for each."""


class Reading(Sparse, Frozen):
    """One fact: its value and where it came from, or why it was not reported."""

    value: str | int | None = None
    source: str | None = None
    not_reported: str | None = None


class Provenance(Sparse, Frozen):
    """A backend's provenance as ``run.json`` records it: what was read, and what the catalog expects."""

    read_at: str | None = None
    read: dict[str, Reading] = {}
    expected: dict[str, Reading] = {}


Verdict = Literal["match", "mismatch", "not reported", "read"]
"""``read``: read, with nothing in the catalog to compare it with."""


class FactCheck(Frozen):
    fact: str
    read: str | None
    read_source: str | None
    not_reported: str | None
    expected: str | None
    expected_source: str | None
    verdict: Verdict


class ProvenanceBlock(Frozen):
    """The facts in :data:`FACTS` order, and one sentence per mismatch."""

    read_at: str | None
    facts: list[FactCheck]
    mismatches: list[str]
