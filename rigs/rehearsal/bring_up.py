"""The rehearsal's middle steps: up (every rig of a phase in parallel, with region failover:
:class:`rigs.deploy.up.Up`), then the benchmark of what came up (``python -m agent.run``, run as a command
into the rehearsal's evidence folder); with ``--big``, the small rigs destroyed and the big variants
brought up and benchmarked the same way.

Every command runs in a process group of its own (``cdk``, the agent) with the rehearsal's command
environment (:meth:`rigs.rehearsal.state.State.command_env`: offline, moto's endpoint passed down).
"""

from __future__ import annotations

import math
import os
import signal
import threading
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from kit import processes
from kit.command import EXIT_INTERRUPTED
from kit.waiting import poll_until
from rigs import aws
from rigs.catalog.model import BIG_VARIANT
from rigs.catalog.pricing import PriceError
from rigs.deploy.cdk_cli import CdkCli, CdkResult, default_method
from rigs.deploy.up import Up, UpSettings
from rigs.deploy.watch import CAPACITY_GRACE_MINUTES, ENDPOINT_POLL_S, WatchSettings, default_poll_s
from rigs.placement import placement
from rigs.rehearsal import bench_options, timeline
from rigs.rehearsal.options import OFFLINE_CAPACITY_GRACE_MINUTES
from rigs.rehearsal.state import Phase, State

BENCH_WAIT_S = 120.0
"""How long the benchmark gets to stop and write its evidence after an interrupt."""


class Cancelled(BaseException):
    """The rehearsal was interrupted: the waits of ``rigs up`` end at once (not an Exception, so nothing swallows it)."""


class RehearsalCdk(CdkCli):
    """The CDK CLI for ``rigs up``, each call in its own process group with the rehearsal's command environment,
    refused once the rehearsal is cancelled."""

    def __init__(self, state: State) -> None:
        super().__init__(method="direct" if state.offline is not None else default_method())
        self.running = state.running
        self.cancelled = state.cancelled
        self.env = {**state.command_env(), **self.ENV}

    def _run(self, args: list[str], log: Path) -> CdkResult:
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("a", encoding="utf-8") as handle:
            if self.cancelled.is_set():
                handle.write(f"not run (the rehearsal was interrupted): {' '.join(args)}\n")
                return CdkResult(EXIT_INTERRUPTED, log)
            handle.write(f"$ {' '.join(args)}\n")
            handle.flush()
            process = self.running.add(processes.spawn(args, log=handle, cwd=placement.PROJECT_DIR, env=self.env))
            try:
                return CdkResult(process.wait(), log)
            finally:
                self.running.discard(process)


def bootstrap(state: State, regions: Sequence[str]) -> None:
    """``cdk bootstrap`` in those of ``regions`` that lack it."""
    if not regions:
        return
    up = Up(state.session, RehearsalCdk(state), UpSettings(evidence_dir=state.folder / "bootstrap"), say=state.say)
    missing = up.missing_bootstrap(regions)
    if missing:
        failure = up.bootstrap(aws.check_credentials(state.session), missing)
        if failure is not None:
            raise RuntimeError(failure.message)


def _sleeper(state: State) -> Callable[[float], None]:
    """``rigs up``'s sleep, which ends at once with :class:`Cancelled` when the rehearsal is interrupted."""
    def sleep(seconds: float) -> None:
        if state.cancelled.wait(seconds):
            raise Cancelled
    return sleep


def up(state: State, phase: Phase, folder: Path, context: Mapping[str, str]) -> None:
    """Bring the phase's rigs up in parallel (Ctrl-C stays with this thread), and start their timelines."""
    if not phase.plans:
        return
    grace = state.options.capacity_grace
    if grace is None:
        grace = OFFLINE_CAPACITY_GRACE_MINUTES if state.options.offline else CAPACITY_GRACE_MINUTES
    poll = ENDPOINT_POLL_S if state.offline is not None else default_poll_s()
    settings = UpSettings(max_hours=state.options.max_hours, context=dict(context), evidence_dir=folder,
                          watch=WatchSettings(capacity_grace=grace * 60, poll=poll),
                          placement_file=state.placement_file)
    deploy = Up(state.session, RehearsalCdk(state), settings, say=state.say, sleep=_sleeper(state))
    state.step = f"up ({phase.name} model)"
    together = " in parallel" if len(phase.plans) > 1 else ""
    state.say(f"up ({phase.name} model): {', '.join(phase.plans)}{together}; evidence {folder}")
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["results"] = deploy.run(phase.plans)
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread
            box["error"] = exc

    thread = threading.Thread(target=target, name=f"up-{phase.name}", daemon=True)
    thread.start()
    try:  # joined half a second at a time: Ctrl-C reaches this thread
        poll_until(lambda: None if thread.is_alive() else True, timeout_s=math.inf, interval_s=0.5,
                   what=f"up ({phase.name} model)", sleep=thread.join)
    except KeyboardInterrupt:
        state.cancelled.set()
        state.running.stop_all()
        thread.join(60)
        raise
    if "error" in box:
        raise box["error"]
    phase.results = box["results"]
    _start_timelines(state, phase)


def _start_timelines(state: State, phase: Phase) -> None:
    """Each rig's timeline of the phase from what ``rigs up`` recorded, priced in the region it came up in."""
    book = state.prices()
    for result in phase.results:
        rig, _ = phase.plans[result.rig]
        line = timeline.from_up(result.rig, phase.name, rig.model_id, result.timeline,
                                "up" if result.ok else result.reason)
        line.stack = rig.stack_name
        if line.region:
            try:
                price = book.hourly_price(rig, line.region)
                line.usd_per_hour, line.price = price.usd_per_hour, price.describe()
            except PriceError as exc:
                line.price = str(exc)
        phase.timelines.append(line)


def benchmark(state: State, phase: Phase, folder: Path, with_bedrock: bool) -> None:
    """``python -m agent.run`` on every rig of the phase that came up (and the Bedrock backends); Ctrl-C lets it write
    what it measured before it is stopped."""
    names = [r.rig for r in phase.results if r.ok] + (list(state.bedrock) if with_bedrock and state.with_bedrock()
                                                      else [])
    if not names:
        state.say(f"benchmark ({phase.name} model): nothing came up to benchmark")
        return
    state.step = f"the benchmark ({phase.name} model)"
    command = bench_options.command(names, folder, state.offline.stand_in_url if state.offline is not None else None,
                                    state.options.profile, state.bench.words, state.options.tunnel_limit)
    state.say(f"benchmark ({phase.name} model): python {' '.join(command[1:])}")
    process = state.running.add(processes.spawn(command, log=None, stdin=None, cwd=os.getcwd(),
                                                env=state.command_env()))
    phase.bench_folder = folder
    try:
        phase.bench_exit = process.wait()
    except KeyboardInterrupt:
        state.say("benchmark interrupted: it stops and writes what it measured")
        processes.signal_group(process, signal.SIGINT)
        try:
            process.wait(timeout=BENCH_WAIT_S)
        except Exception:  # noqa: BLE001 - then it is stopped
            pass
        phase.bench_exit = processes.stop(process, grace_s=processes.COMMAND_GRACE_S)
        raise
    finally:
        state.running.discard(process)
        answers = timeline.first_answers(folder / "requests.jsonl")
        compiled = timeline.compile_times(folder / "summary.json")
        for line in phase.timelines:
            line.first_answer, line.compile_seconds = answers.get(line.rig), compiled.get(line.rig)
    state.say(f"benchmark ({phase.name} model): exit {phase.bench_exit}; evidence {folder}")


def big_plans(small: Phase, big: Phase) -> None:
    """The big phase keeps the rigs whose small model came up, each trying the region it came up in first."""
    came_up = {r.rig: r.region for r in small.results if r.ok}
    big.plans = {name: (rig, _region_first(candidates, came_up.get(name)))
                 for name, (rig, candidates) in big.plans.items() if name in came_up}


def _region_first(candidates: Sequence[placement.Candidate], region: str | None) -> list[placement.Candidate]:
    """The candidates with ``region`` (where the small model came up) tried first."""
    first = [c for c in candidates if c.region == region]
    return first + [c for c in candidates if c.region != region]


def announce_big(state: State, big: Phase) -> None:
    state.say("big: the small rigs are destroyed first; then " + ", ".join(big.plans)
              + f" come up with their {BIG_VARIANT!r} variant")
    state.step = "the destroy of the small rigs"
