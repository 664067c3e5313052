"""``run.json``: the model the command writes it from and reads it back through, and the ``run`` and
``prices`` blocks the summary copies.

``run.json`` is built by the command (``agent/bench/command/runner.py``, :mod:`agent.bench.command.run_info`)
as a :class:`RunFile` from the start, each block made as its model where it is made (the options from the typed
options, :meth:`agent.bench.command.options.BenchOptions.record`), and written from it
(:func:`agent.bench.command.evidence.write_run`): every block is :class:`~.base.Frozen`, or a
:class:`~.base.Log` the run fills in as it goes, checked as each value is set; so a key it does not know (a
misspelt one) fails where it is made and where it is read, and a key the command always writes is required. A
key written only in some runs (a part's options, a price's provenance) is optional and :class:`~.base.Sparse`:
absent from the file, absent from the summary's copy. The JSON Schema
is committed beside this file (``run.schema.json``, :mod:`.schema`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict

from .base import BackendKindName, Frozen, Log, Sparse
from .constants import NOT_OFFERED_PREFIX
from .blocks.provenance import Provenance
from .blocks.recommendation import Workload
from .blocks.slo import TargetLimits
from .blocks.traffic import TrafficFit
from .target import Source, Target


class BackendInfo(Sparse, Frozen):
    """One backend as the run knew it."""

    name: str
    label: str
    kind: BackendKindName
    model_id: str
    tool_calls: bool | None
    constrained_tools: bool
    toy_model: bool
    base_url: str | None
    region: str | None
    endpoint_name: str | None
    max_prompt_tokens: int | None
    max_total_tokens: int | None = None
    """Prompt and output tokens together (written since the workload's fit is checked; absent before)."""
    metadata: dict[str, Any]
    custom: bool
    provenance: Provenance | None = None
    """Written when something was read or is expected."""

    def not_like_for_like(self) -> list[str]:
        """What sets it apart besides its weights, from its metadata (the catalog's ``bedrock_endpoint`` for a managed
        endpoint's model): each feature its endpoint does not offer, and reasoning it does by default, each with its
        source."""
        meta = self.metadata
        out = [f"{self.name} does not offer {key.removeprefix(NOT_OFFERED_PREFIX).replace('_', ' ')} ({source})"
               for key, source in meta.items() if key.startswith(NOT_OFFERED_PREFIX)]
        if meta.get("reasoning_note"):
            out.append(f"{self.name} {meta['reasoning_note']} ({meta.get('reasoning_source') or 'the catalog'})")
        return out


class RunWorkload(Sparse, Workload):
    """``--workload`` as ``run.json`` records it (:meth:`agent.bench.analysis.traffic.Traffic.record`): the keys of
    :class:`~.blocks.recommendation.Workload`; one a run wrote before the key existed is absent, as it was."""

    @classmethod
    def of(cls, workload: Workload) -> RunWorkload:
        """The workload the run sent and priced, every key of it written."""
        return cls(**dict(workload))


class RunOptions(Sparse, Frozen):
    """The command's options as ``run.json`` records them (the order the report lists them in); a part's
    options only when the part ran."""

    demos: list[str]
    runs: int
    tools: str
    concurrency: list[int] | Literal["auto"]
    max_tokens: int
    ignore_eos: bool
    question: str
    request_timeout_s: float
    max_consecutive_failures: int
    workload: RunWorkload
    min_accuracy: float | None
    slo: TargetLimits
    """``--slo``, or the default target (:attr:`slo_source` says which)."""
    slo_source: Source
    repeats: int
    max_concurrency: int
    slo_budget_s: float
    bfcl_n: int | Literal["all"] | None = None
    bfcl_seed: int | None = None
    bfcl_stream: bool | None = None
    bfcl_concurrency: int | None = None
    bfcl_max_tokens: int | None = None
    bfcl_eval: str | None = None
    bedrock_tier: str
    forwards: int | Literal["auto"] = "auto"
    """``--forwards``: port forwards per EC2 rig (absent from a run.json written before the option: auto)."""
    load_from: Literal["tunnel", "rig"] = "tunnel"
    """``--load-from``: where an EC2 rig's levels and open loop were sent from (absent before the option: tunnel)."""
    tunnel_limit: float | None = None
    """``--tunnel-limit``: the offline relays' shaped byte rate (absent: not shaped)."""
    quality_n: int | None = None
    quality_seed: int | None = None
    quality_concurrency: int | None = None
    quality_lane: str | None = None
    quality_reference: str | None = None
    min_quality: float | None
    compare_models: bool = False
    """``--compare-models``: backends serving different models compete, the quality lane the arbiter (absent from a
    run.json written before the option: not given)."""
    backends: list[str] | None = None
    """The backends the user chose (``--backends`` or ``BACKENDS``); absent when the run took every one it found."""
    quality_system_prompt: str | None = None
    quality_max_tokens: dict[str, int] | None = None
    quality_temperature: int | float | None = None
    """As written (0): a whole number stays one in the report."""
    rate: float | Literal["peak"] | None = None
    """``--rate``: the open loop's requests per second, or ``peak``; absent when the open loop did not run."""
    rate_duration_s: float | None = None
    """``--rate-duration``: the open loop's window (absent: the default, or a trace's own length)."""
    tasks_category: str | None = None
    """The tasks lane's options (absent when it did not run)."""
    tasks_n: int | None = None
    tasks_seed: int | None = None
    tasks_max_turns: int | None = None
    tasks_max_tool_calls: int | None = None
    tasks_time_limit_s: float | None = None
    tasks_concurrency: int | None = None
    tasks_steps_per_turn: int | None = None
    tasks_bfcl_eval: str | None = None
    min_task_success: float | None = None
    tasks_agent_target: dict[str, float] | None = None
    """``--tasks-agent-target``: the per-agent target of the agents search (absent: the search did not run)."""
    tasks_max_agents: int | None = None

    def target(self) -> Target:
        """The latency target the run measured under (``--slo``, or the default)."""
        return Target(**self.slo.model_dump(), source=self.slo_source)


class AgentSettings(Frozen):
    """The agents' model settings and the timing client's (explicit timeouts and retries)."""

    temperature: float
    max_tokens: int
    timeout_s: float
    connect_timeout_s: float
    retries: int
    max_connections: int
    timing_retries: int
    timing_timeout_s: float


class HourlyPrice(Sparse, Frozen):
    usd_per_hour: float
    instance_type: str | None = None
    region: str | None = None
    as_of: str | None = None
    source: str | None = None
    note: str | None = None
    requested_region: str | None = None
    detail: str | None = None


class TokenPrice(Sparse, Frozen):
    """Per-token prices in $ per million tokens (a backend not run: with its source and date only)."""

    usd_per_m_input: float
    usd_per_m_output: float
    model_id: str | None = None
    service_tier: str | None = None
    region: str | None = None
    as_of: str | None = None
    source: str | None = None
    note: str | None = None
    requested_region: str | None = None
    detail: str | None = None


class BackendPrice(Sparse, Frozen):
    """A backend's price: hourly, per token, or why there is none."""

    hourly: HourlyPrice | None = None
    per_token: TokenPrice | None = None
    reason: str | None = None


class CatalogPrice(Sparse, Frozen):
    """The price of a backend of the catalog the run did not measure."""

    label: str | None = None
    model: str | None = None
    """The catalog's name of the model it serves by default (absent from a run.json written before it was kept)."""
    tool_calls: bool | None = None
    hourly: HourlyPrice | None = None
    per_token: TokenPrice | None = None
    reason: str | None = None
    cannot_serve: dict[str, str] = {}
    """Models the run's backends were asked for (by the catalog's name) that this rig cannot serve, each with the one
    line why (``rigs/deploy/model_options.py``: a Neuron rig and a model AWS's vLLM Neuron image does not serve, a
    model that fits no size of the rig's family)."""


class Prices(Sparse, Frozen):
    """What the run was priced with, and where each price came from (until they are read: only why not)."""

    fetched: str | None = None
    backends: dict[str, BackendPrice]
    not_run: dict[str, CatalogPrice] = {}
    bedrock_reference: TokenPrice | None = None
    bedrock_reference_reason: str | None = None
    offline: bool
    offline_reason: str | None

    def of(self, name: str) -> BackendPrice:
        """Backend ``name``'s entry (an empty one when it has none)."""
        return self.backends.get(name) or BackendPrice()


class Stopped(Frozen):
    """A backend stopped after failures in a row (``--max-consecutive-failures``)."""

    part: str
    after: int
    reason: str


class LevelLog(Sparse, Log):
    """What the run planned for one level under the target and why it stopped."""

    concurrency: int
    planned_requests: int | None = None
    repeats_planned: int | None = None
    repeats_run: int | None = None
    stopped: str | None = None


class SearchLog(Sparse, Log):
    """How a backend's chat levels were run under the target (``run.json`` ``slo_search``; empty when the run
    stopped before the backend's chat part began)."""

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


class OpenLoopLog(Sparse, Log):
    """How one backend's open loop was sent (``run.json`` ``open_loop``): its schedule and what happened."""

    mode: Literal["rate", "trace"]
    rate_req_per_s: float | None = None
    rate_basis: str
    arrival: str
    burstiness: float | None = None
    seed: int | None = None
    duration_s: float
    planned: int
    """Requests planned: every turn of every session."""
    turns: int | None = None
    """A workload of sessions: the turns of each; sessions start on the schedule at ``session_rate_per_s``."""
    session_rate_per_s: float | None = None
    sessions: int | None = None
    sent: int = 0
    max_in_flight: int
    """The most requests (sessions) the sender holds under way; one due beyond it waits, and its wait is its lag."""
    seconds: float | None = None
    stopped: str | None = None


class CalibrationPoint(Frozen):
    """One prompt of a backend's calibration exchange: its text's units and the server's count."""

    role: Literal["cold", "short", "long"]
    units: int
    prompt_tokens: int | None
    error: str | None = None


class CalibrationLog(Frozen):
    """How a backend counts the project's text (:mod:`agent.bench.tasks.traffic.calibration`)."""

    slope: float
    offset: float
    calibrated: bool
    why: str
    points: list[CalibrationPoint]


class TrafficLog(Sparse, Log):
    """What a backend's chat part sent of the workload (``run.json`` ``traffic``): the fit, the calibration, and
    whether exact output lengths could be asked."""

    fit: TrafficFit
    ignore_eos: bool
    """Exactly the output tokens drawn were asked for (the server's kind allows ``ignore_eos``)."""
    calibration: CalibrationLog | None = None
    """Absent where the prompts are given (the reference's, a prompts file's)."""
    shared_prefix: str | None = None
    """The shared system prompt every request carried (made to this backend's calibration)."""


class OrchestratorNote(Frozen):
    """Why the orchestrator did not run (``run.json`` ``orchestrator``)."""

    reason: str


class RunInfo(Sparse, Frozen):
    """The summary's ``run`` block: the keys of ``run.json`` a reader needs to know what ran."""

    started: str
    finished: str | None
    git_sha: str | None
    versions: dict[str, str | None]
    backends: list[BackendInfo]
    options: RunOptions
    settings: AgentSettings
    methods: dict[str, str]
    interrupted: bool
    notes: list[str]
    connection_notes: list[str] = []
    """What the clients learned about each server's connections (a resend on a connection the server had
    closed, new connections from then on): the run's conditions, not a caveat on its answer. Written when
    there is one."""


class RunFile(RunInfo):
    """The whole ``run.json``: as a run writes it, filled in as the run goes (each value checked where it is set,
    :class:`~.base.Log`), and as a reader reads it."""

    model_config = ConfigDict(frozen=False, validate_assignment=True)

    skipped: dict[str, dict[str, str]]
    stopped: dict[str, Stopped]
    prices: Prices
    slo_search: dict[str, SearchLog] = {}
    open_loop: dict[str, OpenLoopLog] = {}
    traffic: dict[str, TrafficLog] = {}
    """Per backend, what its chat part sent of the workload (absent before the chat part ran)."""
    orchestrator: OrchestratorNote | None = None

    def info(self) -> RunInfo:
        """The summary's copy: only :class:`RunInfo`'s keys."""
        return RunInfo(**{k: getattr(self, k) for k in RunInfo.model_fields})

    def as_json(self) -> dict[str, Any]:
        """What ``run.json`` holds (the keys given, in the model's order)."""
        return self.model_dump(mode="json")
