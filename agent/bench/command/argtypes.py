"""Argument types for the command's options: each rejects a bad value with one line that names the
problem (argparse prints it and exits with status 2).

``float("nan")``, ``float("inf")``, zero and negative values are all accepted by a plain
``type=float``; a NaN timeout switches aiohttp's timeout off and would reach ``run.json`` as a
bare ``NaN``, which is not JSON.
"""

from __future__ import annotations

import argparse
import math
from typing import Any, Callable, Sequence

from ...reach.tunnel import MAX_FORWARDS

MAX_CONCURRENCY = 1024
"""The highest concurrency level: each request in flight holds a connection (and, for AWS backends, a
worker thread)."""


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def positive_int(text: str) -> int:
    """A whole number of at least 1."""
    value = _int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is too small: give at least 1")
    return value


def non_negative_int(text: str) -> int:
    """A whole number of at least 0."""
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative: give 0 or more")
    return value


def positive_seconds(text: str) -> float:
    """A finite number of seconds greater than 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not a usable number of seconds: give a finite number above 0")
    return value


def choices_list(choices: Sequence[str]) -> Callable[[str], list[str]]:
    """A comma-separated list of some of ``choices``, each once, in the order given."""

    def parse(text: str) -> list[str]:
        items = [p.strip() for p in text.split(",") if p.strip()]
        if not items:
            raise argparse.ArgumentTypeError("give at least one value")
        bad = [p for p in items if p not in choices]
        if bad:
            raise argparse.ArgumentTypeError(f"unknown {', '.join(bad)} (choose from {', '.join(choices)})")
        return list(dict.fromkeys(items))

    return parse


def concurrency_levels(text: str) -> list[int] | str:
    """``1,4,16`` (sorted, each once) or ``auto``."""
    if text.strip().lower() == "auto":
        return "auto"
    try:
        levels = sorted({int(p) for p in text.split(",") if p.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError("concurrency levels are integers, e.g. 1,4,16, or auto") from None
    if not levels or levels[0] < 1:
        raise argparse.ArgumentTypeError("concurrency levels must be at least 1")
    if levels[-1] > MAX_CONCURRENCY:
        raise argparse.ArgumentTypeError(f"{levels[-1]} is above {MAX_CONCURRENCY}: each request in flight holds a "
                                         "connection (and, for AWS backends, a worker thread)")
    return levels


def forwards(text: str) -> int | str:
    """``--forwards``: ``auto`` or a number of port forwards per EC2 rig, 1 to :data:`agent.reach.tunnel.MAX_FORWARDS`."""
    if text.strip().lower() == "auto":
        return "auto"
    value = _int(text)
    if not 1 <= value <= MAX_FORWARDS:
        raise argparse.ArgumentTypeError(f"{value}: give auto or 1 to {MAX_FORWARDS} forwards")
    return value



MAX_RATE = 1000.0
"""The highest ``--rate``: above it an event loop's timers (about 1 ms apart) cannot keep the schedule (AIPerf
finds them under-delivering from about 500 req/s)."""


def rate(text: str) -> float | str:
    """``--rate``: requests per second (above 0, at most :data:`MAX_RATE`), or ``peak``."""
    if text.strip().lower() == "peak":
        return "peak"
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a rate: give requests per second (e.g. 2.5) or peak") \
            from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not a usable rate: give requests per second above 0, or peak")
    if value > MAX_RATE:
        raise argparse.ArgumentTypeError(f"{text} is above {MAX_RATE:,.0f} requests per second, more than one "
                                         "sender's timers can keep to schedule")
    return value


def bfcl_cases(text: str) -> int | str:
    """A number of cases, at most the pinned package's, or ``all``."""
    from ..tasks.bfcl_cases import ALL_CASES

    if text.strip().lower() == "all":
        return "all"
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a number of cases or 'all', got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError("at least 1 case")
    if n > ALL_CASES:
        raise argparse.ArgumentTypeError(f"{n:,} is above the {ALL_CASES:,} cases there are: give at most "
                                         f"{ALL_CASES:,}, or 'all'")
    return n


def service_tier(value: str) -> str:
    """One of Bedrock's service tiers (whether it is priced is checked against the price file as the run starts)."""
    from rigs.catalog.price_terms import PRICED_TIERS, SERVICE_TIERS

    if value not in SERVICE_TIERS:
        raise argparse.ArgumentTypeError(f"{value!r} is not a service tier this project can price (offered: "
                                         f"{', '.join(PRICED_TIERS)}; of {', '.join(SERVICE_TIERS)}, a tier needs "
                                         "its price in rigs/prices.yaml)")
    return value


def non_empty_text(value: str) -> str:
    """Text with something in it (not empty, not only spaces)."""
    if not value.strip():
        raise argparse.ArgumentTypeError("empty: give the text")
    return value


def seed(text: str) -> int:
    """An integer seed."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"an integer seed, got {text!r}") from None


def share(text: str) -> float:
    """``0.8`` or ``80%`` as a share in [0, 1] (:func:`agent.bench.analysis.traffic.share_value`)."""
    from ..analysis.traffic import share_value

    try:
        return share_value(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def target(text: str) -> Any:
    """``--slo``: a latency target (:func:`agent.bench.analysis.slo.parse_target`)."""
    from ..analysis.slo import parse_target

    try:
        return parse_target(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def workload(text: str) -> Any:
    """``--workload``: the user's traffic (:func:`agent.bench.analysis.traffic.parse_spec`)."""
    from ..analysis.traffic import WorkloadError, parse_spec

    try:
        return parse_spec(text)
    except WorkloadError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--workload").strip(" :")) from None


def agent_target(text: str) -> dict[str, float]:
    """``--tasks-agent-target``: the per-agent target (:func:`agent.bench.analysis.blocks.agents.parse_target`)."""
    from ..analysis.blocks.agents import parse_target

    try:
        return parse_target(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def task_count(text: str) -> int:
    """A number of tasks, at most a category's."""
    from ..tasks.multi_turn import TASKS_PER_CATEGORY

    n = positive_int(text)
    if n > TASKS_PER_CATEGORY:
        raise argparse.ArgumentTypeError(f"{n} is above the {TASKS_PER_CATEGORY} tasks a category holds: give at most "
                                         f"{TASKS_PER_CATEGORY}")
    return n


def quality_items(text: str) -> int:
    """A number of quality items, at most the lane's."""
    from ..tasks.quality import lane

    n = positive_int(text)
    if n > lane.MAX_N:
        raise argparse.ArgumentTypeError(f"{n} is above {lane.MAX_N:,} items")
    return n


def quality_seed(text: str) -> int:
    """A seed of the quality lane's items."""
    from ..tasks.quality import lane

    value = seed(text)
    if not 0 <= value <= lane.MAX_SEED:
        raise argparse.ArgumentTypeError(f"{value} is out of range: give a seed from 0 to {lane.MAX_SEED}")
    return value

