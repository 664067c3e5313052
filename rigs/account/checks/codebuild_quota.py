"""The CodeBuild quota the g5g image's build needs, in each region of a rig that builds its own image."""

from __future__ import annotations

import re
from typing import Any, Mapping

from rigs import aws
from rigs.account.checks import g5g_image
from rigs.account.checks.base import FAIL, OK, WARN, Check, Finding, Scope, builds_own_image, each_rig, unknown
from rigs.catalog.model import Ec2Rig

G5G_BUILD_QUOTA = "Concurrently running builds for ARM/XLarge environment"
"""The CodeBuild quota the g5g image build counts against, as AWS's naming of the other ARM build quotas
suggests: an ARM container on ``BUILD_GENERAL1_XLARGE`` (``stacks/parts/images/build.py``; a test keeps the
two in step). The exact name is not in public quota lists, so the doctor lists the ARM build quotas by
:data:`ARM_BUILD_QUOTAS` and takes the XLarge one among them (:data:`XLARGE`)."""
ARM_BUILD_QUOTAS = re.compile(r"^Concurrently running builds for (?!.*Lambda).*\bARM\b", re.IGNORECASE)
"""CodeBuild's quotas on concurrent ARM container builds (its ARM Lambda builds are another kind)."""
XLARGE = re.compile(r"\bXLarge\b", re.IGNORECASE)


def codebuild_quota(scope: Scope, rig: Ec2Rig, region: str) -> list[Finding]:
    """The CodeBuild quota the g5g image's build counts against: needed only while the image is not built."""
    built = scope.result(g5g_image.CHECK, rig, region)
    try:
        quotas = aws.paginate(scope.clients("service-quotas", region), "list_service_quotas", "Quotas",
                              ServiceCode="codebuild")
    except Exception as exc:  # noqa: BLE001
        return [unknown("CodeBuild quota", rig.name, region, exc, "service-quotas",
                        f"check {G5G_BUILD_QUOTA!r} in the Service Quotas console")]
    arm = sorted((q for q in quotas if ARM_BUILD_QUOTAS.search(q.get("QuotaName", ""))),
                 key=lambda q: q.get("QuotaName", ""))
    found = ", ".join(f"{_build_size(q)} {float(q.get('Value', 0)):g} ({q.get('QuotaCode', '?')})" for q in arm)
    match = next((q for q in arm if XLARGE.search(q.get("QuotaName", ""))), None)
    if match is None:
        return [Finding("CodeBuild quota", rig.name, region, WARN,
                        f"no ARM XLarge build quota listed here; ARM build quotas: {found or 'none'}",
                        f"check {G5G_BUILD_QUOTA!r} in the CodeBuild quotas of {{region}}")]
    code, value = match.get("QuotaCode", "?"), float(match.get("Value", 0))
    if value >= 1:
        return [Finding("CodeBuild quota", rig.name, region, OK, f"ARM XLarge builds at once: {value:g} ({code}); "
                        f"ARM build quotas: {found}")]
    needed = built is not True
    return [Finding("CodeBuild quota", rig.name, region, FAIL if needed else WARN,
                    f"{match.get('QuotaName')} is 0 ({code}): request an increase"
                    + ("" if needed else " (the image is built; only a rebuild needs it)"),
                    "`aws service-quotas request-service-quota-increase --service-code codebuild --quota-code "
                    f"{code} --desired-value 1 --region {{region}}`", (rig.name,) if needed else ())]


def _build_size(quota: Mapping[str, Any]) -> str:
    """``Concurrently running builds for ARM/XLarge environment`` -> ``ARM/XLarge``."""
    name = str(quota.get("QuotaName", ""))
    return name.removeprefix("Concurrently running builds for ").removesuffix(" environment") or name


CHECK = Check("CodeBuild quota", each_rig(builds_own_image), codebuild_quota)
