"""The benchmark runner ``python -m agent.run`` calls: :func:`add_arguments`, :func:`check_options` and
:func:`run`.

``run`` drives the parts selected in ``--demos`` on every selected backend, in the order of the
registry of parts (:mod:`agent.bench.parts.registry`: chat, so the *cold* request really is a
backend's first, then counting, bfcl, quality, the orchestrator), each given the run as a
:class:`agent.bench.parts.part.Context`. Every request is appended to ``requests.jsonl`` as it finishes;
``summary.json``, the plots and ``REPORT.md`` are computed from it at the end, also when a
backend fails or the run is interrupted. The exit code is 0 only when every selected backend
completed every part it takes part in.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
import threading
import time
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from kit import utc
from kit.command import EXIT_FAILED, EXIT_OK
from kit.files import write_atomic

from ..parts import stopping
from ..presentation import console
from ..results.constants import CUT_OFF_INTERRUPTED, NOT_RUN_INTERRUPTED
from . import evidence, run_info
from .options import BenchOptions, OptionError, add_arguments, check

# The parts, the clients and the summary pull in strands, aiohttp and pydantic (about
# 1.5 s); they are imported where a run needs them so `--help` and `--list` start fast.
if TYPE_CHECKING:
    import boto3

    from ...backends import Backend
    from ..clients.base import BackendClient
    from ..clients.pool import ClientPool
    from ..parts.part import Context
    from ..results.run import Stopped
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
        console.partial_report(bench.finish(), out_dir)
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

        self.backends = backends
        self.options = options
        self.out_dir = out_dir
        self.session = session
        self.demos = list(options.demos)
        self.plan = options.chat_plan()
        self.levels = list(self.plan.levels)
        self.timeout_s = options.request_timeout_s
        self.streak = stopping.FailureStreak(options.max_consecutive_failures)
        self._running: dict[str, tuple[str, asyncio.Task[Any]]] = {}
        self.settings = ModelSettings(max_connections=max(64, self.plan.width))
        self.epoch = time.perf_counter()
        self.interrupted = False
        from ..results.run import AgentSettings

        settings = AgentSettings(**self.settings.as_dict(), timing_retries=0, timing_timeout_s=self.timeout_s)
        self.run_info = run_info.describe(backends, options.record(max(self.levels), self.plan), settings)
        self.skipped: dict[str, dict[str, str]] = self.run_info.skipped
        self.stopped: dict[str, Stopped] = self.run_info.stopped
        self.log: evidence.RequestLog | None = None
        self._kept: dict[tuple[str, str], list[Any]] = {}
        self._begun: set[tuple[str, str]] = set()
        self._cut_off: dict[str, str] = {}
        self._finished = False
        self._result: Summary | None = None

    def start(self) -> None:
        """Write ``run.json`` at once (an interrupt from here on leaves a run a reader can open), then open
        ``requests.jsonl`` and read the prices."""
        evidence.write_run(self.out_dir / evidence.RUN, self.run_info)
        self.log = evidence.RequestLog(self.out_dir / evidence.REQUESTS)
        run_info.add_prices(self.run_info, self.backends, self.session, self.options.bedrock_tier)
        evidence.write_run(self.out_dir / evidence.RUN, self.run_info)

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
        model = self.log.append(record)
        self._kept.setdefault((model.backend, model.part), []).append(model)
        name = record.get("backend")
        part, task = self._running.get(name, (None, None))
        if task is None or record.get("part") != part:
            return
        stop = self.streak.observe(name, record)
        if stop is not None:
            from ..results.run import Stopped

            self.stopped[name] = Stopped(part=part, **stop)
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

    async def main(self) -> None:
        from ..clients.pool import ClientPool
        from ..parts.registry import chosen

        parts = chosen(self.demos)
        width = max((part.width(self.options, self.plan) for part in parts), default=1)
        async with ClientPool(self.backends, self.session, self.settings, request_timeout_s=self.timeout_s,
                              width=width) as pool:
            try:
                ctx = self._context(pool)
                for part in parts:
                    await part.run(ctx)
            finally:
                if pool.notes():
                    self.run_info.connection_notes = pool.notes()
        if sys.stderr.isatty():
            print("", file=sys.stderr)

    def _context(self, pool: ClientPool) -> Context:
        """The run as the parts see it, with every backend's client made once (one that cannot be made is
        recorded as skipped)."""
        from ..parts.part import Context

        clients: dict[str, BackendClient] = {}
        for b in self.backends:
            try:
                clients[b.name] = pool.client(b)
            except Exception as exc:  # e.g. no credentials for a boto3 client
                self.skipped[b.name]["chat"] = f"failed: {type(exc).__name__}: {exc}"[:300]
        from ..parts.from_rig import for_backend

        rigs = {b.name: rig for b in self.backends
                if (rig := for_backend(b, self.options.load_from, self.timeout_s, self.out_dir.name)) is not None}
        return Context(backends=self.backends, options=self.options, plan=self.plan, pool=pool, clients=clients,
                       rigs=rigs, epoch=self.epoch, info=self.run_info, skipped=self.skipped, stopped=self.stopped,
                       emit=self.emit, progress=self.progress, guard=self._guard,
                       recorded=lambda backend, part: tuple(self._kept.get((backend, part), ())))  # fmt: skip

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
        # What the part set in run.json before it starts (the open loop's window) is on disk before its first
        # record: a run killed outright is still rebuilt with every record counted.
        evidence.write_run(self.out_dir / evidence.RUN, self.run_info)
        task = asyncio.ensure_future(coro)
        self._running[b.name] = (part, task)
        self._begun.add((b.name, part))
        try:
            await task
        except stopping.BackendStopped:
            pass
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if b.name not in self.stopped or (current is not None and current.cancelling()):
                self._cut_off[b.name] = part
                raise
        except KeyboardInterrupt:
            self._cut_off[b.name] = part
            raise
        except Exception as exc:
            logger.exception("backend=<%s>, part=<%s> | part failed", b.name, part)
            self.skipped[b.name][part] = f"failed: {type(exc).__name__}: {exc}"[:300]
        finally:
            self._running.pop(b.name, None)

    # --- the end --------------------------------------------------------------------------

    def finish(self) -> Summary | None:
        """Write run.json, summary.json, the plots and REPORT.md from what was recorded; a Ctrl-C or SIGTERM
        meanwhile (the second of an interrupted run) waits until they are written."""
        with _interrupts_held():
            return self._finish()

    def _finish(self) -> Summary | None:
        if self._finished:
            return self._result
        self._finished = True
        if self.log is not None:
            self.log.close()
        self.run_info.finished = utc.iso_millis()
        self.run_info.interrupted = self.interrupted
        if self.interrupted:
            self._mark_interrupted()
        evidence.write_run(self.out_dir / evidence.RUN, self.run_info)
        try:
            self._result = write_outputs(self.out_dir)
        except Exception:
            logger.exception("out_dir=<%s> | could not write the summary and report", self.out_dir)
            self._result = None
        return self._result


    def _mark_interrupted(self) -> None:
        """Record in ``skipped`` what the interrupt left undone on each backend: the part it cut off, and each
        part of ``--demos`` run on every backend in turn that had not begun there (nor been skipped)."""
        from ..parts.registry import chosen

        for name, part in self._cut_off.items():
            self.skipped[name][part] = CUT_OFF_INTERRUPTED
        names = [r for part in chosen(self.demos) if not part.across_backends for r in part.records]
        for b in self.backends:
            for part in names:
                if (b.name, part) not in self._begun and part not in self.skipped[b.name]:
                    self.skipped[b.name][part] = NOT_RUN_INTERRUPTED


@contextmanager
def _interrupts_held() -> Iterator[None]:
    """SIGINT and SIGTERM are held while the body runs (in the main thread; elsewhere no signal arrives): one that
    arrives is said on stderr, and the body goes on, so the evidence is written whole however often Ctrl-C is
    pressed. The line is written straight to the file descriptor: a handler printing through ``sys.stderr`` while
    the body is printing would be a reentrant call."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def hold(signum: int, frame: object) -> None:
        with suppress(OSError):
            os.write(2, b"\ninterrupted again: the partial report is being written first (a few seconds)\n")

    previous = {sig: signal.signal(sig, hold) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def write_outputs(out_dir: Path) -> Summary:
    """(Re)compute summary.json, the plots, REPORT.md and REPORT.html from requests.jsonl and run.json. A line of
    requests.jsonl that is not a record is said on stderr and in the report's notes, with its number."""
    import json

    from ..analysis import summary
    from ..presentation import html_report, report

    records, unreadable = evidence.read_evidence(out_dir / evidence.REQUESTS)
    run = json.loads((out_dir / evidence.RUN).read_text())
    for line in unreadable:
        print(f"{out_dir}: {line}", file=sys.stderr, flush=True)
    if unreadable and isinstance(run, dict):
        run["notes"] = [*run.get("notes", []), *unreadable]
    result = summary.summarize(records, run)
    evidence.write_json(out_dir / evidence.SUMMARY, result.as_json())
    report.make_plots(result, out_dir)
    text = report.render(result)
    write_atomic(out_dir / evidence.REPORT, text)
    write_atomic(out_dir / html_report.FILE, html_report.render(text, out_dir, verdict=result.recommendation.verdict))
    return result
