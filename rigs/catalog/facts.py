"""What a rig is expected to serve is told in facts (:func:`fact`), each with where it comes from; a rig's kind
states them (:meth:`rigs.catalog.kinds.base.RigBase.expected`) for the rig as it is reached now
(:class:`Deployment`). Standard library only: the agent's commands print their options without loading the
catalog's models."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

Predictor = Callable[[str, str, int], dict[str, Any]]
"""What ``python -m rigs fit`` predicts for a model id on an instance type at a context in tokens, as facts
(:func:`rigs.sizing.fit.expected_cache`): passed in, since the catalog sits below the sizing."""


def fact(value: str | int | None, source: str) -> dict[str, Any]:
    """One provenance fact (a value of None: nothing to expect, and why)."""
    return {"value": value, "source": source}


@dataclass(frozen=True, slots=True)
class Deployment:
    """What is known of a rig as it is reached now, beyond the catalog: what its expectation depends on.

    Attributes:
        region: the region it is reached in (fills a regional image's registry, picks its pin).
        image_digest: the digest its stack read at deploy time (its ``ImageDigest`` output), where the catalog
            pins none there.
        instance_type: its stack's ``InstanceType`` output (``-c model.<rig>`` may have moved it).
        context_tokens: its stack's ``ContextTokens`` output (the context it was served at).
        service_tier: the service tier it is called in, for a kind called in one (Bedrock's ``--bedrock-tier``);
            None for any other.
    """

    region: str | None = None
    image_digest: str | None = None
    instance_type: str | None = None
    context_tokens: int | None = None
    service_tier: str | None = None
