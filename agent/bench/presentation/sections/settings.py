"""The run's settings, at the end of the report: when it ran, the commit and versions, the options
and the agent model settings, and every backend as the run reached it."""

from __future__ import annotations

from typing import Any, Mapping

from ...results.formatting import MISSING
from ...results.run import AgentSettings, RunOptions
from ...results.summary import Summary
from ..markdown import table

METADATA = "metadata (instance, region, zone, AMI, image, engine, serve flags, how reached)"


def _pairs(block: RunOptions | AgentSettings) -> str:
    """``key=value`` pairs of the keys the run recorded; a list as ``a,b``, a mapping as ``(k=v; ...)``
    without its unset keys."""

    def text(value: Any) -> str:
        if isinstance(value, list):
            return ",".join(map(str, value))
        if isinstance(value, Mapping):
            return "(" + "; ".join(f"{k}={text(v)}" for k, v in value.items() if v is not None) + ")"
        return str(value)

    return ", ".join(f"{k}={text(v)}" for k, v in block.model_dump().items())


def section(summary: Summary) -> list[str]:
    run = summary.run
    out = [
        "## Run settings", "",
        f"- Started: {run.started}; finished: {run.finished or 'not finished'}",
        f"- Git: `{run.git_sha or 'unknown'}`",
        "- Versions: " + ", ".join(f"{k} {v}" for k, v in run.versions.items()),
        f"- Options: {_pairs(run.options)}",
        f"- Agent model settings (explicit timeouts and retries): {_pairs(run.settings)}",
        f"- Percentiles: {run.methods.get('percentiles', MISSING)}",
    ]
    out += [f"- Connections: {note}" for note in run.connection_notes]
    out += ["", "### Backends and run metadata", ""]
    rows = [[b.name, b.label, b.kind, b.model_id, "; ".join(f"{k}: {v}" for k, v in b.metadata.items()) or MISSING]
            for b in run.backends]
    return out + table(["backend", "label", "kind", "model", METADATA], rows) + [""]
