"""The backends the environment configures: the reference's variables work unchanged (``BEDROCK_MODEL``, ``G6_URL``,
``SM_ENDPOINT``, ``BACKENDS=a,b`` ...), Bedrock's OpenAI-compatible endpoint takes the OpenAI SDK's Bedrock-provider
variables; model defaults come from the rig catalog."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

from .backend import Backend, normalize_base_url, parse_names, sort_key
from .custom import custom_backend
from .deployed import endpoint_backend
from .mantle import MantleSettings

if TYPE_CHECKING:
    from rigs.catalog.model import Catalog

DEFAULT_SAGEMAKER_REGION = "us-east-2"
"""The reference's ``SM_REGION`` default, used when the catalog lists no region."""

_URL_VARS = {"g6": "G6", "g5g": "G5G", "inf2": "INF2", "trn1": "TRN1"}


@dataclass(frozen=True, slots=True)
class EnvConfig:
    """The backends the environment configures, and the names it restricts the run to."""

    backends: tuple[Backend, ...]
    """Backends fully given by variables: URLs for EC2 rigs and ``SM_ENDPOINT``. Bedrock is
    not here: it is always on, and needs AWS credentials, so the caller decides."""
    bedrock_model: str
    bedrock_region: str
    mantle: MantleSettings
    only: tuple[str, ...] | None
    """``BACKENDS=a,b`` parsed, or None."""


def from_env(env: Mapping[str, str], catalog: Catalog, region: str | None = None) -> EnvConfig:
    """Read the reference's environment variables.

    Args:
        env: the environment (``os.environ``).
        catalog: the rig catalog: model ids, labels and flags default from it.
        region: ``--region`` from the command line; it beats ``BEDROCK_REGION`` and
            ``SM_REGION``, which beat the catalog.

    Raises:
        UnknownBackendError: ``BACKENDS`` names an unknown backend.
        ValueError: a ``*_URL`` is not an http(s) URL.
    """

    def get(key: str) -> str | None:
        value = env.get(key, "").strip()
        return value or None

    bedrock = catalog.get("bedrock")
    bedrock_model = get("BEDROCK_MODEL") or bedrock.model_id
    bedrock_region = region or get("BEDROCK_REGION") or bedrock.regions[0]
    mantle = MantleSettings.from_env(get, catalog, region)

    backends: list[Backend] = []
    for name, prefix in _URL_VARS.items():
        url = get(f"{prefix}_URL")
        if url is None:
            continue
        rig = catalog.get(name)
        _reached(rig, rig.on_instances, "Ec2Rig")
        backends.append(custom_backend(rig, prefix, normalize_base_url(url), get(f"{prefix}_MODEL"),
                                       get(f"{prefix}_INSTANCE_TYPE")))
    endpoint = get("SM_ENDPOINT")
    if endpoint is not None:
        rig = catalog.get("sagemaker")
        _reached(rig, rig.on_endpoint, "SageMakerRig")
        sm_region = region or get("SM_REGION") or (rig.regions[0] if rig.regions else DEFAULT_SAGEMAKER_REGION)
        backends.append(endpoint_backend(rig, get("SM_MODEL") or rig.model_id, sm_region, endpoint, metadata={
            "region": sm_region, "reached_via": f"SM_ENDPOINT={endpoint} in {sm_region}"}))
    backends.sort(key=lambda b: sort_key(b.name))
    return EnvConfig(backends=tuple(backends), bedrock_model=bedrock_model,
                     bedrock_region=bedrock_region, mantle=mantle, only=parse_names(get("BACKENDS")))


def _reached(rig: Any, as_named: bool, what: str) -> None:
    """ValueError unless the variable's rig is what it names (``as_named``: its kind's answer; ``what``: that kind)."""
    if not as_named:
        raise ValueError(f"catalog rig {rig.name!r} is a {rig.kind} rig, not {what}")
