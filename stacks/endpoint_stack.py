"""The SageMaker endpoint stack: AWS's vLLM container on one ml.* instance, in any region of the rig."""

from __future__ import annotations

import aws_cdk as cdk
from constructs import Construct

from rigs.catalog.model import SageMakerRig
from rigs.contract import MANAGED_BY, TAG_MANAGED_BY, TAG_RIG, OutputKey
from rigs.deploy.options import RigOptions

from .parts.custom_resources import EndpointChatProbe
from .parts.images.pin import PinnedImage
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
        if not rig.on_endpoint:
            raise TypeError(f"InferenceEndpointStack needs a SageMaker rig, got {rig.name} ({rig.kind})")
        super().__init__(scope, id_, tags={TAG_MANAGED_BY: MANAGED_BY, TAG_RIG: rig.name}, **kwargs)
        cdk.Tags.of(self).add(TAG_RIG, rig.name)
        image = PinnedImage(self, "Image", image=rig.image, region=options.region)
        endpoint = SageMakerEndpoint(
            self,
            "Endpoint",
            image=image.uri,
            image_repository_arn=image.repository_arn,
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
                        specific={OutputKey.ENDPOINT_NAME: endpoint.endpoint_name, OutputKey.IMAGE_DIGEST: image.digest})
