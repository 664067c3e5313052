"""The ``bfcl`` part: a seeded, stratified sample of the Berkeley Function Calling Leaderboard's
non-live Python cases, sent to every backend through its own tool interface
(:mod:`agent.bench.clients`), one record per case. Grading is done later, from the records
(:mod:`agent.bench.grading.bfcl_grading`, :mod:`agent.bench.analysis.blocks.bfcl`).

Every backend answers the same cases (same ``--bfcl-n`` and ``--bfcl-seed``), so two backends can
be compared case by case. Each record carries the case's messages, function documents and
possible answers next to the calls that came back, so a reader can check each grade by hand.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from ..clients.base import BackendClient
from ..clients.reply import ChatRequest, Reply, Tool
from ..results.constants import NOT_OFFERED_PREFIX
from ..tasks.bfcl_cases import NEEDS, PINNED_VERSION, BfclUnavailableError, Case, installed_version, sample_cases
from ..tasks.bfcl_tools import parameters, tool_name
from .sending import in_flight, reply_fields

if TYPE_CHECKING:
    from ...backends import Backend
    from .capacity import LevelPlan
    from .part import Context

DEFAULT_N = 200
DEFAULT_SEED = 0
ALL = "all"
"""``--bfcl-n all``: every non-live Python case (:data:`..tasks.bfcl_cases.ALL_CASES`)."""
MAX_TOKENS = 512
"""Output cap per case (the agents' own cap): enough for four calls with their arguments."""


def options_record(*, n: int | None, seed: int, stream: bool, concurrency: int) -> dict[str, Any]:
    """The part's options as recorded in ``run.json``."""
    return {
        "bfcl_n": ALL if n is None else n,
        "bfcl_seed": seed,
        "bfcl_stream": stream,
        "bfcl_concurrency": concurrency,
        "bfcl_max_tokens": MAX_TOKENS,
        "bfcl_eval": installed_version() or f"not installed (pinned {PINNED_VERSION})",
    }


def tools_of(functions: Sequence[Mapping[str, Any]]) -> tuple[Tool, ...]:
    """BFCL function documents as the tools offered (dots in names become underscores)."""
    return tuple(Tool(tool_name(f["name"]), f.get("description") or f["name"], parameters(f)) for f in functions)


def case_record(b: Backend, client: BackendClient, request: ChatRequest, case: Case, seed: int,
                reply: Reply) -> dict[str, Any]:
    """One case's record: the case as sent, and what came back."""
    return {
        "part": "bfcl",
        "backend": b.name,
        "case": case.id,
        "category": case.category,
        "seed": seed,
        "constrained": client.constrained,
        "messages": case.messages,
        "functions": case.functions,
        "ground_truth": case.ground_truth,
        "calls": reply.calls,
        **reply_fields(client, request, reply),
    }


def not_offered(b: Backend, case: Case) -> str | None:
    """What ``case`` needs that ``b``'s endpoint does not offer for its model, with where that is stated (the
    catalog's ``bedrock_endpoint``, carried in its metadata); None where it is offered or not known to be missing."""
    feature = NEEDS.get(case.category)
    source = b.metadata.get(NOT_OFFERED_PREFIX + feature) if feature else None
    if feature is None or source is None:
        return None
    return f"{feature.replace('_', ' ')}: not offered by its endpoint for its model ({source})"


def not_offered_record(b: Backend, client: BackendClient, case: Case, seed: int, why: str) -> dict[str, Any]:
    """A case not sent to ``b`` because its endpoint does not offer what it needs: no reply, and why."""
    return {"part": "bfcl", "backend": b.name, "case": case.id, "category": case.category, "seed": seed,
            "constrained": client.constrained, "messages": case.messages, "functions": case.functions,
            "ground_truth": case.ground_truth, "calls": [], "not_offered": why}


async def run_bfcl(
    *,
    backend: Backend,
    client: BackendClient,
    cases: Sequence[Case],
    concurrency: int,
    seed: int,
    stream: bool,
    emit: Callable[[dict[str, Any]], None],
    progress: Callable[..., None] = lambda *_, **__: None,
) -> None:
    """Send every case to ``backend`` with ``concurrency`` in flight; one record per case. A backend that
    keeps failing is stopped by the runner's failure streak (``--max-consecutive-failures``), as in
    every part. A case that needs what its endpoint does not offer is recorded as not offered, not sent."""
    done = 0

    async def send(case: Case) -> None:
        nonlocal done
        why = not_offered(backend, case)
        if why:
            done += 1
            emit(not_offered_record(backend, client, case, seed, why))
            return
        request = ChatRequest(messages=tuple(case.messages), max_tokens=MAX_TOKENS, stream=stream,
                              tools=tools_of(case.functions))  # fmt: skip
        reply = await client.send(request)
        done += 1
        emit(case_record(backend, client, request, case, seed, reply))
        progress(f"{backend.name} bfcl {done}/{len(cases)}")

    await in_flight(cases, concurrency, send)


class Bfcl:
    """The part: the same sample of cases on every backend with tool calls, in turn."""

    name = "bfcl"
    records = ("bfcl",)
    across_backends = False

    def width(self, options: Any, plan: LevelPlan) -> int:
        return max(plan.levels)

    async def run(self, ctx: Context) -> None:
        """``--bfcl-n`` cases (None: all) of ``--bfcl-seed``, ``max(--concurrency)`` in flight; BFCL not
        installed, every backend is recorded as skipped."""
        from ..grading.bfcl_grading import checker

        o, concurrency = ctx.options, max(ctx.plan.levels)
        try:
            cases = sample_cases(o.bfcl_n, o.bfcl_seed)
            checker()
        except BfclUnavailableError as exc:
            ctx.skip_all(self.name, f"failed: {exc}")
            return
        await ctx.each_backend(self.name, lambda b, client: run_bfcl(
            backend=b, client=client, cases=cases, concurrency=concurrency, seed=o.bfcl_seed, stream=o.bfcl_stream,
            emit=ctx.emit, progress=ctx.progress), tools=True)


PART = Bfcl()
