"""The recommendation's options (``--workload``, ``--min-accuracy``) as the command parses and records
them, and the prices of the catalog's backends a run does not measure.

The recommendation itself is :mod:`agent.bench.analysis.recommendation`, a pure function of the
summary's blocks and ``run.json``.
"""

from __future__ import annotations

import argparse
import math
from typing import Any, Iterable

from .traffic import Traffic, WorkloadError, parse_spec


# --- options ----------------------------------------------------------------------------------------


def workload_option(text: str) -> Traffic:
    """``--workload`` for argparse: a WorkloadError becomes an argparse error (one line, exit 2)."""
    try:
        return parse_spec(text)
    except WorkloadError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--workload").strip(" :")) from None


def parse_accuracy(text: str) -> float:
    """``0.8`` or ``80%`` as a share in [0, 1]."""
    raw = text.strip()
    try:
        value = float(raw[:-1]) / 100.0 if raw.endswith("%") else float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a share (e.g. 0.8 or 80%)") from None
    if not 0.0 <= value <= 1.0 or math.isnan(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not between 0 and 1 (or 0% and 100%)")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--workload`` and ``--min-accuracy`` (recorded in run.json by :func:`options_record`)."""
    g = parser.add_argument_group("recommendation")
    g.add_argument("--workload", type=workload_option, metavar="SPEC|FILE",
                   help="your traffic, as KEY=VALUE,... or a YAML file with the same keys: output_tokens_per_month "
                        "(e.g. 2B), input_per_output (input tokens per output token), peak_to_average (busiest "
                        "hour over the average), tool_calls (yes/no). Default: 100M, 5, 3, yes (stated in the "
                        "report)")
    g.add_argument("--min-accuracy", type=parse_accuracy, metavar="SHARE",
                   help="tool-calling accuracy floor (BFCL part), e.g. 0.8 or 80%%; a backend below it is "
                        "disqualified (default: no floor)")


def options_record(options: argparse.Namespace | None) -> dict[str, Any]:
    """What ``run.json`` options keep of this module's options."""
    traffic = getattr(options, "workload", None)
    if not isinstance(traffic, Traffic):
        traffic = Traffic.from_dict(None)
    return {"workload": traffic.as_dict(), "min_accuracy": getattr(options, "min_accuracy", None)}


def not_run_prices(book: Any, run_names: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The prices of the catalog's backends this run does not measure, for ``run.json`` ``prices``.

    The one function here that looks anything up (through ``book``, a :class:`rigs.pricing.PriceBook`):
    the recommendation uses these prices to say when a backend that was not run could have been
    cheaper, while the summary stays a pure function of ``run.json`` and ``requests.jsonl``.
    """
    from rigs.catalog import BedrockBackend, load_catalog
    from rigs.pricing import PriceError

    skip = set(run_names)
    out: dict[str, dict[str, Any]] = {}
    for rig in load_catalog().rigs.values():
        if rig.name in skip:
            continue
        item: dict[str, Any] = {"label": rig.label, "tool_calls": rig.tool_calls}
        region = rig.regions[0] if rig.regions else "us-east-1"
        try:
            if isinstance(rig, BedrockBackend):
                p = book.bedrock_token_prices(rig.model_id, region).as_dict()
                item["per_token"] = {"usd_per_m_input": p["usd_per_million_input"],
                                     "usd_per_m_output": p["usd_per_million_output"], "source": p["source"],
                                     "as_of": p["as_of"]}
            else:
                item["hourly"] = book.hourly_price(rig, region).as_dict()
        except PriceError as exc:
            item["reason"] = str(exc)[:300]
        out[rig.name] = item
    return out
