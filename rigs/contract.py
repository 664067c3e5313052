"""Names shared by the CDK app, the provisioning library and the agent.

Stack names, tag keys and stack-output keys are defined here once. `stacks/` writes
them, `rigs/` and `agent/` read them; nothing else spells them out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

REGIONS: tuple[str, ...] = ("us-east-1", "us-east-2", "us-west-1", "us-west-2")
"""The four US regions the app deploys to, sweeps and destroys in."""

TAG_MANAGED_BY = "ManagedBy"
MANAGED_BY = "aws-inference"
TAG_RIG = "Rig"

HF_TOKEN_SECRET = f"{MANAGED_BY}/hf-token"
"""Secrets Manager secret a rig reads its optional Hugging Face token from at boot (by name only)."""

BASE_STACK_PREFIX = "InferenceBase-"
BOOTSTRAP_STACK = "CDKToolkit"
"""The stack ``cdk bootstrap`` creates in each environment (the default qualifier, which ``cdk.json`` keeps)."""


def base_stack_name(region: str) -> str:
    """Name of the per-region base stack, e.g. ``InferenceBase-us-east-2``."""
    return f"{BASE_STACK_PREFIX}{region}"


class OutputKey:
    """CloudFormation output keys of a rig stack (EC2 rig or SageMaker endpoint)."""

    RIG = "RigName"
    REGION = "RigRegion"
    RUNTIME = "Runtime"
    MODEL_ID = "ModelId"
    INSTANCE_TYPE = "InstanceType"
    REMOTE_PORT = "RemotePort"
    AUTO_SCALING_GROUP = "AutoScalingGroupName"
    ENDPOINT_NAME = "EndpointName"
    LOG_GROUP = "LogGroupName"
    ZONES = "RigZones"
    """EC2 rigs: the zones the Auto Scaling group may launch in (offering the type), comma-separated."""
    EXPIRES_AT = "ExpiresAt"
    """When the rig's lifetime ends and its compute is released (UTC, ISO 8601)."""
    IMAGE_DIGEST = "ImageDigest"
    """SageMaker rigs: the digest of the image the model runs (the catalog's pin for the region, else
    the one its tag pointed to in the region's registry when the stack deployed)."""
    LOAD_GENERATOR_URL = "LoadGeneratorUrl"
    """EC2 rigs: ``s3://bucket/key`` of the rig's load generator (``--load-from rig``), a CDK asset."""
    LOAD_GENERATOR_SHA256 = "LoadGeneratorSha256"
    """EC2 rigs: its sha256, checked on the instance before it runs."""
    LOAD_RESULTS_BUCKET = "LoadResultsBucket"
    """EC2 rigs: the base stack's encrypted bucket that load jobs and their results pass through."""
    CONTEXT_TOKENS = "ContextTokens"
    """vLLM rigs: the tokens one sequence may hold, as the server is told (``--max-model-len``,
    ``SM_VLLM_MAX_MODEL_LEN``): ``-c max_model_len.<rig>`` and ``-c model.<rig>`` may change the catalog's."""


class ImageOutputKey:
    """CloudFormation output keys of the one-time g5g image build stack."""

    IMAGE_URI = "ImageUri"
    BUILD_PROJECT = "BuildProjectName"
    START_BUILD = "StartBuildCommand"


class ContractError(ValueError):
    """A stack's outputs do not follow the contract."""


@dataclass(frozen=True, slots=True)
class RigOutputs:
    """What the agent needs to reach one deployed rig, parsed from its stack outputs.

    EC2 rigs carry the Auto Scaling group that holds their one instance and the port
    the server listens on; SageMaker rigs carry the endpoint name.
    """

    rig: str
    region: str
    runtime: str
    model_id: str
    instance_type: str
    remote_port: int | None
    auto_scaling_group: str | None
    endpoint_name: str | None
    log_group: str | None
    zones: tuple[str, ...] = ()
    expires_at: str | None = None
    image_digest: str | None = None
    context_tokens: int | None = None
    load_generator_url: str | None = None
    load_generator_sha256: str | None = None
    load_results_bucket: str | None = None
    """The three ``--load-from rig`` needs; None on a rig deployed before they were outputs."""

    @classmethod
    def parse(cls, outputs: Mapping[str, str]) -> "RigOutputs":
        """Build from a ``{OutputKey: OutputValue}`` mapping; raise ContractError if incomplete."""
        required = (OutputKey.RIG, OutputKey.REGION, OutputKey.RUNTIME, OutputKey.MODEL_ID,
                    OutputKey.INSTANCE_TYPE)
        missing = [key for key in required if not outputs.get(key)]
        has_instance = bool(outputs.get(OutputKey.AUTO_SCALING_GROUP))
        has_endpoint = bool(outputs.get(OutputKey.ENDPOINT_NAME))
        if not has_instance and not has_endpoint:
            missing.append(f"{OutputKey.AUTO_SCALING_GROUP} or {OutputKey.ENDPOINT_NAME}")
        port_text = outputs.get(OutputKey.REMOTE_PORT)
        if has_instance and not port_text:
            missing.append(OutputKey.REMOTE_PORT)
        if missing:
            raise ContractError(f"stack outputs lack {', '.join(missing)}")
        try:
            port = int(port_text) if port_text else None
        except ValueError:
            raise ContractError(f"{OutputKey.REMOTE_PORT} is not a port number: {port_text!r}") from None
        context_text = outputs.get(OutputKey.CONTEXT_TOKENS) or ""
        if context_text and not context_text.isdigit():
            raise ContractError(f"{OutputKey.CONTEXT_TOKENS} is not a number of tokens: {context_text!r}")
        return cls(
            rig=outputs[OutputKey.RIG],
            region=outputs[OutputKey.REGION],
            runtime=outputs[OutputKey.RUNTIME],
            model_id=outputs[OutputKey.MODEL_ID],
            instance_type=outputs[OutputKey.INSTANCE_TYPE],
            remote_port=port,
            auto_scaling_group=outputs.get(OutputKey.AUTO_SCALING_GROUP) or None,
            endpoint_name=outputs.get(OutputKey.ENDPOINT_NAME) or None,
            log_group=outputs.get(OutputKey.LOG_GROUP) or None,
            zones=tuple(z for z in (outputs.get(OutputKey.ZONES) or "").split(",") if z),
            expires_at=outputs.get(OutputKey.EXPIRES_AT) or None,
            image_digest=outputs.get(OutputKey.IMAGE_DIGEST) or None,
            context_tokens=int(context_text) if context_text else None,
            load_generator_url=outputs.get(OutputKey.LOAD_GENERATOR_URL) or None,
            load_generator_sha256=outputs.get(OutputKey.LOAD_GENERATOR_SHA256) or None,
            load_results_bucket=outputs.get(OutputKey.LOAD_RESULTS_BUCKET) or None,
        )
