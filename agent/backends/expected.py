"""What the catalog says of a rig a backend reaches, for the report: what it pins and serves (its metadata), the name
of the model it serves, and what should serve it (its expectation). Each rig's kind answers
(``rigs/catalog/kinds/``); this module asks it, and adds the agent's part: the ``weights_*`` keys, whether the
backend kind is called in a service tier, and the fit's prediction.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rigs.catalog import model as catalog_model  # the catalog's classes load on first use, not to print --help
from rigs.catalog.facts import Deployment
from rigs.catalog.model import weights_for
from rigs.catalog.price_terms import STANDARD_TIER

from ..bench.results.constants import MODEL_NAME_METADATA, WEIGHTS_METADATA_PREFIX
from ..kinds import descriptor

if TYPE_CHECKING:
    from rigs.catalog.model import Rig


def catalog_metadata(rig: Rig, region: str | None = None, model_id: str | None = None) -> dict[str, str]:
    """What the catalog pins for a rig, for the report (the image and flags it was deployed with), and
    with ``model_id`` what it states that model's weights are (``weights_*``: only when the catalog
    lists that model for the rig or in its models section, never for an override it says nothing about).

    ``region`` fills a regional registry (the SageMaker image's ``{region}``) and picks that
    region's digest; without it a regional image is shown with ``<region>``.
    """
    meta = {"runtime": rig.runtime}
    weights = weights_for(rig, model_id, catalog_model.load_catalog()) if model_id else None
    if weights is not None:
        meta.update(weights.metadata(WEIGHTS_METADATA_PREFIX))
    meta.update(rig.pinned_metadata(region))
    return meta


def model_name(rig: Rig, model_id: str) -> dict[str, str]:
    """``{"model_name": ...}``: the catalog's name of ``model_id`` served on ``rig`` (its own, a variant's, the models
    section's), for a custom server whose weights are not stated; empty where the catalog does not know the id."""
    weights = weights_for(rig, model_id, catalog_model.load_catalog())
    return {MODEL_NAME_METADATA: weights.model} if weights is not None else {}


def catalog_expectation(rig: Rig, model_id: str, region: str | None = None, deployed_digest: str | None = None,
                        tier: str = STANDARD_TIER, instance_type: str | None = None,
                        context_tokens: int | None = None) -> dict[str, Any]:
    """What the catalog says serves ``rig`` deployed with ``model_id`` in ``region`` (its kind's
    :meth:`~rigs.catalog.kinds.base.RigBase.expected`): the stack's outputs where given (``deployed_digest``,
    ``instance_type``, ``context_tokens``), Bedrock's service ``tier`` where its backend kind is called in one, and
    the KV cache ``python -m rigs fit`` predicts (:func:`rigs.sizing.fit.expected_cache`)."""
    from rigs.sizing.fit import expected_cache

    tiered = descriptor(rig.backend_kind).service_tiers
    at = Deployment(region=region, image_digest=deployed_digest, instance_type=instance_type,
                    context_tokens=context_tokens, service_tier=tier if tiered else None)
    return rig.expected(model_id, at, expected_cache)
