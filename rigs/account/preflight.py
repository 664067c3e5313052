"""Preflight: where can each rig run right now, and what would it cost?

For each rig and each of the four regions:

- the zones that offer the instance type (``DescribeInstanceTypeOfferings``, location type
  ``availability-zone``): a region that offers none is skipped with that reason; a type
  not offered in a zone is never called a capacity problem;
- the vCPU quotas that apply (Service Quotas by quota code) against what the rig needs
  (vCPUs of the type from ``DescribeInstanceTypes``) and what already runs in that quota
  class: a quota of 0 is reported as "quota 0", not as "no capacity";
- for SageMaker, the ``<type> for endpoint usage`` quota and the endpoints using it, and, in a
  region where the catalog pins no digest, that AWS's registry there has the image's tag (the
  stack reads its digest at deploy time; a region lacking it is skipped);
- the on-demand price (:mod:`rigs.catalog.pricing`, saying where it comes from).

The verdicts become the placement (:mod:`rigs.placement.placement`): per rig, the catalog's regions
that passed, in the catalog's order, each with its offering zones. Quota is not capacity:
a region that passes can still refuse a launch; ``up`` handles that by failing over.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from rigs import aws

from rigs.catalog import pins

from rigs.catalog.model import Catalog, DeployableRig, Ec2Rig, SageMakerRig, load_catalog
from rigs.catalog.pricing import HourlyPrice, PriceBook, PriceError
from rigs.contract import REGIONS
from rigs.placement import placement

# Service Quotas codes (service code "ec2"), vCPU based, by instance class.
# G and VT: L-DB2E81BA / L-3819A6DF; Inf: L-1945791B / L-B5D1601B; Trn: L-2C3B7624 / L-6B0D517C.
EC2_QUOTAS: dict[str, dict[str, tuple[str, str]]] = {
    "g": {"on-demand": ("L-DB2E81BA", "Running On-Demand G and VT instances"),
          "spot": ("L-3819A6DF", "All G and VT Spot Instance Requests")},
    "vt": {"on-demand": ("L-DB2E81BA", "Running On-Demand G and VT instances"),
           "spot": ("L-3819A6DF", "All G and VT Spot Instance Requests")},
    "inf": {"on-demand": ("L-1945791B", "Running On-Demand Inf instances"),
            "spot": ("L-B5D1601B", "All Inf Spot Instance Requests")},
    "trn": {"on-demand": ("L-2C3B7624", "Running On-Demand Trn instances"),
            "spot": ("L-6B0D517C", "All Trn Spot Instance Requests")},
}
_CLASS = re.compile(r"^([a-z]+?)\d")

OK = "ok"
SKIP = "skip"
NOT_LISTED = "not-listed"


def quota_class(instance_type: str) -> str:
    """``g6.xlarge`` -> ``g``, ``g5g.2xlarge`` -> ``g``, ``inf2.xlarge`` -> ``inf``, ``trn1.2xlarge`` -> ``trn``."""
    match = _CLASS.match(instance_type.split(".", 1)[0])
    return match.group(1) if match else instance_type.split(".", 1)[0]


@dataclass(frozen=True, slots=True)
class Quota:
    """One quota as applied: its value, what already uses it, and why it is unknown if it is."""

    name: str
    code: str | None
    value: float | None
    used: float | None = None
    unit: str = "vCPU"
    unknown_reason: str = ""

    @property
    def known(self) -> bool:
        return self.value is not None

    @property
    def free(self) -> float | None:
        if self.value is None:
            return None
        return self.value - (self.used or 0)

    def short(self) -> str:
        if self.value is None:
            return "?"
        text = f"{self.value:g}"
        if self.used:
            text += f" ({self.free:g} free)"
        return text


@dataclass(frozen=True, slots=True)
class RegionCheck:
    """Preflight of one rig in one region."""

    rig: str
    kind: str
    region: str
    instance_type: str
    in_catalog: bool
    verdict: str
    reason: str = ""
    zones: tuple[str, ...] = ()
    vcpus: int | None = None
    on_demand: Quota | None = None
    spot: Quota | None = None
    endpoint_quota: Quota | None = None
    price: HourlyPrice | None = None
    price_error: str = ""
    notes: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        def quota(q: Quota | None) -> dict | None:
            return None if q is None else {"name": q.name, "code": q.code, "value": q.value, "used": q.used,
                                           "unit": q.unit, "unknown_reason": q.unknown_reason}
        return {"rig": self.rig, "kind": self.kind, "region": self.region, "instance_type": self.instance_type,
                "in_catalog": self.in_catalog, "verdict": self.verdict, "reason": self.reason,
                "zones": list(self.zones), "vcpus": self.vcpus, "on_demand_quota": quota(self.on_demand),
                "spot_quota": quota(self.spot), "endpoint_quota": quota(self.endpoint_quota),
                "price": self.price.model_dump(mode="json") if self.price else None, "price_error": self.price_error,
                "notes": list(self.notes)}


@dataclass(frozen=True, slots=True)
class PreflightReport:
    checks: tuple[RegionCheck, ...]
    placements: dict[str, tuple[placement.Candidate, ...]] = field(default_factory=dict)
    skipped: dict[str, dict[str, str]] = field(default_factory=dict)

    def for_rig(self, rig: str) -> list[RegionCheck]:
        return [c for c in self.checks if c.rig == rig]

    @property
    def unplaceable(self) -> list[str]:
        """Rigs with no region to try."""
        return [rig for rig, candidates in self.placements.items() if not candidates]


class _Probe:
    """AWS lookups for preflight, each cached per region (several rigs share them)."""

    def __init__(self, clients: aws.Clients, prices: PriceBook) -> None:
        self.clients = clients
        self.prices = prices
        self._cache: dict[tuple, Any] = {}

    def _cached(self, key: tuple, compute) -> Any:
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]

    def zones(self, region: str, instance_type: str) -> tuple[str, ...]:
        def compute() -> tuple[str, ...]:
            offerings = aws.paginate(self.clients("ec2", region), "describe_instance_type_offerings",
                                     "InstanceTypeOfferings", LocationType="availability-zone",
                                     Filters=[{"Name": "instance-type", "Values": [instance_type]}])
            return tuple(sorted({o["Location"] for o in offerings if o.get("InstanceType") == instance_type}))
        return self._cached(("zones", region, instance_type), compute)

    def vcpus(self, region: str, instance_type: str) -> int | None:
        def compute() -> int | None:
            try:
                answer = aws.call(self.clients("ec2", region).describe_instance_types, InstanceTypes=[instance_type])
            except Exception as exc:  # noqa: BLE001
                if aws.classify(exc).kind == aws.CREDENTIALS:
                    raise
                return None
            types = answer.get("InstanceTypes", [])
            return types[0]["VCpuInfo"]["DefaultVCpus"] if types else None
        return self._cached(("vcpus", region, instance_type), compute)

    def ec2_quota(self, region: str, code: str, name: str) -> Quota:
        def compute() -> Quota:
            try:
                answer = aws.call(self.clients("service-quotas", region).get_service_quota,
                                  ServiceCode="ec2", QuotaCode=code)
            except Exception as exc:  # noqa: BLE001
                failure = aws.classify(exc)
                if failure.kind == aws.CREDENTIALS:
                    raise
                return Quota(name, code, None, unknown_reason=f"Service Quotas: {failure.code}")
            return Quota(answer["Quota"].get("QuotaName", name), code, float(answer["Quota"]["Value"]))
        return self._cached(("ec2-quota", region, code), compute)

    def used_vcpus(self, region: str, klass: str) -> float | None:
        """vCPUs of pending and running instances in a quota class (any owner tag: the quota counts all)."""
        def compute() -> float | None:
            try:
                reservations = aws.paginate(self.clients("ec2", region), "describe_instances", "Reservations",
                                            Filters=[{"Name": "instance-state-name", "Values": ["pending", "running"]}])
            except Exception as exc:  # noqa: BLE001
                if aws.classify(exc).kind == aws.CREDENTIALS:
                    raise
                return None
            total = 0.0
            for reservation in reservations:
                for instance in reservation.get("Instances", []):
                    if quota_class(instance["InstanceType"]) != klass:
                        continue
                    cpu = instance.get("CpuOptions") or {}
                    count = (cpu.get("CoreCount") or 0) * (cpu.get("ThreadsPerCore") or 0)
                    total += count or (self.vcpus(region, instance["InstanceType"]) or 0)
            return total
        return self._cached(("used", region, klass), compute)

    def sagemaker_quotas(self, region: str) -> dict[str, tuple[str, float]] | str:
        """QuotaName -> (code, value) for SageMaker in ``region``, or why they are unknown."""
        def compute() -> dict[str, tuple[str, float]] | str:
            try:
                quotas = aws.paginate(self.clients("service-quotas", region), "list_service_quotas", "Quotas",
                                      ServiceCode="sagemaker")
            except Exception as exc:  # noqa: BLE001
                failure = aws.classify(exc)
                if failure.kind == aws.CREDENTIALS:
                    raise
                return f"Service Quotas: {failure.code}"
            return {q["QuotaName"]: (q.get("QuotaCode", ""), float(q["Value"])) for q in quotas}
        return self._cached(("sm-quotas", region), compute)

    def endpoint_instances(self, region: str, instance_type: str) -> tuple[float | None, list[str]]:
        """Instances of ``instance_type`` held by live endpoints (any owner: the quota counts all)."""
        def compute() -> tuple[float | None, list[str]]:
            sagemaker = self.clients("sagemaker", region)
            try:
                endpoints = aws.paginate(sagemaker, "list_endpoints", "Endpoints")
                total, names = 0.0, []
                for endpoint in endpoints:
                    if endpoint.get("EndpointStatus") in ("Failed", "Deleting", "OutOfService"):
                        continue
                    described = aws.call(sagemaker.describe_endpoint, EndpointName=endpoint["EndpointName"])
                    config = aws.call(sagemaker.describe_endpoint_config,
                                      EndpointConfigName=described["EndpointConfigName"])
                    for variant in config.get("ProductionVariants", []):
                        pools = [p.get("InstanceType") for p in variant.get("InstancePools", []) or []]
                        if variant.get("InstanceType") == instance_type or instance_type in pools:
                            total += variant.get("InitialInstanceCount", 1) or 1
                            names.append(endpoint["EndpointName"])
                return total, names
            except Exception as exc:  # noqa: BLE001
                if aws.classify(exc).kind == aws.CREDENTIALS:
                    raise
                return None, []
        return self._cached(("sm-used", region, instance_type), compute)

    def image_tag(self, rig: SageMakerRig, region: str) -> pins.PinResult:
        """What ``region``'s registry says of the rig's image tag: its digest, missing, or why it could not be read."""
        return self._cached(("image", region, rig.image.repository, rig.image.tag),
                            lambda: pins.check_region(rig.name, rig.image, region, self.clients("ecr", region)))

    def price(self, instance_type: str, region: str) -> tuple[HourlyPrice | None, str]:
        try:
            return self.prices.instance_hourly_price(instance_type, region), ""
        except PriceError as exc:
            return None, str(exc)


def _check_ec2(rig: Ec2Rig, region: str, probe: _Probe) -> RegionCheck:
    in_catalog = region in rig.regions
    base = dict(rig=rig.name, kind=rig.kind, region=region, instance_type=rig.instance_type, in_catalog=in_catalog)
    try:
        zones = probe.zones(region, rig.instance_type)
    except Exception as exc:  # noqa: BLE001
        failure = aws.classify(exc)
        if failure.kind == aws.CREDENTIALS:
            raise aws.CredentialsError(failure.code) from None
        return RegionCheck(**base, verdict=SKIP, reason=f"offerings unknown ({failure.code})")
    price, price_error = probe.price(rig.instance_type, region)
    if not zones:
        return RegionCheck(**base, verdict=SKIP, reason=f"{region} offers no {rig.instance_type} in any zone",
                           price=price, price_error=price_error)
    vcpus = probe.vcpus(region, rig.instance_type)
    klass = quota_class(rig.instance_type)
    codes = EC2_QUOTAS.get(klass)
    notes: list[str] = []
    on_demand = spot = None
    verdict, reason = OK, ""
    if codes is None:
        notes.append(f"no vCPU quota code known for class {klass!r}")
    else:
        od_code, od_name = codes["on-demand"]
        on_demand = probe.ec2_quota(region, od_code, od_name)
        if on_demand.known:
            on_demand = Quota(on_demand.name, on_demand.code, on_demand.value, probe.used_vcpus(region, klass))
        spot = probe.ec2_quota(region, *codes["spot"])
        if on_demand.known and on_demand.value == 0:
            verdict, reason = SKIP, f"on-demand quota is 0 vCPU ({od_name}, {od_code}): request an increase"
        elif on_demand.known and vcpus is not None and (on_demand.free or 0) < vcpus:
            verdict, reason = SKIP, (f"on-demand quota {on_demand.value:g} vCPU with {on_demand.used or 0:g} in use: "
                                     f"{on_demand.free:g} free, {rig.instance_type} needs {vcpus} ({od_code})")
        elif not on_demand.known:
            notes.append(f"quota not readable ({on_demand.unknown_reason.removeprefix('Service Quotas: ')})")
        if spot.known and spot.value == 0:
            notes.append(f"spot quota 0 ({spot.code}); rigs launch on-demand")
    if verdict == OK and not in_catalog:
        verdict, reason = NOT_LISTED, f"could run, but {region} is not in the catalog's regions for {rig.name}"
    return RegionCheck(**base, verdict=verdict, reason=reason, zones=zones, vcpus=vcpus, on_demand=on_demand,
                       spot=spot, price=price, price_error=price_error, notes=tuple(notes))


def _check_sagemaker(rig: SageMakerRig, region: str, probe: _Probe, images: bool = True) -> RegionCheck:
    in_catalog = region in rig.regions
    base = dict(rig=rig.name, kind=rig.kind, region=region, instance_type=rig.instance_type, in_catalog=in_catalog)
    price, price_error = probe.price(rig.instance_type, region)
    quota_name = f"{rig.instance_type} for endpoint usage"
    quotas = probe.sagemaker_quotas(region)
    notes: list[str] = []
    verdict, reason = OK, ""
    if isinstance(quotas, str):
        endpoint_quota = Quota(quota_name, None, None, unit="instances", unknown_reason=quotas)
        notes.append(f"quota not readable ({quotas.removeprefix('Service Quotas: ')})")
    elif quota_name not in quotas:
        endpoint_quota = Quota(quota_name, None, None, unit="instances", unknown_reason="no such quota")
        verdict, reason = SKIP, f"{rig.instance_type} is not offered for endpoints in {region} (no {quota_name!r} quota)"
    else:
        code, value = quotas[quota_name]
        used, names = probe.endpoint_instances(region, rig.instance_type)
        endpoint_quota = Quota(quota_name, code, value, used, unit="instances")
        if value == 0:
            verdict, reason = SKIP, f"endpoint quota is 0 ({quota_name!r}, {code}): request an increase"
        elif used is not None and value - used < 1:
            verdict, reason = SKIP, (f"endpoint quota {value:g} with {used:g} in use by {', '.join(names)}: "
                                     "no instance free")
    if verdict == OK and in_catalog and images and rig.image.digest_for(region) is None:
        found = probe.image_tag(rig, region)
        if found.missing:
            verdict, reason = SKIP, (f"its image tag {rig.image.tag} is not in {region}'s registry ({found.error}): "
                                     "the deploy would fail there")
        elif not found.digest:
            notes.append(f"image tag not checked ({found.error})")
    if verdict == OK and not in_catalog:
        verdict, reason = NOT_LISTED, f"could run, but {region} is not in the catalog's regions for {rig.name}"
    return RegionCheck(**base, verdict=verdict, reason=reason, endpoint_quota=endpoint_quota, price=price,
                       price_error=price_error, notes=tuple(notes))


def check_rig(rig: DeployableRig, region: str, probe: _Probe, images: bool = True) -> RegionCheck:
    """Preflight of one rig in one region (``images``: also whether a SageMaker image's tag is in the registry)."""
    if rig.on_instances:
        return _check_ec2(rig, region, probe)
    return _check_sagemaker(rig, region, probe, images)


def check(rigs: Sequence[DeployableRig], session: Any, regions: Sequence[str] = REGIONS,
          prices: PriceBook | None = None, clients: aws.Clients | None = None,
          images: bool = True) -> tuple[RegionCheck, ...]:
    """Check every rig in every region (regions in parallel), in the order of ``rigs``, then ``regions``.

    ``clients`` shares clients (and their timeouts) with a caller such as ``doctor``; ``images=False`` leaves
    the SageMaker image's registry to the caller (the doctor has a row of its own for it).
    """
    clients = clients or aws.Clients(session)
    prices = prices or PriceBook(session)
    probes = {region: _Probe(clients, prices) for region in regions}

    def check_region(region: str) -> list[RegionCheck]:
        return [check_rig(rig, region, probes[region], images) for rig in rigs]

    with ThreadPoolExecutor(max_workers=len(regions) or 1) as pool:
        per_region = dict(zip(regions, pool.map(check_region, regions)))
    return tuple(check for rig in rigs for region in regions for check in per_region[region]
                 if check.rig == rig.name)


def place(rigs: Sequence[DeployableRig], checks: Sequence[RegionCheck], record: bool = True,
          path: Path | None = None) -> PreflightReport:
    """The placement the checks give each rig: its catalog regions that passed, in the catalog's order,
    with their offering zones; with ``record``, written to the placement file (``path``, else the user's)."""
    checks = tuple(c for c in checks if c.rig in {rig.name for rig in rigs})
    placements: dict[str, tuple[placement.Candidate, ...]] = {}
    skipped: dict[str, dict[str, str]] = {}
    for rig in rigs:
        by_region = {c.region: c for c in checks if c.rig == rig.name}
        placements[rig.name] = tuple(placement.Candidate(region=region, zones=by_region[region].zones)
                                     for region in rig.regions if region in by_region
                                     and by_region[region].verdict == OK)
        skipped[rig.name] = {c.region: c.reason for c in by_region.values() if c.verdict != OK}
        if record:
            placement.record_candidates(rig.name, placements[rig.name], skipped[rig.name], path, rig.instance_type)
    return PreflightReport(checks, placements, skipped)


def run_preflight(rigs: Sequence[DeployableRig], session: Any, regions: Sequence[str] = REGIONS,
                  prices: PriceBook | None = None, record: bool = True,
                  clients: aws.Clients | None = None, path: Path | None = None) -> PreflightReport:
    """Check every rig in every region (:func:`check`) and, with ``record``, write the placement (:func:`place`)."""
    return place(rigs, check(rigs, session, regions, prices, clients), record, path)


def select_rigs(names: Iterable[str], catalog: Catalog | None = None) -> tuple[list[DeployableRig], list[str]]:
    """The deployable rigs named (all when none are); names of Bedrock backends come back separately.

    Raises UnknownRigError (listing the known rigs) for a name not in the catalog.
    """
    catalog = catalog or load_catalog()
    names = list(names)
    if not names:
        return catalog.deployable(), []
    rigs: list[DeployableRig] = []
    nothing_to_deploy: list[str] = []
    for name in names:
        rig = catalog.get(name)
        if not rig.deployed:
            nothing_to_deploy.append(name)
        elif rig not in rigs:
            rigs.append(rig)
    return rigs, nothing_to_deploy


# --- rendering ------------------------------------------------------------------------


def render(report: PreflightReport) -> Any:
    """A rich Table: one row per rig and region."""
    from rich.markup import escape
    from rich.table import Table

    table = Table(title="Preflight: zones offering the type, vCPU quotas, on-demand price",
                  show_lines=False, header_style="bold")
    for column in ("Rig", "Region", "Type", "Zones offering", "Needs", "On-demand quota", "Spot quota",
                   "$/h", "Verdict"):
        table.add_column(column, overflow="fold")
    styles = {OK: "green", SKIP: "red", NOT_LISTED: "yellow"}
    for check in report.checks:
        if check.kind == "sagemaker":
            zones, needs = "(SageMaker places)", "1 instance"
            on_demand = f"endpoint {check.endpoint_quota.short()}" if check.endpoint_quota else "-"
            spot = "-"
        else:
            zones = ", ".join(z.replace(check.region, "") or z for z in check.zones) or "none"
            needs = f"{check.vcpus} vCPU" if check.vcpus else "-"
            on_demand = check.on_demand.short() if check.on_demand else "-"
            spot = check.spot.short() if check.spot else "-"
        if check.price:
            price = f"{check.price.usd_per_hour:.4f}"
            price += " (api)" if check.price.source == "pricing-api" else " (file)"
            if not check.price.exact_region:
                price += f", {check.price.region} price"
        else:
            price = "unpriced"
        verdict = check.verdict if not check.reason else f"{check.verdict}: {check.reason}"
        if check.notes and check.verdict == OK:
            verdict += ": " + "; ".join(check.notes)
        style = styles.get(check.verdict, "")
        table.add_row(*(escape(cell) for cell in (check.rig, check.region, check.instance_type, zones, needs,
                                                   on_demand, spot, price)),
                      f"[{style}]{escape(verdict)}[/]" if style else escape(verdict))
    return table


def render_placement(report: PreflightReport) -> list[str]:
    lines = []
    for rig, candidates in report.placements.items():
        if candidates:
            order = " -> ".join(f"{c.region} ({','.join(c.zones) or 'any zone'})" for c in candidates)
            lines.append(f"{rig}: try {order}")
        else:
            lines.append(f"{rig}: no region to try ({'; '.join(f'{r}: {why}' for r, why in report.skipped[rig].items())})")
    return lines
