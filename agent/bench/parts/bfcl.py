"""The ``bfcl`` part: a seeded, stratified sample of the Berkeley Function Calling Leaderboard's
non-live Python cases, sent to every backend through its own tool interface
(:mod:`agent.bench.clients.bfcl_clients`), one record per case. Grading is done later, from the records
(:mod:`agent.bench.grading.bfcl_grading`, :mod:`agent.bench.analysis.bfcl_summary`).

Every backend answers the same cases (same ``--bfcl-n`` and ``--bfcl-seed``), so two backends can
be compared case by case. Each record carries the case's messages, function documents and
possible answers next to the calls that came back, so a reader can check each grade by hand.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Mapping, Sequence

from ..tasks.bfcl_cases import PINNED_VERSION, BfclUnavailableError, Case, installed_version, sample_cases
from ..command.evidence import utc_iso

if TYPE_CHECKING:
    from ...backends import Backend
    from ..clients.bfcl_clients import ToolClient

DEFAULT_N = 200
DEFAULT_SEED = 0
MAX_TOKENS = 512
"""Output cap per case (the agents' own cap): enough for four calls with their arguments."""
STOP_AFTER_ERRORS = 8
"""A backend whose last this-many cases all failed is stopped: a dead or hung server must not
cost a timeout per remaining case."""
NO_TOOLS_NEURON = "no tool calls (the Neuron server ignores tools)"
NO_TOOLS = "no tool calls and no constrained mode"


def _cases(text: str) -> int | None:
    if text.strip().lower() == "all":
        return None
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a number of cases or 'all', got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError("at least 1 case")
    return n


def _seed(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"an integer seed, got {text!r}") from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The part's options (its concurrency is the highest ``--concurrency`` level)."""
    g = parser.add_argument_group("bfcl (tool calling, BFCL cases)")
    g.add_argument("--bfcl-n", type=_cases, default=DEFAULT_N, metavar="N",
                   help=f"cases per backend, drawn evenly from the five categories, or 'all' (1,240) "
                        f"(default: {DEFAULT_N})")
    g.add_argument("--bfcl-seed", type=_seed, default=DEFAULT_SEED, metavar="S",
                   help=f"seed of the case sample; every backend gets the same cases (default: {DEFAULT_SEED})")
    g.add_argument("--bfcl-stream", action="store_true",
                   help="stream the replies of OpenAI-compatible servers and SageMaker (tests the streaming tool "
                        "parser); Bedrock always uses Converse (default: whole replies)")


def options(namespace: argparse.Namespace, concurrency: int) -> dict[str, Any]:
    """The part's options as recorded in ``run.json``."""
    n = getattr(namespace, "bfcl_n", DEFAULT_N)
    return {
        "bfcl_n": "all" if n is None else n,
        "bfcl_seed": getattr(namespace, "bfcl_seed", DEFAULT_SEED),
        "bfcl_stream": bool(getattr(namespace, "bfcl_stream", False)),
        "bfcl_concurrency": concurrency,
        "bfcl_max_tokens": MAX_TOKENS,
        "bfcl_eval": installed_version() or f"not installed (pinned {PINNED_VERSION})",
    }


def client_for(b: Backend, pool: Any, *, stream: bool, concurrency: int, timeout_s: float) -> ToolClient | str:
    """The backend's BFCL client, or why it takes no part."""
    from ..clients.bfcl_clients import BedrockToolClient, OpenAIToolClient, SageMakerToolClient

    if b.kind == "neuron":
        return NO_TOOLS_NEURON
    if b.kind == "openai":
        if not (b.tool_calls or b.constrained_tools):
            return NO_TOOLS
        return OpenAIToolClient(str(b.base_url), b.model_id, max_tokens=MAX_TOKENS, timeout_s=timeout_s,
                                stream=stream, constrained=b.constrained_tools, max_connections=max(8, concurrency),
                                api_key=b.metadata.get("api_key"))  # fmt: skip
    if b.kind == "bedrock":
        return BedrockToolClient(pool.boto_client(b), b.model_id, max_tokens=MAX_TOKENS, max_workers=concurrency)
    if b.kind == "sagemaker":
        return SageMakerToolClient(pool.boto_client(b), str(b.endpoint_name), max_tokens=MAX_TOKENS, stream=stream,
                                   max_workers=concurrency)  # fmt: skip
    return f"unknown backend kind {b.kind!r}"


def case_record(b: Backend, client: ToolClient, case: Case, seed: int, wall: float, reply: Any) -> dict[str, Any]:
    """One case's record: the case as sent, and what came back."""
    return {
        "part": "bfcl",
        "backend": b.name,
        "case": case.id,
        "category": case.category,
        "seed": seed,
        "started": utc_iso(wall),
        "interface": client.interface,
        "constrained": client.constrained,
        "messages": case.messages,
        "functions": case.functions,
        "ground_truth": case.ground_truth,
        **reply.as_record(),
    }


async def run_bfcl(
    *,
    backend: Backend,
    client: ToolClient,
    cases: Sequence[Case],
    concurrency: int,
    seed: int,
    emit: Callable[[dict[str, Any]], None],
    progress: Callable[[str], None] = lambda _: None,
    stop_after_errors: int = STOP_AFTER_ERRORS,
) -> str | None:
    """Send every case to ``backend`` with ``concurrency`` in flight; one record per case.

    Returns:
        None, or why the backend was stopped before the last case.
    """
    queue: asyncio.Queue[Case] = asyncio.Queue()
    for case in cases:
        queue.put_nowait(case)
    state = {"done": 0, "failed_in_a_row": 0, "last_error": None}
    stopped: list[str] = []

    async def worker() -> None:
        while not stopped:
            try:
                case = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            wall = time.time()
            reply = await client.ask(case)
            emit(case_record(backend, client, case, seed, wall, reply))
            state["done"] += 1
            if reply.error:
                state["failed_in_a_row"] += 1
                state["last_error"] = reply.error
            else:
                state["failed_in_a_row"] = 0
            if state["failed_in_a_row"] >= stop_after_errors and not stopped:
                stopped.append(f"stopped after {stop_after_errors} failed cases in a row; {queue.qsize()} of "
                               f"{len(cases)} cases not sent (last: {state['last_error']})"[:300])
            progress(f"{backend.name} bfcl {state['done']}/{len(cases)}")

    await asyncio.gather(*(worker() for _ in range(max(1, concurrency))))
    return stopped[0] if stopped else None


async def run_part(
    *,
    backends: Sequence[Backend],
    pool: Any,
    namespace: argparse.Namespace,
    concurrency: int,
    timeout_s: float,
    skipped: Mapping[str, dict[str, str]],
    emit: Callable[[dict[str, Any]], None],
    progress: Callable[[str], None],
    guard: Callable[[Backend, str, Awaitable[None]], Awaitable[None]],
) -> None:
    """The part on every backend in turn; a backend that takes no part is recorded in ``skipped``."""
    from ..grading.bfcl_grading import checker

    recorded = options(namespace, concurrency)
    try:
        cases = sample_cases(getattr(namespace, "bfcl_n", DEFAULT_N), recorded["bfcl_seed"])
        checker()
    except BfclUnavailableError as exc:
        for b in backends:
            skipped[b.name]["bfcl"] = f"failed: {exc}"
        return
    for b in backends:
        try:
            client = client_for(b, pool, stream=recorded["bfcl_stream"], concurrency=concurrency, timeout_s=timeout_s)
        except Exception as exc:  # e.g. no credentials for a boto3 client
            skipped[b.name]["bfcl"] = f"failed: {type(exc).__name__}: {exc}"[:300]
            continue
        if isinstance(client, str):
            skipped[b.name]["bfcl"] = client
            continue

        async def one(b: Backend = b, client: ToolClient = client) -> None:
            try:
                stop = await run_bfcl(backend=b, client=client, cases=cases, concurrency=concurrency,
                                      seed=recorded["bfcl_seed"], emit=emit, progress=progress)  # fmt: skip
            finally:
                await client.close()
            if stop:
                skipped[b.name]["bfcl"] = f"failed: {stop}"

        await guard(b, "bfcl", one())
