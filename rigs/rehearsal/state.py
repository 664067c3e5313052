"""What the steps of a rehearsal pass on (:mod:`rigs.rehearsal.flow`): its options (:mod:`rigs.rehearsal.options`),
where it writes and says things, what it created and learnt so far.

Offline, moto's endpoint is held here and passed down from here: to the sessions (:meth:`State.endpoint`),
to every command run (:meth:`State.command_env`) and to the placement file of the rehearsal
(:meth:`State.placement_file`). The rehearsal's own environment is never changed.
"""

from __future__ import annotations

import os
import sys
import threading
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from kit import processes, utc
from rigs import aws
from rigs.catalog.model import Catalog, DeployableRig
from rigs.catalog.pricing import PriceBook
from rigs.deploy.records import RigResult
from rigs.estate import whereabouts
from rigs.placement import placement
from rigs.rehearsal import estimate as estimating
from rigs.rehearsal import timeline
from rigs.rehearsal.bench_options import RehearsalBench
from rigs.rehearsal.down import Destroyer
from rigs.rehearsal.offline import OfflineAws
from rigs.rehearsal.options import Options


@dataclass
class Phase:
    """One phase (small or big): its plans per rig, what came up, its benchmark."""

    name: str
    plans: dict[str, tuple[DeployableRig, list[placement.Candidate]]] = field(default_factory=dict)
    results: list[RigResult] = field(default_factory=list)
    timelines: list[timeline.PhaseTimeline] = field(default_factory=list)
    bench_exit: int | None = None
    bench_folder: Path | None = None


@dataclass
class Output:
    """Where the rehearsal says things: the terminal, and its log in the evidence folder once it is open."""

    out: TextIO = field(default_factory=lambda: sys.stdout)
    console: Any = None
    log: TextIO | None = None

    def say(self, line: str) -> None:
        print(line, file=self.out, flush=True)
        if self.log is not None:
            self.log.write(line + "\n")
            self.log.flush()

    def show(self, renderable: Any) -> None:
        """A rich table on the terminal, and as text in the log."""
        if self.console is not None:
            self.console.print(renderable)
        if self.log is not None:
            from rich.console import Console

            Console(file=self.log, width=160, highlight=False, soft_wrap=False).print(renderable)


@dataclass
class State:
    """One rehearsal, from its plan to its timeline."""

    options: Options
    catalog: Catalog
    folder: Path
    output: Output = field(default_factory=Output)
    bench: RehearsalBench = RehearsalBench((), None)
    """The options the benchmark is run with (``--bench-options``, the quality lane added)."""
    offline: OfflineAws | None = None
    session: Any = None
    running: processes.Running = field(default_factory=processes.Running)
    cancelled: threading.Event = field(default_factory=threading.Event)
    started: datetime = field(default_factory=utc.now)
    before: whereabouts.Whereabouts | None = None
    """The app's stacks before the rehearsal created any (what it must leave alone)."""
    phases: list[Phase] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    big_skipped: dict[str, str] = field(default_factory=dict)
    """Rigs with no ``big`` variant, and why (the catalog's reason): expected, not a failure."""
    context: dict[str, str] = field(default_factory=dict)
    """The ``-c`` values every ``up`` of the rehearsal gets: with ``--model``, ``model.<rig>`` (and
    ``model_config.<rig>``, ``hf_token_parameter``) for each rig that serves it; with ``--workload``,
    ``max_model_len.<rig>`` for each rig that serves any model."""
    sized: list[str] = field(default_factory=list)
    """With ``--model`` or ``--workload``, what each rig serves on what and why (said in the plan)."""
    context_tokens: int | None = None
    """With ``--workload``, the context the vLLM rigs are served at (``-c max_model_len.<rig>``); None: their own."""
    bedrock: tuple[str, ...] = ()
    """The Bedrock backends benchmarked too (nothing to deploy): those chosen, online (moto has no Bedrock)."""
    price_plans: list[estimating.PhasePlan] = field(default_factory=list)
    destroyer: Destroyer | None = None
    notes: list[str] = field(default_factory=list)
    left: dict[str, Any] = field(default_factory=dict)
    """What the down step found left: billing, not billing, not checked, stacks it could not destroy."""
    step: str = "the plan"
    """What the rehearsal is doing (said when it is interrupted)."""
    interrupted: str | None = None
    """When and where an interrupt stopped it, for the timeline; None when none did."""

    def say(self, line: str) -> None:
        self.output.say(line)

    def show(self, renderable: Any) -> None:
        self.output.show(renderable)

    @property
    def endpoint(self) -> aws.Endpoint | None:
        """Moto's server offline (its sessions are made for it), else None (the standard configuration)."""
        return self.offline.endpoint if self.offline is not None else None

    @property
    def placement_file(self) -> Path | None:
        """The placement file the rehearsal reads and records: its own offline, else the user's (None)."""
        return self.offline.placement_file if self.offline is not None else None

    def command_env(self) -> dict[str, str]:
        """What every command of the rehearsal runs with: this process's environment, and offline moto's."""
        if self.offline is None:
            return dict(os.environ)
        return {**{k: v for k, v in os.environ.items() if k != "AWS_PROFILE"}, **self.offline.environment()}

    def make_session(self) -> Any:
        return aws.make_session(self.options.profile, self.options.region, self.endpoint)

    def prices(self) -> PriceBook:
        return PriceBook(None if self.options.offline else self.session)

    def with_bedrock(self) -> bool:
        """Whether a Bedrock backend is benchmarked too (chosen, and online: moto has no Bedrock runtime)."""
        return bool(self.bedrock) and not self.options.offline

    def locate(self) -> whereabouts.Whereabouts:
        return whereabouts.locate(whereabouts.app_stacks(), session=self.session)
