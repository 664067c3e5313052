"""Bedrock's OpenAI-compatible endpoint (``bedrock-mantle``): Chat Completions at
``https://bedrock-mantle.<region>.api.aws/v1``, each request signed with SigV4 or carrying a Bedrock API key, taking
the OpenAI SDK's Bedrock-provider variables (``AWS_BEDROCK_BASE_URL``, ``AWS_BEARER_TOKEN_BEDROCK``) and
``BEDROCK_MANTLE_MODEL``. It serves the model the rigs serve, by the id the catalog's models section gives it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from rigs import aws
from rigs.catalog.price_terms import STANDARD_TIER

from ..bench.results.constants import WEIGHTS_METADATA_PREFIX
from .backend import MANTLE, Backend, normalize_base_url
from .expected import catalog_expectation, catalog_metadata

if TYPE_CHECKING:
    from rigs.catalog.model import Catalog
    from rigs.catalog.served import ModelCard


def bedrock_card(catalog: Catalog, model: str) -> ModelCard | None:
    """The models section's entry for ``model`` (a ``weights.model``: ``Gemma 4 E2B``) that names what Bedrock serves
    it as (its ``bedrock_id``, else its ``bedrock_note``), or None where the section says nothing of Bedrock."""
    cards = [card for card in catalog.models.values() if card.name == model]
    return next((c for c in cards if c.bedrock_id), None) or next((c for c in cards if c.bedrock_note), None)


def bedrock_id(catalog: Catalog, model: str) -> str | None:
    """The id Bedrock's OpenAI-compatible endpoint serves ``model`` under, as the catalog's models section names it;
    None where Bedrock does not serve it."""
    card = bedrock_card(catalog, model)
    return card.bedrock_id if card is not None else None



@dataclass(frozen=True, slots=True)
class MantleSettings:
    """How Bedrock's OpenAI-compatible endpoint is reached, as the environment says.

    Attributes:
        model_id: ``BEDROCK_MANTLE_MODEL``, else the catalog entry's (the rigs' model).
        model_given: ``BEDROCK_MANTLE_MODEL`` named it (the plan then does not follow the model the rigs serve).
        region: ``--region``, else the region of an ``AWS_BEDROCK_BASE_URL`` naming a regional endpoint, else
            ``BEDROCK_REGION``, else the catalog's first.
        base_url: ``AWS_BEDROCK_BASE_URL`` (``.../v1``), else the region's endpoint.
        base_url_given: ``AWS_BEDROCK_BASE_URL`` named it: then no other AWS endpoint is called for it.
        auth_mode: :data:`rigs.aws.BEARER` with ``AWS_BEARER_TOKEN_BEDROCK``, else :data:`rigs.aws.SIGNED`.
    """

    model_id: str
    model_given: bool
    region: str
    base_url: str
    base_url_given: bool
    auth_mode: str

    @classmethod
    def from_env(cls, get: Callable[[str], str | None], catalog: Catalog, region: str | None) -> MantleSettings:
        """Raises ValueError: ``AWS_BEDROCK_BASE_URL`` is not an http(s) URL."""
        rig = catalog.get(MANTLE)
        given = get(aws.MANTLE_BASE_URL_VAR)
        base_url = normalize_base_url(given) if given else None
        region = region or (base_url and aws.mantle_region(base_url)) or get("BEDROCK_REGION") or rig.regions[0]
        model = get("BEDROCK_MANTLE_MODEL")
        return cls(model_id=model or rig.model_id, model_given=model is not None, region=region,
                   base_url=base_url or aws.mantle_url(region), base_url_given=base_url is not None,
                   auth_mode=aws.BEARER if get(aws.MANTLE_TOKEN_VAR) else aws.SIGNED)

    def describe_auth(self) -> str:
        if self.auth_mode == aws.BEARER:
            return f"a Bedrock API key ({aws.MANTLE_TOKEN_VAR}) as a bearer token"
        return f"SigV4 ({aws.MANTLE_SERVICE}, {self.region}) from the AWS credential chain"


def mantle_backend(catalog: Catalog, settings: MantleSettings, model: str | None = None) -> Backend:
    """Bedrock's OpenAI-compatible endpoint serving ``model`` (a ``weights.model``; None: the settings' model id).

    What it serves is the catalog entry's statement for its own model, and for another the same model family at a
    precision Bedrock does not publish (so the quality lane pairs it with the rigs as the same model)."""
    rig = catalog.get(MANTLE)
    model_id = (bedrock_id(catalog, model) if model else None) or settings.model_id
    meta = catalog_metadata(rig, settings.region, model_id)
    if model and model_id != rig.model_id:
        meta.update({f"{WEIGHTS_METADATA_PREFIX}model": model, f"{WEIGHTS_METADATA_PREFIX}precision": "not published",
                     f"{WEIGHTS_METADATA_PREFIX}engine": rig.weights.engine})
    meta.update({"region": settings.region, "service_tier": STANDARD_TIER, "auth_mode": settings.auth_mode,
                 "reached_via": f"Bedrock's OpenAI-compatible endpoint {settings.base_url} (Chat Completions), "
                                f"{settings.describe_auth()}"})
    if settings.base_url_given:
        meta["endpoint_variable"] = aws.MANTLE_BASE_URL_VAR
        meta["note"] = (f"{MANTLE}: {aws.MANTLE_BASE_URL_VAR}={settings.base_url} replaces Bedrock's endpoint; no "
                        "other AWS endpoint is called for it, so its price is the dated offline file's "
                        "(rigs/prices.yaml)")
    return Backend(name=MANTLE, label=rig.label, kind=rig.backend_kind, model_id=model_id, tool_calls=rig.tool_calls,
                   base_url=settings.base_url, region=settings.region, metadata=meta,
                   provenance={"expected": catalog_expectation(rig, model_id, settings.region)})
