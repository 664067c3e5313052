"""``python -m rigs rehearse``: from nothing to a report to nothing, in one command.

1. **Plan.** The rigs already deployed are left out (a rehearsal never touches a stack it did not
   create); ``doctor`` checks the account and rules out what cannot deploy; ``preflight`` records
   where each rig goes first, from the doctor's own checks (the sequence ``up --doctor`` uses too:
   :mod:`rigs.deploy.sequence`); the estimate (:mod:`.estimate`) says what it may cost and how long
   it may take. Nothing is created before the user says yes (``--yes``).
2. **Up** with the small model (the catalog's), every rig in parallel with region failover
   (:class:`rigs.deploy.up.Up`).
3. **Benchmark** every rig that came up (and Bedrock), with ``python -m agent.run`` run as a
   command into the rehearsal's evidence folder; unless ``--bench-options`` name the parts, the
   default parts and the quality lane (``--demos default,quality``; offline, 30 items per backend,
   the stand-in being one CPU toy model), whose minutes of rig time the estimate includes.
4. **Big** (``--big``): the small rigs are destroyed, the rigs with a ``big`` catalog variant come
   up again with it, and are benchmarked again; the others are skipped with the catalog's reason.
5. **Down**: ``cdk destroy`` of exactly the stacks it created (:mod:`.down`), then the check that
   nothing of ours is left billing in the four regions (:func:`rigs.estate.inventory.discover`).
6. **Timeline** per rig and phase and the rehearsal's own cost (:mod:`.timeline`), in the evidence
   folder and on the terminal.

Ctrl-C, a rig that fails, or an error at any step after the first stack was created still runs
the down step for everything created; a second Ctrl-C during it stops it and prints what is still
up and the commands that remove it. The rigs' lifetime limit stays the backstop. Every child
process (``cdk``, the agent, and offline the local rig and moto's server) runs in a process group
of its own and is stopped with the rehearsal.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import threading
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence, TextIO

from rigs.rehearsal import estimate as estimating
from rigs.rehearsal import plan, timeline
from rigs.rehearsal.down import Destroyer, created_since, destroy_commands, shown
from rigs.rehearsal.offline import OfflineAws, OfflineError
from rigs import aws, local_tools, processes, utc
from rigs.deploy import placement
from rigs.estate import whereabouts
from rigs.catalog.model import BIG_VARIANT, BedrockBackend, DeployableRig, Ec2Rig, load_catalog
from rigs.contract import REGIONS
from rigs.catalog.pricing import PriceBook, PriceError
from rigs.deploy.cdk_cli import CdkCli, CdkResult, default_method
from rigs.deploy.sequence import DeploySequence
from rigs.deploy.records import RigResult
from rigs.deploy.up import Up, UpSettings
from rigs.deploy.watch import CAPACITY_GRACE_MINUTES, WatchSettings, default_poll_s

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
BENCH_WAIT_S = 120.0
"""How long the benchmark gets to stop and write its evidence after an interrupt."""
RESERVED_BENCH_OPTIONS = ("--backends", "--out", "--stand-in", "--local", "--list")
LANE_DEMOS = ["--demos", "default,quality"]
"""What the rehearsal adds to the benchmark's options when they name no parts: the default parts and the
quality lane (the agent's options are passed as words; ``rigs`` never imports the agent)."""
OFFLINE_LANE_ITEMS = "30"
"""Offline, one CPU toy model plays every rig: the lane's flow rehearsed on 30 items each, unless
``--bench-options`` give ``--quality-n``."""
OFFLINE_CAPACITY_GRACE_MINUTES = 0.0
"""Offline, a failed launch is the injected one (``--inject-capacity``): the next region at once."""
NO_OFFLINE_BEDROCK = "no offline stand-in for Bedrock (moto has no Bedrock runtime): left out of an offline rehearsal"


class UsageError(Exception):
    """Bad input, reported as one line before any work (exit status 2)."""


class Cancelled(BaseException):
    """The rehearsal was interrupted: the waits of ``rigs up`` end at once (not an Exception, so nothing swallows it)."""


class CleanupInterrupted(BaseException):
    """A second Ctrl-C during the down step."""


@dataclass
class Options:
    rigs: Sequence[str] = ()
    big: bool = False
    yes: bool = False
    offline: bool = False
    bootstrap: bool = False
    evidence: Path | None = None
    max_hours: float | None = None
    max_usd: float | None = None
    capacity_grace_minutes: float | None = None
    inject_capacity: Sequence[str] = ()
    bench_options: str = ""
    bench_minutes: float = estimating.BENCHMARK_ALLOWANCE_MINUTES
    destroy_minutes: float = estimating.DESTROY_ALLOWANCE_MINUTES
    profile: str | None = None
    region: str | None = None


@dataclass
class Phase:
    """One phase (small or big): its plans per rig, what came up, its benchmark."""

    name: str
    plans: dict[str, tuple[DeployableRig, list[placement.Candidate]]] = field(default_factory=dict)
    results: list[RigResult] = field(default_factory=list)
    timelines: list[timeline.PhaseTimeline] = field(default_factory=list)
    bench_exit: int | None = None
    bench_folder: Path | None = None


class RehearsalCdk(CdkCli):
    """The CDK CLI for ``rigs up``, each call in its own process group, refused once the rehearsal is cancelled."""

    def __init__(self, running: processes.Running, cancelled: threading.Event, method: str | None) -> None:
        super().__init__(method=method)
        self.running = running
        self.cancelled = cancelled

    def _run(self, args: list[str], log: Path) -> CdkResult:
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("a", encoding="utf-8") as handle:
            if self.cancelled.is_set():
                handle.write(f"not run (the rehearsal was interrupted): {' '.join(args)}\n")
                return CdkResult(EXIT_INTERRUPTED, log)
            handle.write(f"$ {' '.join(args)}\n")
            handle.flush()
            process = self.running.add(processes.spawn(args, log=handle, cwd=placement.PROJECT_DIR,
                                                       env={**os.environ, **self.ENV}))
            try:
                return CdkResult(process.wait(), log)
            finally:
                self.running.discard(process)


def bench_arguments(text: str) -> list[str]:
    """``--bench-options "--runs 1 --demos chat"``, split; UsageError for the options the rehearsal sets."""
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise UsageError(f"--bench-options {text!r}: {exc}") from None
    taken = [w for w in words if w.split("=", 1)[0] in RESERVED_BENCH_OPTIONS]
    if taken:
        raise UsageError(f"--bench-options: {', '.join(taken)} is set by the rehearsal itself; leave it out")
    return words


def _value(words: Sequence[str], flag: str) -> str | None:
    """The value given to ``flag`` (``--flag V`` or ``--flag=V``), the last one when given twice."""
    found = None
    for i, word in enumerate(words):
        if word == flag and i + 1 < len(words):
            found = words[i + 1]
        elif word.startswith(flag + "="):
            found = word.split("=", 1)[1]
    return found


def with_quality_lane(words: Sequence[str], offline: bool) -> list[str]:
    """The benchmark's options with the quality lane added when they name no parts (:data:`LANE_DEMOS`)."""
    if _value(words, "--demos") is not None:
        return list(words)
    extra = list(LANE_DEMOS)
    if offline and _value(words, "--quality-n") is None:
        extra += ["--quality-n", OFFLINE_LANE_ITEMS]
    return [*words, *extra]


def lane_items(words: Sequence[str]) -> int | None:
    """How many items per backend the benchmark's quality lane sends; None when the lane is not run."""
    demos = _value(words, "--demos")
    if demos is None or "quality" not in [d.strip() for d in demos.split(",")]:
        return None
    given = _value(words, "--quality-n")
    return int(given) if given and given.isdigit() else estimating.LANE_ITEMS


BENCH_CHECK_S = 60.0
"""How long the benchmark's dry parse of ``--bench-options`` may take (it answers in about a second)."""


def check_bench_options(words: Sequence[str]) -> None:
    """UsageError, before anything is created, when the benchmark would refuse ``words``.

    The rehearsal runs the agent as a command and never imports it, so the agent's own parser checks the
    options: ``python -m agent.run --list --backends local <options>`` parses every option the real run
    gets (unknown ones, bad values, a ``--workload`` file) and only lists the local rig (no AWS call, no
    server started, nothing written); it exits 2 with one line for a bad option.
    """
    if not words:
        return
    command = [sys.executable, "-m", "agent.run", "--list", "--backends", "local", *words]
    try:
        done = subprocess.run(command, cwd=os.getcwd(), stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=BENCH_CHECK_S, check=False)
    except subprocess.TimeoutExpired:
        raise UsageError(f"--bench-options: `python -m agent.run` did not check them within {BENCH_CHECK_S:g} s; "
                         "nothing created") from None
    if done.returncode == 0:
        return
    said = [line for line in (done.stderr or done.stdout).splitlines() if line.strip()]
    reason = said[-1].removeprefix("python -m agent.run: ").removeprefix("error: ").removesuffix(" (see --help)") \
        if said else f"exit status {done.returncode}"
    raise UsageError(f"--bench-options: the benchmark refuses them: {reason} (see `python -m agent.run --help`); "
                     "nothing created")


def evidence_folder(given: Path | None) -> Path:
    folder = given or Path("results") / f"rehearsal-{utc.folder_stamp()}"
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise UsageError(f"--evidence {folder}: exists and is not an empty folder; name a new one")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--evidence {folder}: cannot create it ({exc.strerror or exc})") from None
    return folder


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


class Rehearsal:
    def __init__(self, options: Options, out: TextIO | None = None, stdin: TextIO | None = None,
                 console: Any = None) -> None:
        self.options = options
        self.out = out or sys.stdout
        self.stdin = stdin or sys.stdin
        self.console = console
        self.catalog = load_catalog()
        self.folder: Path | None = None
        self.running = processes.Running()
        self.cancelled = threading.Event()
        self.session: Any = None
        self.offline: OfflineAws | None = None
        self.before: whereabouts.Whereabouts | None = None
        self.phases: list[Phase] = []
        self.skipped: dict[str, str] = {}
        self.big_skipped: dict[str, str] = {}
        """Rigs with no ``big`` variant, and why (the catalog's reason): expected, not a failure."""
        self.named = set(options.rigs)
        self.destroyer: Destroyer | None = None
        self.notes: list[str] = []
        self.left: dict[str, Any] = {}
        """What the down step found left: billing, not billing, not checked, stacks it could not destroy."""
        self.started = utc.now()
        self.step = "the plan"
        """What the rehearsal is doing (said when it is interrupted)."""
        self.interrupted: str | None = None
        """When and where an interrupt stopped it, for the timeline; None when none did."""
        self._log: TextIO | None = None
        self.bench: list[str] = []
        """The options the benchmark is run with (``--bench-options``, the quality lane added)."""

    # --- output ---------------------------------------------------------------------------------

    def say(self, line: str) -> None:
        print(line, file=self.out, flush=True)
        if self._log is not None:
            self._log.write(line + "\n")
            self._log.flush()

    def show(self, renderable: Any) -> None:
        """A rich table on the terminal, and as text in the log."""
        if self.console is not None:
            self.console.print(renderable)
        if self._log is not None:
            from rich.console import Console

            Console(file=self._log, width=160, highlight=False, soft_wrap=False).print(renderable)

    # --- the command ----------------------------------------------------------------------------

    def run(self) -> int:
        """The whole rehearsal; the exit status (0 done and nothing left, 1 not, 2 bad input, 130 interrupted)."""
        selected = [self.catalog.get(name) for name in (self.options.rigs or list(self.catalog.rigs))]
        if not self.options.yes and not self.stdin.isatty():
            raise UsageError("rehearse asks before it creates anything (on an account, rigs that bill), and this is "
                             "not a terminal: pass --yes to go on without asking (the plan it prints says what it "
                             "will cost)")
        bench = with_quality_lane(bench_arguments(self.options.bench_options), self.options.offline)
        if not self.options.offline and self.options.inject_capacity:
            raise UsageError("--inject-capacity is for --offline (moto's server) only")
        check_bench_options(bench)
        self.bench = bench
        given = self.options.evidence is not None and self.options.evidence.exists()
        self.folder = evidence_folder(self.options.evidence)
        previous = signal.signal(signal.SIGTERM, _interrupt)
        saved_env = dict(os.environ)
        try:
            with ExitStack() as stack, open(self.folder / "rehearsal.log", "a", encoding="utf-8") as log:
                self._log = log
                stack.callback(setattr, self, "_log", None)
                try:
                    if self.options.offline:
                        self.offline = stack.enter_context(OfflineAws(self.folder / "offline", self.options.inject_capacity))
                        self.say("offline rehearsal: moto's server stands in for AWS and the local rig (a small "
                                 "model on this machine's CPU) for every rig's server; it rehearses the flow, not the "
                                 "hardware, and nothing is billed")
                        self.offline.start(self.say)
                        os.environ.update(self.offline.environment())
                        os.environ.pop("AWS_PROFILE", None)
                    estimate = self._plan(selected)
                except KeyboardInterrupt:
                    self.say("interrupted before anything was created: nothing to clean up")
                    return EXIT_INTERRUPTED
                if estimate is None:
                    return EXIT_FAILED
                refusal = None if self.options.max_usd is None else estimating.over_limit(estimate,
                                                                                           self.options.max_usd)
                if refusal:
                    self.say(f"error: {refusal}")
                    return EXIT_USAGE
                if not self._consent():
                    self.say("nothing created")
                    return EXIT_OK
                return self._rehearse(bench)
        except OfflineError as exc:
            self.say(f"error: {exc}")
            return EXIT_FAILED
        finally:
            os.environ.clear()
            os.environ.update(saved_env)
            signal.signal(signal.SIGTERM, previous)
            if not given:
                _release_if_unused(self.folder)

    # --- 1. the plan ----------------------------------------------------------------------------

    def _plan(self, selected: Sequence[Any]) -> estimating.Estimate | None:
        self.session = aws.make_session(self.options.profile, self.options.region)
        account = aws.check_credentials(self.session, self.options.region or self.session.region_name or "us-east-1")
        self.say(f"account {account}" + (f" (moto's, at {aws.endpoint_url()})" if self.options.offline else ""))
        rigs: list[DeployableRig] = []
        for rig in selected:
            if isinstance(rig, BedrockBackend):
                if self.options.offline:
                    self.skipped[rig.name] = NO_OFFLINE_BEDROCK
            else:
                rigs.append(rig)
        self.before = whereabouts.locate(whereabouts.app_stacks(), session=self.session)
        if not self.before.complete:
            self.say(f"error: {self.before.summary()}; without every region's answer the rehearsal cannot tell its "
                     "own stacks from yours: nothing created")
            return None
        for rig in list(rigs):
            regions = self.before.regions_of(rig.stack_name)
            if regions:
                self.skipped[rig.name] = (f"{rig.stack_name} is already deployed in {', '.join(regions)}: not created "
                                          "by this rehearsal, so left alone (leave the rig out, or remove it first)")
                rigs.remove(rig)
        if rigs and self.options.offline:
            regions = [r for r in REGIONS if any(r in rig.regions for rig in rigs)]
            self.say(f"offline: bootstrapping moto's account for the CDK in {', '.join(regions)}")
            self._bootstrap(regions)
        candidates = self._regions_to_try(rigs) if rigs else {}
        if candidates is None:
            return None
        rigs = [rig for rig in rigs if rig.name in candidates]
        small = Phase(estimating.SMALL, {r.name: (r, candidates[r.name]) for r in rigs})
        self.phases.append(small)
        if self.options.big:
            big = Phase(estimating.BIG)
            for rig in rigs:
                if BIG_VARIANT in rig.variants:
                    big.plans[rig.name] = (rig.with_variant(BIG_VARIANT), candidates[rig.name])
                else:
                    self.big_skipped[rig.name] = rig.no_big_variant or f"no {BIG_VARIANT!r} variant in the catalog"
            self.phases.append(big)
        result = self._estimate()
        self._write_plan(result, account)
        if not rigs and not self._bedrock():
            self.say("nothing to rehearse: " + ("; ".join(f"{n}: {r}" for n, r in self.skipped.items()) or "no rig"))
            return None
        return result

    def _regions_to_try(self, rigs: list[DeployableRig]) -> dict[str, list[placement.Candidate]] | None:
        """Doctor, then preflight (once: :mod:`rigs.deploy.sequence`): the regions each rig may try; a rig with
        none is left out, with why. None when the benchmark could not reach the EC2 rigs (nothing created)."""
        from rigs.account.preflight import render_placement

        sequence = DeploySequence(self.session, self.show)
        ignore = ("CDK bootstrap",) if self.options.bootstrap else ()
        allowed = sequence.doctor(rigs, ignore)
        if ignore:
            self.say("--bootstrap: a region without the CDK bootstrap is bootstrapped once you say yes")
        for rig in list(rigs):
            if not allowed[rig.name]:
                self.skipped[rig.name] = (f"doctor: cannot deploy anywhere: {', '.join(sequence.blockers(rig.name))} "
                                          "(see its table)")
                rigs.remove(rig)
        if rigs and not self.options.offline and any(isinstance(r, Ec2Rig) for r in rigs):
            missing = [t for t in local_tools.ssm_tools() if not t.ok]
            if missing:
                self.say("error: the benchmark reaches the EC2 rigs through SSM port forwards, which need "
                         + "; ".join(f"{t.name} ({t.problem}; {t.fix})" for t in missing)
                         + ": install them, or leave the EC2 rigs out; nothing created")
                return None
        if not rigs:
            return {}
        plans = sequence.plans(rigs, fresh=True)
        for line in render_placement(sequence.preflight_report):
            self.say(line)
        for name, (_, found) in plans.items():
            if not found:
                self.skipped[name] = "no region where preflight and doctor both allow it"
        return {name: found for name, (_, found) in plans.items() if found}

    def _bedrock(self) -> bool:
        return not self.options.offline and any(isinstance(self.catalog.get(n), BedrockBackend)
                                                for n in (self.options.rigs or self.catalog.rigs))

    def _prices(self) -> PriceBook:
        return PriceBook(None if self.options.offline else self.session)

    def _estimate(self) -> estimating.Estimate:
        book = self._prices()
        items = lane_items(self.bench)
        plans = []
        for phase in self.phases:
            for name, (rig, candidates) in phase.plans.items():
                region = candidates[0].region
                try:
                    price = book.hourly_price(rig, region)
                    usd, where = price.usd_per_hour, price.describe()
                except PriceError as exc:
                    usd, where = None, str(exc)
                plans.append(estimating.PhasePlan(
                    rig=name, phase=phase.name, region=region, instance_type=rig.instance_type, model_id=rig.model_id,
                    ready_timeout_minutes=rig.ready_timeout_minutes,
                    max_hours=self.options.max_hours or rig.max_hours, usd_per_hour=usd, price=where,
                    lane_minutes=estimating.lane_minutes(rig.runtime, items) if items else 0.0))
        self.price_plans = plans
        bedrock = estimating.lane_minutes("bedrock", items) if items and self._bedrock() else 0.0
        return estimating.estimate(plans, self.options.bench_minutes, self.options.destroy_minutes, bedrock)

    def _write_plan(self, result: estimating.Estimate, account: str) -> None:
        assert self.folder is not None
        then = {(name, phase.name): [c.region for c in candidates[1:]]
                for phase in self.phases for name, (_, candidates) in phase.plans.items()}
        bedrock_price = None
        if self._bedrock():
            bedrock = self.catalog.get("bedrock")
            try:
                bedrock_price = self._prices().bedrock_token_prices(bedrock.model_id, bedrock.regions[0]).describe()
            except PriceError as exc:
                bedrock_price = str(exc)
        benchmark = "python -m agent.run " + (shlex.join(self.bench) or "(its default options)")
        for line in plan.lines(self.price_plans, then, result, offline=self.options.offline,
                               bedrock_price=bedrock_price, skipped=self.skipped, no_big_model=self.big_skipped,
                               benchmark=benchmark):
            self.say(line)
        plan.write(self.folder, plan.record(self.price_plans, result, account=account, offline=self.options.offline,
                                            big=self.options.big, skipped=self.skipped,
                                            no_big_model=self.big_skipped, benchmark=benchmark))

    def _consent(self) -> bool:
        if self.options.yes:
            return True
        print("Go on and create these rigs? [y/N] ", end="", file=self.out, flush=True)
        try:
            answer = self.stdin.readline().strip().lower()
        except KeyboardInterrupt:
            answer = ""
        return answer in ("y", "yes")

    # --- 2.-6. ----------------------------------------------------------------------------------

    def _rehearse(self, bench: list[str]) -> int:
        assert self.folder is not None
        interrupted = False
        try:
            if self.options.bootstrap:
                self._bootstrap(sorted({c.region for phase in self.phases for _, cs in phase.plans.values()
                                        for c in cs}))
            small = self.phases[0]
            self._up(small, self.folder / "up", {})
            self._benchmark(small, self.folder / "bench", bench, with_bedrock=True)
            if self.options.big and len(self.phases) > 1 and self.phases[1].plans:
                big = self.phases[1]
                came_up = {r.rig: r.region for r in small.results if r.ok}
                big.plans = {name: (rig, _region_first(candidates, came_up.get(name)))
                             for name, (rig, candidates) in big.plans.items() if name in came_up}
                if big.plans:
                    self.say("big: the small rigs are destroyed first; then " + ", ".join(big.plans)
                             + f" come up with their {BIG_VARIANT!r} variant")
                    self.step = "the destroy of the small rigs"
                    self._destroy_created()
                    self._up(big, self.folder / "up-big", {f"{name}_variant": BIG_VARIANT for name in big.plans})
                    self._benchmark(big, self.folder / "bench-big", bench, with_bedrock=False)
        except (KeyboardInterrupt, Cancelled):
            interrupted = True
            self.interrupted = f"interrupted during {self.step} at {utc.iso_seconds()}"
            self.cancelled.set()
            self.say("interrupted: cleaning up everything this rehearsal created (Ctrl-C again stops the clean-up "
                     "and prints how to finish it by hand)")
        except Exception as exc:  # noqa: BLE001 - whatever failed, the down step runs; the error is said
            known = aws.classify(exc).code != type(exc).__name__
            self.say(f"error: {aws.describe_error(exc) if known else f'{type(exc).__name__}: {exc}'}; "
                     "cleaning up everything this rehearsal created")
            self.notes.append(f"stopped by an error: {exc}")
        down = self._down()
        if down is None:
            self.interrupted = (f"{self.interrupted or f'interrupted during {self.step}'}; interrupted again during "
                                "the clean-up, which stopped: what was still up was printed with the commands that "
                                "remove it")
            self._report()
            return EXIT_INTERRUPTED
        if self.interrupted:
            self.interrupted += ("; the clean-up then destroyed everything the rehearsal created" if down else
                                 "; the clean-up then ran, and something is left (see left)")
        self._report()
        if interrupted:
            return EXIT_INTERRUPTED
        came_up = all(r.ok for phase in self.phases for r in phase.results)
        benched = all(phase.bench_exit in (0, None) for phase in self.phases)
        named_skipped = any(name in self.named for name in self.skipped)
        return EXIT_OK if down and came_up and benched and not named_skipped and not self.notes else EXIT_FAILED

    def _bootstrap(self, regions: Sequence[str]) -> None:
        """``cdk bootstrap`` in those of ``regions`` that lack it."""
        if not regions:
            return
        up = Up(self.session, self._cdk(), UpSettings(evidence_dir=self.folder / "bootstrap"), say=self.say)
        missing = up.missing_bootstrap(regions)
        if missing:
            failure = up.bootstrap(aws.check_credentials(self.session), missing)
            if failure is not None:
                raise RuntimeError(failure.message)

    def _cdk(self) -> RehearsalCdk:
        return RehearsalCdk(self.running, self.cancelled, default_method())

    def _sleep(self, seconds: float) -> None:
        if self.cancelled.wait(seconds):
            raise Cancelled

    def _up(self, phase: Phase, folder: Path, context: Mapping[str, str]) -> None:
        if not phase.plans:
            return
        grace = self.options.capacity_grace_minutes
        if grace is None:
            grace = OFFLINE_CAPACITY_GRACE_MINUTES if self.options.offline else CAPACITY_GRACE_MINUTES
        settings = UpSettings(max_hours=self.options.max_hours, context=dict(context), evidence_dir=folder,
                              watch=WatchSettings(capacity_grace=grace * 60, poll=default_poll_s()))
        up = Up(self.session, self._cdk(), settings, say=self.say, sleep=self._sleep)
        self.step = f"up ({phase.name} model)"
        together = " in parallel" if len(phase.plans) > 1 else ""
        self.say(f"up ({phase.name} model): {', '.join(phase.plans)}{together}; evidence {folder}")
        box: dict[str, Any] = {}

        def target() -> None:
            try:
                box["results"] = up.run(phase.plans)
            except BaseException as exc:  # noqa: BLE001 - handed to the main thread
                box["error"] = exc

        thread = threading.Thread(target=target, name=f"up-{phase.name}", daemon=True)
        thread.start()
        try:
            while thread.is_alive():
                thread.join(0.5)
        except KeyboardInterrupt:
            self.cancelled.set()
            self.running.stop_all()
            thread.join(60)
            raise
        if "error" in box:
            raise box["error"]
        phase.results = box["results"]
        book = self._prices()
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

    def _benchmark(self, phase: Phase, folder: Path, bench: list[str], with_bedrock: bool) -> None:
        names = [r.rig for r in phase.results if r.ok] + (["bedrock"] if with_bedrock and self._bedrock() else [])
        if not names:
            self.say(f"benchmark ({phase.name} model): nothing came up to benchmark")
            return
        self.step = f"the benchmark ({phase.name} model)"
        command = [sys.executable, "-m", "agent.run", "--backends", ",".join(names), "--out", str(folder)]
        if self.offline is not None and self.offline.stand_in_url:
            command += ["--stand-in", self.offline.stand_in_url]
        if self.options.profile:
            command += ["--profile", self.options.profile]
        command += bench
        self.say(f"benchmark ({phase.name} model): python {' '.join(command[1:])}")
        process = self.running.add(processes.spawn(command, log=None, stdin=None, cwd=os.getcwd(),
                                                   env=dict(os.environ)))
        phase.bench_folder = folder
        try:
            phase.bench_exit = process.wait()
        except KeyboardInterrupt:
            self.say("benchmark interrupted: it stops and writes what it measured")
            processes.signal_group(process, signal.SIGINT)
            try:
                process.wait(timeout=BENCH_WAIT_S)
            except Exception:  # noqa: BLE001 - then it is stopped
                pass
            phase.bench_exit = processes.stop(process, grace_s=processes.COMMAND_GRACE_S)
            raise
        finally:
            self.running.discard(process)
            answers = timeline.first_answers(folder / "requests.jsonl")
            for line in phase.timelines:
                line.first_answer = answers.get(line.rig)
        self.say(f"benchmark ({phase.name} model): exit {phase.bench_exit}; evidence {folder}")

    # --- 5. down --------------------------------------------------------------------------------

    def _locate(self) -> whereabouts.Whereabouts:
        return whereabouts.locate(whereabouts.app_stacks(), session=self.session)

    def _destroy_created(self, only_rigs: bool = True) -> bool:
        """Destroy what the rehearsal created (only the rig stacks, or everything); True when none is left."""
        assert self.before is not None and self.folder is not None
        created = created_since(self.before, self._locate())
        rig_stacks = {rig.stack_name for rig in self.catalog.deployable()}
        wanted = {name: regions for name, regions in created.items() if not only_rigs or name in rig_stacks}
        if not wanted:
            return True
        if self.destroyer is None:
            self.destroyer = Destroyer(self.folder / "down", self._locate, self.say, self.running,
                                       aws.Clients(self.session))
        gone = self.destroyer.destroy(wanted, self.started)
        for phase in self.phases:
            for line in phase.timelines:
                if line.stack and line.region and (line.stack, line.region) in gone and not line.destroyed:
                    line.destroyed = gone[(line.stack, line.region)]
        return not self.destroyer.left

    def _down(self) -> bool | None:
        """Destroy everything created, then check what is left. False: something is left; None: interrupted."""
        def second_interrupt(signum: int, frame: object) -> None:
            raise CleanupInterrupted

        previous = signal.signal(signal.SIGINT, second_interrupt)
        signal.signal(signal.SIGTERM, second_interrupt)
        try:
            self.say("down: destroying what this rehearsal created")
            clean = self._destroy_created(only_rigs=False)
            clean = self._check_left() and clean
        except CleanupInterrupted:
            self.running.stop_all()
            self._say_what_is_left()
            return None
        finally:
            signal.signal(signal.SIGINT, previous)
            signal.signal(signal.SIGTERM, _interrupt)
        return clean

    def _check_left(self) -> bool:
        """Everything of ours in the four regions: say what still bills, and whether this rehearsal left it."""
        from rigs.estate.inventory import discover

        inventory = discover(self.session, REGIONS, self._prices())
        self.left = {"billing": [], "not_billing": [r.label() for r in inventory.resources if not r.billing],
                     "not_checked": list(inventory.problems),
                     "stacks": dict(self.destroyer.left) if self.destroyer is not None else {}}
        mine = {rig.name for phase in self.phases for rig, _ in phase.plans.values()}
        theirs = {name for name, reason in self.skipped.items() if "already deployed" in reason}
        billing = [r for r in inventory.resources if r.billing]
        left = [r for r in billing if r.rig not in theirs]
        kept = [r for r in billing if r.rig in theirs]
        for resource in kept:
            self.say(f"down: still billing, from before the rehearsal (left alone): {resource.label()} in "
                     f"{resource.region}, ${resource.hourly_usd:.4f}/h")
        for problem in inventory.problems:
            self.say(f"down: not checked: {problem}")
        self.left["billing"] = [f"{r.label()} in {r.region}" for r in left]
        if left:
            for resource in left:
                self.say(f"down: LEFT BILLING: {resource.label()} in {resource.region}, ${resource.hourly_usd:.4f}/h"
                         + (" (a rig of this rehearsal)" if resource.rig in mine else ""))
            self.say("down: remove it with `python -m rigs sweep --yes` (it deletes everything tagged ours); the "
                     "lifetime limit stops each rig anyway")
            return False
        others = [r for r in inventory.resources if not r.billing]
        suffix = (f" ({len(others)} resource(s) of ours that do not bill remain: "
                  + ", ".join(sorted({r.kind for r in others})) + "; `python -m rigs status` lists them"
                  + ("; moto keeps a deleted base stack's network, and it goes with moto's server"
                     if self.options.offline else "") + ")") if others else ""
        self.say(f"down: nothing of ours left billing in {', '.join(REGIONS)}" + suffix)
        where = self._locate()
        if not self.options.offline and where.complete:  # the placement file forgets the rigs that are gone
            placement.reconcile({rig.name: where.regions_of(rig.stack_name) for rig in self.catalog.deployable()})
        return True

    def _say_what_is_left(self) -> None:
        left = self.destroyer.left if self.destroyer is not None else {}
        if not left and self.before is not None:
            try:
                left = created_since(self.before, self._locate())
            except Exception:  # noqa: BLE001 - say what is known
                left = {}
        self.say("interrupted again: the clean-up stopped.")
        if self.options.offline:
            self.say("offline: nothing bills; moto's server stops with this command and everything in it goes with it")
            return
        if not left:
            self.say("nothing this rehearsal created was found still up; check with `python -m rigs status`")
            return
        self.say("still up, created by this rehearsal (a deletion may be under way): "
                 + "; ".join(f"{name} in {', '.join(regions)}" for name, regions in sorted(left.items())))
        self.say("remove it with:")
        for command in destroy_commands(left):
            self.say(f"  {shown(command)}")
        self.say("  python -m rigs status        # then check; `python -m rigs sweep --yes` removes anything of ours")
        self.say("each rig's lifetime limit stops it anyway (`python -m rigs status` shows when)")

    # --- 6. the timeline ------------------------------------------------------------------------

    def _report(self) -> None:
        assert self.folder is not None
        now = utc.now()
        lines = [line for phase in self.phases for line in phase.timelines]
        notes = ([self.interrupted] if self.interrupted else []) + list(self.notes)
        if self.options.offline:
            notes.append("offline: moto's server and the local rig stood in for AWS and the rigs' servers; the times "
                         "are those of the flow on this machine, and the cost is what these minutes would cost at the "
                         "prices shown (nothing was billed)")
        if lines:
            self.show(timeline.table(lines, now))
        cost = timeline.total_cost(lines, now)
        self.say(f"the rehearsal's own cost: ${cost:.4f} (instance-hours x price"
                 + ("; offline: nothing was billed" if self.options.offline else "") + ")")
        title = "Rehearsal timeline" + (" (offline: a rehearsal of the flow, not of the hardware)"
                                        if self.options.offline else "") + (" (interrupted)" if self.interrupted else "")
        (self.folder / "TIMELINE.md").write_text(timeline.markdown(lines, title, notes, now), encoding="utf-8")
        timeline.write(self.folder, timeline.TimelineRecord(
            offline=self.options.offline, started=utc.iso_seconds(self.started), finished=utc.iso_seconds(now),
            interrupted=self.interrupted, phases=[line.record(now) for line in lines], cost_usd=round(cost, 6),
            benchmarks={phase.name: timeline.BenchmarkRun(
                exit=phase.bench_exit, folder=str(phase.bench_folder) if phase.bench_folder else None)
                for phase in self.phases},
            skipped=self.skipped, no_big_model=self.big_skipped, left=self.left, notes=notes))
        for phase in self.phases:
            if phase.bench_folder is None:
                continue
            report = phase.bench_folder / "REPORT.md"
            self.say(f"report ({phase.name} model): {report}" if report.exists() else
                     f"report ({phase.name} model): none written (the benchmark exited {phase.bench_exit}; what it "
                     "printed says why)")
        self.say(f"evidence: {self.folder}")


def _release_if_unused(folder: Path) -> None:
    """Remove the evidence folder it made when the rehearsal stopped before saying anything (no credentials, say)."""
    log = folder / "rehearsal.log"
    try:
        if [p.name for p in folder.iterdir()] == [log.name] and log.stat().st_size == 0:
            log.unlink()
            folder.rmdir()
    except OSError:
        pass


def _region_first(candidates: Sequence[placement.Candidate], region: str | None) -> list[placement.Candidate]:
    """The candidates with ``region`` (where the small model came up) tried first."""
    first = [c for c in candidates if c.region == region]
    return first + [c for c in candidates if c.region != region]


def main(options: Options, console: Any = None) -> int:
    """Run a rehearsal; UsageError is the caller's to report (exit 2)."""
    return Rehearsal(options, console=console).run()
