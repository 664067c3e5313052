"""The orchestrator section: who was asked, the measured winner, the structured answer and its
verdict, the free text's winner and table, and the reply itself."""

from __future__ import annotations

from ...results.blocks.orchestrator import OrchestratorSummary
from ...results.summary import Summary

CONSTRAINED = ("- Constrained mode: each agent run makes one schema-constrained tool choice; the structured answer "
               "comes from a follow-up turn whose choice the grammar limits to `submit_summary` with an offered "
               "backend as winner.")


def _submitted(o: OrchestratorSummary) -> str:
    if not o.submitted:
        return "not submitted"
    where = "in the run" if o.submitted_via == "run" else "in the follow-up turn"
    return f"submitted {where}: winner `{o.winner_submitted_raw}`, table {o.submitted_table_quote} against the scoreboard"


def _verdict(o: OrchestratorSummary) -> str:
    if o.winner_verdict == "wrong":
        return f"**wrong: the agent submitted {o.winner_submitted}, the scoreboard puts {o.winner_measured} first**"
    if o.winner_verdict == "right":
        return f"right ({o.winner_submitted})"
    if o.winner_verdict == "unclear":
        return "unclear: the submitted winner names no offered backend (not graded wrong)"
    return o.winner_verdict


def _text_winner(o: OrchestratorSummary) -> str:
    if o.winner_text == "named":
        return str(o.winner_claimed)
    if o.winner_text == "unclear":
        return "unclear (it names more than one backend as the winner)"
    return "none named"


def _checks(o: OrchestratorSummary) -> list[str]:
    out = [
        f"- Orchestrator: {o.backend}{' (constrained)' if o.constrained else ''}; {len(o.asks)} ask calls; asked: "
        f"{', '.join(o.asked) or 'none'}",
        f"- Not asked: {', '.join(o.not_asked) or 'none'}",
        f"- Measured winner (fastest successful ask): {o.winner_measured or '-'}",
        f"- Structured answer (`submit_summary`, checked in code): {_submitted(o)}",
        f"- Winner: {_verdict(o)}",
        f"- Winner named in the free text: {_text_winner(o)}",
    ]
    if o.text_disagrees:
        out.append(f"- **The free text and the structured answer disagree**: the text names {o.winner_claimed}, "
                   f"the submitted winner is {o.winner_submitted}.")
    out.append(f"- Quoted table in the free text: {o.table_quote} (matches the scoreboard: "
               f"{'yes' if o.table_matches else 'no'}; scoreboard called: {'yes' if o.scoreboard_called else 'no'})")
    if o.failure:
        out.append(f"- **Failed run** (no grade): {o.failure}")
    if o.follow_up_error:
        out.append(f"- Follow-up turn failed: {o.follow_up_error}")
    return out + ([CONSTRAINED] if o.constrained else [])


def section(summary: Summary) -> list[str]:
    o = summary.orchestrator
    out = ["## Orchestrator (is the summary true?)", ""]
    if not o.ran:
        return out + [f"Not run: {o.reason or 'no orchestrator record'}.", ""]
    out += _checks(o)
    out += ["", "The scoreboard computed in code:", ""]
    out += (o.scoreboard or "(the agent never called scoreboard)").splitlines()
    out += ["", "The agent's reply:", ""]
    out += ["> " + ln for ln in (o.reply or "(no reply)").splitlines()] + [""]
    if o.follow_up_reply:
        out += ["Its reply after the follow-up turn:", ""] + ["> " + ln for ln in o.follow_up_reply.splitlines()] + [""]
    return out
