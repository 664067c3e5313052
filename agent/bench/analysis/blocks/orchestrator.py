"""The ``orchestrator`` block: the harness's checks on the orchestrator's answer, recomputed from
its record (:func:`agent.bench.grading.orchestrator.check_orchestrator`), or why it did not run."""

from __future__ import annotations

from typing import Sequence

from ...grading.orchestrator import check_orchestrator
from ...results.blocks.orchestrator import OrchestratorSummary
from ...results.records import OrchestratorRecord
from ...results.run import RunFile

NOT_RUN = {
    "ran": False, "backend": None, "constrained": False, "asked": [], "not_asked": [], "winner_claimed": None,
    "winner_text": "none", "winner_measured": None, "submitted": False, "submitted_via": None,
    "winner_submitted": None, "winner_submitted_raw": None, "winner_verdict": "not run", "wrong_winner": False,
    "submitted_table_quote": "absent", "text_disagrees": False, "table_matches": False, "table_quote": "absent",
    "scoreboard_called": False, "scoreboard": None, "reply": None, "asks": [], "error": None, "failure": None,
    "follow_up_error": None, "follow_up_reply": None,
}  # fmt: skip


def not_run_reason(run: RunFile, demos: Sequence[str]) -> str:
    """Why there is no orchestrator record: the run's own reason, else what the run says happened."""
    if run.orchestrator is not None:
        return run.orchestrator.reason
    if "orchestrator" not in demos:
        return "not selected"
    if run.interrupted:
        return "the run was interrupted before the orchestrator finished"
    failed = [f"{name}: {why}" for name, parts in run.skipped.items() for part, why in parts.items()
              if part == "orchestrator"]
    return "it ended without a record" + (f" ({'; '.join(failed)})" if failed else "")


def summarize_orchestrator(records: Sequence[OrchestratorRecord], run: RunFile,
                           demos: Sequence[str]) -> OrchestratorSummary:
    """The orchestrator's checks, recomputed from its (last) record."""
    if not records:
        return OrchestratorSummary(**NOT_RUN, reason=not_run_reason(run, demos))
    r = records[-1]
    checks = check_orchestrator(r.model_dump())
    return OrchestratorSummary(**{
        **NOT_RUN, **checks, "ran": True, "backend": r.backend, "constrained": r.constrained,
        "scoreboard": (r.scoreboards or [None])[-1], "reply": r.reply,
        "follow_up_reply": r.follow_up.reply if r.follow_up else None, "asks": r.asks, "error": r.error,
        "reason": run.orchestrator.reason if run.orchestrator else None, "seq": r.seq, "seconds": r.seconds})
