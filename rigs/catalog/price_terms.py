"""The names prices are told by: where a price came from, Bedrock's service tiers, the price file's units, the
Pricing API's locations and the id a Bedrock model is priced by (no model here, so a command can offer the tiers
before any file is loaded, and the rigs' kinds can name a Bedrock model's id)."""

from __future__ import annotations

PRICING_API = "pricing-api"
OFFLINE_FILE = "offline-file"

STANDARD_TIER = "standard"
SERVICE_TIERS = (STANDARD_TIER, "flex", "priority")
"""Bedrock's on-demand service tiers, as the price file and ``--bedrock-tier`` name them; Standard is what a
request without a ``serviceTier`` gets (the API calls it ``default``)."""
PRICED_TIERS = (STANDARD_TIER,)
"""The tiers the shipped ``rigs/prices.yaml`` prices the catalog's Bedrock model in: those ``--bedrock-tier``
offers (a test keeps this in step with the file). AWS publishes Flex as a discount on and Priority as a premium
over the Standard rate, with no per-model figure known to this project: a tier comes with a dated entry that
cites its price's public source."""

LOCATIONS = {
    "us-east-1": "US East (N. Virginia)",
    "us-east-2": "US East (Ohio)",
    "us-west-1": "US West (N. California)",
    "us-west-2": "US West (Oregon)",
}

UNITS = ("GB-month", "hour", "secret-month")
HOURS_PER_MONTH = 730.0


def base_model_id(model_id: str) -> str:
    """``us.amazon.nova-micro-v1:0`` -> ``amazon.nova-micro-v1:0`` (strip a cross-region profile prefix)."""
    head, _, rest = model_id.partition(".")
    return rest if head in {"us", "eu", "apac", "jp", "au", "ca", "global", "us-gov"} and rest else model_id
