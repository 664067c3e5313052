"""The account's plan (the Free Tier API): a Free-plan account launches no rig until it is upgraded to the Paid
plan."""

from __future__ import annotations

from typing import Any

from rigs import aws
from rigs.account import permissions
from rigs.account.checks.base import FAIL, OK, WARN, Check, Finding, Scope, the_account, unknown

ACCOUNT_PLAN = "Account plan"

FREE_TIER_REGION = "us-east-1"
"""Where the Free Tier API answers for the account (``freetier``, a global service)."""


def account_plan(scope: Scope) -> list[Finding]:
    """The Free Tier API's account plan: a Free-plan account launches only Free Tier instance types, so no rig.

    Only an answer that is certain blocks: ``FREE`` with credits left or an expiry date (a Free plan that is
    running). What the API answers for other accounts (those made before the plans, for one) is not
    published, so ``FREE`` without either is a warning with the fix, and ``up``/``rehearse`` can pass the row
    by name (``--skip-check account-plan``).
    """
    try:
        state = aws.call(scope.clients("freetier", FREE_TIER_REGION).get_account_plan_state, attempts=3)
    except Exception as exc:  # noqa: BLE001 - classified below
        if aws.error_code(exc) == "ResourceNotFoundException":
            return [Finding(ACCOUNT_PLAN, "", None, OK, "no Free Tier account plan (an account from before "
                            "the Free and Paid plans)")]
        if permissions.denied(exc) and not _names_an_iam_refusal(exc):
            return [_billing_access_off(exc)]
        return [unknown(ACCOUNT_PLAN, "", None, exc, "freetier")]
    plan, status = state.get("accountPlanType", "?"), state.get("accountPlanStatus", "?")
    if plan != "FREE":
        return [Finding(ACCOUNT_PLAN, "", None, OK, f"{plan.title()} plan ({status.lower()})")]
    credits = state.get("accountPlanRemainingCredits") or {}
    expires = state.get("accountPlanExpirationDate")
    known = [f"{credits['amount']:g} {credits.get('unit', 'USD')} of credits left"] if "amount" in credits else []
    known += [f"ends {_day(expires)}"] if expires else []
    if not known:
        return [Finding(ACCOUNT_PLAN, "", None, WARN,
                        f"Free plan ({status.lower()}) without credits or an end date: not certain, so it blocks "
                        "nothing; on the Free plan launches fail with InvalidParameterCombination (not eligible for "
                        "Free Tier)", f"check the plan in the Billing and Cost Management console; if it is Free, "
                        f"{aws.FREE_PLAN_FIX}")]
    return [Finding(ACCOUNT_PLAN, "", None, FAIL,
                    f"Free plan ({status.lower()}, {', '.join(known)}): it launches only Free Tier instance types, "
                    "none of the rigs' (launches fail with InvalidParameterCombination: not eligible for Free Tier)",
                    f"{aws.FREE_PLAN_FIX}; if the account is on the Paid plan after all, `up --doctor` and "
                    "`rehearse` pass this row with `--skip-check account-plan`",
                    tuple(r.name for r in scope.rigs))]


def _day(value: Any) -> str:
    """A timestamp botocore parsed (a datetime) or left as text, as its UTC day."""
    return value.date().isoformat() if hasattr(value, "date") else str(value)[:10]


def _names_an_iam_refusal(exc: BaseException) -> bool:
    """Whether an access denial says the caller's IAM policy refused the action (``not authorized to perform``)."""
    message = str(getattr(exc, "response", {}).get("Error", {}).get("Message") or "")
    return "not authorized to perform" in message.lower()


def _billing_access_off(exc: BaseException) -> Finding:
    """A refusal of the Free Tier API that names no IAM action: as when the account's IAM access to billing
    information is off (then no IAM policy lets a user or role read the plan, and attaching one would not help)."""
    return Finding(ACCOUNT_PLAN, "", None, WARN,
                   f"not checked: {aws.describe_error(exc, 'freetier')} (a refusal naming no IAM action, as when IAM "
                   "access to billing information is off for the account)",
                   "the root user turns on 'IAM user and role access to Billing information' (the account menu, "
                   "Account); until then the plan is unknown, and this row blocks nothing")


CHECK = Check(ACCOUNT_PLAN, the_account, account_plan)
