"""``summary.json``: every figure of the run, a pure function of ``requests.jsonl`` and ``run.json``
(``agent/bench/analysis/``), and all presentation reads (``agent/bench/presentation/``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from .base import BackendKindName, Frozen
from .blocks.bfcl import BfclPair, BfclSummary
from .blocks.chat import ChatSummary
from .blocks.cost import CeilingBlock, CostBlock
from .blocks.counting import CountingSummary
from .blocks.open_loop import OpenLoopBlock
from .blocks.orchestrator import OrchestratorSummary
from .blocks.provenance import ProvenanceBlock
from .blocks.quality import QualityLane, QualityPair, QualitySummary, Weights
from .blocks.recommendation import Recommendation
from .blocks.slo import SloBlock, SloPair
from .blocks.tasks import TasksPair, TasksSummary
from .blocks.traffic import TrafficBlock
from .blocks.tunnel import TunnelBlock
from .run import Prices, RunInfo, Stopped

SCHEMA_VERSION = "1.0"


class BackendSummary(Frozen):
    """One backend's figures, and whether it completed every part it takes part in."""

    label: str
    kind: BackendKindName
    model_id: str
    constrained: bool
    toy_model: bool
    custom: bool
    counting: CountingSummary | None
    counting_strict: CountingSummary | None
    chat: ChatSummary | None
    bfcl: BfclSummary | None
    cost: CostBlock
    ceiling: CeilingBlock
    slo: SloBlock | None
    quality: QualitySummary | None = None
    weights: Weights | None = None
    """What it serves, as the catalog states it (None: not on file, e.g. a custom server)."""
    skipped: dict[str, str]
    stopped: Stopped | None
    failures: list[str]
    completed: bool
    provenance: ProvenanceBlock | None = None
    """What served it, read at run time, beside the catalog's expectation (None: a run before it was read)."""
    open_loop: OpenLoopBlock | None = None
    """Under requests sent on a schedule (``--rate``, a trace); None when the open loop did not run."""
    traffic: TrafficBlock | None = None
    """What its chat part and open loop were sent of the workload, asked against counted (None: neither sent
    anything)."""
    tasks: TasksSummary | None = None
    """BFCL's multi-turn tasks done by the agent (None: the tasks part did not run here)."""
    tunnel: TunnelBlock | None = None
    """What its port forwards carried against their measured capacity, and the levels bound by them (None: not
    reached through a port forward)."""

    def tags(self) -> list[str]:
        """What a reader must know beside the name: ``constrained``, ``CPU toy model``, ``custom server``."""
        return [tag for tag, on in (("constrained", self.constrained), ("CPU toy model", self.toy_model),
                                    ("custom server", self.custom)) if on]


class Summary(Frozen):
    schema_version: Literal["1.0"]
    run: RunInfo
    prices: Prices
    backends: dict[str, BackendSummary]
    slo_pairs: list[SloPair]
    orchestrator: OrchestratorSummary
    bfcl_pairs: list[BfclPair]
    recommendation: Recommendation
    quality_pairs: list[QualityPair] = []
    quality_lane: QualityLane | None = None
    tasks_pairs: list[TasksPair] = []

    def as_json(self) -> dict:
        """The summary as ``summary.json`` holds it."""
        return self.model_dump(mode="json")

    @classmethod
    def read(cls, path: Path) -> Summary:
        """A ``summary.json`` written by this version.

        Raises:
            ValueError: not JSON, or not a summary of this shape.
        """
        return cls.model_validate(json.loads(path.read_text(encoding="utf-8")))
