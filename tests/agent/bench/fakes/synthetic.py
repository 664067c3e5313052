"""Synthetic summaries with the ``slo`` and ``bfcl`` blocks of ``summary.json`` (their models:
``agent/bench/results/``), for testing the recommendation and its presentation without running those parts."""

from __future__ import annotations

import argparse
from typing import Any, Sequence

from agent.bench.analysis.blocks.capacity import capacity_of, slo_pairs
from agent.bench.analysis.blocks.distribution import distribution
from agent.bench.analysis.blocks.orchestrator import summarize_orchestrator
from agent.bench.analysis.recommendation import attach
from agent.bench.analysis.stats import wilson_interval
from agent.bench.results.blocks.bfcl import BfclSummary
from agent.bench.results.blocks.chat import ChatSummary
from agent.bench.results.blocks.cost import CeilingBlock, CostBlock
from agent.bench.results.blocks.open_loop import OpenLoopBlock, OpenLoopHalf
from agent.bench.results.blocks.counting import CountingSummary
from agent.bench.results.blocks.quality import QualitySummary
from agent.bench.results.blocks.slo import LevelIntervals, SloBlock, SloLevel, SloSearch, TargetLimits
from agent.bench.results.run import RunFile
from agent.bench.results.summary import BackendSummary, Summary

G6_PRICE = {"usd_per_hour": 0.8048, "instance_type": "g6.xlarge", "source": "offline-file", "as_of": "2026-10-05"}
G5G_PRICE = {"usd_per_hour": 0.556, "instance_type": "g5g.2xlarge", "source": "offline-file", "as_of": "2026-10-05"}
SM_PRICE = {"usd_per_hour": 1.1267, "instance_type": "ml.g6.xlarge", "source": "offline-file", "as_of": "2026-09-25"}
NOVA_MICRO = {"model_id": "us.amazon.nova-micro-v1:0", "usd_per_m_input": 0.035, "usd_per_m_output": 0.14,
              "source": "offline-file", "as_of": "2026-10-05"}
TARGET = {"ttft_p99_ms": 1000, "itl_p99_ms": 100, "e2e_p99_ms": None}
BACKEND_INFO = {"tool_calls": True, "constrained_tools": False, "toy_model": False, "base_url": None, "region": None,
                "endpoint_name": None, "max_prompt_tokens": None, "metadata": {}, "custom": False}
"""The keys of a ``run.json`` backend a test leaves to their usual values."""


def default_options() -> dict[str, Any]:
    """``run.json`` ``options`` of a run given no option, as the command records them."""
    from agent.bench.command.options import BenchOptions

    return BenchOptions.from_namespace(argparse.Namespace()).record(bfcl_concurrency=1).model_dump(mode="json")


def run_json(backends: Sequence[dict[str, Any]], *, options: dict[str, Any] | None = None,
             prices: dict[str, Any] | None = None, **more: Any) -> dict[str, Any]:
    """A whole ``run.json`` with every key the command always writes, around what a test sets (``backends``:
    each one's name, label, kind and model at least)."""
    from agent.bench.analysis.stats import PERCENTILE_METHOD
    from agent.bench.clients.base import ModelSettings

    return {
        "started": "2026-12-01T00:00:00.000Z", "finished": "2026-12-01T00:10:00.000Z", "git_sha": None,
        "versions": {}, "backends": [{**BACKEND_INFO, **b} for b in backends],
        "options": {**default_options(), **(options or {})},
        "settings": {**ModelSettings().as_dict(), "timing_retries": 0, "timing_timeout_s": 300.0},
        "methods": {"percentiles": PERCENTILE_METHOD}, "interrupted": False, "notes": [],
        "skipped": {b["name"]: {} for b in backends}, "stopped": {},
        "prices": {"offline": True, "offline_reason": "offline-file", "backends": {}, **(prices or {})}, **more,
    }  # fmt: skip


def level(concurrency: int, goodput: float, *, ci: Sequence[float] | None = None, requests: int = 30,
          repeats: int = 3, holds: bool = True, met_share: float = 1.0, output_tok_per_s: float | None = None,
          errors: int = 0, no_interval: bool = False, mix: float | None = None) -> SloLevel:
    """One SLO level; ``ci`` defaults to +-5% around the goodput (none at all with ``no_interval``); ``mix``: the
    prompt tokens per output token its requests that met the target had (None: not counted)."""
    low, high = ci if ci is not None else (goodput * 0.95, goodput * 1.05)
    return SloLevel(
        concurrency=concurrency, repeats=repeats, requests=requests, errors=errors, met=round(requests * met_share),
        met_share=met_share, goodput_req_per_s=goodput / 100, goodput_output_tok_per_s=goodput,
        output_tok_per_s=output_tok_per_s or goodput, ttft_p99_ms=200.0, itl_p99_ms=20.0, e2e_p99_ms=2200.0,
        ttft_p50_ms=150.0, itl_p50_ms=15.0, e2e_p50_ms=2000.0, holds=holds, verdict="holds" if holds else "misses",
        planned_requests=None, stopped=None, missed_by={}, one_piece_replies=0,
        ci95=LevelIntervals(goodput_req_per_s=None if no_interval else (low / 100, high / 100),
                            goodput_output_tok_per_s=None if no_interval else (low, high), output_tok_per_s=None,
                            met_share=(max(0.0, met_share - 0.1), min(1.0, met_share + 0.05))),
        per_repeat=[], met_input_per_output=mix, goodput_input_tok_per_s=None if mix is None else goodput * mix)


def slo(capacity: int | None, levels: Sequence[SloLevel], reason: str = "", fails_above: bool = True,
        bracket: tuple[int | None, int | None] | None = None) -> SloBlock:
    """An ``slo`` block; unless ``fails_above`` is False, a level at twice the highest one where the
    target no longer holds is added (so the capacity is not the top of the search)."""
    levels = list(levels)
    if fails_above and levels and levels[-1].holds:
        top = levels[-1]
        levels.append(level(top.concurrency * 2, (top.goodput_output_tok_per_s or 0) * 0.5, holds=False,
                            met_share=0.5))
    return SloBlock(
        target=TargetLimits(**TARGET), target_source="option", target_text="synthetic", target_basis="set with --slo",
        attainment=0.99, capacity_concurrency=capacity,
        capacity_reason=reason or (f"held at {capacity}" if capacity else
                                   "misses the target even at concurrency 1 (0/30 requests met it)"),
        every_request_failed=False,
        search=SloSearch(mode="levels", rule="synthetic", order=[lv.concurrency for lv in levels],
                         levels_measured=len(levels), max_concurrency=None, max_levels=None, budget_s=None,
                         seconds=None, stopped=None, bracket=bracket or capacity_of(levels), exact=False),
        levels=levels)


def bfcl(cases: int, correct: int, low: float, high: float) -> BfclSummary:
    empty = distribution([], keep_values=False)
    return BfclSummary(
        cases=cases, correct=correct, accuracy=correct / cases, ci95_low=low, ci95_high=high, text_calls=0,
        missed_calls=0, spurious_calls=0, errors=0, requests=cases, relevant_cases=cases, irrelevance_cases=0,
        outcomes={}, error_reasons={}, by_category={}, interface="openai tools", constrained=False, streamed=False,
        seed=0, output_tokens=empty, prompt_tokens=empty, seconds=empty, detail=[])


def quality(graded: int, right: int, low: float, high: float) -> QualitySummary:
    """A ``quality`` block: ``right`` of ``graded`` items, the rest wrong, with the interval given."""
    return QualitySummary(
        items=graded, right=right, wrong=graded - right, unreadable=0, failed=0, not_sent=0, refusals=0, graded=graded,
        accuracy=right / graded, ci95_low=low, ci95_high=high, lane=["quality-1"], seed=0, by_suite={},
        failure_reasons={})


def chat(input_per_output: float | None = 0.3, ttft_p50: float | None = None) -> ChatSummary:
    empty = distribution([])
    return ChatSummary(
        requests=0, errors=0, error_reasons={}, resends=0, new_connections=0, streamed=True,
        ttft_ms=distribution([ttft_p50]) if ttft_p50 is not None else empty, itl_ms=empty, e2e_ms=empty,
        decode_tok_per_s=empty, decode_basis={}, decode_comparable=False, client_tok_per_s=empty, output_tokens=empty,
        requested_tokens=100, returned_short=0, usage_missing=0, input_per_output=input_per_output, cold=None,
        levels=[])


def open_loop(verdict: str, rate: float, duration_s: float = 60.0) -> OpenLoopBlock:
    """An ``open_loop`` block at ``rate`` req/s with Poisson arrivals, its halves as ``verdict`` says."""
    n = max(2, round(rate * duration_s))
    first, second = n // 2, n - n // 2
    held = {"holds": (True, True), "not_sustaining": (True, False), "misses": (False, False)}.get(verdict, (True, True))
    halves = [OpenLoopHalf(requests=k, met=k if ok else 0, attains=ok, ttft_p99_ms=100.0 if ok else 2000.0,
                           itl_p99_ms=10.0, e2e_p99_ms=900.0) for k, ok in zip((first, second), held)]
    met = sum(h.met for h in halves)
    return OpenLoopBlock(
        mode="rate", rate_req_per_s=rate, rate_basis="--rate", arrival="poisson", burstiness=None,
        duration_s=duration_s, planned=n, sent=n, errors=0, met=met, met_share=met / n, goodput_req_per_s=met / duration_s,
        goodput_output_tok_per_s=100 * met / duration_s, realized_rate_req_per_s=rate, inter_arrival_cv=1.0,
        asked_cv=1.0, lag_p50_ms=0.1, lag_p99_ms=0.5, lag_max_ms=1.0, max_in_flight=4, ttft_p99_ms=100.0,
        itl_p99_ms=10.0, e2e_p99_ms=900.0, ttft_p50_ms=50.0, first_half=halves[0], second_half=halves[1],
        verdict=verdict, reason=f"{verdict} (synthetic)")  # type: ignore[arg-type]


NO_COST = CostBlock(billing=None, usd_per_hour=None, price_source=None, price_as_of=None, per_concurrency=[],
                    monthly_24x7_usd=None, break_even=None, input_per_output=None, reason=None)
NO_CEILING = CeilingBlock(device=None, bandwidth_gb_s=None, bandwidth_basis=None, bytes_per_step_gb=None,
                          precision=None, ceiling_tok_per_s=None, measured_decode_tok_per_s=None, share=None,
                          chip_ceiling_tok_per_s=None, chip_share=None, sources=[], reason=None)


def backend(name: str, *, kind: str = "openai", slo_block: SloBlock | None = None, bfcl_block: BfclSummary | None = None,
            tool_calls: bool = True, toy: bool = False, constrained: bool = False,
            input_per_output: float | None = 0.3, ttft_p50: float | None = None,
            quality_block: QualitySummary | None = None,
            open_loop_block: OpenLoopBlock | None = None) -> tuple[BackendSummary, dict[str, Any]]:
    """``(summary entry, run.json backend info)`` of one backend."""
    entry = BackendSummary(
        label=f"{name} label", kind=kind, model_id="m", constrained=constrained, toy_model=toy, custom=False,
        counting=None, counting_strict=None, chat=chat(input_per_output, ttft_p50), bfcl=bfcl_block, cost=NO_COST,
        ceiling=NO_CEILING, slo=slo_block, quality=quality_block, skipped={}, stopped=None, failures=[], completed=True,
        open_loop=open_loop_block)
    info = {"name": name, "label": f"{name} label", "kind": kind, "model_id": "m", "tool_calls": tool_calls,
            "constrained_tools": constrained, "toy_model": toy}
    return entry, info


def summary(backends: dict[str, tuple[BackendSummary, dict]], prices: dict[str, dict], *,
            workload: dict | None = None, min_accuracy: float | None = None, not_run: dict | None = None,
            bedrock_reference: dict | None = NOVA_MICRO, min_quality: float | None = None,
            chosen: list[str] | None = None, compare_models: bool = False) -> tuple[dict[str, BackendSummary], RunFile]:
    """``(backends, run)`` ready for :func:`agent.bench.analysis.recommendation.choose.recommend`;
    ``chosen``: the backends given with ``--backends``; ``workload``: its keys as ``--workload`` takes them (in
    ``run.json`` as the run records it, :meth:`~agent.bench.analysis.traffic.Traffic.record`)."""
    from agent.bench.analysis.traffic import Traffic

    recorded = Traffic.from_dict(workload).record().model_dump()
    run = RunFile.model_validate(run_json(
        [info for _, info in backends.values()],
        options={"workload": recorded, "min_accuracy": min_accuracy, "min_quality": min_quality,
                 "compare_models": compare_models,
                 **({"backends": chosen} if chosen is not None else {})},
        prices={"backends": prices, "bedrock_reference": bedrock_reference, "not_run": not_run or {}}))
    return {n: entry for n, (entry, _) in backends.items()}, run


def full_summary(entries: dict[str, BackendSummary], run: RunFile, **counting: CountingSummary) -> Summary:
    """A whole summary around synthetic backends, with the recommendation attached as a run's is."""
    entries = {n: e.model_copy(update={"counting": counting[n]}) if n in counting else e for n, e in entries.items()}
    backends, rec = attach(entries, run)
    return Summary(schema_version="1.0", run=run.info(), prices=run.prices, backends=backends,
                   slo_pairs=slo_pairs(backends), orchestrator=summarize_orchestrator([], run, ["chat"]), bfcl_pairs=[],
                   recommendation=rec)


def counting_block(correct: int, graded: int, failed: int) -> CountingSummary:
    """Counting grades: ``correct`` of ``graded`` runs, ``failed`` more runs apart."""
    interval = wilson_interval(correct, graded)
    return CountingSummary(
        question="q", ids=[1], truth=1, truth_filter="id >= 1", tools="engine", constrained=False, runs=graded + failed,
        errors=failed, graded=graded, correct=correct, wrong=graded - correct, unreadable=0,
        correct_ci95=None if interval is None else (round(interval[0], 4), round(interval[1], 4)), right_filter=None,
        right_filter_ci95=None, first_call_right=None, several_filters=0, tool_calls=0, invalid_tool_calls=0,
        text_tool_calls=0, text_calls_describing_made_calls=0, answer_status={}, failure_reasons={}, filters_sent={},
        invalid_calls=[], text_calls=[], seconds=distribution([], keep_values=False), detail=[])
