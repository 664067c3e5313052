"""Decode-rate ceiling from memory bandwidth (the method and its figures: docs/reference-run.md).

``ceiling_tok_s = device bandwidth (bytes/s) / bytes streamed per decode step``, at batch 1,
KV reads ignored. The measured decode rate (p50, concurrency 1) is reported as a share of it.
Device and model figures live in ``devices.yaml`` beside this file, each with its source.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

import yaml

from ...kinds import descriptor
from ..results.blocks.cost import CeilingBlock

DEVICES_PATH = Path(__file__).with_name("devices.yaml")


@dataclass(frozen=True, slots=True)
class DeviceTable:
    devices: Mapping[str, Mapping[str, Any]]
    instances: Mapping[str, str]
    models: tuple[Mapping[str, Any], ...]

    def device_for(self, instance_type: str | None) -> str | None:
        if not instance_type:
            return None
        matches = [p for p in self.instances if instance_type.startswith(p)]
        return self.instances[max(matches, key=len)] if matches else None

    def model_for(self, model_id: str, kind: str) -> Mapping[str, Any] | None:
        candidates = [m for m in self.models if m.get("kind") in (None, kind)]
        for m in sorted(candidates, key=lambda m: m.get("kind") is None):
            if m["model_id"] == model_id:
                return m
        for m in sorted(candidates, key=lambda m: m.get("kind") is None):
            if model_id.endswith(m["model_id"]) or m["model_id"] in model_id:
                return m
        return None


@lru_cache(maxsize=4)
def load_devices(path: Path = DEVICES_PATH) -> DeviceTable:
    """Load and check the device data file."""
    raw = yaml.safe_load(path.read_text())
    problems = []
    for name, dev in raw["devices"].items():
        for key in ("bandwidth_gb_s", "source", "status"):
            if key not in dev:
                problems.append(f"devices.{name}: missing {key}")
    for i, model in enumerate(raw["models"]):
        for key in ("model_id", "bytes_per_step_gb", "source", "scope"):
            if key not in model:
                problems.append(f"models[{i}]: missing {key}")
    for prefix, dev in raw["instances"].items():
        if dev not in raw["devices"]:
            problems.append(f"instances.{prefix}: unknown device {dev}")
    if problems:
        raise ValueError(f"{path}: " + "; ".join(problems))
    return DeviceTable(raw["devices"], raw["instances"], tuple(raw["models"]))


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
            out["bytes_per_step_gb"] = model["bytes_per_step_gb"]
            out["precision"] = model.get("precision")
            out["sources"].append(model["source"])
        return CeilingBlock(**out)
    dev = table.devices[device]
    out["device"] = device
    out["sources"].append(dev["source"])
    if model is None:
        out["reason"] = f"bytes per decode step not on file for model {model_id}"
        return CeilingBlock(**out)
    out["sources"].append(model["source"])
    out["bytes_per_step_gb"] = model["bytes_per_step_gb"]
    out["precision"] = model.get("precision")
    chip_bw = float(dev["bandwidth_gb_s"])
    if model.get("scope") == "core" and dev.get("per_core_gb_s"):
        bw, basis = float(dev["per_core_gb_s"]), "per NeuronCore (single-core graph)"
        out["chip_ceiling_tok_per_s"] = round(ceiling_tok_per_s(chip_bw, model["bytes_per_step_gb"]), 1)
    else:
        bw, basis = chip_bw, f"per device ({dev['status']})"
    out["bandwidth_gb_s"] = bw
    out["bandwidth_basis"] = basis
    ceiling = ceiling_tok_per_s(bw, model["bytes_per_step_gb"])
    out["ceiling_tok_per_s"] = round(ceiling, 1)
    if measured_decode_tok_s is not None:
        out["share"] = round(measured_decode_tok_s / ceiling, 3)
        if out["chip_ceiling_tok_per_s"]:
            out["chip_share"] = round(measured_decode_tok_s / out["chip_ceiling_tok_per_s"], 3)
    return CeilingBlock(**out)
