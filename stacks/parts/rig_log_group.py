"""The CloudWatch log group a rig ships its user-data and server logs to."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_logs as logs
from constructs import Construct

from .checks import skip_checkov
from .instance_profile import RIG_LOG_GROUP_PREFIX


class RigLogGroup(Construct):
    """``/aws-inference/<rig>``: the one place to diagnose a rig that did not come up.

    The name is fixed, not generated, because the shared instance role may write only
    under ``/aws-inference/``. Streams are ``<instance-id>/user-data`` (the boot script)
    and ``<instance-id>/server`` (the container, through Docker's awslogs driver).

    Attributes:
        log_group: the group (two weeks' retention, deleted with the stack).
    """

    def __init__(self, scope: Construct, id_: str, *, rig_name: str,
                 retention: logs.RetentionDays = logs.RetentionDays.TWO_WEEKS) -> None:
        super().__init__(scope, id_)
        self.log_group = logs.LogGroup(
            self,
            "Group",
            log_group_name=f"{RIG_LOG_GROUP_PREFIX}{rig_name}",
            retention=retention,
            removal_policy=cdk.RemovalPolicy.DESTROY,
        )
        skip_checkov(self.log_group, "CKV_AWS_158",
                     "Boot-script and server logs, never a secret (the boot script never traces; the Hugging Face "
                     "token goes to a root-only file, never to a log); CloudWatch Logs encrypts them at rest with a "
                     "service key, and a customer-managed key would bill every month in every region.")
