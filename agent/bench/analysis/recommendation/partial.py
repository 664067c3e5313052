"""An interrupted run's answer: the headline says first that the run is partial and what it is missing
(the parts cut off by the interrupt, with the quality lane's items sent and answered, and the parts
that never began), then what the parts that ran say."""

from __future__ import annotations

from typing import Mapping

from ...results.blocks.orchestrator import OrchestratorSummary
from ...results.blocks.recommendation import Recommendation
from ...results.constants import CUT_OFF_INTERRUPTED, NOT_RUN_INTERRUPTED
from ...results.run import RunFile
from ...results.summary import BackendSummary


def _where(parts: Mapping[str, list[str]], backends: Mapping[str, BackendSummary]) -> list[str]:
    """``quality on local (25 of 600 items sent, 21 answered)``: each part with the backends it concerns, the
    quality lane's with its items."""
    out = []
    for part, names in parts.items():
        on = []
        for n in names:
            q = backends[n].quality
            counted = part == "quality" and q is not None and q.planned
            on.append(f"{n} ({q.items - q.not_sent} of {q.planned} items sent, {q.graded} answered)"  # type: ignore[union-attr]
                      if counted else n)
        out.append(f"{part} on {', '.join(on)}")
    return out


def missing(run: RunFile, backends: Mapping[str, BackendSummary], orchestrator: OrchestratorSummary) -> str:
    """``Cut off: quality on local (...). Not run: the orchestrator.``: what an interrupted run lacks, from the
    parts the runner recorded as cut off or not begun (``run.json`` ``skipped``)."""
    cut: dict[str, list[str]] = {}
    never: dict[str, list[str]] = {}
    for name, b in backends.items():
        for part, why in b.skipped.items():
            if why in (CUT_OFF_INTERRUPTED, NOT_RUN_INTERRUPTED):
                (cut if why == CUT_OFF_INTERRUPTED else never).setdefault(part, []).append(name)
    not_run = _where(never, backends)
    if "orchestrator" in (run.options.demos or []) and not orchestrator.ran:
        not_run.append("the orchestrator")
    out = []
    if cut:
        out.append("Cut off: " + "; ".join(_where(cut, backends)) + ".")
    if not_run:
        out.append("Not run: " + "; ".join(not_run) + ".")
    return " ".join(out) or "What was cut off is incomplete."


def mark(rec: Recommendation, run: RunFile, backends: Mapping[str, BackendSummary],
         orchestrator: OrchestratorSummary) -> Recommendation:
    """``rec`` of an interrupted run: ``partial`` set, and the headline led by it."""
    partial = f"Partial run: interrupted before it finished. {missing(run, backends, orchestrator)}"
    return rec.model_copy(update={"partial": partial, "headline": f"{partial} From what ran: {rec.headline}"})
