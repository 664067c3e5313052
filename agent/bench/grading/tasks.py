"""Grade one multi-turn task from its record, with BFCL's own multi-turn checker.

The rules are BFCL's (``bfcl_eval/eval_checker/eval_runner.py``, ``_evaluate_single_multi_turn_entry``): a task
stopped before its last turn (by a turn, tool-call or time limit) fails as "force-terminated"; otherwise every
turn's calls, step by step as the agent made them, are handed to ``multi_turn_checker``, which runs them and the
ground truth on fresh instances of the task's APIs and compares, after each turn, the APIs' state and the calls'
results (the model's results must contain the ground truth's). The wording of the replies is never graded.

A task whose model request failed (a transport or server error, not a limit) is an error: not graded, counted
apart, as a failed request is in every part.

BFCL's checker keeps the API instances it makes in its module's globals, keyed by the model name and the task id,
for the turns that follow; each grade here uses a name of its own and drops its instances afterwards, so that two
backends' runs of one task, or two grades of one record, never share state.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Callable, Final, Mapping

from ..tasks.bfcl_cases import SETUP_HINT, BfclUnavailableError

OUTCOMES: Final = ("succeeded", "failed", "error")
_GRADES = itertools.count(1)


@dataclass(frozen=True, slots=True)
class TaskGrade:
    """The verdict on one task: ``succeeded``, ``failed`` (with BFCL's error type and message) or ``error``."""

    outcome: str
    succeeded: bool | None
    reason: str | None = None


def _checker() -> tuple[Callable[..., dict[str, Any]], dict[str, Any]]:
    """BFCL's ``multi_turn_checker`` and the globals its executor keeps instances in."""
    try:
        from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils
        from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker
    except ImportError as exc:
        raise BfclUnavailableError(f"BFCL's multi-turn checker cannot be imported ({exc}); {SETUP_HINT}") from None
    return multi_turn_checker, vars(multi_turn_utils)


def grade(record: Mapping[str, Any]) -> TaskGrade:
    """Grade one ``part: tasks`` record (a pure function of the record).

    Raises:
        BfclUnavailableError: ``bfcl-eval`` is not installed.
    """
    if record.get("error"):
        return TaskGrade("error", None, str(record["error"]))
    truth = record["ground_truth"]
    steps = record.get("steps") or []
    if record.get("stopped") or len(steps) != len(truth):
        why = record.get("stopped") or f"{len(steps)} of {len(truth)} turns run"
        return TaskGrade("failed", False, f"multi_turn:force_terminated: {why}")
    check, held = _checker()
    model = f"aws_inference_grade_{next(_GRADES)}"
    entry = {"id": record["task"], "initial_config": record["initial_config"],
             "involved_classes": record["involved_classes"]}
    try:
        result = check([[list(step) for step in turn] for turn in steps], [list(t) for t in truth], entry,
                       record["task"].rsplit("_", 1)[0], model)
    except Exception as exc:  # noqa: BLE001 - calls the checker cannot run are a failed task, not a crash
        return TaskGrade("failed", False, f"the checker could not run the calls ({type(exc).__name__}: {exc})"[:300])
    finally:
        for name in [n for n in held if n.startswith(model)]:
            del held[name]
    if result.get("valid"):
        return TaskGrade("succeeded", True)
    return TaskGrade("failed", False, f"{result.get('error_type')}: {result.get('error_message')}"[:300])
