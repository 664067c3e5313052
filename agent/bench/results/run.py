"""``run.json`` as the summary reads it, and the ``run`` and ``prices`` blocks the summary copies.

``run.json`` is written by the command (``agent/bench/command/runner.py``); every block here is
:class:`~.base.Open` (keys added there later pass through) and :class:`~.base.Sparse` (a key
absent from the file stays absent from the summary's copy).
"""

from __future__ import annotations

from typing import Any, Literal

from .base import Open, Sparse
from .blocks.provenance import Provenance


class BackendInfo(Sparse, Open):
    """One backend as the run knew it."""

    name: str
    label: str
    kind: Literal["openai", "neuron", "bedrock", "sagemaker"]
    model_id: str
    tool_calls: bool | None = None
    constrained_tools: bool = False
    toy_model: bool = False
    base_url: str | None = None
    region: str | None = None
    endpoint_name: str | None = None
    max_prompt_tokens: int | None = None
    metadata: dict[str, Any] = {}
    custom: bool = False
    provenance: Provenance | None = None


class RunOptions(Sparse, Open):
    """The command's options as ``run.json`` records them (in the order it writes them)."""

    demos: list[str] | None = None
    runs: int | None = None
    tools: str | None = None
    concurrency: list[int] | Literal["auto"] | None = None
    max_tokens: int | None = None
    ignore_eos: bool | None = None
    question: str | None = None
    request_timeout_s: float | None = None
    max_consecutive_failures: int | None = None
    workload: dict[str, Any] | None = None
    min_accuracy: float | None = None
    slo: dict[str, float | None] | None = None
    slo_source: str | None = None
    repeats: int | None = None
    max_concurrency: int | None = None
    slo_budget_s: float | None = None
    bfcl_n: int | Literal["all"] | None = None
    bfcl_seed: int | None = None
    bfcl_stream: bool | None = None
    bfcl_concurrency: int | None = None
    bfcl_max_tokens: int | None = None
    bfcl_eval: str | None = None
    bedrock_tier: str | None = None
    quality_n: int | None = None
    quality_seed: int | None = None
    quality_concurrency: int | None = None
    quality_lane: str | None = None
    quality_reference: str | None = None
    min_quality: float | None = None
    backends: list[str] | None = None
    """The backends the user chose (``--backends`` or ``BACKENDS``); absent when the run took every one it found."""


class AgentSettings(Sparse, Open):
    """The agents' model settings and the timing client's (explicit timeouts and retries)."""

    temperature: float | None = None
    max_tokens: int | None = None
    timeout_s: float | None = None
    connect_timeout_s: float | None = None
    retries: int | None = None
    max_connections: int | None = None
    timing_retries: int | None = None
    timing_timeout_s: float | None = None


class HourlyPrice(Sparse, Open):
    usd_per_hour: float
    instance_type: str | None = None
    region: str | None = None
    as_of: str | None = None
    source: str | None = None
    note: str | None = None


class TokenPrice(Sparse, Open):
    """Per-token prices in $ per million tokens."""

    usd_per_m_input: float
    usd_per_m_output: float
    model_id: str | None = None
    service_tier: str | None = None
    region: str | None = None
    as_of: str | None = None
    source: str | None = None
    note: str | None = None


class BackendPrice(Sparse, Open):
    """A backend's price: hourly, per token, or why there is none."""

    hourly: HourlyPrice | None = None
    per_token: TokenPrice | None = None
    reason: str | None = None


class CatalogPrice(Sparse, Open):
    """The price of a backend of the catalog the run did not measure."""

    label: str | None = None
    tool_calls: bool | None = None
    hourly: HourlyPrice | None = None
    per_token: TokenPrice | None = None
    reason: str | None = None


class Prices(Sparse, Open):
    """What the run was priced with, and where each price came from."""

    fetched: str | None = None
    backends: dict[str, BackendPrice] = {}
    not_run: dict[str, CatalogPrice] = {}
    bedrock_reference: TokenPrice | None = None
    bedrock_reference_reason: str | None = None
    offline: bool = False
    offline_reason: str | None = None

    def of(self, name: str) -> BackendPrice:
        """Backend ``name``'s entry (an empty one when it has none)."""
        return self.backends.get(name) or BackendPrice()


class Stopped(Open):
    """A backend stopped after failures in a row (``--max-consecutive-failures``)."""

    part: str
    after: int
    reason: str


class LevelLog(Sparse, Open):
    """What the run planned for one level under the target and why it stopped."""

    concurrency: int
    planned_requests: int | None = None
    repeats_planned: int | None = None
    repeats_run: int | None = None
    stopped: str | None = None


class SearchLog(Sparse, Open):
    """How a backend's chat levels were run under the target (``run.json`` ``slo_search``)."""

    mode: str | None = None
    rule: str | None = None
    max_concurrency: int | None = None
    max_levels: int | None = None
    budget_s: float | None = None
    repeats: int | None = None
    order: list[int] = []
    levels: list[LevelLog] = []
    stopped: str | None = None
    seconds: float | None = None


class RunInfo(Sparse, Open):
    """The summary's ``run`` block: the keys of ``run.json`` a reader needs to know what ran."""

    started: str | None = None
    finished: str | None = None
    git_sha: str | None = None
    versions: dict[str, str | None] = {}
    backends: list[BackendInfo] = []
    options: RunOptions = RunOptions()
    settings: AgentSettings = AgentSettings()
    methods: dict[str, str] = {}
    interrupted: bool = False
    notes: list[str] = []


class RunFile(RunInfo):
    """The whole ``run.json``."""

    skipped: dict[str, dict[str, str]] = {}
    stopped: dict[str, Stopped] = {}
    prices: Prices = Prices()
    slo_search: dict[str, SearchLog] = {}
    orchestrator: dict[str, Any] = {}

    def info(self) -> RunInfo:
        """The summary's copy: only :class:`RunInfo`'s keys, only those present in the file."""
        return RunInfo(**{k: getattr(self, k) for k in RunInfo.model_fields if k in self.model_fields_set})
