"""The orchestrator demo and the checks on its answer.

An agent (on Bedrock, else the first backend that can drive one) gets one ``ask_<backend>`` tool
per backend and a ``scoreboard`` tool whose table is computed in code. After it answers, the
harness checks in code (:func:`check_reply`):

* which backends it never asked;
* whether the table it quoted matches the scoreboard (``exact``; ``retyped``: the same cells
  with other case or spacing, as the reference's agent did with the header; ``altered``: a cell
  differs, e.g. a re-rounded number; ``absent``);
* whether the winner it names is the measured winner (the fastest successful ask), flagging a
  wrong winner (the reference's agent once named trn1 under a table that put g6 first).
"""

from __future__ import annotations

import re
import time
from typing import Any, Callable, Mapping, Sequence

from strands import Agent, tool
from strands.tools.executors import SequentialToolExecutor

from .chat import timing_record
from .counting import run_agent, transcript, usage_of
from .evidence import utc_iso
from .timing import Timer
from .workload import ORCHESTRATOR_ASK_MAX_TOKENS, ORCHESTRATOR_SYSTEM_PROMPT, orchestrator_user_turn

SCOREBOARD_HEADER = "| backend | answer | seconds | tokens/s |"


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


_WINNER_WORDS = re.compile(
    r"\b(fastest|quickest|winner|won|wins|first place|came first|ranked first|top spot|lowest latency|"
    r"best (?:time|latency|speed)|most quickly)\b",
    re.IGNORECASE,
)


def _aliases(backend: Mapping[str, Any]) -> list[str]:
    label = str(backend.get("label") or "")
    out = [str(backend["name"]), label]
    short = label.split("(")[0].strip()
    if len(short) >= 4:
        out.append(short)
    return [a for a in out if a]


def claimed_winner(reply: str, backends: Sequence[Mapping[str, Any]]) -> str | None:
    """The backend the reply names as fastest, read from its sentences that speak of a winner.

    Table rows are skipped; in a winner sentence the backend mentioned first (by name or label)
    counts. None when the reply names no winner.
    """
    prose = "\n".join(ln for ln in reply.splitlines() if not ln.strip().startswith("|"))
    sentences = re.split(r"(?<=[.!?])\s+|\n+", prose)
    for sentence in reversed(sentences):  # the closing sentence speaks last
        if not _WINNER_WORDS.search(sentence):
            continue
        best: tuple[int, str] | None = None
        for b in backends:
            for alias in _aliases(b):
                m = re.search(r"(?<![A-Za-z0-9_])" + re.escape(alias) + r"(?![A-Za-z0-9_])", sentence, re.IGNORECASE)
                if m and (best is None or m.start() < best[0]):
                    best = (m.start(), str(b["name"]))
        if best is not None:
            return best[1]
    return None


def check_reply(
    reply: str,
    asks: Sequence[Mapping[str, Any]],
    scoreboards: Sequence[str],
    backends: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """The harness's checks on the orchestrator's answer.

    Args:
        reply: The agent's final answer.
        asks: The ask_ results in the order they returned (``{"backend", "seconds", "error"...}``).
        scoreboards: Every table the scoreboard tool returned, in order.
        backends: Every backend offered as a tool (``{"name", "label"}``).

    Returns:
        ``asked``, ``not_asked``, ``winner_claimed``, ``winner_measured``, ``wrong_winner``,
        ``table_matches``, ``table_quote``.
    """
    asked = sorted({str(a["backend"]) for a in asks})
    names = [str(b["name"]) for b in backends]
    winner = measured_winner(asks)
    claimed = claimed_winner(reply or "", backends)
    last_table = scoreboards[-1] if scoreboards else None
    quote = table_quote(reply or "", last_table)
    return {
        "asked": asked,
        "not_asked": [n for n in names if n not in asked],
        "winner_claimed": claimed,
        "winner_measured": winner,
        "wrong_winner": bool(claimed is not None and winner is not None and claimed != winner),
        "table_matches": quote in ("exact", "retyped"),
        "table_quote": quote,
        "scoreboard_called": bool(scoreboards),
    }


async def run_orchestrator(
    *,
    orchestrator: Any,
    model: Any,
    constrained: bool,
    backends: Sequence[Any],
    timers: Mapping[str, Timer],
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
            record = timing_record(
                await timers[b.name].chat(prompt, ORCHESTRATOR_ASK_MAX_TOKENS, stream=True),
                epoch=epoch, backend=b.name, part="orchestrator_ask", phase="ask", concurrency=1,
                run=len(asks) + 1, requested_tokens=ORCHESTRATOR_ASK_MAX_TOKENS, prompt=prompt,
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

    tools = [make_ask(b) for b in by_tool.values()] + [scoreboard]
    agent = Agent(
        model=model, system_prompt=ORCHESTRATOR_SYSTEM_PROMPT, tools=tools, callback_handler=None,
        tool_executor=SequentialToolExecutor(),
    )  # fmt: skip
    wall = time.time()
    reply, error, seconds = await run_agent(agent, orchestrator_user_turn(question), timeout_s)
    calls, texts = transcript(agent.messages)
    emit(
        {
            "part": "orchestrator",
            "backend": orchestrator.name,
            "run": 1,
            "started": utc_iso(wall),
            "constrained": constrained,
            "question": question,
            "offered": [{"name": b.name, "label": b.label, "tool": tool_name(b.name)} for b in backends],
            "asks": asks,
            "scoreboards": scoreboards,
            "reply": reply,
            "calls": calls,
            "texts": texts,
            "error": error,
            "seconds": round(seconds, 4),
            "usage": usage_of(agent),
        }
    )
