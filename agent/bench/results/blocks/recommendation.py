"""The ``recommendation`` block: which backend to choose for the user's traffic, the figures it
rests on, where the answer changes, and the cost curves of the monthly-cost plot."""

from __future__ import annotations

import math
from typing import Literal

from ..base import Frozen
from .slo import TargetLimits
from .tasks import TaskChoice


class Workload(Frozen):
    """The user's traffic (``--workload``) as the run sent and priced it, with the keys that took their default
    and those that followed from others (a key written before it existed reads as absent)."""

    output_tokens_per_month: float
    input_per_output: float
    peak_to_average: float
    tool_calls: bool
    average_output_tok_per_s: float
    peak_output_tok_per_s: float
    source: str
    defaulted: list[str]
    min_quality: float | None = None
    """The answer-quality floor the workload file or option gave (``min_quality``)."""
    arrival: Literal["constant", "poisson", "gamma"] = "poisson"
    """How requests arrive in the open loop (``--rate``)."""
    burstiness: float = 1.0
    """Gamma's shape with ``arrival: gamma`` (1 is Poisson)."""
    request_rate: float | None = None
    """Requests per second at the peak, as given (null: derived, :attr:`peak_req_per_s`)."""
    peak_req_per_s: float | None = None
    """Requests per second at the peak: ``request_rate``, else the peak's output tok/s over the mean reply."""
    preset: str | None = None
    prompt_input_tokens_mean: float | None = None
    prompt_input_tokens_stddev: float | None = None
    output_tokens_mean: float | None = None
    output_tokens_stddev: float | None = None
    shared_prefix_tokens: int | None = None
    turns: int | None = None
    think_time_s: float | None = None
    prompts: str | None = None
    trace: str | None = None
    trace_speed: float | None = None
    seed: int | None = None
    derived: dict[str, str] = {}
    """The keys that followed from others, each with how (``preset chat``, ``the prompts file`` ...)."""


class TargetUsed(TargetLimits):
    """The latency target the backends were measured under, and where it came from."""

    source: str | None


class Accuracy(Frozen):
    accuracy: float
    ci95: tuple[float, float]
    cases: int
    correct: int | None
    source: str


class SwitchFigures(Frozen):
    """One side of a switch point: its cost just below and just above the volume."""

    billing: Literal["hourly", "per_token"]
    usd_per_hour: float | None
    usd_per_m_output_effective: float | None
    goodput_output_tok_per_s: float | None
    monthly_usd_below: float
    monthly_usd_above: float
    instances_below: int | None
    instances_above: int | None


class SwitchPoint(Frozen):
    """A monthly volume where the cheapest qualifying backend changes."""

    output_tokens_per_month: int
    below: str
    above: str
    kind: Literal["instance step", "crossing"]
    average_output_tok_per_s: float
    text: str
    figures: dict[str, SwitchFigures]


class NotRunOffer(Frozen):
    """A backend of the catalog this run did not measure, with the least it could cost here."""

    label: str | None
    tool_calls: bool | None
    lower_bound_monthly_usd: float | None
    model: str | None = None
    """The catalog's name of the model it serves by default (null: not on file)."""
    basis: str | None


class Assessment(Frozen):
    accuracy: Accuracy | None
    thin: list[str]
    caveats: list[str]
    quality: Accuracy | None = None
    """Answer quality on the quality lane, with its 95% Wilson interval; None when the lane did not run."""
    input_per_output_measured: float | None = None
    """Prompt tokens per output token as the server counted them: of the requests that met the target at its
    capacity, else of its timed chat requests (null: no usage); shown beside the workload's stated one."""
    open_loop: str | None = None
    """What the open loop showed, where it ran at the rate one instance must carry at the peak."""


class CostCurve(Frozen):
    """Monthly cost against monthly output volume for one way to serve the traffic.

    Hourly: ``ceil(volume / output_tokens_per_month_per_instance)`` instances (at least one; always
    one when the volume one instance serves is unknown), each ``usd_per_month_per_instance``. Per
    token: ``volume x usd_per_m_output / 1e6``.
    """

    name: str
    label: str
    style: Literal["measured", "disqualified", "list_price"]
    """``measured`` within the target and qualifying; ``disqualified`` (measured, not chosen for a
    reason other than cost); ``list_price``: not run here, a lower bound."""
    billing: Literal["hourly", "per_token"]
    usd_per_month_per_instance: float | None
    output_tokens_per_month_per_instance: float | None
    usd_per_m_output: float | None

    def monthly_usd(self, volume: float) -> float:
        if self.billing == "per_token":
            return volume * (self.usd_per_m_output or 0.0) / 1e6
        width = self.output_tokens_per_month_per_instance
        instances = 1 if not width else max(1, math.ceil(volume / width - 1e-9))
        return instances * (self.usd_per_month_per_instance or 0.0)


class ServedModel(Frozen):
    """The model a backend serves, as the recommendation compares it (:mod:`agent.bench.analysis.recommendation.models`)."""

    model: str
    """What is compared: the catalog's name of the model (``weights.model``: ``Gemma 4 E2B``), the same whatever id a
    backend names it by; where the server reports another model than the one asked, or the catalog names none, the
    model id itself."""
    model_id: str
    """The id the server reports (provenance's ``model``), else the one every request names."""
    source: str
    """Where it was read (``GET /v1/models``), or why the id asked stands (the server did not say)."""


class Models(Frozen):
    """Which model the comparison is for, what each backend serves, and how backends of another model are treated."""

    compared: str | None
    """The model most of the run's backends serve (a tie: the one the rigs were asked for); None: no backend."""
    why: str
    compare_models: bool
    """``--compare-models``: backends of another model compete, the quality lane the arbiter; without it they are
    shown, never chosen."""
    served: dict[str, ServedModel]
    different: list[str]
    """The backends serving another model than :attr:`compared`, in the run's order."""
    cannot_serve: dict[str, str] = {}
    """The rigs of the catalog not run that cannot serve :attr:`compared`, each with the one line why."""


class Recommendation(Frozen):
    workload: Workload
    min_accuracy: float | None
    min_quality: float | None = None
    """The answer-quality floor (``--min-quality`` or the workload's ``min_quality``): a backend whose
    quality's upper 95% bound is below it is disqualified."""
    backends_chosen: list[str] | None = None
    """The backends the user chose (``--backends``): the choice is among them, and the ones left out
    that could cost less are caveats, not missing evidence."""
    target: TargetUsed | None
    verdict: Literal["choice", "tie", "too_thin", "none_qualifies", "not_measured"]
    choice: str | None
    runner_up: str | None
    leader: str | None
    headline: str
    ranking: list[str]
    switch_points: list[SwitchPoint]
    reasons: list[str]
    disqualified: dict[str, str]
    not_run: dict[str, NotRunOffer]
    backends: dict[str, Assessment]
    volume_range: tuple[float, float]
    curves: list[CostCurve]
    """What the monthly-cost plot draws."""
    caveats: list[str] = []
    """What the answer must be read with, whichever backend it names: a capacity that is only a floor, a
    workload's prompts heavier than those measured."""
    models: Models | None = None
    """The model the comparison is for and what each backend serves (null in a summary written before it was kept)."""
    partial: str | None = None
    """An interrupted run: that it is partial and what it is missing (the headline starts with it); null
    when the run finished."""
    chosen_by: Literal["cost_at_target", "usd_per_successful_task"] = "cost_at_target"
    """What the answer is chosen by: the monthly cost at the latency target, or $ per successful task (the tasks
    lane ran, and no latency target was measured or ``--min-task-success`` was given)."""
    by_task: TaskChoice | None = None
    """The choice by $ per successful task (null: the tasks lane did not run)."""
