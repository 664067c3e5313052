"""The SageMaker endpoint stack: AWS's vLLM container on one ml.* instance."""

from __future__ import annotations

import aws_cdk as cdk
from constructs import Construct

from rigs.catalog import SageMakerRig
from rigs.contract import MANAGED_BY, TAG_MANAGED_BY, TAG_RIG, OutputKey
from rigs.deploy_options import RigOptions, ecr_image

from .parts.custom_resources import EndpointChatProbe
from .parts.image_pin import RequirePinnedImage
from .parts.image_pull import ecr_repository_arn
from .parts.lifetime import Lifetime, ReleaseAction
from .parts.rig_outputs import add_rig_outputs
from .parts.sagemaker_endpoint import SageMakerEndpoint


def container_environment(rig: SageMakerRig) -> dict[str, str]:
    """The catalog's container environment plus the model to load and the name to serve it as."""
    return {**rig.container_env, "SM_VLLM_MODEL": rig.model_id, "SM_VLLM_SERVED_MODEL_NAME": rig.model_id}


class InferenceEndpointStack(cdk.Stack):
    """A SageMaker real-time endpoint that has answered a chat completion before deploy returns."""

    def __init__(self, scope: Construct, id_: str, *, options: RigOptions, **kwargs) -> None:
        rig = options.rig
        if not isinstance(rig, SageMakerRig):
            raise TypeError(f"InferenceEndpointStack needs a SageMaker rig, got {rig.name} ({rig.kind})")
        super().__init__(scope, id_, tags={TAG_MANAGED_BY: MANAGED_BY, TAG_RIG: rig.name}, **kwargs)
        cdk.Tags.of(self).add(TAG_RIG, rig.name)
        repository = rig.image.repository_in(options.region)
        registry = ecr_image(f"{repository}:{rig.image.tag}")
        if registry is None:
            raise ValueError(f"rig {rig.name}: {repository} is not an ECR repository")
        # SageMaker takes registry/repository:tag or registry/repository@digest, not both.
        digest = rig.image.digest_for(options.region)
        image = f"{repository}@{digest}" if digest else f"{repository}:{rig.image.tag}"
        if digest is None and rig.image.regional:
            RequirePinnedImage(self, "ImagePin", region=options.region, message=(
                f"{rig.name}: no digest of {repository}:{rig.image.tag} is pinned for "
                f"{options.region}, and a tag alone may resolve to another image there. Pin it from the "
                f"registry with `python -m rigs pins refresh --regions {options.region}` (needs AWS "
                f"credentials; rewrites rigs/catalog.yaml), or deploy to a pinned region: "
                f"{', '.join(r for r in rig.regions if rig.image.digest_for(r))}."))

        endpoint = SageMakerEndpoint(
            self,
            "Endpoint",
            image=image,
            image_repository_arn=ecr_repository_arn(repository=registry.repository, account=registry.account,
                                                    region=registry.region),
            environment=container_environment(rig),
            instance_type=rig.instance_type,
            startup_timeout_seconds=rig.startup_timeout_seconds,
        )
        EndpointChatProbe(self, "Ready", endpoint_name=endpoint.endpoint_name, endpoint_arn=endpoint.endpoint_arn,
                          model_id=rig.model_id)
        lifetime = Lifetime(
            self,
            "Lifetime",
            lifetime_minutes=options.lifetime_minutes,
            release=ReleaseAction.delete_endpoint(endpoint_name=endpoint.endpoint_name,
                                                  endpoint_arn=endpoint.endpoint_arn),
            revision=endpoint.endpoint_config.attr_endpoint_config_name,
        )
        add_rig_outputs(self, rig=rig, region=options.region, lifetime_expires_at=lifetime.expires_at,
                        log_group_name=endpoint.log_group_name,
                        specific={OutputKey.ENDPOINT_NAME: endpoint.endpoint_name})
