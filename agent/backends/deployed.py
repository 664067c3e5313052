"""A rig this app deployed, as a backend: an EC2 rig once its port forward answers, or a SageMaker endpoint, each
found by discovery (its stack's outputs) or named by ``SM_ENDPOINT``. What it is, pins and should serve is its
kind's to say (``rigs/catalog/kinds/``), for the rig as its stack deployed it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from .backend import Backend
from .expected import catalog_expectation, catalog_metadata

if TYPE_CHECKING:
    from rigs.catalog.model import DeployableRig, Ec2Rig, SageMakerRig


def _deployed(rig: DeployableRig, model_id: str, region: str, reach: Mapping[str, str], *,
              metadata: Mapping[str, str], expected: dict[str, Any], context_tokens: int | None,
              read: Mapping[str, Any] | None = None) -> Backend:
    """``rig`` in ``region`` serving ``model_id``, reached as ``reach`` says (``base_url``, or ``region`` and
    ``endpoint_name``); ``metadata`` follows the catalog's."""
    provenance = {"expected": expected, **({"read": read} if read is not None else {})}
    return Backend(name=rig.name, label=rig.label, kind=rig.backend_kind, model_id=model_id,
                   tool_calls=rig.tool_calls, **reach, **rig.stated_limits(context_tokens),
                   metadata={**catalog_metadata(rig, region, model_id), **metadata}, provenance=provenance)


def forwarded_backend(rig: Ec2Rig, model_id: str, region: str, base_url: str, *, metadata: Mapping[str, str],
                      read: Mapping[str, Any], instance_type: str | None, context_tokens: int | None) -> Backend:
    """An EC2 rig in ``region`` once its port forward answers at ``base_url``: ``metadata`` is what discovery and the
    forward found, ``read`` what its instance reported; its stack's ``instance_type`` and ``context_tokens``."""
    expected = catalog_expectation(rig, model_id, region, instance_type=instance_type, context_tokens=context_tokens)
    return _deployed(rig, model_id, region, {"base_url": base_url}, metadata=metadata, expected=expected,
                     context_tokens=context_tokens, read=read)


def endpoint_backend(rig: SageMakerRig, model_id: str, region: str, endpoint_name: str, *,
                     metadata: Mapping[str, str], image_digest: str | None = None, instance_type: str | None = None,
                     context_tokens: int | None = None) -> Backend:
    """A SageMaker endpoint in ``region``, reached through the SageMaker runtime API: ``metadata`` is what found it;
    its stack's ``image_digest``, ``instance_type`` and ``context_tokens`` where discovery read them (None for one
    named by ``SM_ENDPOINT``)."""
    expected = catalog_expectation(rig, model_id, region, image_digest, instance_type=instance_type,
                                   context_tokens=context_tokens)
    return _deployed(rig, model_id, region, {"region": region, "endpoint_name": endpoint_name}, metadata=metadata,
                     expected=expected, context_tokens=context_tokens)
