"""Synthetic summaries with the ``slo`` and ``bfcl`` blocks of ``summary.json`` (their shape:
``agent/bench/analysis/summary.schema.json``), for testing the recommendation without running those parts."""

from __future__ import annotations

from typing import Any, Sequence

G6_PRICE = {"usd_per_hour": 0.8048, "instance_type": "g6.xlarge", "source": "offline-file", "as_of": "2026-10-05"}
G5G_PRICE = {"usd_per_hour": 0.556, "instance_type": "g5g.2xlarge", "source": "offline-file", "as_of": "2026-10-05"}
SM_PRICE = {"usd_per_hour": 1.1267, "instance_type": "ml.g6.xlarge", "source": "offline-file", "as_of": "2026-09-25"}
NOVA_MICRO = {"model_id": "us.amazon.nova-micro-v1:0", "usd_per_m_input": 0.035, "usd_per_m_output": 0.14,
              "source": "offline-file", "as_of": "2026-10-05"}
TARGET = {"ttft_p99_ms": 1000, "itl_p99_ms": 100, "e2e_p99_ms": None}


def level(concurrency: int, goodput: float, *, ci: Sequence[float] | None = None, requests: int = 30,
          repeats: int = 3, holds: bool = True, met_share: float = 1.0, output_tok_per_s: float | None = None,
          errors: int = 0) -> dict[str, Any]:
    """One SLO level; ``ci`` defaults to +-5% around the goodput."""
    low, high = ci if ci is not None else (goodput * 0.95, goodput * 1.05)
    return {
        "concurrency": concurrency, "repeats": repeats, "requests": requests, "errors": errors,
        "met": round(requests * met_share), "met_share": met_share, "goodput_req_per_s": goodput / 100,
        "goodput_output_tok_per_s": goodput, "output_tok_per_s": output_tok_per_s or goodput,
        "ttft_p99_ms": 200.0, "itl_p99_ms": 20.0, "e2e_p99_ms": 2200.0, "holds": holds,
        "ci95": {"goodput_req_per_s": [low / 100, high / 100], "goodput_output_tok_per_s": [low, high],
                 "met_share": [max(0.0, met_share - 0.1), min(1.0, met_share + 0.05)]},
    }


def slo(capacity: int | None, levels: Sequence[dict[str, Any]], reason: str = "",
        fails_above: bool = True) -> dict[str, Any]:
    """An ``slo`` block; unless ``fails_above`` is False, a level at twice the highest one where the
    target no longer holds is added (so the capacity is not the top of the search)."""
    levels = list(levels)
    if fails_above and levels and levels[-1]["holds"]:
        top = levels[-1]
        levels.append(level(top["concurrency"] * 2, top["goodput_output_tok_per_s"] * 0.5, holds=False,
                            met_share=0.5))
    return {"target": dict(TARGET), "target_source": "option", "capacity_concurrency": capacity,
            "capacity_reason": reason or (f"held at {capacity}" if capacity else
                                          "misses the target even at concurrency 1 (0/30 requests met it)"),
            "search": {"rule": "synthetic"}, "levels": levels}


def bfcl(cases: int, correct: int, low: float, high: float) -> dict[str, Any]:
    return {"cases": cases, "correct": correct, "accuracy": correct / cases, "ci95_low": low, "ci95_high": high,
            "text_calls": 0, "missed_calls": 0, "spurious_calls": 0, "errors": 0, "by_category": {},
            "requests": cases, "relevant_cases": cases, "irrelevance_cases": 0, "interface": "openai tools"}


def backend(name: str, *, kind: str = "openai", slo_block: dict | None = None, bfcl_block: dict | None = None,
            tool_calls: bool = True, toy: bool = False, constrained: bool = False,
            input_per_output: float | None = 0.3) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(summary entry, run.json backend info)`` of one backend."""
    entry = {"label": f"{name} label", "kind": kind, "model_id": "m", "toy_model": toy, "constrained": constrained,
             "chat": {"input_per_output": input_per_output}, "cost": {"reason": None}, "failures": [],
             "completed": True}
    if slo_block is not None:
        entry["slo"] = slo_block
    if bfcl_block is not None:
        entry["bfcl"] = bfcl_block
    info = {"name": name, "label": f"{name} label", "kind": kind, "model_id": "m", "tool_calls": tool_calls,
            "constrained_tools": constrained, "toy_model": toy}
    return entry, info


def summary(backends: dict[str, tuple[dict, dict]], prices: dict[str, dict], *, workload: dict | None = None,
            min_accuracy: float | None = None, not_run: dict | None = None,
            bedrock_reference: dict | None = NOVA_MICRO) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(summary, run)`` ready for :func:`agent.bench.analysis.recommend.recommend`."""
    run = {"options": {"workload": workload or {}, "min_accuracy": min_accuracy},
           "backends": [info for _, info in backends.values()]}
    s = {"backends": {n: entry for n, (entry, _) in backends.items()},
         "prices": {"backends": prices, "bedrock_reference": bedrock_reference, "not_run": not_run or {}}}
    return s, run
