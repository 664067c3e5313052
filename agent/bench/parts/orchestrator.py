"""The orchestrator demo and the checks on its answer.

An agent (on Bedrock, else the first backend that can drive one) gets one ``ask_<backend>`` tool
per backend, a ``scoreboard`` tool whose table is computed in code, and ``submit_summary(winner,
table)``: the structured form in which it commits its answer. A run that ends without that call
gets one follow-up turn offering only ``submit_summary`` (for the local rig's constrained model,
which makes exactly one tool choice per run, this is how it commits). Afterwards the harness
checks in code (:func:`check_orchestrator`):

* which backends it never asked;
* the structured answer: its ``winner`` against the measured winner (the fastest successful
  ask): ``right``, ``wrong``, ``unclear`` (it names no offered backend: never graded wrong) or
  ``not submitted``; its ``table`` against the scoreboard;
* the free-text reply, kept for the report: the table it quotes (``exact``; ``retyped``: the
  same cells with other case or spacing, as the reference's agent did with the header;
  ``altered``: a cell differs, e.g. a re-rounded number; ``absent``) and the winner it names
  (:mod:`agent.bench.grading.winner`); when it names another winner than the structured answer, the
  two disagree and the report says so;
* a failed run (an error, or an empty reply with nothing submitted) is a failure, not a grade.
"""

from __future__ import annotations

import re
import time
from typing import Any, Callable, Mapping, Sequence

from strands import Agent, tool
from strands.tools.executors import SequentialToolExecutor

from .chat import timing_record
from .counting import run_agent, transcript, usage_of
from ..command.evidence import utc_iso
from ..grading.grading import run_failure
from ..clients.base import BackendClient
from ..clients.reply import ChatRequest
from ..grading.winner import NAMED, read_winner, resolve_backend
from ..tasks.workload import ORCHESTRATOR_ASK_MAX_TOKENS, ORCHESTRATOR_SYSTEM_PROMPT, orchestrator_user_turn

SCOREBOARD_HEADER = "| backend | answer | seconds | tokens/s |"
SUBMIT_TOOL = "submit_summary"
FOLLOW_UP_SYSTEM_PROMPT = f"You record, with the {SUBMIT_TOOL} tool, an answer you have already given."


def tool_name(backend_name: str) -> str:
    """``ask_<name>`` with anything but letters, digits and ``_`` replaced."""
    return "ask_" + re.sub(r"[^A-Za-z0-9_]", "_", backend_name)


def ask_result(record: Mapping[str, Any], label: str) -> dict[str, Any]:
    """What an ask_ tool returns to the agent, from its request record."""
    if record.get("error"):
        return {"backend": record["backend"], "label": label, "error": str(record["error"])[:200]}
    seconds = (record["done_ms"] or 0) / 1000.0
    tokens = record.get("output_tokens")
    return {
        "backend": record["backend"],
        "label": label,
        "answer": (record.get("text") or "").strip(),
        "seconds": round(seconds, 3),
        "tokens_per_second": round(tokens / seconds, 1) if tokens and seconds > 0 else None,
    }


def scoreboard_table(results: Sequence[Mapping[str, Any]]) -> str:
    """The reference's scoreboard: successful asks fastest first, then error rows."""
    ok = sorted((r for r in results if not r.get("error")), key=lambda r: r["seconds"])
    lines = [SCOREBOARD_HEADER, "|---|---|---|---|"]
    for r in ok:
        tps = "-" if r.get("tokens_per_second") is None else f"{r['tokens_per_second']}"
        answer = " ".join(str(r.get("answer", "")).split())[:40].replace("|", "/")
        lines.append(f"| {r['label']} | {answer} | {r['seconds']:.3f} | {tps} |")
    for r in results:
        if r.get("error"):
            err = " ".join(str(r["error"]).split())[:60].replace("|", "/")
            lines.append(f"| {r['label']} | ERROR {err} | - | - |")
    return "\n".join(lines)


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


def submit_instruction(names: Sequence[str]) -> str:
    """What the system prompt adds to the reference's: commit the answer with ``submit_summary``."""
    return (f"When you have quoted the scoreboard, call {SUBMIT_TOOL} once, last, with winner = the name of the "
            f"backend the scoreboard puts first (one of: {', '.join(names)}) and table = the scoreboard table "
            "exactly as it was returned.")


def follow_up_turn(user_turn: str, reply: str, names: Sequence[str]) -> str:
    """The one follow-up turn for a run that ended without ``submit_summary``: commit what it said."""
    return (f"You were asked: {user_turn}\n\nYour reply was:\n{reply}\n\nCommit that answer now: call {SUBMIT_TOOL} "
            f"once, with winner = the name of the backend your reply names as fastest (one of: {', '.join(names)}) "
            "and table = the table your reply quoted, exactly as written there.")


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


async def run_orchestrator(
    *,
    orchestrator: Any,
    model: Any,
    constrained: bool,
    backends: Sequence[Any],
    clients: Mapping[str, BackendClient],
    epoch: float,
    emit: Callable[[dict[str, Any]], None],
    question: str,
    timeout_s: float = 600.0,
) -> None:
    """Run the orchestrator once; its asks and its answer become records."""
    asks: list[dict[str, Any]] = []
    scoreboards: list[str] = []
    by_tool = {tool_name(b.name): b for b in backends}

    def make_ask(b: Any) -> Any:
        async def ask(prompt: str) -> dict:
            request = ChatRequest.user(prompt, ORCHESTRATOR_ASK_MAX_TOKENS)
            record = timing_record(
                await clients[b.name].send(request), epoch=epoch, backend=b.name, part="orchestrator_ask",
                phase="ask", concurrency=1, run=len(asks) + 1, request=request,
            )  # fmt: skip
            emit(record)
            result = ask_result(record, b.label)
            asks.append(result)
            return result

        return tool(
            name=tool_name(b.name),
            description=(
                f"Ask {b.label} ({b.model_id}) one question and return its answer with measured seconds "
                "and tokens per second.\n\nArgs:\n    prompt: the question"
            ),
        )(ask)

    @tool
    def scoreboard() -> str:
        """Return the measured results of every ask_ call so far as a table, fastest first"""
        table = scoreboard_table(asks)
        scoreboards.append(table)
        return table

    names = [b.name for b in backends]
    submit = make_submit_tool(names)
    if constrained and hasattr(model, "set_enums"):
        # the grammar admits only an offered backend as the winner, and ends the text answer
        model.set_enums({SUBMIT_TOOL: {"winner": names}}, bounded_answer=True)
    system_prompt = f"{ORCHESTRATOR_SYSTEM_PROMPT} {submit_instruction(names)}"
    tools = [make_ask(b) for b in by_tool.values()] + [scoreboard, submit]
    agent = Agent(
        model=model, system_prompt=system_prompt, tools=tools, callback_handler=None,
        tool_executor=SequentialToolExecutor(),
    )  # fmt: skip
    wall = time.time()
    user_turn = orchestrator_user_turn(question)
    reply, error, seconds = await run_agent(agent, user_turn, timeout_s)
    calls, texts = transcript(agent.messages)
    follow_up = None
    if not error and reply.strip() and not any(c.get("name") == SUBMIT_TOOL for c in calls):
        follow_agent = Agent(model=model, system_prompt=FOLLOW_UP_SYSTEM_PROMPT, tools=[submit], callback_handler=None)
        prompt = follow_up_turn(user_turn, reply, names)
        f_reply, f_error, f_seconds = await run_agent(follow_agent, prompt, timeout_s)
        f_calls, f_texts = transcript(follow_agent.messages)
        follow_up = {"prompt": prompt, "reply": f_reply, "calls": f_calls, "texts": f_texts, "error": f_error,
                     "seconds": round(f_seconds, 4), "usage": usage_of(follow_agent)}  # fmt: skip
    emit(
        {
            "part": "orchestrator",
            "backend": orchestrator.name,
            "run": 1,
            "started": utc_iso(wall),
            "constrained": constrained,
            "question": question,
            "system_prompt": system_prompt,
            "offered": [{"name": b.name, "label": b.label, "tool": tool_name(b.name)} for b in backends],
            "asks": asks,
            "scoreboards": scoreboards,
            "reply": reply,
            "calls": calls,
            "texts": texts,
            "error": error,
            "seconds": round(seconds, 4),
            "usage": usage_of(agent),
            "follow_up": follow_up,
        }
    )


def make_submit_tool(names: Sequence[str]) -> Any:
    """``submit_summary(winner, table)``: records nothing itself (the call and its arguments are in
    the transcript, and the checks read them from there) and acknowledges."""

    def submit_summary(winner: str, table: str) -> str:
        return "Summary recorded."

    submit_summary.__doc__ = (
        "Submit your final answer, once, after quoting the scoreboard.\n\n"
        "Args:\n"
        f"    winner: the name of the fastest backend, one of: {', '.join(names)}\n"
        "    table: the scoreboard table exactly as scoreboard returned it\n"
    )
    return tool(name=SUBMIT_TOOL)(submit_summary)
