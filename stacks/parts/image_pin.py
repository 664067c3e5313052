"""Refuse, at deploy time, an image that has no digest pinned for the stack's region."""

from __future__ import annotations

import aws_cdk as cdk
from constructs import Construct

OVERRIDE_PARAMETER = "DeployUnpinnedImageIn"
"""The stack parameter that lets a deploy go ahead by tag in one named region, deliberately."""


class RequirePinnedImage(Construct):
    """CloudFormation refuses to create or update the stack, with ``message``, unless overridden.

    A template rule (the mechanism of CDK's own bootstrap-version check) asserts that the
    parameter ``DeployUnpinnedImageIn`` names the stack's region; its default is empty, so
    a deploy fails at once with ``message`` while synth, ``cdk list`` and ``cdk destroy``
    (rules are not checked on delete) keep working. Deploying the tag as it is stays
    possible on purpose: ``--parameters <Stack>:DeployUnpinnedImageIn=<region>``.
    The same message is a synth warning, so ``cdk deploy`` shows it before it starts.
    """

    def __init__(self, scope: Construct, id_: str, *, region: str, message: str) -> None:
        super().__init__(scope, id_)
        override = cdk.CfnParameter(
            self, "Override", type="String", default="",
            description="Deploy the image by tag although no digest is pinned for this region: give the region")
        override.override_logical_id(OVERRIDE_PARAMETER)
        stack = cdk.Stack.of(self).stack_name
        full = (f"{message} To deploy the tag as it is: --parameters "
                f"{stack}:{OVERRIDE_PARAMETER}={region}.")
        cdk.CfnRule(self, "Rule", assertions=[cdk.CfnRuleAssertion(
            assert_=cdk.Fn.condition_equals(override.value_as_string, region), assert_description=full)])
        cdk.Annotations.of(self).add_warning_v2("aws-inference:unpinned-image", full)
