"""Decode-rate ceiling from memory bandwidth (the method and its figures: docs/reference-run.md).

``ceiling_tok_s = device bandwidth (bytes/s) / bytes streamed per decode step``, at batch 1,
KV reads ignored. The measured decode rate (p50, concurrency 1) is reported as a share of it.
Device and model figures live in ``devices.yaml`` beside this file, each with its source.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field, PositiveFloat, PositiveInt, ValidationError, ValidationInfo, field_validator

from ...kinds import descriptor
from ..results.base import Frozen, problems
from ..results.blocks.cost import CeilingBlock

DEVICES_PATH = Path(__file__).with_name("devices.yaml")


class Device(Frozen):
    """One accelerator's memory bandwidth, with where the figure comes from."""

    label: str | None = None
    bandwidth_gb_s: PositiveFloat
    """The whole device's bandwidth, the bound of a graph that uses all of it."""
    theoretical_gb_s: PositiveFloat | None = None
    """The datasheet's figure, where ``bandwidth_gb_s`` is a measured one."""
    per_core_gb_s: PositiveFloat | None = None
    """One NeuronCore's share: the bound of a single-core graph."""
    cores: PositiveInt | None = None
    status: str
    """How the figure was got (measured, public, derived)."""
    source: str


class ModelBytes(Frozen):
    """The bytes one decode step streams for a served model (and backend kind where it matters)."""

    model_id: str
    """Matched exactly first, else as the end or a part of the served model's id."""
    kind: str | None = None
    """The backend kind this figure is for; none: every kind."""
    precision: str | None = None
    bytes_per_step_gb: PositiveFloat
    scope: Literal["chip", "core"]
    """``chip``: the graph uses the whole device; ``core``: a single-NeuronCore graph."""
    status: str | None = None
    source: str


class DeviceTable(Frozen):
    """``devices.yaml``: device bandwidths, which instance types carry which device, and model bytes."""

    devices: dict[str, Device]
    instances: dict[str, str] = Field(default_factory=dict)
    """Instance type prefix -> device (the longest prefix wins)."""
    models: tuple[ModelBytes, ...] = ()

    @field_validator("instances")
    @classmethod
    def _known_devices(cls, instances: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        """Each prefix names a device of the file (left unchecked when ``devices`` itself is not valid)."""
        devices = info.data.get("devices")
        unknown = [f"{prefix} names unknown device {dev}" for prefix, dev in instances.items()
                   if devices is not None and dev not in devices]
        if unknown:
            raise ValueError(", ".join(unknown))
        return instances

    def device_for(self, instance_type: str | None) -> str | None:
        if not instance_type:
            return None
        matches = [p for p in self.instances if instance_type.startswith(p)]
        return self.instances[max(matches, key=len)] if matches else None

    def model_for(self, model_id: str, kind: str) -> ModelBytes | None:
        candidates = sorted((m for m in self.models if m.kind in (None, kind)), key=lambda m: m.kind is None)
        for m in candidates:
            if m.model_id == model_id:
                return m
        for m in candidates:
            if model_id.endswith(m.model_id) or m.model_id in model_id:
                return m
        return None


@lru_cache(maxsize=4)
def load_devices(path: Path = DEVICES_PATH) -> DeviceTable:
    """Load and check the device data file.

    Raises:
        ValueError: one line naming the file and every problem with its path.
    """
    try:
        return DeviceTable.model_validate(yaml.safe_load(path.read_text()))
    except ValidationError as exc:
        raise ValueError(f"{path}: " + "; ".join(problems(exc))) from None


def ceiling_tok_per_s(bandwidth_gb_s: float, bytes_per_step_gb: float) -> float:
    """Batch-1 decode ceiling: bandwidth / bytes streamed per generated token."""
    if bytes_per_step_gb <= 0:
        raise ValueError("bytes per step must be positive")
    return bandwidth_gb_s / bytes_per_step_gb


def ceiling_for(
    *, instance_type: str | None, model_id: str, kind: str, measured_decode_tok_s: float | None,
    table: DeviceTable | None = None,
) -> CeilingBlock:
    """The ceiling block of one backend's summary: ``ceiling_tok_per_s`` is None with a ``reason``
    when the device or the model's bytes are not known."""
    table = table or load_devices()
    out: dict[str, Any] = {
        "device": None, "bandwidth_gb_s": None, "bandwidth_basis": None, "bytes_per_step_gb": None,
        "precision": None, "ceiling_tok_per_s": None, "measured_decode_tok_per_s": measured_decode_tok_s,
        "share": None, "chip_ceiling_tok_per_s": None, "chip_share": None, "sources": [], "reason": None,
    }  # fmt: skip
    device = table.device_for(instance_type)
    model = table.model_for(model_id, kind)
    if device is None:
        out["reason"] = (
            "managed service: device and weights not published" if descriptor(kind).managed
            else f"no device bandwidth on file for instance type {instance_type or 'unknown'}"
        )  # fmt: skip
        if model is not None:
            out["bytes_per_step_gb"] = model.bytes_per_step_gb
            out["precision"] = model.precision
            out["sources"].append(model.source)
        return CeilingBlock(**out)
    dev = table.devices[device]
    out["device"] = device
    out["sources"].append(dev.source)
    if model is None:
        out["reason"] = f"bytes per decode step not on file for model {model_id}"
        return CeilingBlock(**out)
    out["sources"].append(model.source)
    out["bytes_per_step_gb"] = model.bytes_per_step_gb
    out["precision"] = model.precision
    chip_bw = dev.bandwidth_gb_s
    if model.scope == "core" and dev.per_core_gb_s:
        bw, basis = dev.per_core_gb_s, "per NeuronCore (single-core graph)"
        out["chip_ceiling_tok_per_s"] = round(ceiling_tok_per_s(chip_bw, model.bytes_per_step_gb), 1)
    else:
        bw, basis = chip_bw, f"per device ({dev.status})"
    out["bandwidth_gb_s"] = bw
    out["bandwidth_basis"] = basis
    ceiling = ceiling_tok_per_s(bw, model.bytes_per_step_gb)
    out["ceiling_tok_per_s"] = round(ceiling, 1)
    if measured_decode_tok_s is not None:
        out["share"] = round(measured_decode_tok_s / ceiling, 3)
        if out["chip_ceiling_tok_per_s"]:
            out["chip_share"] = round(measured_decode_tok_s / out["chip_ceiling_tok_per_s"], 3)
    return CeilingBlock(**out)
