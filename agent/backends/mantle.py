"""Bedrock's OpenAI-compatible endpoint (``bedrock-mantle``): Chat Completions at
``https://bedrock-mantle.<region>.api.aws`` under the route the catalog names for the model (``/v1`` or
``/openai/v1``: "the path prefix varies by model", docs.aws.amazon.com bedrock/latest/userguide/
inference-responses-api.html), each request signed with SigV4 or carrying a Bedrock API key, taking the OpenAI SDK's
Bedrock-provider variables (``AWS_BEDROCK_BASE_URL``, ``AWS_BEARER_TOKEN_BEDROCK``), botocore's
``AWS_ENDPOINT_URL_BEDROCK_MANTLE`` and ``BEDROCK_MANTLE_MODEL``. It serves the model the rigs serve, by the id the
catalog's models section gives it, with what the endpoint does not offer for that model (its ``bedrock_endpoint``)
carried in the backend's metadata for the report."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable
from urllib.parse import urlsplit

from rigs import aws
from rigs.catalog.price_terms import STANDARD_TIER

from ..bench.results.constants import NOT_OFFERED_PREFIX, WEIGHTS_METADATA_PREFIX
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
        region: ``--region``, else the region of an ``AWS_BEDROCK_BASE_URL`` or ``AWS_ENDPOINT_URL_BEDROCK_MANTLE``
            naming a regional endpoint, else ``BEDROCK_REGION``, else the catalog's first.
        endpoint: scheme, host and port: ``AWS_ENDPOINT_URL_BEDROCK_MANTLE``, else the region's endpoint; the
            model's route is appended to it.
        base_url: ``AWS_BEDROCK_BASE_URL``, a whole base URL used as given (route included); None when not set.
        endpoint_given: ``AWS_ENDPOINT_URL_BEDROCK_MANTLE`` named the endpoint.
        auth_mode: :data:`rigs.aws.BEARER` with ``AWS_BEARER_TOKEN_BEDROCK``, else :data:`rigs.aws.SIGNED`.
    """

    model_id: str
    model_given: bool
    region: str
    endpoint: str
    base_url: str | None
    endpoint_given: bool
    auth_mode: str

    @classmethod
    def from_env(cls, get: Callable[[str], str | None], catalog: Catalog, region: str | None) -> MantleSettings:
        """Raises ValueError: ``AWS_BEDROCK_BASE_URL`` is not an http(s) URL, or ``AWS_ENDPOINT_URL_BEDROCK_MANTLE``
        is more (or less) than scheme, host and port."""
        rig = catalog.get(MANTLE)
        given = get(aws.MANTLE_BASE_URL_VAR)
        base_url = normalize_base_url(given) if given else None
        endpoint_var = get(aws.MANTLE_ENDPOINT_VAR)
        endpoint = aws.endpoint_root(endpoint_var) if endpoint_var else None
        named = base_url or endpoint
        region = region or (named and aws.mantle_region(named)) or get("BEDROCK_REGION") or rig.regions[0]
        model = get("BEDROCK_MANTLE_MODEL")
        return cls(model_id=model or rig.model_id, model_given=model is not None, region=region,
                   endpoint=endpoint or aws.mantle_host(region), base_url=base_url, endpoint_given=endpoint is not None,
                   auth_mode=aws.BEARER if get(aws.MANTLE_TOKEN_VAR) else aws.SIGNED)

    @property
    def replaced(self) -> str | None:
        """The variable that replaced Bedrock's endpoint (then no other AWS endpoint is called for it), else None."""
        if self.base_url is not None:
            return aws.MANTLE_BASE_URL_VAR
        return aws.MANTLE_ENDPOINT_VAR if self.endpoint_given else None

    def url_for(self, route: str) -> str:
        """The base URL requests for a model of ``route`` go to: ``AWS_BEDROCK_BASE_URL`` as given, else the
        endpoint with the route appended."""
        return self.base_url or self.endpoint + route

    def describe_auth(self) -> str:
        if self.auth_mode == aws.BEARER:
            return f"a Bedrock API key ({aws.MANTLE_TOKEN_VAR}) as a bearer token"
        return f"SigV4 ({aws.MANTLE_SERVICE}, {self.region}) from the AWS credential chain"


def route_of(catalog: Catalog, model_id: str) -> tuple[str, str]:
    """The route ``model_id`` is served under and where that is stated: its models entry's ``bedrock_endpoint``, else
    the one most models are under (the request that follows confirms it)."""
    endpoint = catalog.bedrock_endpoint(model_id)
    if endpoint is not None:
        return endpoint.route, endpoint.source
    default = aws.DEFAULT_MANTLE_ROUTE
    return default, (f"not in the catalog's models section: {default}, the route most models are served under "
                     "(docs.aws.amazon.com bedrock/latest/userguide/inference-responses-api.html)")


def offered_metadata(catalog: Catalog, model_id: str) -> dict[str, str]:
    """What the endpoint does not offer for ``model_id`` and how it reasons, as metadata for the report (the
    features left out, each with its source; the reasoning, with what the run does about it)."""
    endpoint = catalog.bedrock_endpoint(model_id)
    if endpoint is None:
        return {}
    meta = {f"{NOT_OFFERED_PREFIX}{feature}": source for feature, source in endpoint.not_offered().items()}
    meta["reasoning"] = endpoint.reasoning
    if endpoint.reasoning == "by-default":
        meta["reasoning_note"] = ("reasons before it answers (billed as output tokens, not shown) with no documented "
                                  "switch: its reasoning tokens are counted and priced beside the answer tokens")
        meta["reasoning_source"] = endpoint.source
    return meta


def mantle_backend(catalog: Catalog, settings: MantleSettings, model: str | None = None) -> Backend:
    """Bedrock's OpenAI-compatible endpoint serving ``model`` (a ``weights.model``; None: the settings' model id), at
    the route the catalog names for it.

    What it serves is the catalog entry's statement for its own model, and for another the same model family at a
    precision Bedrock does not publish (so the quality lane pairs it with the rigs as the same model, and says what
    differs: the features it does not offer, its reasoning)."""
    rig = catalog.get(MANTLE)
    model_id = (bedrock_id(catalog, model) if model else None) or settings.model_id
    route, route_source = route_of(catalog, model_id)
    base_url = settings.url_for(route)
    meta = catalog_metadata(rig, settings.region, model_id)
    if model and model_id != rig.model_id:
        meta.update({f"{WEIGHTS_METADATA_PREFIX}model": model, f"{WEIGHTS_METADATA_PREFIX}precision": "not published",
                     f"{WEIGHTS_METADATA_PREFIX}engine": rig.weights.engine})
    meta.update({"region": settings.region, "service_tier": STANDARD_TIER, "auth_mode": settings.auth_mode,
                 "route": urlsplit(base_url).path or route, "route_source": route_source,
                 "reached_via": f"Bedrock's OpenAI-compatible endpoint {base_url} (Chat Completions), "
                                f"{settings.describe_auth()}", **offered_metadata(catalog, model_id)})
    if settings.base_url is not None:
        meta["route_source"] = f"{aws.MANTLE_BASE_URL_VAR}, used as given"
    if settings.replaced:
        meta["endpoint_variable"] = settings.replaced
        meta["note"] = (f"{MANTLE}: {settings.replaced}={settings.base_url or settings.endpoint} replaces Bedrock's "
                        "endpoint; no other AWS endpoint is called for it, so its price is the dated offline file's "
                        "(rigs/prices.yaml)")
    return Backend(name=MANTLE, label=rig.label, kind=rig.backend_kind, model_id=model_id, tool_calls=rig.tool_calls,
                   base_url=base_url, region=settings.region, metadata=meta,
                   provenance={"expected": catalog_expectation(rig, model_id, settings.region)})
