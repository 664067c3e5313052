"""The benchmark runner ``python -m agent.run`` calls: :func:`add_arguments`, :func:`check_options` and
:func:`run`.

``run`` drives the selected parts on every selected backend, in this order so the *cold*
request really is a backend's first: the chat benchmark, the counting demo (both question
sets), the BFCL tool-calling cases (``bfcl``, when selected), the quality lane (``quality``, when
selected), the orchestrator. Every request
is appended to ``requests.jsonl`` as it finishes;
``summary.json``, the plots and ``REPORT.md`` are computed from it at the end, also when a
backend fails or the run is interrupted. The exit code is 0 only when every selected backend
completed every part it takes part in.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from rigs import utc
from rigs.command import EXIT_FAILED, EXIT_OK
from rigs.files import write_atomic

from ..clients.reply import ChatRequest
from ..parts import bfcl, quality, stopping
from ..presentation import console
from ..tasks.workload import CHAT_PROMPT, QUESTION_SETS
from . import evidence, run_info
from .options import BenchOptions, OptionError, add_arguments, check

# The parts, the clients and the summary pull in strands, aiohttp and pydantic (about
# 1.5 s); they are imported where a run needs them so `--help` and `--list` start fast.
if TYPE_CHECKING:
    import boto3

    from ...backends import Backend
    from ..clients.base import BackendClient
    from ..results.summary import Summary

__all__ = ["OptionError", "add_arguments", "check_options", "run", "write_outputs"]

logger = logging.getLogger(__name__)


def check_options(namespace: argparse.Namespace) -> None:
    """Refuse options that do not fit together, before anything starts.

    Raises:
        OptionError: one line naming the problem and the fix.
    """
    check(namespace)


def run(
    backends: Sequence[Backend],
    options: argparse.Namespace,
    out_dir: Path,
    session: boto3.Session | None = None,
) -> int:
    """Run the selected parts on ``backends`` and write the evidence folder ``out_dir``.

    Returns:
        0 when every backend completed; 1 when any failed (the evidence is written either way). What
        failed is printed to stderr, one line per backend and part.

    Raises:
        evidence.FolderInUse: ``out_dir`` is a file or holds another run's evidence.
    """
    out_dir = evidence.claim_folder(Path(out_dir))
    try:
        return _run(list(backends), BenchOptions.from_namespace(options), out_dir, session)
    finally:
        evidence.end_claim(out_dir)


def _run(backends: list[Backend], options: BenchOptions, out_dir: Path, session: boto3.Session | None) -> int:
    bench = Bench(backends, options, out_dir, session)
    try:
        bench.start()
        asyncio.run(bench.main())
    except KeyboardInterrupt:
        bench.interrupted = True
        bench.finish()
        raise
    except BaseException:
        bench.interrupted = True
        bench.finish()
        raise
    result = bench.finish()
    from ..presentation.terminal import print_end

    for line in console.failure_lines(result) if result else []:
        print(line, file=sys.stderr, flush=True)
    print_end(result, out_dir)
    if result is None:
        return EXIT_FAILED
    return EXIT_OK if all(b.completed for b in result.backends.values()) else EXIT_FAILED


class Bench:
    """One run: its backends, options, clients and evidence files."""

    def __init__(self, backends: list[Backend], options: BenchOptions, out_dir: Path,
                 session: boto3.Session | None) -> None:
        from ..clients.base import ModelSettings
        from ..parts.capacity import Plan

        self.backends = backends
        self.options = options
        self.out_dir = out_dir
        self.session = session
        self.demos = list(options.demos)
        self.runs = options.runs
        self.plan = Plan.of(target=options.target, concurrency=options.concurrency, repeats=options.repeats,
                            max_concurrency=options.max_concurrency, budget_s=options.slo_budget_s)
        self.levels = list(self.plan.levels)
        self.timeout_s = options.request_timeout_s
        self.streak = stopping.FailureStreak(options.max_consecutive_failures)
        self._running: dict[str, tuple[str, asyncio.Task[Any]]] = {}
        self.settings = ModelSettings(max_connections=max(64, self.plan.width))
        self.epoch = time.perf_counter()
        self.interrupted = False
        recorded = {**options.record(bfcl_concurrency=max(self.levels)), "concurrency": self.levels,
                    **self.plan.record()}
        settings = {**self.settings.as_dict(), "timing_retries": 0, "timing_timeout_s": self.timeout_s}
        self.run_info = run_info.describe(backends, recorded, settings)
        self.skipped: dict[str, dict[str, str]] = self.run_info["skipped"]
        self.stopped: dict[str, dict[str, Any]] = self.run_info["stopped"]
        self.log: evidence.RequestLog | None = None
        self._finished = False
        self._result: Summary | None = None

    def start(self) -> None:
        """Write ``run.json`` at once (an interrupt from here on leaves a run a reader can open), then open
        ``requests.jsonl`` and read the prices."""
        evidence.write_json(self.out_dir / evidence.RUN, self.run_info)
        self.log = evidence.RequestLog(self.out_dir / evidence.REQUESTS)
        run_info.add_prices(self.run_info, self.backends, self.session, self.options.bedrock_tier)
        evidence.write_json(self.out_dir / evidence.RUN, self.run_info)

    # --- progress -----------------------------------------------------------------------

    def progress(self, message: str, *, milestone: bool = False) -> None:
        """What the run is doing: on a terminal, one line rewritten in place for every request; otherwise
        (a log, a pipe, CI) one plain line per part and per concurrency level (``milestone``)."""
        elapsed = time.perf_counter() - self.epoch
        logger.info("elapsed=<%.1f> | %s", elapsed, message)
        if sys.stderr.isatty():
            print(f"\r\033[K[{elapsed:6.1f}s] {message}", end="", file=sys.stderr, flush=True)
        elif milestone:
            print(f"[{elapsed:6.1f}s] {message}", file=sys.stderr, flush=True)

    def emit(self, record: dict[str, Any]) -> None:
        assert self.log is not None, "emit before start"
        self.log.append(record)
        name = record.get("backend")
        part, task = self._running.get(name, (None, None))
        if task is None or record.get("part") != part:
            return
        stop = self.streak.observe(name, record)
        if stop is not None:
            self.stopped[name] = {"part": part, **stop}
            self.say(f"{name}: stopped after {stop['after']} failures in a row in {part} ({stop['reason']}); "
                     "its remaining parts are skipped (--max-consecutive-failures)")
            task.cancel()
            raise stopping.BackendStopped(name)

    def say(self, line: str) -> None:
        """A line for the user now, on its own line even while the progress line is showing."""
        if sys.stderr.isatty():
            print("\r\033[K", end="", file=sys.stderr)
        print(line, file=sys.stderr, flush=True)

    # --- the parts ----------------------------------------------------------------------

    def _chat_request(self) -> ChatRequest:
        return ChatRequest.user(CHAT_PROMPT, self.options.max_tokens, ignore_eos=self.options.ignore_eos)

    async def main(self) -> None:
        from ..clients.pool import ClientPool

        async with ClientPool(self.backends, self.session, self.settings, request_timeout_s=self.timeout_s,
                              width=max(self.plan.width, max(self.levels), self._quality_width())) as pool:
            clients: dict[str, BackendClient] = {}
            for b in self.backends:
                try:
                    clients[b.name] = pool.client(b)
                except Exception as exc:  # e.g. no credentials for a boto3 client
                    self.skipped[b.name]["chat"] = f"failed: {type(exc).__name__}: {exc}"[:300]
            o = self.options
            try:
                if "chat" in self.demos:
                    await self._chat(clients)
                if "counting" in self.demos:
                    await self._counting(clients)
                if "bfcl" in self.demos:
                    await bfcl.run_part(backends=self.backends, pool=pool, n=o.bfcl_n, seed=o.bfcl_seed,
                                        stream=o.bfcl_stream, concurrency=max(self.levels), skipped=self.skipped,
                                        emit=self.emit, progress=self.progress, guard=self._guard)  # fmt: skip
                if "quality" in self.demos:
                    self.progress("quality: making the items", milestone=True)
                    await quality.run_part(backends=self.backends, pool=pool, n=o.quality_n, seed=o.quality_seed,
                                           concurrency=o.quality_concurrency, skipped=self.skipped, emit=self.emit,
                                           progress=self.progress, guard=self._guard)  # fmt: skip
                if "orchestrator" in self.demos:
                    await self._orchestrate(clients)
            finally:
                self.run_info["notes"] += pool.notes()
        if sys.stderr.isatty():
            print("", file=sys.stderr)

    def _quality_width(self) -> int:
        return self.options.quality_concurrency if "quality" in self.demos else 1

    async def _chat(self, clients: dict[str, BackendClient]) -> None:
        from ..parts.capacity import run_under_target
        from ..parts.chat import run_chat

        request = self._chat_request()
        for b in self.backends:
            if b.name not in clients:
                continue
            if self.plan.searched:
                log = self.run_info.setdefault("slo_search", {}).setdefault(b.name, {})
                await self._guard(b, "chat", run_under_target(
                    backend=b, client=clients[b.name], request=request, plan=self.plan, runs=self.runs,
                    epoch=self.epoch, emit=self.emit, log=log, progress=self.progress))
                continue
            await self._guard(b, "chat", run_chat(
                backend=b, client=clients[b.name], request=request, runs=self.runs, concurrency=self.levels,
                epoch=self.epoch, emit=self.emit, progress=self.progress))

    async def _counting(self, clients: dict[str, BackendClient]) -> None:
        from ..parts.counting import run_counting

        tools = self.options.tools
        for b in self.backends:
            client = clients.get(b.name)
            if client is None or client.no_tools:
                for q in QUESTION_SETS:
                    self.skipped[b.name][q.name] = client.no_tools if client else "failed: no client"
                continue
            try:
                model = client.agent_model()
            except Exception as exc:
                for q in QUESTION_SETS:
                    self.skipped[b.name][q.name] = f"failed: {exc}"[:300]
                continue
            for q in QUESTION_SETS:
                await self._guard(b, q.name, run_counting(
                    backend=b, model=model, qset=q, tools=tools, runs=self.runs, constrained=client.constrained,
                    emit=self.emit, timeout_s=self.timeout_s, progress=self.progress))

    async def _guard(self, b: Backend, part: str, coro: Any) -> None:
        """Run one part for one backend; a crash is recorded and the run goes on. A backend that was
        stopped (too many failures in a row) runs no further part; the part that trips the limit is
        cancelled."""
        if b.name in self.stopped:
            coro.close()
            self.skipped[b.name][part] = f"not run: {b.name} was stopped after failures in a row"
            return
        self.streak.start(b.name)
        self.progress(f"{b.name}: {part}", milestone=True)
        task = asyncio.ensure_future(coro)
        self._running[b.name] = (part, task)
        try:
            await task
        except stopping.BackendStopped:
            pass
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if b.name not in self.stopped or (current is not None and current.cancelling()):
                raise
        except KeyboardInterrupt:
            raise
        except Exception as exc:
            logger.exception("backend=<%s>, part=<%s> | part failed", b.name, part)
            self.skipped[b.name][part] = f"failed: {type(exc).__name__}: {exc}"[:300]
        finally:
            self._running.pop(b.name, None)

    async def _orchestrate(self, clients: dict[str, BackendClient]) -> None:
        from ..parts.orchestrator import run_orchestrator

        agents = [b for b in self.backends if b.name in clients and clients[b.name].can_drive_agent]
        candidates = [b for b in agents if b.name not in self.stopped]
        chosen = next((b for b in candidates if b.kind == "bedrock"), candidates[0] if candidates else None)
        if chosen is None:
            stopped = [b.name for b in agents if b.name in self.stopped]
            self.run_info["orchestrator"] = {"reason": "no selected backend can drive an agent (tool calls needed)"
                                             + (f"; stopped after failures: {', '.join(stopped)}" if stopped else "")}
            return
        offered = [b for b in self.backends if b.name in clients and b.name not in self.stopped]
        self.progress(f"orchestrator on {chosen.name}, asking {len(offered)} backend(s)", milestone=True)
        client = clients[chosen.name]
        try:
            model = client.agent_model()
        except Exception as exc:
            self.skipped[chosen.name]["orchestrator"] = f"failed: {exc}"[:300]
            self.run_info["orchestrator"] = {"reason": f"the orchestrator model failed: {exc}"[:300]}
            return
        if client.constrained and hasattr(model, "set_enums"):
            model.set_enums({})
        await self._guard(chosen, "orchestrator", run_orchestrator(
            orchestrator=chosen, model=model, constrained=client.constrained, backends=offered, clients=clients,
            epoch=self.epoch, emit=self.emit, question=self.options.question,
            timeout_s=self.timeout_s * 2))

    # --- the end --------------------------------------------------------------------------

    def finish(self) -> Summary | None:
        """Write run.json, summary.json, the plots and REPORT.md from what was recorded."""
        if self._finished:
            return self._result
        self._finished = True
        if self.log is not None:
            self.log.close()
        self.run_info["finished"] = utc.iso_millis()
        self.run_info["interrupted"] = self.interrupted
        evidence.write_json(self.out_dir / evidence.RUN, self.run_info)
        try:
            self._result = write_outputs(self.out_dir)
        except Exception:
            logger.exception("out_dir=<%s> | could not write the summary and report", self.out_dir)
            self._result = None
        return self._result


def write_outputs(out_dir: Path) -> Summary:
    """(Re)compute summary.json, the plots, REPORT.md and REPORT.html from requests.jsonl and run.json."""
    import json

    from ..analysis import summary
    from ..presentation import html_report, report

    result = summary.summarize(evidence.read_requests(out_dir / evidence.REQUESTS),
                               json.loads((out_dir / evidence.RUN).read_text()))
    evidence.write_json(out_dir / evidence.SUMMARY, result.as_json())
    report.make_plots(result, out_dir)
    text = report.render(result)
    write_atomic(out_dir / evidence.REPORT, text)
    write_atomic(out_dir / html_report.FILE, html_report.render(text, out_dir))
    return result
