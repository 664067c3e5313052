"""Offerings and quotas of each rig in each region, by :mod:`rigs.account.preflight`: the zones offering the
instance type (and whether the base network has a subnet in one of them), the vCPU quotas (on-demand, which rigs
use, and spot) or the SageMaker endpoint quota against what the rig needs, by quota code, a quota of 0 reported as
"request an increase". Its rows are "Type and quota" (EC2) and "Endpoint quota" (SageMaker)."""

from __future__ import annotations

from typing import Any

from rigs.account.checks import zones
from rigs.account.checks.base import FAIL, OK, WARN, Check, Finding, Outcome, Scope, each_region, refused, short
from rigs.account.preflight import EC2_QUOTAS, NOT_LISTED, OK as PREFLIGHT_OK, RegionCheck, quota_class
from rigs.account.preflight import check as preflight_check
from rigs.catalog.pricing import PriceBook


def offerings_and_quotas(scope: Scope, region: str) -> Outcome:
    """Preflight's checks of the region's rigs (:mod:`rigs.account.preflight`: offerings, quotas), against the
    zones of the base network; gives those checks (the placement is recorded from them)."""
    checks = preflight_check(scope.rigs_in(region), scope.session, [region], PriceBook(None), scope.clients,
                             images=False)
    placed = [check for check in checks if check.in_catalog and check.region in scope.rig_regions.get(check.rig, ())]
    network = scope.result(zones.CHECK, region) or None
    return Outcome([_preflight_findings(check, network if check.kind == "ec2" else None) for check in placed], placed)


def _preflight_findings(check: RegionCheck, network: tuple[str, ...] | None) -> Finding:
    """Offerings and quotas of one rig in one region, from :mod:`rigs.account.preflight`."""
    rig, region = check.rig, check.region
    if check.kind == "sagemaker":
        quota = check.endpoint_quota
        free = quota is not None and quota.known and quota.value and (quota.used is None or quota.value - quota.used >= 1)
        if free:  # the quota row speaks of the quota only (an unpinned image is the SageMaker image row)
            used = f", {quota.used:g} in use" if quota.used else ""
            return Finding("Endpoint quota", rig, region, OK,
                           f"{check.instance_type}: {quota.value:g} instance(s){used} ({quota.code})")
        if check.verdict == PREFLIGHT_OK:
            return refused(Finding("Endpoint quota", rig, region, WARN,
                                   f"{check.instance_type}: not readable ({_why(quota)})",
                                   f"check '{check.instance_type} for endpoint usage' in Service Quotas"),
                           _why(quota), "servicequotas:ListServiceQuotas")
        code = quota.code if quota and quota.code else ""
        fix = ("`aws service-quotas request-service-quota-increase --service-code sagemaker --quota-code "
               f"{code} --desired-value 1 --region {{region}}`" if code and quota and quota.value == 0 else
               "none here: `up` tries the rig's other regions" if not code else
               "delete an endpoint that holds one, or request an increase")
        return Finding("Endpoint quota", rig, region, FAIL, check.reason, fix, (rig,))
    check_name = "Type and quota"
    if not check.zones:
        if check.reason.startswith("offerings unknown"):
            return refused(Finding(check_name, rig, region, WARN, check.reason, "run `python -m rigs doctor` again"),
                           check.reason.removeprefix("offerings unknown (").rstrip(")"),
                           "ec2:DescribeInstanceTypeOfferings")
        return Finding(check_name, rig, region, FAIL, f"{check.instance_type} is offered in no zone",
                       "none here: `up` tries the rig's other regions", (rig,))
    if network is not None and not set(check.zones) & set(network):
        return Finding(check_name, rig, region, FAIL,
                       f"offered only in {short(check.zones, region)}, outside the base network's zones "
                       f"({short(sorted(set(network)), region)})", "deploy the base network over more zones "
                       "(`-c az_count.{region}=N`) or name them (`-c zones.{region}=a,b`)", (rig,))
    codes = EC2_QUOTAS.get(quota_class(check.instance_type), {})
    od_code = codes.get("on-demand", ("?", ""))[0]
    od, spot, needs = check.on_demand, check.spot, check.vcpus or 0
    spot_text = f"; spot {spot.short()} ({spot.code})" if spot is not None and spot.known else ""
    if check.verdict not in (PREFLIGHT_OK, NOT_LISTED):
        desired = needs + int(od.used or 0) if od is not None and od.known else needs
        return Finding(check_name, rig, region, FAIL, f"offered; {check.reason}{spot_text}",
                       f"`aws service-quotas request-service-quota-increase --service-code ec2 --quota-code {od_code} "
                       f"--desired-value {max(desired, needs)} --region {{region}}`", (rig,))
    if od is None or not od.known:
        return refused(Finding(check_name, rig, region, WARN,
                               f"offered; on-demand quota not readable ({_why(od)}), needs {needs} vCPU{spot_text}",
                               f"check {od_code} in Service Quotas"), _why(od), "servicequotas:GetServiceQuota")
    used = f", {od.used:g} in use" if od.used else ""
    return Finding(check_name, rig, region, OK,
                   f"offered; on-demand {od.value:g} vCPU{used} ({od_code}), needs {needs}{spot_text}")


def _why(quota: Any) -> str:
    reason = (getattr(quota, "unknown_reason", "") or "unknown").removeprefix("Service Quotas: ")
    return f"HTTP {reason}" if reason.isdigit() else reason


CHECK = Check("Offerings and quotas", each_region, offerings_and_quotas, rows=("Type and quota", "Endpoint quota"))
