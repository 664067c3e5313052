"""The KV cache vLLM logged on a deployed rig, kept so that the next fit uses it in place of the prediction.

A benchmark run reads each vLLM rig's boot report (vLLM's "GPU KV cache size: N tokens", copied to the rig's log by
``rigs/userdata``; :func:`agent.reach.provenance.boot_report`); the tokens are recorded here per model, instance type,
engine version and the settings that decide them (:class:`Measurement`). ``python -m rigs fit`` and
``-c model.<rig>=`` sizing then take a measurement whose settings are all the fit's own in place of the prediction
and say so ("measured", when, which run); one of other settings is not used.

The file is ``.rigs/measured_kv.json`` (gitignored; ``RIGS_STATE_DIR`` moves the ``.rigs`` state directory), typed
with pydantic (:class:`Measurements`, unknown keys refused), validated once as it is read and written atomically.
Its JSON Schema is committed beside it (``python -m rigs.sizing.measured --write``; a test fails when it is stale).
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kit import generated
from kit.command import UsageError
from kit.files import write_json
from rigs.placement.placement import state_dir

FORMAT_VERSION = 1
SCHEMA_PATH = Path(__file__).with_name("measured_kv.schema.json")

_lock = threading.Lock()


def measured_path() -> Path:
    return state_dir() / "measured_kv.json"


class MeasuredError(UsageError, ValueError):
    """The file of measurements cannot be read (bad input: exit 2)."""


class Settings(BaseModel):
    """What decides the KV tokens vLLM logs, beside the model and the size: a fit uses a measurement only where
    every one of these is its own."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    model_id: str = Field(min_length=1)
    instance_type: str = Field(min_length=1)
    engine: str = Field(pattern=r"^\d+\.\d+$")
    """vLLM's major.minor (``0.30``): the version whose budget decides the tokens."""
    tensor_parallel: int = Field(ge=1)
    max_model_len: int = Field(ge=1)
    kv_cache_dtype: str = Field(min_length=1)
    gpu_memory_utilization: float = Field(gt=0, le=1)
    max_num_seqs: int = Field(ge=1)
    max_num_batched_tokens: int = Field(ge=1)


class Measurement(Settings):
    """One rig's logged KV cache, with the settings it was served at."""

    kv_tokens: int = Field(ge=0)
    """vLLM's "GPU KV cache size" of one replica."""
    engine_version: str = Field(min_length=1)
    """The version the server reported (``GET /version``: ``0.30.0``)."""
    measured_at: str = Field(min_length=1)
    """When the boot report was read (UTC, ISO to the second)."""
    run: str = Field(min_length=1)
    """The benchmark run that read it (its evidence folder)."""

    @property
    def settings(self) -> Settings:
        return Settings(**{name: getattr(self, name) for name in Settings.model_fields})

    def label(self) -> str:
        """``measured 2026-12-04T19:27:05Z (vLLM 0.30.0, run ...)``."""
        return f"measured {self.measured_at} (vLLM {self.engine_version}, run {self.run})"


class Measurements(BaseModel):
    """``.rigs/measured_kv.json``: the KV cache vLLM logged on deployed rigs, one entry per settings."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    version: Literal[1] = FORMAT_VERSION
    measurements: tuple[Measurement, ...] = ()

    def of(self, model_id: str | None) -> tuple[Measurement, ...]:
        """Those of ``model_id`` (none for a model known only by its config)."""
        return tuple(m for m in self.measurements if model_id is not None and m.model_id == model_id)


def matching(measurements: tuple[Measurement, ...], settings: Settings) -> Measurement | None:
    """The newest of ``measurements`` taken at exactly ``settings``; None where none was."""
    found = [m for m in measurements if m.settings == settings]
    return max(found, key=lambda m: m.measured_at) if found else None


def load(path: Path | None = None) -> Measurements:
    """The recorded measurements; none when the file does not exist.

    Raises:
        MeasuredError: not JSON, or not of the file's shape (every problem named, with the file and the fix).
    """
    path = path or measured_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Measurements()
    fix = "delete it (the next benchmark run on a deployed rig records its KV cache again)"
    try:
        return Measurements.model_validate_json(text)
    except ValidationError as exc:
        if any(e["type"] == "json_invalid" for e in exc.errors()):
            reason = exc.errors()[0]["ctx"].get("error", "")
            raise MeasuredError(f"{path}: not valid JSON ({reason}); {fix}") from None
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'top level'}: {e['msg']}" for e in exc.errors())
        raise MeasuredError(f"{path}: not a file of measured KV caches ({problems}); {fix}") from None


def record(measurement: Measurement, path: Path | None = None) -> Measurements:
    """Keep ``measurement``, in place of one taken before at the same settings."""
    path = path or measured_path()
    with _lock:
        kept = tuple(m for m in load(path).measurements if m.settings != measurement.settings)
        updated = Measurements(measurements=tuple(sorted(
            (*kept, measurement), key=lambda m: (m.model_id, m.instance_type, m.engine, m.tensor_parallel,
                                                 m.max_model_len))))
        write_json(path, updated)
        return updated


def schema_file() -> generated.Generated:
    """``measured_kv.schema.json``, generated from :class:`Measurements`."""
    return generated.schema_file(
        SCHEMA_PATH, Measurements.model_json_schema, ".rigs/measured_kv.json",
        "The KV cache vLLM logged on deployed rigs (GPU KV cache size), per model, instance type, engine version and "
        "settings, used by python -m rigs fit in place of its prediction. Generated from rigs/sizing/measured.py "
        "(python -m rigs.sizing.measured --write); do not edit.")


if __name__ == "__main__":
    sys.exit(generated.main([schema_file()], "python -m rigs.sizing.measured",
                            "Write or check the JSON Schema of .rigs/measured_kv.json."))
