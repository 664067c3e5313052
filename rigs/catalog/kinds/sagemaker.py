"""The SageMaker rig: a real-time endpoint running AWS's vLLM container on one ``ml.`` instance.

It answers on SageMaker's terms: an endpoint (:attr:`SageMakerRig.on_endpoint`), its image in AWS's regional registry
pinned per region, its context and the way another model is served on it in the container's ``SM_VLLM_*``
variables (:meth:`SageMakerRig.serving`)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal, Mapping

from pydantic import StrictInt, field_validator

from rigs.catalog.checks import Quoted, between
from rigs.catalog.kinds.base import DeployedRig, VariantName
from rigs.catalog.served import SageMakerVariant

_CONTEXT_VARIABLE = "SM_VLLM_MAX_MODEL_LEN"
_TOOL_VARIABLES = ("SM_VLLM_ENABLE_AUTO_TOOL_CHOICE", "SM_VLLM_TOOL_CALL_PARSER", "SM_VLLM_REASONING_PARSER")


class SageMakerRig(DeployedRig):
    """A SageMaker real-time endpoint running a serving container."""

    regional_images: ClassVar[bool] = True
    kind: Literal["sagemaker"]
    price_source: Literal["sagemaker-hosting"]
    runtime: Literal["sagemaker-vllm"]
    variants: Mapping[VariantName, SageMakerVariant] = {}
    container_env: Mapping[str, Quoted]
    startup_timeout_seconds: between(StrictInt, 60, 3600, "must be 60 to 3600")

    on_endpoint: ClassVar[bool] = True
    hf_token_refusal: ClassVar[str | None] = (
        "the SageMaker container would read the token from its environment, which the template holds: serve it on "
        "an EC2 rig with -c hf_token_parameter=NAME")

    @field_validator("instance_type")
    @classmethod
    def _ml_type(cls, instance_type: str) -> str:
        if not instance_type.startswith("ml."):
            raise ValueError(f"a SageMaker instance type starts with ml., got {instance_type!r}")
        return instance_type

    def context_setting(self) -> tuple[str | None, str]:
        """Its container's ``SM_VLLM_MAX_MODEL_LEN``."""
        return self.container_env.get(_CONTEXT_VARIABLE), f"container_env {_CONTEXT_VARIABLE}"

    def serving(self, context: int, tensor_parallel: int, tool_call_parser: str | None,
                weights_bytes: int, data_parallel: int = 1,
                reasoning_parser: str | None = None) -> dict[str, Any]:
        """Its container's environment with the context, the tensor and data parallelism and the tool-call and
        reasoning parsers replaced (the weights are the container's to place; each ``SM_VLLM_<FLAG>`` is vLLM's
        ``--<flag>``)."""
        env = {k: v for k, v in self.container_env.items() if k not in _TOOL_VARIABLES}
        env.update({_CONTEXT_VARIABLE: str(context), "SM_VLLM_TENSOR_PARALLEL_SIZE": str(tensor_parallel)})
        if data_parallel > 1:
            env["SM_VLLM_DATA_PARALLEL_SIZE"] = str(data_parallel)
        if tool_call_parser:
            env.update({"SM_VLLM_ENABLE_AUTO_TOOL_CHOICE": "true", "SM_VLLM_TOOL_CALL_PARSER": tool_call_parser})
        if reasoning_parser:
            env["SM_VLLM_REASONING_PARSER"] = reasoning_parser
        return {"container_env": env}
