"""The orchestrator part: an agent (on Bedrock, else the first backend that can drive one) gets one
``ask_<backend>`` tool per backend, a ``scoreboard`` tool whose table is computed in code, and
``submit_summary(winner, table)``: the structured form in which it commits its answer. A run that
ends without that call gets one follow-up turn offering only ``submit_summary`` (for the local rig's
constrained model, which makes exactly one tool choice per run, this is how it commits). Its asks
and its answer become records; the checks on them are :mod:`agent.bench.grading.orchestrator`'s.

It is the one part that runs once across backends rather than on each in turn. strands is imported
where an agent or a tool is made, so that the registry of parts loads without it.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from kit import utc

from ...kinds import descriptor
from ..clients.base import BackendClient
from ..clients.reply import ChatRequest
from ..tasks.reference import (FOLLOW_UP_SYSTEM_PROMPT, ORCHESTRATOR_ASK_MAX_TOKENS, ORCHESTRATOR_SYSTEM_PROMPT,
                              SCOREBOARD_HEADER, SUBMIT_TOOL, follow_up_turn, orchestrator_user_turn,
                              submit_instruction, tool_name)
from .counting import run_agent, transcript, usage_of
from .sending import timing_record

if TYPE_CHECKING:
    from ...backends import Backend
    from .capacity import LevelPlan
    from .part import Context


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


class _Asks:
    """The ``ask_<backend>`` tools and the ``scoreboard`` tool of one run, and what they recorded."""

    def __init__(self, clients: Mapping[str, BackendClient], epoch: float,
                 emit: Callable[[dict[str, Any]], None]) -> None:
        self.clients, self.epoch, self.emit = clients, epoch, emit
        self.asks: list[dict[str, Any]] = []
        self.scoreboards: list[str] = []

    def ask_tool(self, b: Any) -> Any:
        from strands import tool

        async def ask(prompt: str) -> dict:
            request = ChatRequest.user(prompt, ORCHESTRATOR_ASK_MAX_TOKENS)
            record = timing_record(
                await self.clients[b.name].send(request), epoch=self.epoch, backend=b.name, part="orchestrator_ask",
                phase="ask", concurrency=1, run=len(self.asks) + 1, request=request,
            )  # fmt: skip
            self.emit(record)
            result = ask_result(record, b.label)
            self.asks.append(result)
            return result

        description = (f"Ask {b.label} ({b.model_id}) one question and return its answer with measured seconds and "
                       "tokens per second.\n\nArgs:\n    prompt: the question")
        return tool(name=tool_name(b.name), description=description)(ask)

    def scoreboard_tool(self) -> Any:
        from strands import tool

        @tool
        def scoreboard() -> str:
            """Return the measured results of every ask_ call so far as a table, fastest first"""
            table = scoreboard_table(self.asks)
            self.scoreboards.append(table)
            return table

        return scoreboard


async def _follow_up(model: Any, submit: Any, user_turn: str, reply: str, names: Sequence[str],
                     timeout_s: float) -> dict[str, Any]:
    """The one follow-up turn of a run that answered without submitting: commit what it said."""
    from strands import Agent

    agent = Agent(model=model, system_prompt=FOLLOW_UP_SYSTEM_PROMPT, tools=[submit], callback_handler=None)
    prompt = follow_up_turn(user_turn, reply, names)
    f_reply, f_error, f_seconds = await run_agent(agent, prompt, timeout_s)
    f_calls, f_texts = transcript(agent.messages)
    return {"prompt": prompt, "reply": f_reply, "calls": f_calls, "texts": f_texts, "error": f_error,
            "seconds": round(f_seconds, 4), "usage": usage_of(agent)}  # fmt: skip


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
    from strands import Agent
    from strands.tools.executors import SequentialToolExecutor

    tools = _Asks(clients, epoch, emit)
    names = [b.name for b in backends]
    submit = make_submit_tool(names)
    if constrained and hasattr(model, "set_enums"):
        # the grammar admits only an offered backend as the winner, and ends the text answer
        model.set_enums({SUBMIT_TOOL: {"winner": names}}, bounded_answer=True)
    system_prompt = f"{ORCHESTRATOR_SYSTEM_PROMPT} {submit_instruction(names)}"
    offered = [tools.ask_tool(b) for b in {tool_name(b.name): b for b in backends}.values()]
    agent = Agent(model=model, system_prompt=system_prompt, tools=[*offered, tools.scoreboard_tool(), submit],
                  callback_handler=None, tool_executor=SequentialToolExecutor())  # fmt: skip
    wall = time.time()
    user_turn = orchestrator_user_turn(question)
    reply, error, seconds = await run_agent(agent, user_turn, timeout_s)
    calls, texts = transcript(agent.messages)
    follow_up = None
    if not error and reply.strip() and not any(c.get("name") == SUBMIT_TOOL for c in calls):
        follow_up = await _follow_up(model, submit, user_turn, reply, names, timeout_s)
    emit({
        "part": "orchestrator", "backend": orchestrator.name, "run": 1,
        "started": utc.iso_millis(utc.at_epoch(wall)), "constrained": constrained, "question": question, "system_prompt": system_prompt,
        "offered": [{"name": b.name, "label": b.label, "tool": tool_name(b.name)} for b in backends],
        "asks": tools.asks, "scoreboards": tools.scoreboards, "reply": reply, "calls": calls, "texts": texts,
        "error": error, "seconds": round(seconds, 4), "usage": usage_of(agent), "follow_up": follow_up,
    })  # fmt: skip


def make_submit_tool(names: Sequence[str]) -> Any:
    """``submit_summary(winner, table)``: records nothing itself (the call and its arguments are in
    the transcript, and the checks read them from there) and acknowledges."""
    from strands import tool

    def submit_summary(winner: str, table: str) -> str:
        return "Summary recorded."

    submit_summary.__doc__ = (
        "Submit your final answer, once, after quoting the scoreboard.\n\n"
        "Args:\n"
        f"    winner: the name of the fastest backend, one of: {', '.join(names)}\n"
        "    table: the scoreboard table exactly as scoreboard returned it\n"
    )
    return tool(name=SUBMIT_TOOL)(submit_summary)


class Orchestrator:
    """The part: one agent, on Bedrock if it runs, else on the first backend that can drive one, asks every
    backend that is not stopped."""

    name = "orchestrator"
    records = ("orchestrator", "orchestrator_ask")
    across_backends = True

    def width(self, options: Any, plan: LevelPlan) -> int:
        return 1

    async def run(self, ctx: Context) -> None:
        """Why it could not run, when it could not, goes to ``run.json`` ``orchestrator``."""
        from ..results.run import OrchestratorNote

        clients = ctx.clients
        agents = [b for b in ctx.backends if b.name in clients and clients[b.name].can_drive_agent]
        candidates = [b for b in agents if b.name not in ctx.stopped]
        chosen = next((b for b in candidates if descriptor(b.kind).preferred_orchestrator),
                      candidates[0] if candidates else None)
        if chosen is None:
            stopped = [b.name for b in agents if b.name in ctx.stopped]
            ctx.info.orchestrator = OrchestratorNote(
                reason="no selected backend can drive an agent (tool calls needed)"
                + (f"; stopped after failures: {', '.join(stopped)}" if stopped else ""))
            return
        offered = [b for b in ctx.backends if b.name in clients and b.name not in ctx.stopped]
        ctx.progress(f"orchestrator on {chosen.name}, asking {len(offered)} backend(s)", milestone=True)
        await self._drive(ctx, chosen, offered)

    async def _drive(self, ctx: Context, chosen: Backend, offered: Sequence[Backend]) -> None:
        from ..results.run import OrchestratorNote

        client = ctx.clients[chosen.name]
        try:
            model = client.agent_model()
        except Exception as exc:
            ctx.skipped[chosen.name][self.name] = f"failed: {exc}"[:300]
            ctx.info.orchestrator = OrchestratorNote(reason=f"the orchestrator model failed: {exc}"[:300])
            return
        if client.constrained and hasattr(model, "set_enums"):
            model.set_enums({})
        await ctx.guard(chosen, self.name, run_orchestrator(
            orchestrator=chosen, model=model, constrained=client.constrained, backends=offered, clients=ctx.clients,
            epoch=ctx.epoch, emit=ctx.emit, question=ctx.options.question,
            timeout_s=ctx.options.request_timeout_s * 2))


PART = Orchestrator()
