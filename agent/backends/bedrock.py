"""Bedrock, called through its runtime API (``ConverseStream``) by inference profile id: always on when AWS
credentials are present, in one of Bedrock's service tiers (``--bedrock-tier``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rigs.catalog.price_terms import STANDARD_TIER

from .backend import Backend
from .expected import catalog_expectation, catalog_metadata

if TYPE_CHECKING:
    from rigs.catalog.model import Catalog


def bedrock_backend(catalog: Catalog, model_id: str, region: str, tier: str = STANDARD_TIER) -> Backend:
    """The Bedrock backend (always on when AWS credentials are present), called in service ``tier``."""
    rig = catalog.get("bedrock")
    return Backend(
        name="bedrock", label=rig.label, kind=rig.backend_kind, model_id=model_id,
        tool_calls=rig.tool_calls, region=region, **(rig.stated_limits() if model_id == rig.model_id else {}),
        metadata={**catalog_metadata(rig, region, model_id), "region": region, "service_tier": tier,
                  "reached_via": f"Bedrock runtime API in {region} (ConverseStream)"},
        provenance={"expected": catalog_expectation(rig, model_id, region, tier=tier)},
    )
