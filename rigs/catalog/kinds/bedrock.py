"""The Bedrock backends: a model Bedrock serves, nothing to deploy, both ways of calling it (Converse by inference
profile id, runtime ``bedrock``; the OpenAI-compatible endpoint by model id, runtime ``bedrock-mantle``).

They answer as managed models: billed per token (:meth:`BedrockBackend.price`), pinning nothing, their context the
model page's, expected to serve the model every request names."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import StrictInt

from rigs.catalog.facts import Deployment, Predictor, fact
from rigs.catalog.kinds.base import PriceLookup, RigBase
from rigs.catalog.price_terms import STANDARD_TIER, base_model_id


class BedrockBackend(RigBase):
    """A Bedrock model: nothing to deploy, called by inference profile id through Converse (runtime ``bedrock``), or
    by its model id through Bedrock's OpenAI-compatible endpoint (runtime ``bedrock-mantle``)."""

    kind: Literal["bedrock"]
    price_source: Literal["bedrock-on-demand"]
    runtime: Literal["bedrock", "bedrock-mantle"]
    context_tokens: StrictInt | None = None
    """The model's context window in tokens (prompt and output together), from its public model page: what a
    request of the user's workload must fit (docs/traffic.md, "Your traffic")."""

    priced_per_token: ClassVar[bool] = True

    def price(self, book: PriceLookup, region: str, tier: str = STANDARD_TIER) -> Any:
        """Per token: its model's input and output prices in ``region``, in service ``tier``."""
        return book.bedrock_token_prices(self.model_id, region, tier)

    def pinned_metadata(self, region: str | None) -> dict[str, str]:
        """Nothing: AWS serves it on hardware and software it does not pin."""
        return {}

    def stated_limits(self, deployed_context: int | None = None) -> dict[str, int | None]:
        """Its model's context window (no prompt limit of its own)."""
        return {"max_prompt_tokens": None, "max_total_tokens": self.context_tokens}

    def expected(self, model_id: str, at: Deployment, predict: Predictor | None = None) -> dict[str, Any]:
        """The model every request names, and the service tier it is called in (where it is called in one), else the
        region its requests are signed for."""
        out = {"model": fact(base_model_id(model_id), f"the model id every request names ({model_id})")}
        if at.service_tier is not None:
            out["service_tier"] = fact(at.service_tier, "--bedrock-tier" if at.service_tier != STANDARD_TIER else
                                       "no --bedrock-tier: Bedrock's Standard tier")
        else:
            out["region"] = fact(at.region, "the region its requests are signed for")
        return out
