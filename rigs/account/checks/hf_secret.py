"""The Hugging Face token secret in each region, where a rig's model needs one."""

from __future__ import annotations

from rigs import aws
from rigs.account.checks.base import FAIL, OK, Check, Finding, Scope, each_region, on_instances, unknown
from rigs.contract import HF_TOKEN_SECRET


def hf_secret(scope: Scope, region: str) -> list[Finding]:
    needing = [r for r in scope.rigs_in(region, on_instances) if getattr(r, "hf_token_required", False)]
    if not needing:
        return []
    names = tuple(r.name for r in needing)
    try:
        aws.call(scope.clients("secretsmanager", region).describe_secret, SecretId=HF_TOKEN_SECRET, attempts=3)
    except Exception as exc:  # noqa: BLE001
        if aws.error_code(exc) == "ResourceNotFoundException":
            return [Finding("HF token secret", ", ".join(names), region, FAIL,
                            f"{HF_TOKEN_SECRET} is missing; the model is gated on the Hugging Face Hub",
                            f"`aws secretsmanager create-secret --name {HF_TOKEN_SECRET} --secret-string "
                            "<token> --region {region}`", names)]
        return [unknown("HF token secret", ", ".join(names), region, exc, "secretsmanager")]
    return [Finding("HF token secret", ", ".join(names), region, OK, f"{HF_TOKEN_SECRET} exists")]


CHECK = Check("HF token secret", each_region, hf_secret)
