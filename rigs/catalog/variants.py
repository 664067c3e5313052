"""What a rig serves (:class:`Weights`) and its named variants, one model per runtime: what a variant may
replace depends on the runtime (a Neuron server's model is built into its image; the SageMaker image is
AWS's, pinned per region)."""

from __future__ import annotations

import re
from typing import Any, Mapping

from pydantic import Field, StrictFloat, StrictInt, StrictStr, ValidationInfo, field_validator, model_validator

from rigs.catalog.checks import Frozen, Quoted, Strings, between, checked, located
from rigs.catalog.images import Digest, ImageFields, ImageText

_MODEL_SOURCE = re.compile(r"^https://[a-z0-9.-]+\.[a-z]{2,}/\S+$")

Text = checked(StrictStr, lambda v: None if v.strip() else "must not be empty", minLength=1)
ModelId = Text
ReadyMinutes = between(StrictInt, 5, 120, "must be 5 to 120 minutes")
RootFreeGib = between(StrictInt, 1, 1024, "must be 1 to 1024 GiB")


def source_page(what: str) -> Any:
    """An ``https://`` address of ``what``'s public page."""
    return checked(StrictStr, lambda u: None if _MODEL_SOURCE.match(u) else f"must be an https:// address of {what}",
                   pattern=_MODEL_SOURCE.pattern)


class Weights(Frozen):
    """What a rig serves, as published: the model, the precision of its weights and what they take.

    Stated, not measured: the quality lane's report shows these beside the measured answers, and two
    rigs with the same model id, precision and engine serve the same weights with the same engine
    (their answers should agree; ``agent/bench/analysis/blocks/quality_pairs.py``).

    Attributes:
        model: The model family (``Gemma 4 E2B``, ``Amazon Nova Micro``): a difference between two
            families is a model difference, not a precision one.
        precision: How the weights are stored and computed (``W4A16``, ``fp16``, ``bf16``).
        bytes_per_weight: Bytes per weight of the quantized layers (W4A16: 0.5; group scales not
            counted); None where not published.
        memory_gib: The weights' memory on the device, GiB, from a published log or report; None
            where not published.
        memory_basis: Where ``memory_gib`` comes from, in a few words.
        engine: The serving engine and its version.
        source: The public page of the checkpoint (or of the model, for a managed service).
    """

    model: Text
    precision: Text
    bytes_per_weight: between(StrictFloat, 0, 4, "must be above 0 and at most 4", above=True) | None = None
    memory_gib: between(StrictFloat, 0, 1024, "must be above 0 and at most 1024", above=True) | None = None
    memory_basis: Text | None = Field(None, validate_default=True)
    engine: Text
    source: source_page("the checkpoint's (or model's) public page")

    @field_validator("memory_basis")
    @classmethod
    def _basis(cls, basis: str | None, info: ValidationInfo) -> str | None:
        if basis is None and info.data.get("memory_gib") is not None:
            raise ValueError("say where memory_gib comes from (a published log or report)")
        return basis

    def metadata(self, prefix: str) -> dict[str, str]:
        """The fields as metadata strings, each key ``prefix`` + the field's name; absent ones left out."""
        return {prefix + k: f"{v:g}" if isinstance(v, float) else str(v)
                for k, v in self.model_dump(exclude_none=True).items()}


class Variant(Frozen):
    """A named alternative build of a rig: each field given replaces the rig's (``container_env`` is
    merged into the rig's), the others stay. Selected per deploy with ``-c <rig>_variant=<name>``.

    ``model_source`` names the public page of a variant's checkpoint: a variant that changes the
    model must say where that model is published. The variant named ``big`` is the bigger model
    ``python -m rigs rehearse --big`` moves a rig to.
    """

    @model_validator(mode="after")
    def _consistent(self) -> "Variant":
        given = self.model_fields_set
        found: list[tuple[tuple[str, ...], str]] = []
        if not given - {"model_source", "image_digest", "weights"}:
            allowed = sorted(f.alias or name for name, f in type(self).model_fields.items())
            found.append(((), f"a variant must change something (it may set: {', '.join(allowed)})"))
        if "model_id" in given and "model_source" not in given:
            found.append((("model_source",), "a variant that changes the model must name the public page of its "
                                             "checkpoint (https://...)"))
        if "model_source" in given and "model_id" not in given:
            found.append((("model_source",), "only a variant that sets model_id names a model source"))
        if "model_id" in given and "weights" not in given:
            found.append((("weights",), "a variant that changes the model must say what it serves (weights: model, "
                                        "precision, bytes_per_weight, engine, source)"))
        if "image_digest" in given and "image_reference" not in given:
            found.append((("image_digest",), "pins the variant's image: give image too"))
        located(type(self).__name__, found)
        return self

    def overrides(self, rig: Any) -> dict[str, Any]:
        """The fields this variant replaces on ``rig`` (a new image drops the rig's digest unless it gives one)."""
        changed = {name: getattr(self, name) for name in self.model_fields_set - {"model_source"}}
        if "image_reference" in changed:
            changed["image_digest"] = getattr(self, "image_digest")
        if "container_env" in changed:
            changed["container_env"] = {**rig.container_env, **changed["container_env"]}
        return changed


class _VariantImage(Variant, ImageFields):
    image_reference: ImageText | None = Field(None, alias="image")
    image_digest: Digest | None = None


class VllmVariant(_VariantImage):
    """A variant of a vLLM rig on EC2: another model, image, flags, wait or disk."""

    model_id: ModelId | None = None
    model_source: source_page("the checkpoint's public page") | None = None
    serve_flags: Strings | None = None
    ready_timeout_minutes: ReadyMinutes | None = None
    root_free_gib: RootFreeGib | None = None
    weights: Weights | None = None


class NeuronVariant(_VariantImage):
    """A variant of a Neuron rig: another image (the model is built into it), devices and token limits."""

    neuron_devices: Strings | None = None
    max_prompt_tokens: StrictInt | None = None
    max_total_tokens: StrictInt | None = None
    ready_timeout_minutes: ReadyMinutes | None = None


class SageMakerVariant(Variant):
    """A variant of the SageMaker endpoint: another model and container settings in AWS's image."""

    model_id: ModelId | None = None
    model_source: source_page("the checkpoint's public page") | None = None
    container_env: Mapping[str, Quoted] | None = None
    ready_timeout_minutes: ReadyMinutes | None = None
    weights: Weights | None = None
