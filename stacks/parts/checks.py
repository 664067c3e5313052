"""cdk-nag wiring and reasoned acknowledgments.

cdk-nag 3 runs as a validation plugin (the v2 ``Aspects``/``NagSuppressions`` API
crashes on it). An acknowledgment sits next to the construct that needs it and always
carries the specific reason the finding does not apply.
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
