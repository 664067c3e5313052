"""Keep the KV cache vLLM logged on each deployed rig (its boot report, as :mod:`.provenance` read it), so that
``python -m rigs fit`` and ``-c model.<rig>=`` sizing use it in place of their prediction next time
(:mod:`rigs.sizing.measured`): per model, instance type, engine version and the settings the rig serves at."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Sequence

from kit import utc
from rigs.sizing.fit import served_settings
from rigs.sizing.measured import Measurement, MeasuredError, measured_path, record

from ..backends import Backend

logger = logging.getLogger(__name__)

READ = ("kv_cache_tokens", "instance_type", "context_tokens", "engine_version")
"""The facts read at run time a measurement needs: vLLM's logged tokens, the size (``DescribeInstances``), the
context it serves (``GET /v1/models`` ``max_model_len``) and its version (``GET /version``)."""


def measurement(backend: Backend, run: str) -> Measurement | None:
    """What ``backend``'s boot report says vLLM allocated, with the settings it serves at; None where a fact is not
    read, or the catalog does not know the model or the size (the settings are its rig's)."""
    read: dict[str, Any] = dict(backend.provenance.get("read") or {})
    values = {name: (read.get(name) or {}).get("value") for name in READ}
    if not isinstance(values["kv_cache_tokens"], int) or not all(v is not None for v in values.values()):
        return None
    try:
        settings = served_settings(backend.model_id, str(values["instance_type"]), int(values["context_tokens"]),
                                   str(values["engine_version"]))
    except ValueError:  # a version that names no vLLM release
        return None
    if settings is None:
        return None
    return Measurement(**settings.model_dump(), kv_tokens=values["kv_cache_tokens"],
                       engine_version=str(values["engine_version"]), measured_at=utc.iso_seconds(), run=run)


def record_all(backends: Sequence[Backend], run: str, path: Path | None = None) -> list[str]:
    """Record each backend's :func:`measurement`; one line for each kept (or for the file that could not be)."""
    lines = []
    for backend in backends:
        found = measurement(backend, run)
        if found is None:
            continue
        try:
            record(found, path)
        except (MeasuredError, OSError) as exc:  # a record of the run's, never a reason to stop it
            logger.warning("backend=<%s>, error=<%s> | KV cache not recorded", backend.name, exc)
            lines.append(f"{backend.name}: vLLM's KV cache not recorded: {exc}")
            continue
        lines.append(f"{backend.name}: vLLM logged {found.kv_tokens:,} tokens of KV cache on {found.instance_type} "
                     f"(tensor parallel {found.tensor_parallel}, {found.max_model_len:,} tokens); kept in "
                     f"{path or measured_path()}: python -m rigs fit uses it in place of its prediction")
    return lines
