"""``python -m rigs rehearse``: from nothing to a report to nothing, in one command.

The steps, each a function of the rehearsal's typed state (:class:`.state.State`):

1. **Plan** (:mod:`.prepare`): with ``--model``, each rig as it will serve it (the size it fits) or left out
   with why, and Bedrock's OpenAI-compatible endpoint where the catalog names the model's Bedrock id; the
   rigs already deployed are left out (a rehearsal never touches a stack it did not create); ``doctor``
   checks the account and rules out what cannot deploy;
   ``preflight`` records where each rig goes first, from the doctor's own checks (the sequence
   ``up --doctor`` uses too: :mod:`rigs.deploy.sequence`); the estimate (:mod:`.estimate`) says what
   it may cost and how long it may take. Nothing is created before the user says yes (``--yes``).
2. **Up** with the small model (the catalog's, or ``--model``'s with ``-c model.<rig>=ID`` on the size it fits;
   with ``--workload``, the vLLM rigs at the workload's context, ``-c max_model_len.<rig>=N``, as the benchmark
   counts it: :func:`.bench_options.server_context`), every rig in parallel with region failover
   (:mod:`.bring_up`, :class:`rigs.deploy.up.Up`).
3. **Benchmark** every rig that came up (and the Bedrock backends), with ``python -m agent.run`` run as a
   command into the rehearsal's evidence folder; unless ``--bench-options`` name the parts, the
   default parts and the quality lane (``--demos default,quality``; offline, 30 items per backend,
   the stand-in being one CPU toy model), whose minutes of rig time the estimate includes, and
   ``--workload`` passed on. The options are read and checked by the benchmark's own parser first
   (:mod:`.bench_options`).
4. **Big** (``--big``): the small rigs are destroyed, the rigs with a ``big`` catalog variant come
   up again with it, and are benchmarked again; the others are skipped with the catalog's reason.
5. **Down** (:mod:`.cleanup`): ``cdk destroy`` of exactly the stacks it created (:mod:`.down`), then
   the check that nothing of ours is left billing in the four regions
   (:func:`rigs.estate.inventory.discover`).
6. **Timeline** per rig and phase and the rehearsal's own cost (:mod:`.timeline`), in the evidence
   folder and on the terminal (:func:`report`).

Ctrl-C, a rig that fails, or an error at any step after the first stack was created still runs
the down step for everything created; a second Ctrl-C during it stops it and prints what is still
up and the commands that remove it. The rigs' lifetime limit stays the backstop. Every child
process (``cdk``, the agent, and offline the local rig and moto's server) runs in a process group
of its own and is stopped with the rehearsal. Offline, moto's endpoint is passed down to the sessions
and the commands; the rehearsal's own environment is never changed.
"""

from __future__ import annotations

import signal
import sys
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence, TextIO

from kit import utc
from kit.command import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, UsageError
from rigs import aws
from rigs.catalog.model import BIG_VARIANT, load_catalog
from rigs.catalog.pricing import PriceBook
from rigs.rehearsal import bench_options, bring_up, cleanup, prepare, timeline
from rigs.rehearsal import estimate as estimating
from rigs.rehearsal.bring_up import Cancelled
from rigs.rehearsal.offline import OfflineAws, OfflineError
from rigs.rehearsal.state import Options, Output, Phase, State

__all__ = ["Options", "Phase", "State", "Steps", "UsageError", "main", "rehearse", "report", "run"]


@dataclass(frozen=True)
class Steps:
    """The steps after the plan (a test replaces one)."""

    up: Callable[[State, Phase, Path, Mapping[str, str]], None] = bring_up.up
    benchmark: Callable[[State, Phase, Path, bool], None] = bring_up.benchmark
    down: Callable[[State, Any], bool | None] = cleanup.down


def evidence_folder(given: Path | None) -> Path:
    folder = given or Path("results") / f"rehearsal-{utc.folder_stamp()}"
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise UsageError(f"--evidence {folder}: exists and is not an empty folder; name a new one")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--evidence {folder}: cannot create it ({exc.strerror or exc})") from None
    return folder


def _cost_refusal(options: Options, selected: Sequence[Any], max_usd: float) -> str | None:
    """``--max-usd``, before anything is set up or asked of AWS: the rigs named and, with ``--big``, their big
    variants, each in the priciest region it may use until its lifetime limit (offline, the dated price file's
    prices; else the Pricing API's, without credentials the file's). The plan's estimate, which prices each rig in the
    first region it tries and leaves out the rigs already deployed, is never above this bound."""
    rigs = [rig for rig in selected if rig.deployed]
    big = [rig.with_variant(BIG_VARIANT) for rig in rigs if options.big and BIG_VARIANT in rig.variants]
    book = PriceBook(None if options.offline else aws.make_session(options.profile, options.region))
    return estimating.cost_refusal(book, max_usd, options.max_hours, rigs, big)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def run(options: Options, out: TextIO | None = None, stdin: TextIO | None = None, console: Any = None,
        steps: Steps = Steps()) -> int:
    """The whole rehearsal; the exit status (0 done and nothing left, 1 not, 2 bad input, 130 interrupted).

    Raises UsageError for bad input, before anything is created.
    """
    catalog = load_catalog()
    stdin = stdin or sys.stdin
    tokens = bench_options.server_context(options.bench_options, options.workload) if options.workload else None
    chosen = prepare.choose(options, catalog, [catalog.get(name) for name in (options.rigs or list(catalog.rigs))],
                            tokens)
    selected = chosen.rigs
    if not options.yes and not stdin.isatty():
        raise UsageError("rehearse asks before it creates anything (on an account, rigs that bill), and this is "
                         "not a terminal: pass --yes to go on without asking (the plan it prints says what it "
                         "will cost)")
    if not options.offline and options.inject_capacity:
        raise UsageError("--inject-capacity is for --offline (moto's server) only")
    if not options.offline and options.tunnel_limit:
        raise UsageError("--tunnel-limit shapes the relays of --offline; a real rehearsal measures the SSM tunnel "
                         "itself")
    refusal = None if options.max_usd is None else _cost_refusal(options, selected, options.max_usd)
    if refusal:
        raise UsageError(refusal)
    bench = bench_options.prepare(options.bench_options, options.offline, options.workload)
    given = options.evidence is not None and options.evidence.exists()
    folder = evidence_folder(options.evidence)
    state = State(options, catalog, folder, Output(out or sys.stdout, console), bench, skipped=dict(chosen.left_out),
                  context=dict(chosen.context), sized=list(chosen.sized), context_tokens=tokens)
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        with ExitStack() as stack:
            state.output.log = stack.enter_context(open(folder / "rehearsal.log", "a", encoding="utf-8"))
            stack.callback(setattr, state.output, "log", None)
            return _from_the_plan(state, stack, selected, stdin, steps)
    except OfflineError as exc:
        state.say(f"error: {exc}")
        return EXIT_FAILED
    finally:
        signal.signal(signal.SIGTERM, previous)
        if not given:
            _release_if_unused(folder)


def _from_the_plan(state: State, stack: ExitStack, selected: Sequence[Any], stdin: TextIO, steps: Steps) -> int:
    """Offline, moto's server and the stand-in started; the plan, the user's yes, then the rest."""
    try:
        if state.options.offline:
            state.offline = stack.enter_context(OfflineAws(state.folder / "offline", state.options.inject_capacity))
            state.say("offline rehearsal: moto's server stands in for AWS and the local rig (a small model on this "
                      "machine's CPU) for every rig's server; it rehearses the flow, not the hardware, and nothing "
                      "is billed")
            state.offline.start(state.say)
        estimate = prepare.plan(state, selected)
    except KeyboardInterrupt:
        state.say("interrupted before anything was created: nothing to clean up")
        return EXIT_INTERRUPTED
    if estimate is None:
        return EXIT_FAILED
    if not prepare.consent(state, stdin):
        state.say("nothing created")
        return EXIT_OK
    return rehearse(state, steps)


def rehearse(state: State, steps: Steps = Steps()) -> int:
    """Up, benchmark (and big), then down whatever happened, then the timeline; the exit status."""
    interrupted = False
    try:
        _phases(state, steps)
    except (KeyboardInterrupt, Cancelled):
        interrupted = True
        state.interrupted = f"interrupted during {state.step} at {utc.iso_seconds()}"
        state.cancelled.set()
        state.say("interrupted: cleaning up everything this rehearsal created (Ctrl-C again stops the clean-up "
                  "and prints how to finish it by hand)")
    except Exception as exc:  # noqa: BLE001 - whatever failed, the down step runs; the error is said
        known = aws.classify(exc).code != type(exc).__name__
        state.say(f"error: {aws.describe_error(exc) if known else f'{type(exc).__name__}: {exc}'}; "
                  "cleaning up everything this rehearsal created")
        state.notes.append(f"stopped by an error: {exc}")
    down = steps.down(state, _interrupt)
    if down is None:
        state.interrupted = (f"{state.interrupted or f'interrupted during {state.step}'}; interrupted again during "
                             "the clean-up, which stopped: what was still up was printed with the commands that "
                             "remove it")
        report(state)
        return EXIT_INTERRUPTED
    if state.interrupted:
        state.interrupted += ("; the clean-up then destroyed everything the rehearsal created" if down else
                              "; the clean-up then ran, and something is left (see left)")
    report(state)
    if interrupted:
        return EXIT_INTERRUPTED
    came_up = all(r.ok for phase in state.phases for r in phase.results)
    benched = all(phase.bench_exit in (0, None) for phase in state.phases)
    named_skipped = any(name in state.options.rigs for name in state.skipped)
    return EXIT_OK if down and came_up and benched and not named_skipped and not state.notes else EXIT_FAILED


def _phases(state: State, steps: Steps) -> None:
    """The small model's up and benchmark; with ``--big``, the small rigs destroyed, then the big model's."""
    if state.options.bootstrap:
        bring_up.bootstrap(state, sorted({c.region for phase in state.phases for _, cs in phase.plans.values()
                                          for c in cs}))
    small = state.phases[0]
    steps.up(state, small, state.folder / "up", state.context)
    steps.benchmark(state, small, state.folder / "bench", True)
    if not (state.options.big and len(state.phases) > 1 and state.phases[1].plans):
        return
    big = state.phases[1]
    bring_up.big_plans(small, big)
    if big.plans:
        bring_up.announce_big(state, big)
        cleanup.destroy_created(state)
        steps.up(state, big, state.folder / "up-big",
                 {**state.context, **{f"{name}_variant": BIG_VARIANT for name in big.plans}})
        steps.benchmark(state, big, state.folder / "bench-big", False)


def report(state: State) -> None:
    """The timeline per rig and phase and the rehearsal's own cost: on the terminal, as ``TIMELINE.md`` and
    ``timeline.json`` (:mod:`.timeline`); then where each benchmark's report is."""
    now = utc.now()
    lines = [line for phase in state.phases for line in phase.timelines]
    notes = ([state.interrupted] if state.interrupted else []) + list(state.notes)
    if state.options.offline:
        notes.append("offline: moto's server and the local rig stood in for AWS and the rigs' servers; the times "
                     "are those of the flow on this machine, and the cost is what these minutes would cost at the "
                     "prices shown (nothing was billed)")
    if lines:
        state.show(timeline.table(lines, now))
    cost = timeline.total_cost(lines, now)
    state.say(f"the rehearsal's own cost: ${cost:.4f} (instance-hours x price"
              + ("; offline: nothing was billed" if state.options.offline else "") + ")")
    title = "Rehearsal timeline" + (" (offline: a rehearsal of the flow, not of the hardware)"
                                    if state.options.offline else "") + (" (interrupted)" if state.interrupted else "")
    (state.folder / "TIMELINE.md").write_text(timeline.markdown(lines, title, notes, now), encoding="utf-8")
    timeline.write(state.folder, timeline.TimelineRecord(
        offline=state.options.offline, started=utc.iso_seconds(state.started), finished=utc.iso_seconds(now),
        interrupted=state.interrupted, phases=[line.record(now) for line in lines], cost_usd=round(cost, 6),
        benchmarks={phase.name: timeline.BenchmarkRun(
            exit=phase.bench_exit, folder=str(phase.bench_folder) if phase.bench_folder else None)
            for phase in state.phases},
        skipped=state.skipped, no_big_model=state.big_skipped, left=state.left, notes=notes))
    for phase in state.phases:
        if phase.bench_folder is None:
            continue
        written = phase.bench_folder / "REPORT.md"
        state.say(f"report ({phase.name} model): {written}" if written.exists() else
                  f"report ({phase.name} model): none written (the benchmark exited {phase.bench_exit}; what it "
                  "printed says why)")
    state.say(f"evidence: {state.folder}")


def _release_if_unused(folder: Path) -> None:
    """Remove the evidence folder it made when the rehearsal stopped before saying anything (no credentials, say)."""
    log = folder / "rehearsal.log"
    try:
        if [p.name for p in folder.iterdir()] == [log.name] and log.stat().st_size == 0:
            log.unlink()
            folder.rmdir()
    except OSError:
        pass


def main(options: Options, console: Any = None) -> int:
    """Run a rehearsal; UsageError is the caller's to report (exit 2)."""
    return run(options, console=console)
