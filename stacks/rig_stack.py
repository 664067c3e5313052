"""An EC2 rig stack: one server instance that answers chat completions, reached through SSM."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from rigs.contract import MANAGED_BY, TAG_MANAGED_BY, TAG_RIG, OutputKey
from rigs.deploy.options import RigOptions
from rigs.userdata import SHEBANG, BootSettings, render_body

from .base_stack import InferenceBaseStack
from .parts.boot_scripts import BootScripts, check_user_data
from .parts.custom_resources import OfferedSubnets
from .parts.images.pull import EcrPullGrant, ServerImageLocation
from .parts.instance_profile import HfTokenGrant
from .parts.lifetime import Lifetime, ReleaseAction
from .parts.load_generator import LoadGenerator
from .parts.rig_instance_group import RigInstanceGroup
from .parts.rig_log_group import RigLogGroup
from .parts.rig_outputs import add_rig_outputs


class InferenceRigStack(cdk.Stack):
    """One EC2 rig in the region of ``base``: its instance group, logs, lifetime and outputs.

    ``cdk deploy`` returns when the server has answered a real chat completion (or
    fails with the boot script's reason). The boot scripts ship as an S3 asset the user data
    fetches and checks (``stacks/parts/boot_scripts.py``). The instance has no inbound rule; the agent
    finds it through the outputs (``rigs/contract.py``) and reaches it over SSM.
    """

    def __init__(self, scope: Construct, id_: str, *, options: RigOptions, base: InferenceBaseStack,
                 **kwargs) -> None:
        rig = options.rig
        if not rig.on_instances or options.image is None:
            raise TypeError(f"InferenceRigStack needs an EC2 rig, got {rig.name} ({rig.kind})")
        super().__init__(scope, id_, tags={TAG_MANAGED_BY: MANAGED_BY, TAG_RIG: rig.name}, **kwargs)
        cdk.Tags.of(self).add(TAG_RIG, rig.name)
        if base.region != self.region:
            raise ValueError(f"rig {rig.name} in {self.region} needs the base stack of {self.region}, got {base.region}")
        image = ServerImageLocation(self, options.image)

        logs = RigLogGroup(self, "Logs", rig_name=rig.name)
        zones = OfferedSubnets(self, "Zones", subnet_ids=[s.subnet_id for s in base.network.vpc.public_subnets],
                               instance_type=rig.instance_type, allowed_zones=options.zones)
        machine_image = (ec2.MachineImage.generic_linux({options.region: options.ami}) if options.ami else
                         ec2.MachineImage.from_ssm_parameter(rig.ami_ssm_parameter, os=ec2.OperatingSystemType.LINUX))
        user_data = ec2.UserData.for_linux(shebang=SHEBANG)
        scripts = BootScripts(self, "BootScripts", rig=rig, role=base.instance_profile.role)
        group = RigInstanceGroup(
            self,
            "Rig",
            instance_type=rig.instance_type,
            architecture=rig.architecture,
            machine_image=machine_image,
            root_volume_gib=rig.root_volume_gib,
            root_free_gib=rig.root_free_gib,
            security_group=base.security_group.security_group,
            instance_profile=base.instance_profile.instance_profile,
            subnet_ids=zones.subnet_ids,
            zones=zones.zones,
            rig_tag=(TAG_RIG, rig.name),
            user_data=user_data,
            ready_timeout=cdk.Duration.minutes(rig.ready_timeout_minutes),
        )
        # Above the launch template's own Name tag (its construct path), on instances and volumes alike.
        cdk.Tags.of(group).add("Name", f"{MANAGED_BY}-{rig.name}", priority=200)
        user_data.add_commands(render_body(rig, BootSettings(
            region=options.region,
            stack_name=self.stack_name,
            signal_resource=group.signal_resource,
            wait_handle_url=group.wait_handle_url,
            log_group=logs.log_group.log_group_name,
            image=image.reference,
            registry=image.registry,
            ready_timeout_seconds=rig.ready_timeout_minutes * 60,
            hf_token_parameter=options.hf_token_parameter or "",
            boot_scripts_url=scripts.url,
            boot_scripts_sha256=scripts.sha256,
        )))
        self.user_data_bytes = check_user_data(self, rig.name, user_data)
        group.group.node.add_dependency(scripts.policy)
        if options.hf_token_parameter:
            token = HfTokenGrant(self, "HfToken", role=base.instance_profile.role,
                                 parameter_name=options.hf_token_parameter)
            group.group.node.add_dependency(token.policy)
        if image.repository_arn:
            pull = EcrPullGrant(self, "ImagePull", role=base.instance_profile.role, repository_arn=image.repository_arn)
            group.group.node.add_dependency(pull.policy)

        lifetime = Lifetime(
            self,
            "Lifetime",
            lifetime_minutes=options.lifetime_minutes,
            release=ReleaseAction.scale_group_to_zero(group.group),
            revision=cdk.Fn.join("/", [group.launch_template.latest_version_number, zones.zones]),
        )

        load = LoadGenerator(self, "LoadGenerator")
        add_rig_outputs(self, rig=rig, region=options.region, lifetime_expires_at=lifetime.expires_at,
                        log_group_name=logs.log_group.log_group_name,
                        specific={OutputKey.REMOTE_PORT: str(rig.port),
                                  OutputKey.AUTO_SCALING_GROUP: group.group_name,
                                  OutputKey.ZONES: zones.zones,
                                  OutputKey.LOAD_GENERATOR_URL: load.url,
                                  OutputKey.LOAD_GENERATOR_SHA256: load.sha256,
                                  OutputKey.LOAD_RESULTS_BUCKET: base.load_results.bucket.bucket_name})
