"""The checks on an orchestrator run's answer, in code: a pure function of its record.

* which backends it never asked;
* the structured answer (``submit_summary(winner, table)``): its ``winner`` against the measured
  winner (the fastest successful ask): ``right``, ``wrong``, ``unclear`` (it names no offered backend:
  never graded wrong) or ``not submitted``; its ``table`` against the scoreboard;
* the free-text reply, kept for the report: the table it quotes (``exact``; ``retyped``: the
  same cells with other case or spacing, as the reference's agent did with the header;
  ``altered``: a cell differs, e.g. a re-rounded number; ``absent``) and the winner it names
  (:mod:`agent.bench.grading.winner`); when it names another winner than the structured answer, the
  two disagree and the report says so;
* a failed run (an error, or an empty reply with nothing submitted) is a failure, not a grade.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

from ..tasks.reference import SUBMIT_TOOL
from .counting import run_failure
from .winner import NAMED, read_winner, resolve_backend


def measured_winner(results: Sequence[Mapping[str, Any]]) -> str | None:
    """The backend of the fastest successful ask (ties: the first asked)."""
    ok = [r for r in results if not r.get("error")]
    return min(ok, key=lambda r: r["seconds"])["backend"] if ok else None


def _cells(line: str) -> list[str]:
    return [" ".join(c.split()).lower() for c in line.strip().strip("|").split("|")]


def _is_separator(line: str) -> bool:
    return bool(re.fullmatch(r"\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?", line.strip()))


def table_quote(reply: str, table: str | None) -> str:
    """How the reply quotes ``table``: ``exact``, ``retyped``, ``altered`` or ``absent``."""
    if not table:
        return "absent"
    want = [ln.strip() for ln in table.splitlines() if ln.strip()]
    got_lines = [ln.strip() for ln in reply.splitlines() if ln.strip().startswith("|")]
    if not got_lines:
        return "absent"
    norm = lambda ln: re.sub(r"\s*\|\s*", "|", ln.strip())  # noqa: E731
    joined = "\n".join(norm(ln) for ln in got_lines)
    if "\n".join(norm(ln) for ln in want) in joined:
        return "exact"
    want_rows = [_cells(ln) for ln in want if not _is_separator(ln)]
    got_rows = [_cells(ln) for ln in got_lines if not _is_separator(ln)]
    n = len(want_rows)
    for start in range(len(got_rows) - n + 1):
        if got_rows[start : start + n] == want_rows:
            return "retyped"
    return "altered"


def submission(record: Mapping[str, Any]) -> tuple[str | None, Any]:
    """``(via, arguments)`` of the last ``submit_summary`` call of the run, else of its follow-up;
    ``(None, None)`` when it never submitted."""
    for via, calls in (("run", record.get("calls")), ("follow-up", (record.get("follow_up") or {}).get("calls"))):
        made = [c for c in calls or [] if isinstance(c, Mapping) and c.get("name") == SUBMIT_TOOL]
        if made:
            return via, made[-1].get("input")
    return None, None


def check_reply(
    reply: str,
    asks: Sequence[Mapping[str, Any]],
    scoreboards: Sequence[str],
    backends: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """The harness's checks on the free-text reply.

    Args:
        reply: The agent's final answer.
        asks: The ask_ results in the order they returned (``{"backend", "seconds", "error"...}``).
        scoreboards: Every table the scoreboard tool returned, in order.
        backends: Every backend offered as a tool (``{"name", "label"}``).

    Returns:
        ``asked``, ``not_asked``, ``winner_claimed`` (the backend the text names, None when it
        names none or several), ``winner_text`` (``named``, ``none`` or ``unclear``),
        ``winner_measured``, ``table_matches``, ``table_quote``, ``scoreboard_called``.
    """
    asked = sorted({str(a["backend"]) for a in asks})
    names = [str(b["name"]) for b in backends]
    status, claimed = read_winner(reply or "", backends)
    last_table = scoreboards[-1] if scoreboards else None
    quote = table_quote(reply or "", last_table)
    return {
        "asked": asked,
        "not_asked": [n for n in names if n not in asked],
        "winner_claimed": claimed,
        "winner_text": status,
        "winner_measured": measured_winner(asks),
        "table_matches": quote in ("exact", "retyped"),
        "table_quote": quote,
        "scoreboard_called": bool(scoreboards),
    }


def check_orchestrator(record: Mapping[str, Any]) -> dict[str, Any]:
    """Every check on one orchestrator record: the free text (:func:`check_reply`), the structured
    answer, their agreement and whether the run failed. A pure function of the record."""
    reply = record.get("reply") or ""
    asks = record.get("asks") or []
    scoreboards = record.get("scoreboards") or []
    offered = record.get("offered") or []
    out = check_reply(reply, asks, scoreboards, offered)
    via, args = submission(record)
    raw = args.get("winner") if isinstance(args, Mapping) else None
    submitted = resolve_backend(raw, offered) if via else None
    table_arg = args.get("table") if isinstance(args, Mapping) else None
    failure = run_failure(reply, record.get("error")) if via is None or record.get("error") else None
    measured = out["winner_measured"]
    if failure:
        verdict = "failed"
    elif via is None:
        verdict = "not submitted"
    elif measured is None:
        verdict = "no successful ask"
    elif submitted is None:
        verdict = "unclear"
    else:
        verdict = "right" if submitted == measured else "wrong"
    follow = record.get("follow_up") or {}
    out.update(
        {
            "submitted": via is not None,
            "submitted_via": via,
            "winner_submitted": submitted,
            "winner_submitted_raw": None if raw is None else str(raw)[:200],
            "winner_verdict": verdict,
            "wrong_winner": verdict == "wrong",
            "submitted_table_quote": table_quote(table_arg, scoreboards[-1] if scoreboards else None)
            if isinstance(table_arg, str) else "absent",
            "text_disagrees": bool(via and submitted and out["winner_text"] == NAMED and out["winner_claimed"] != submitted),
            "failure": failure,
            "follow_up_error": follow.get("error"),
        }
    )
    return out
