"""The counting part: the same strands agent, tools and question on every tool-capable backend,
``--runs N`` times per question set. Grading is done later, from the records
(:mod:`agent.bench.grading.counting`).

strands and the grading's record models (pydantic) are imported where a run needs them, so that the
registry of parts (:mod:`agent.bench.parts.registry`) loads without them and ``--help`` starts fast.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any, Callable

from kit import utc

from ..tasks.reference import COUNTING_SYSTEM_PROMPT, OPS, QUESTION_SETS, QuestionSet, select_ids

if TYPE_CHECKING:
    from strands import Agent

    from .capacity import LevelPlan
    from .part import Context


def make_tools(qset: QuestionSet, tools: str) -> list[Any]:
    """The reference's tools over ``qset.ids``: ``count_ids(op, value)`` (engine) or ``list_ids()`` (rows)."""
    from strands import tool

    ids = list(qset.ids)
    if tools == "rows":

        @tool
        def list_ids() -> list:
            """Return every id in the table"""
            return list(ids)

        return [list_ids]

    @tool
    def count_ids(op: str, value: int) -> dict:
        """Count the ids matching `id <op> value`, computed by the engine

        Args:
            op: one of >=, >, <=, <, ==
            value: the integer to compare each id against
        """
        if op not in OPS:
            return {"error": f"op must be one of {sorted(OPS)}"}
        chosen = sorted(select_ids(qset.ids, op, int(value)))
        return {
            "where": f"id {op} {value}",
            "count": len(chosen),
            "min": chosen[0] if chosen else None,
            "max": chosen[-1] if chosen else None,
        }

    return [count_ids]


def transcript(messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """Every tool call (name, input exactly as sent, result status) and every assistant text block."""
    calls: list[dict[str, Any]] = []
    texts: list[str] = []
    results: dict[str, dict[str, Any]] = {}
    for message in messages:
        for block in message.get("content", []):
            if "toolResult" in block:
                r = block["toolResult"]
                results[r.get("toolUseId", "")] = {
                    "status": r.get("status"),
                    "content": [c.get("json", c.get("text")) for c in r.get("content", [])],
                }
    for message in messages:
        if message.get("role") != "assistant":
            continue
        for block in message.get("content", []):
            if "toolUse" in block:
                use = block["toolUse"]
                res = results.get(use.get("toolUseId", ""), {})
                calls.append(
                    {"name": use.get("name"), "input": use.get("input"), "status": res.get("status"),
                     "result": res.get("content")}
                )  # fmt: skip
            elif "text" in block and block["text"]:
                texts.append(block["text"])
    return calls, texts


def usage_of(agent: Agent) -> dict[str, Any]:
    try:
        usage = agent.event_loop_metrics.accumulated_usage
        cycles = agent.event_loop_metrics.cycle_count
    except AttributeError:
        return {"input_tokens": None, "output_tokens": None, "model_calls": None}
    return {
        "input_tokens": usage.get("inputTokens"),
        "output_tokens": usage.get("outputTokens"),
        "model_calls": cycles,
    }


async def run_agent(
    agent: Agent, prompt: str, timeout_s: float
) -> tuple[str, str | None, float]:
    """Invoke ``agent`` once; return (answer, error, seconds). Never raises for a model failure."""
    from strands.types.exceptions import MaxTokensReachedException

    t0 = time.perf_counter()
    answer, error = "", None
    try:
        result = await asyncio.wait_for(agent.invoke_async(prompt), timeout=timeout_s)
        answer = str(result).strip()
    except MaxTokensReachedException as exc:
        error = f"max_tokens: {exc}"[:300]
    except asyncio.TimeoutError:
        error = f"timeout after {timeout_s} s"
    except Exception as exc:  # any model or transport failure is a graded result, not a crash
        error = f"{type(exc).__name__}: {exc}"[:300]
    return answer, error, time.perf_counter() - t0


async def run_counting(
    *,
    backend: Any,
    model: Any,
    qset: QuestionSet,
    tools: str,
    runs: int,
    constrained: bool,
    emit: Callable[[dict[str, Any]], None],
    timeout_s: float = 300.0,
    progress: Callable[..., None] = lambda *_, **__: None,
) -> None:
    """``runs`` fresh agents answer ``qset`` on ``backend``; each run becomes one record."""
    from strands import Agent

    from ..grading.counting import run_failure

    if constrained and hasattr(model, "set_enums"):
        model.set_enums({"count_ids": {"op": list(OPS)}})
    for i in range(1, runs + 1):
        progress(f"{backend.name} {qset.name} run {i}/{runs}")
        agent = Agent(
            model=model, system_prompt=COUNTING_SYSTEM_PROMPT, tools=make_tools(qset, tools), callback_handler=None
        )
        wall = time.time()
        answer, error, seconds = await run_agent(agent, qset.question, timeout_s)
        error = run_failure(answer, error)  # an empty 200 reply is a failed run, not an answer
        calls, texts = transcript(agent.messages)
        emit(
            {
                "part": qset.name,
                "backend": backend.name,
                "run": i,
                "started": utc.iso_millis(utc.at_epoch(wall)),
                "tools": tools,
                "constrained": constrained,
                "question": qset.question,
                "ids": list(qset.ids),
                "answer": answer,
                "calls": calls,
                "texts": texts,
                "error": error,
                "seconds": round(seconds, 4),
                "usage": usage_of(agent),
            }
        )


class Counting:
    """The part: both question sets on every backend with tool calls, in turn; each set is its own part in
    ``requests.jsonl``, ``skipped`` and the failure streak."""

    name = "counting"
    records = tuple(q.name for q in QUESTION_SETS)
    across_backends = False

    def width(self, options: Any, plan: LevelPlan) -> int:
        return 1

    async def run(self, ctx: Context) -> None:
        """One agent model per backend (from the client made when the run started), both sets through it."""
        o = ctx.options
        for b in ctx.backends:
            client = ctx.clients.get(b.name)
            if client is None or client.no_tools:
                _skip(ctx, b.name, client.no_tools if client else "failed: no client")
                continue
            try:
                model = client.agent_model()
            except Exception as exc:
                _skip(ctx, b.name, f"failed: {exc}"[:300])
                continue
            for q in QUESTION_SETS:
                await ctx.guard(b, q.name, run_counting(
                    backend=b, model=model, qset=q, tools=o.tools, runs=o.runs, constrained=client.constrained,
                    emit=ctx.emit, timeout_s=o.request_timeout_s, progress=ctx.progress))


def _skip(ctx: Context, backend: str, reason: str) -> None:
    for q in QUESTION_SETS:
        ctx.skipped[backend][q.name] = reason


PART = Counting()
