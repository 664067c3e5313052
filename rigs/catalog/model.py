"""The typed rig catalog: ``catalog.yaml`` loaded and validated once; the door the rest of the code uses.

The catalog is a set of frozen pydantic models (``catalog.py``, one module per kind of rig in ``kinds/``,
``served.py``): every problem in the file is reported together, each with its field path. Their JSON
Schema is committed beside the file (``python -m rigs.catalog.schema --write``).

This module loads no model until one is asked for (the classes are attributes resolved on first use), so
a command that only prints its options, such as ``python -m agent.run --help``, does not load pydantic.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from rigs.catalog.errors import CatalogError, UnknownRigError

if TYPE_CHECKING:
    from rigs.catalog.catalog import Catalog, RegionSpec
    from rigs.catalog.kinds import BIG_VARIANT, MAX_ROOT_VOLUME_GIB, BedrockBackend, DeployableRig, Ec2Rig, \
        NeuronRig, NeuronVllmRig, Rig, SageMakerRig, VllmRig
    from rigs.catalog.served import REGION_PLACEHOLDER, ContainerImage, NeuronVariant, NeuronVllm, SageMakerVariant, \
        Variant, VllmVariant, Weights

__all__ = ["BIG_VARIANT", "CATALOG_PATH", "MAX_ROOT_VOLUME_GIB", "REGION_PLACEHOLDER", "BedrockBackend", "Catalog",
           "CatalogError", "ContainerImage", "DeployableRig", "Ec2Rig", "NeuronRig", "NeuronVariant", "NeuronVllm",
           "NeuronVllmRig", "RegionSpec",
           "Rig", "SageMakerRig", "SageMakerVariant", "UnknownRigError", "Variant", "VllmRig", "VllmVariant",
           "Weights", "load_catalog", "parse_catalog", "weights_for"]

CATALOG_PATH = Path(__file__).parent.parent / "catalog.yaml"


def load_catalog(path: Path = CATALOG_PATH) -> "Catalog":
    """Load and validate the catalog; raise CatalogError listing every problem."""
    return parse_catalog(path.read_text(encoding="utf-8"), source=str(path.name))


def parse_catalog(text: str, source: str = "catalog") -> "Catalog":
    """The catalog in ``text``; raise CatalogError listing every problem (``source`` names the file)."""
    from rigs.catalog import catalog

    return catalog.parse_catalog(text, source)


def weights_for(rig: "Rig", model_id: str, catalog: "Catalog | None" = None) -> "Weights | None":
    """What ``rig`` serves when it serves ``model_id``: its own weights, or those of the variant with that
    model, or (given the ``catalog``) those of the models section's entry for it served with the rig's engine
    (``-c model.<rig>=ID``); None for any other model (an override the catalog says nothing about)."""
    if model_id == rig.model_id:
        return rig.weights
    for variant in getattr(rig, "variants", {}).values():
        if getattr(variant, "model_id", None) == model_id:
            return variant.weights
    card = catalog.models.get(model_id) if catalog is not None else None
    return card.weights(rig.weights.engine) if card is not None else None


def __getattr__(name: str) -> Any:
    """The catalog's models and constants, loaded when first asked for."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from rigs.catalog import catalog, kinds, served

    return next(getattr(m, name) for m in (catalog, kinds, served) if hasattr(m, name))
