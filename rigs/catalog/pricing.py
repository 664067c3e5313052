"""Prices: the AWS Pricing API when a session is given and answers, else the dated offline file.

Every price is a typed record that says where it came from (``source`` is
``"pricing-api"`` or ``"offline-file"``), for which region it holds, and as of when. A
price for another region than the one asked about (the offline file holds us-east-1 EC2
prices) says so in ``note``; nothing is silently substituted.

Interfaces other modules use:

- :func:`hourly_price` ``(rig, region, session=None) -> HourlyPrice`` for an EC2 rig or a
  SageMaker endpoint (``rig`` is a catalog rig or its name);
- :func:`instance_hourly_price` ``(instance_type, region, session=None)`` for any EC2 or
  ``ml.*`` type (status and sweep price what they find);
- :func:`bedrock_token_prices` ``(model_id, region, session=None, tier="standard") -> TokenPrice``, in one of
  Bedrock's service tiers (:data:`SERVICE_TIERS`; :func:`offline_tiers` lists those the offline file has);
- :class:`PriceBook`: the same lookups cached for one session (one Pricing API call per
  item).

The Pricing API is served from us-east-1 only; the client is always made there. Its
service codes are ``AmazonEC2``, ``AmazonSageMaker`` and ``AmazonBedrock``.
"""

from __future__ import annotations

import json
import threading
from datetime import date
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

import yaml

from kit import utc
from rigs import aws
from rigs.catalog import model
from rigs.catalog.price_terms import LOCATIONS, OFFLINE_FILE, PRICING_API, SERVICE_TIERS, STANDARD_TIER, base_model_id

if TYPE_CHECKING:
    from rigs.catalog.model import Rig
    from rigs.catalog.prices import HourlyPrice, OfflinePrices, TokenPrice, UnitPrice


PRICES_PATH = Path(__file__).parent.parent / "prices.yaml"
PRICING_REGION = "us-east-1"


class PriceError(aws.RigsError):
    """No price is known for an item, neither from the Pricing API nor from the offline file."""


def parse_offline_prices(text: str, source: str = "prices.yaml") -> "OfflinePrices":
    """Parse and validate the offline price file; raise PriceError listing every problem."""
    from rigs.catalog import prices

    found, problems = prices.parse(yaml.safe_load(text) or {})
    if found is None:
        raise PriceError(f"{source}: " + "; ".join(problems))
    return found


@lru_cache(maxsize=4)
def load_offline_prices(path: Path = PRICES_PATH) -> "OfflinePrices":
    return parse_offline_prices(path.read_text(encoding="utf-8"), source=path.name)


def __getattr__(name: str) -> Any:
    """The price models (``HourlyPrice``, ``TokenPrice``, ``UnitPrice``, ``OfflinePrices``), loaded when first
    asked for: the tiers and lookups here load no model, so a command can offer ``--bedrock-tier`` without
    pydantic."""
    if name not in ("HourlyPrice", "TokenPrice", "UnitPrice", "OfflinePrices"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from rigs.catalog import prices

    return getattr(prices, name)


# --- the Pricing API ------------------------------------------------------------------


def _term_filters(**fields: str) -> list[dict[str, str]]:
    return [{"Type": "TERM_MATCH", "Field": k, "Value": v} for k, v in fields.items()]


def ec2_filters(instance_type: str, region: str) -> list[dict[str, str]]:
    """On-demand Linux, shared tenancy, no pre-installed software, capacity in use."""
    return _term_filters(instanceType=instance_type, location=LOCATIONS[region], tenancy="Shared",
                         operatingSystem="Linux", capacitystatus="Used", preInstalledSw="NA")


def sagemaker_filters(instance_type: str, region: str) -> list[dict[str, str]]:
    return _term_filters(instanceName=instance_type, regionCode=region)


def bedrock_filters(region: str) -> list[dict[str, str]]:
    return _term_filters(regionCode=region)


def _products(pricing_client: Any, service_code: str, filters: list[dict[str, str]]) -> list[dict]:
    raw = aws.paginate(pricing_client, "get_products", "PriceList", ServiceCode=service_code,
                       Filters=filters, FormatVersion="aws_v1")
    return [json.loads(item) if isinstance(item, str) else item for item in raw]


def _on_demand_dimensions(product: dict) -> Iterable[dict]:
    for term in (product.get("terms", {}).get("OnDemand") or {}).values():
        yield from (term.get("priceDimensions") or {}).values()


def _usd(dimension: dict) -> float | None:
    try:
        return float(dimension.get("pricePerUnit", {}).get("USD"))
    except (TypeError, ValueError):
        return None


def _hourly_from_products(products: list[dict], want: dict[str, str] | None = None) -> tuple[float, str] | None:
    """The one non-zero hourly on-demand price among ``products`` whose attributes match ``want``."""
    found: list[tuple[float, str]] = []
    for product in products:
        attributes = product.get("product", {}).get("attributes", {})
        if want and any(str(attributes.get(k, "")).lower() != v.lower() for k, v in want.items()):
            continue
        for dimension in _on_demand_dimensions(product):
            price = _usd(dimension)
            if dimension.get("unit", "").lower() in ("hrs", "hour", "hours") and price:
                found.append((price, product.get("product", {}).get("sku", "")))
    if not found:
        return None
    return min(found)


def _token_prices_from_products(products: list[dict], model_names: tuple[str, ...],
                                tier: str = STANDARD_TIER) -> tuple[float, float] | None:
    """(input, output) USD per million tokens for the model in service ``tier``, from Bedrock price-list products
    (a Flex or Priority product names its tier in its usage type or inference type; Standard is the one that names
    no tier)."""
    names = {n.lower() for n in model_names}
    others = [word for word in SERVICE_TIERS if word not in (STANDARD_TIER, tier)]
    prices: dict[str, float] = {}
    for product in products:
        attributes = product.get("product", {}).get("attributes", {})
        if str(attributes.get("model", "")).lower() not in names:
            continue
        inference = str(attributes.get("inferenceType", "")).lower()
        usage = str(attributes.get("usagetype", "")).lower()
        if any(word in usage or word in inference for word in ("batch", "cache", "provisioned", *others)):
            continue
        if tier != STANDARD_TIER and tier not in usage and tier not in inference:
            continue
        direction = "input" if "input" in inference else "output" if "output" in inference else None
        if direction is None:
            continue
        for dimension in _on_demand_dimensions(product):
            price = _usd(dimension)
            if price is None:
                continue
            unit = dimension.get("unit", "").lower().replace(" ", "")
            scale = 1000.0 if unit in ("1ktokens", "1k tokens", "1000tokens") else \
                1.0 if unit in ("1mtokens", "1000000tokens") else None
            if scale is None:
                continue
            prices.setdefault(direction, price * scale)
    if "input" in prices and "output" in prices:
        return prices["input"], prices["output"]
    return None


BEDROCK_PRICE_NAMES = {"amazon.nova-micro-v1:0": ("Nova Micro", "Amazon Nova Micro"),
                       "google.gemma-4-e2b": ("Gemma 4 E2B", "Google Gemma 4 E2B")}
"""Bedrock model id -> the ``model`` attribute values the price list uses for it (Gemma 4 E2B's as its model card
names it, not yet seen in a price list: a name that does not match leaves the dated offline file's price)."""


class PriceBook:
    """Price lookups for one session, cached; ``session=None`` uses the offline file only.

    After the first failed Pricing API call the book stops asking it (one failure is
    enough to know the endpoint does not answer, e.g. moto's server or no network) and
    every later price carries that reason in ``note``.
    """

    def __init__(self, session: Any | None = None, offline: OfflinePrices | None = None,
                 today: date | None = None) -> None:
        self.session = session
        self.offline = offline or load_offline_prices()
        self.today = today or utc.now().date()
        self._client: Any = None
        self._api_failure: str | None = None if session is not None else "no AWS session given"
        self._cache: dict[tuple[str, str, str], Any] = {}
        self._lock = threading.Lock()

    # public lookups

    def hourly_price(self, rig: Rig | str, region: str) -> HourlyPrice:
        rig = model.load_catalog().get(rig) if isinstance(rig, str) else rig
        if rig.priced_per_token:
            raise PriceError(f"rig {rig.name!r} is billed per token: use bedrock_token_prices()")
        return rig.price(self, region)

    def instance_hourly_price(self, instance_type: str, region: str) -> HourlyPrice:
        key = ("hourly", instance_type, region)
        with self._lock:
            if key not in self._cache:
                self._cache[key] = self._hourly(instance_type, region)
            return self._cache[key]

    def bedrock_token_prices(self, model_id: str, region: str, tier: str = STANDARD_TIER) -> TokenPrice:
        key = ("tokens", f"{model_id}@{tier}", region)
        with self._lock:
            if key not in self._cache:
                self._cache[key] = self._tokens(model_id, region, tier)
            return self._cache[key]

    def unit_price(self, item: str, region: str) -> UnitPrice:
        """A per-unit price from the offline file (``ebs-gp3``, ``ebs-gp2``, ``ecr-storage``, ``public-ipv4``,
        ``cloudwatch-logs-storage``, ``secrets-manager-secret``, ``s3-standard``)."""
        from rigs.catalog.prices import UnitPrice

        entry = self.offline.find("per_unit", item, region)
        if entry is None:
            raise PriceError(f"no per-unit price for {item!r} in {PRICES_PATH.name}")
        return UnitPrice(item=item, usd=entry.usd, unit=entry.unit, region=entry.region, requested_region=region,
                         as_of=entry.as_of, source=OFFLINE_FILE, detail=entry.source)

    # internals

    def _pricing(self) -> Any | None:
        if self._api_failure is not None:
            return None
        if self._client is None:
            self._client = aws.client(self.session, "pricing", PRICING_REGION)
        return self._client

    def _api(self, service_code: str, filters: list[dict[str, str]]) -> list[dict] | None:
        client = self._pricing()
        if client is None:
            return None
        try:
            return _products(client, service_code, filters)
        except Exception as exc:  # noqa: BLE001 - any failure means: use the offline file
            failure = aws.classify(exc)
            if failure.kind == aws.CREDENTIALS:
                self._api_failure = f"Pricing API: credentials ({failure.code})"
            else:
                self._api_failure = f"Pricing API unavailable ({failure.code})"
            return None

    def _hourly(self, instance_type: str, region: str) -> HourlyPrice:
        from rigs.catalog.prices import HourlyPrice

        sagemaker = instance_type.startswith("ml.")
        service = "AmazonSageMaker" if sagemaker else "AmazonEC2"
        if region in LOCATIONS:
            filters = sagemaker_filters(instance_type, region) if sagemaker else ec2_filters(instance_type, region)
            products = self._api(service, filters)
            if products is not None:
                found = _hourly_from_products(products, {"component": "Hosting"} if sagemaker else None)
                if found is not None:
                    price, sku = found
                    return HourlyPrice(instance_type=instance_type, usd_per_hour=price, region=region,
                                       requested_region=region, as_of=self.today, source=PRICING_API,
                                       detail=f"{service} get_products sku {sku}")
                reason = f"Pricing API has no on-demand {service} price for {instance_type} in {region}"
            else:
                reason = self._api_failure or "Pricing API unavailable"
        else:
            reason = f"{region} is outside the priced regions"
        section = "sagemaker_hosting" if sagemaker else "ec2_on_demand"
        entry = self.offline.find(section, instance_type, region)
        if entry is None:
            raise PriceError(f"no price for {instance_type} in {region}: {reason}, and {PRICES_PATH.name} "
                             f"has no {section} entry for it")
        return HourlyPrice(instance_type=instance_type, usd_per_hour=entry.usd_per_hour, region=entry.region,
                           requested_region=region, as_of=entry.as_of, source=OFFLINE_FILE, detail=entry.source,
                           note=_offline_note(reason, entry.region, region))

    def _tokens(self, model_id: str, region: str, tier: str) -> TokenPrice:
        from rigs.catalog.prices import TokenPrice

        base = base_model_id(model_id)
        names = BEDROCK_PRICE_NAMES.get(base)
        reason: str
        if names is None:
            reason = f"no price-list name known for {base}"
        else:
            products = self._api("AmazonBedrock", bedrock_filters(region))
            if products is not None:
                found = _token_prices_from_products(products, names, tier)
                if found is not None:
                    return TokenPrice(model_id=model_id, usd_per_million_input=found[0],
                                      usd_per_million_output=found[1], service_tier=tier, region=region,
                                      requested_region=region, as_of=self.today, source=PRICING_API,
                                      detail=f"AmazonBedrock get_products, model {names[0]!r}, {tier} tier")
                reason = f"Pricing API has no on-demand {tier} tier token price for {names[0]} in {region}"
            else:
                reason = self._api_failure or "Pricing API unavailable"
        entry = self.offline.find("bedrock_on_demand", base, region, tier)
        if entry is None:
            raise PriceError(f"no {tier} tier token price for {model_id} in {region}: {reason}, and "
                             f"{PRICES_PATH.name} has no bedrock_on_demand entry for it")
        return TokenPrice(model_id=model_id, usd_per_million_input=entry.usd_per_million_input,
                          usd_per_million_output=entry.usd_per_million_output, service_tier=tier, region=entry.region,
                          requested_region=region, as_of=entry.as_of, source=OFFLINE_FILE, detail=entry.source,
                          note=_offline_note(reason, entry.region, region))


def _offline_note(reason: str, held_region: str, region: str) -> str:
    """Why the offline file's price is used, and for which region it holds when that is another one."""
    if held_region == region:
        return reason
    return f"{reason}; {PRICES_PATH.name} holds the {held_region} price, used for {region}"


def hourly_price(rig: Rig | str, region: str, session: Any | None = None) -> HourlyPrice:
    """On-demand $/h of a rig's instance type in ``region``: Pricing API if ``session`` answers, else offline."""
    return PriceBook(session).hourly_price(rig, region)


def instance_hourly_price(instance_type: str, region: str, session: Any | None = None) -> HourlyPrice:
    """On-demand $/h of an EC2 or SageMaker (``ml.*``) instance type."""
    return PriceBook(session).instance_hourly_price(instance_type, region)


def bedrock_token_prices(model_id: str, region: str, session: Any | None = None,
                         tier: str = STANDARD_TIER) -> TokenPrice:
    """Bedrock on-demand $/M input and output tokens in service ``tier``: Pricing API if ``session`` answers, else
    offline."""
    return PriceBook(session).bedrock_token_prices(model_id, region, tier)


def offline_tiers(model_id: str, offline: OfflinePrices | None = None) -> tuple[str, ...]:
    """The service tiers the offline price file prices ``model_id`` in (a profile id counts as its model), in
    :data:`SERVICE_TIERS` order."""
    entries = (offline or load_offline_prices()).bedrock_on_demand
    found = {e.service_tier for e in entries if e.key == base_model_id(model_id)}
    return tuple(tier for tier in SERVICE_TIERS if tier in found)
