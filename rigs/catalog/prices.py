"""Prices as frozen pydantic models: each price the library hands out (with where it came from), and the
offline file ``prices.yaml``, validated once with every problem reported together.

Its JSON Schema is committed beside the file (``python -m rigs.catalog.schema --write``).
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import BeforeValidator, Field, StrictStr, ValidationError
from pydantic_core import PydanticCustomError

from rigs.catalog.checks import ABOUT_KEY, Frozen, Problem, checked, problems
from rigs.catalog.price_terms import HOURS_PER_MONTH, LOCATIONS, SERVICE_TIERS, STANDARD_TIER, UNITS


class PriceProvenance(Frozen):
    """Where a price comes from: which region it holds for, as of when, from which source."""

    region: str
    """The region the price holds for."""
    requested_region: str
    """The region that was asked about."""
    as_of: date
    source: str
    """``"pricing-api"`` or ``"offline-file"``."""
    detail: str
    """Where exactly: the API filter or the offline file's provenance."""
    note: str = ""
    """Why the offline file was used, and any region mismatch."""

    @property
    def exact_region(self) -> bool:
        return self.region == self.requested_region

    def _provenance(self) -> str:
        where = "" if self.exact_region else f", {self.region} price"
        return f"{self.source}{where}, as of {self.as_of.isoformat()}"


class HourlyPrice(PriceProvenance):
    """The on-demand price of one instance type in one region."""

    instance_type: str
    usd_per_hour: float

    def describe(self) -> str:
        """One line, e.g. ``$0.8048/h (offline-file, us-east-1 price, as of 2026-10-05)``."""
        return f"${self.usd_per_hour:.4f}/h ({self._provenance()})"


class TokenPrice(PriceProvenance):
    """Bedrock on-demand prices of one model, per million tokens."""

    model_id: str
    usd_per_million_input: float
    usd_per_million_output: float
    service_tier: str = STANDARD_TIER

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        """USD for a number of input and output tokens."""
        return (input_tokens * self.usd_per_million_input + output_tokens * self.usd_per_million_output) / 1e6

    def describe(self) -> str:
        return (f"${self.usd_per_million_input:g}/M in, ${self.usd_per_million_output:g}/M out, "
                f"{self.service_tier.capitalize()} tier ({self._provenance()})")


class UnitPrice(PriceProvenance):
    """A per-unit list price (EBS or ECR storage per GB-month, a public IPv4 address per hour)."""

    item: str
    usd: float
    unit: str

    def hourly(self, quantity: float = 1.0) -> float:
        """USD per hour for ``quantity`` units (per-month prices spread over 730 hours)."""
        per_hour = self.usd / HOURS_PER_MONTH if self.unit.endswith("-month") else self.usd
        return per_hour * quantity

    def monthly(self, quantity: float = 1.0) -> float:
        """USD per month (730 hours) for ``quantity`` units."""
        return self.hourly(quantity) * HOURS_PER_MONTH


# --- the offline file ----------------------------------------------------------------


def _present(value: Any) -> Any:
    if value in (None, ""):
        raise PydanticCustomError("missing", "missing")
    return value


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise PydanticCustomError(ABOUT_KEY, "must be a non-negative number")
    return float(value)


def _as_of(value: Any) -> date:
    try:
        return value if isinstance(value, date) else date.fromisoformat(str(value))
    except ValueError:
        raise PydanticCustomError("problem", "not a date (YYYY-MM-DD)") from None


def _region(value: Any) -> Any:
    if value not in LOCATIONS:
        raise PydanticCustomError("problem", f"{value!r} is not one of {', '.join(LOCATIONS)}")
    return value


Key = Annotated[str, BeforeValidator(lambda v: str(_present(v)))]
Number = Annotated[float, BeforeValidator(lambda v: _number(_present(v))), Field(json_schema_extra={"minimum": 0})]
Region = Annotated[Literal[tuple(LOCATIONS)], BeforeValidator(lambda v: _region(_present(v)))]
AsOf = Annotated[date, BeforeValidator(lambda v: _as_of(_present(v)))]
Source = Annotated[str, BeforeValidator(lambda v: " ".join(str(_present(v)).split()))]


class OfflineEntry(Frozen):
    """One price of the file: for which region, as of when, from where."""

    key_field: ClassVar[str]
    """The field that names what is priced."""
    region: Region
    as_of: AsOf
    source: Source

    @property
    def key(self) -> str:
        """What is priced: the instance type, model id or item."""
        return getattr(self, self.key_field)


class InstanceEntry(OfflineEntry):
    """An EC2 or SageMaker instance type's on-demand price per hour."""

    key_field = "instance_type"
    instance_type: Key
    usd_per_hour: Number


class TokenEntry(OfflineEntry):
    """A Bedrock model's on-demand prices per million tokens, in one service tier."""

    key_field = "model_id"
    service_tier: Literal[SERVICE_TIERS] = STANDARD_TIER
    model_id: Key
    usd_per_million_input: Number
    usd_per_million_output: Number


class UnitEntry(OfflineEntry):
    """A per-unit list price."""

    key_field = "item"
    item: Key
    usd: Number
    unit: Literal[UNITS]


AnyEntry = Union[InstanceEntry, TokenEntry, UnitEntry]


class OfflinePrices(Frozen):
    """The validated contents of ``prices.yaml``: one list of entries per section."""

    currency: checked(StrictStr, lambda c: None if c == "USD" else "only USD is supported", const="USD") = "USD"
    ec2_on_demand: tuple[InstanceEntry, ...] = ()
    sagemaker_hosting: tuple[InstanceEntry, ...] = ()
    bedrock_on_demand: tuple[TokenEntry, ...] = ()
    per_unit: tuple[UnitEntry, ...] = ()

    def find(self, section: str, key: str, region: str, tier: str = STANDARD_TIER) -> AnyEntry | None:
        """The entry for ``key`` (in Bedrock's service ``tier``) in ``region``; else in us-east-1; else any region."""
        entries = [e for e in getattr(self, section, ())
                   if e.key == key and getattr(e, "service_tier", STANDARD_TIER) == tier]
        for wanted in (region, "us-east-1"):
            for entry in entries:
                if entry.region == wanted:
                    return entry
        return entries[0] if entries else None


SECTIONS = tuple(name for name in OfflinePrices.model_fields if name != "currency")


def parse(data: Any) -> tuple[OfflinePrices | None, list[str]]:
    """The file's contents (parsed YAML) as :class:`OfflinePrices`, or every problem in it."""
    try:
        return OfflinePrices.model_validate(data), []
    except ValidationError as exc:
        return None, [_line(p) for p in problems(exc, OfflinePrices)]


def _line(problem: Problem) -> str:
    """A problem as the file's own wording: ``ec2_on_demand[0]: missing usd_per_hour``."""
    *entry, key = problem.where or ("",)
    at = Problem(tuple(entry), "", problem.type).path("")
    if problem.type == "missing":
        return f"{at}: missing {key}"
    if problem.type == ABOUT_KEY:
        return f"{at}: {key} {problem.message}"
    if problem.type == "extra_forbidden" and not entry:
        return f"{key}: unknown section (allowed: {', '.join(SECTIONS)})"
    return f"{problem.path('')}: {problem.message}" if problem.where else problem.message
