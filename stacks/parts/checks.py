"""cdk-nag wiring and reasoned acknowledgments; reasoned checkov skips.

cdk-nag 3 runs as a validation plugin (the v2 ``Aspects``/``NagSuppressions`` API
crashes on it). An acknowledgment sits next to the construct that needs it and always
carries the specific reason the finding does not apply.

checkov runs over the synthesized templates in the test suite (``tests/stacks/test_checkov.py``)
and reads skips from each resource's ``checkov`` metadata; :func:`skip_checkov` writes them,
next to the construct, with the same rule: a specific reason or nothing.
"""

from __future__ import annotations

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks
from constructs import IConstruct


def add_nag_checks(app: cdk.App) -> None:
    """Run the AwsSolutions pack over every stack of ``app`` at synth."""
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app, verbose=True))


def acknowledge(construct: IConstruct, rule_id: str, reason: str) -> None:
    """Acknowledge one cdk-nag finding on ``construct`` (and its children), with a reason."""
    if len(reason) < 20:
        raise ValueError(f"acknowledgment of {rule_id} needs a specific reason, got {reason!r}")
    cdk.Validations.of(construct).acknowledge(cdk.Acknowledgment(id=rule_id, reason=reason))


def skip_checkov(construct: IConstruct, check_id: str, reason: str) -> None:
    """Skip one checkov check on ``construct``'s CloudFormation resource, with a reason.

    Writes ``{"checkov": {"skip": [{"id": ..., "comment": ...}]}}`` into the resource's
    template metadata, where checkov reads it; several skips on one resource add up.
    """
    resource = construct if isinstance(construct, cdk.CfnResource) else construct.node.default_child
    if not isinstance(resource, cdk.CfnResource):
        raise TypeError(f"{construct.node.path} has no CloudFormation resource to skip {check_id} on")
    if len(reason) < 40:
        raise ValueError(f"skipping checkov {check_id} needs a specific reason, got {reason!r}")
    skips = list((resource.get_metadata("checkov") or {}).get("skip", []))
    skips.append({"id": check_id, "comment": reason})
    resource.add_metadata("checkov", {"skip": skips})
