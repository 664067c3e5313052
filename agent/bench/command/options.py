"""The benchmark's options as a run reads them: the parser's benchmark groups and the checks across options
(from the declarations, :mod:`.declared`), and the typed options a run reads (:class:`BenchOptions`, every
default from its declaration) and records in ``run.json`` (:meth:`BenchOptions.record`).

An option that only one part reads is refused, with the fix, when that part is not in ``--demos``
(``--bfcl-n 50`` without ``bfcl`` would otherwise be ignored without a word).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..results.target import Target
from ..parts import bfcl, open_loop, quality
from ..tasks.workload import CHAT_MAX_TOKENS
from . import declared
from .declared import AUTO, BENCH_GROUPS, DEFAULT_DEMOS, PART_OPTIONS, given

if TYPE_CHECKING:
    from ..analysis.traffic import Traffic


class OptionError(ValueError):
    """Options that do not fit together: one line naming the problem and the fix."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the benchmark's options (the command's own, ``--runs`` and ``--out`` among them, are added by
    :mod:`agent.run` from the same declarations)."""
    declared.add_arguments(parser, BENCH_GROUPS)


def check(namespace: argparse.Namespace) -> None:
    """Refuse options that do not fit the parts chosen.

    Raises:
        OptionError: one line naming the option, why it does nothing, and the fix.
    """
    demos = run_demos(namespace)
    if getattr(namespace, "concurrency", None) == AUTO and "chat" not in demos:
        raise OptionError(f"--concurrency auto searches the chat part's capacity, and --demos {','.join(demos)} "
                          "has no chat: add chat to --demos, or leave --concurrency out")
    for part, names in PART_OPTIONS.items():
        flags = given(namespace, names)
        if flags and part not in demos:
            raise OptionError(f"{', '.join(flags)} only change{'s' if len(flags) == 1 else ''} the {part} part, "
                              f"and --demos {','.join(demos)} has no {part}: add {part} to --demos, or leave "
                              f"{'it' if len(flags) == 1 else 'them'} out")
    _check_open_loop(namespace, demos)
    _check_quality_floor(namespace)
    if getattr(namespace, "max_tokens", None) is not None:
        from ..analysis.traffic import default_traffic  # pydantic: loaded only when the option is given

        with_max_tokens(getattr(namespace, "workload", None) or default_traffic(), namespace.max_tokens)


def run_demos(namespace: argparse.Namespace) -> list[str]:
    """The parts a run runs: ``--demos``, and the open loop when ``--rate`` is given (or the workload is a trace)."""
    demos = list(getattr(namespace, "demos", None) or DEFAULT_DEMOS)
    if open_loop.wanted(getattr(namespace, "rate", None), getattr(namespace, "workload", None)) and \
            open_loop.NAME not in demos:
        demos.append(open_loop.NAME)
    return demos


def _check_open_loop(namespace: argparse.Namespace, demos: list[str]) -> None:
    """The open loop needs a rate or a workload's trace (not both), ``--rate-duration`` an open loop, ``--rate peak``
    the chat part's capacity."""
    if open_loop.NAME in demos and not open_loop.wanted(getattr(namespace, "rate", None),
                                                        getattr(namespace, "workload", None)):
        raise OptionError("--demos open_loop sends requests at a rate, and none is given: add --rate R|peak, or take "
                          "open_loop out of --demos")
    if getattr(namespace, "rate", None) is not None and getattr(getattr(namespace, "workload", None), "trace", None):
        raise OptionError("--rate sends requests at a rate, and the workload's trace sets when its requests go "
                          "(trace_speed scales it): leave --rate out, or the trace")
    if getattr(namespace, "rate_duration", None) is not None and open_loop.NAME not in demos:
        raise OptionError("--rate-duration sets the open loop's window, and the open loop runs with --rate R|peak: "
                          "give --rate, or leave --rate-duration out")
    if getattr(namespace, "rate", None) == open_loop.PEAK and "chat" not in demos:
        raise OptionError(f"--rate peak sizes the rate from the chat part's SLO capacity, and --demos "
                          f"{','.join(d for d in demos if d != open_loop.NAME)} has no chat: add chat to --demos, or "
                          "give --rate R (requests per second)")


def _check_quality_floor(namespace: argparse.Namespace) -> None:
    """``--min-quality`` and the workload's ``min_quality`` are one floor: two different values are refused."""
    option = getattr(namespace, "min_quality", None)
    traffic = getattr(namespace, "workload", None)
    in_workload = getattr(traffic, "min_quality", None)
    if option is not None and in_workload is not None and option != in_workload:
        raise OptionError(f"--min-quality {option:g} and the --workload key min_quality={in_workload:g} are the same "
                          "floor with two values: give one of them")


PLANNED = ("concurrency", "slo", "repeats", "max_concurrency", "slo_budget_s")
"""The ``run.json`` keys the chat part's plan records, as it resolved them (:meth:`~..parts.capacity.Plan.record`)."""
WHEN_GIVEN = ("quality_reference", "backends", "rate", "rate_duration_s")
"""Keys ``run.json`` keeps only when the option was given."""


@dataclass(frozen=True)
class BenchOptions:
    """The options a run reads, with every default in (from the parsed command line and the declarations)."""

    demos: tuple[str, ...]
    runs: int
    tools: str
    concurrency: tuple[int, ...] | str
    max_tokens: int
    ignore_eos: bool
    question: str
    request_timeout_s: float
    max_consecutive_failures: int
    target: Target
    repeats: int | None
    max_concurrency: int
    slo_budget_s: float
    bfcl_n: int | None
    bfcl_seed: int
    bfcl_stream: bool
    quality_n: int
    quality_seed: int
    quality_concurrency: int
    workload: Traffic
    min_accuracy: float | None
    min_quality: float | None
    quality_reference: str | None
    backends: tuple[str, ...] | None
    """The backends the user chose (``--backends`` or ``BACKENDS``); None: every one found."""
    bedrock_tier: str
    """``--bedrock-tier`` (the command's option): Bedrock's service tier, for its price and the break-even."""
    compare_models: bool = False
    """``--compare-models``: backends serving another model compete, the quality lane the arbiter."""
    rate: float | str | None = None
    """``--rate``: the open loop's requests per second, or ``peak``; None: no open loop at a rate."""
    rate_duration_s: float | None = None
    """``--rate-duration`` as given (None: the default window, or a trace's own length)."""

    @classmethod
    def from_namespace(cls, ns: argparse.Namespace) -> BenchOptions:
        def get(name: str) -> Any:
            return declared.value(ns, name)

        from ..analysis.traffic import default_traffic  # pydantic: loaded when a run starts, not for --help

        bfcl_n, levels, chosen = get("bfcl_n"), get("concurrency"), get("backends")
        traffic = with_max_tokens(get("workload") or default_traffic(), get("max_tokens"))
        floor = get("min_quality")
        return cls(
            demos=tuple(run_demos(ns)), runs=int(get("runs")), tools=get("tools"),
            concurrency=levels if levels == AUTO else tuple(levels),
            max_tokens=int(get("max_tokens") or traffic.output_tokens_mean or CHAT_MAX_TOKENS),
            ignore_eos=bool(get("ignore_eos")), question=get("question"),
            request_timeout_s=float(get("request_timeout")),
            max_consecutive_failures=int(get("max_consecutive_failures")), target=get("slo"), repeats=get("repeats"),
            max_concurrency=int(get("max_concurrency")), slo_budget_s=float(get("slo_budget")),
            bfcl_n=None if bfcl_n == bfcl.ALL else int(bfcl_n), bfcl_seed=int(get("bfcl_seed")),
            bfcl_stream=bool(get("bfcl_stream")), quality_n=int(get("quality_n")),
            quality_seed=int(get("quality_seed")),
            quality_concurrency=int(get("quality_concurrency")), workload=traffic, min_accuracy=get("min_accuracy"),
            min_quality=floor if floor is not None else traffic.min_quality,
            quality_reference=get("quality_reference"),
            backends=tuple(n.strip() for n in chosen.split(",") if n.strip()) if isinstance(chosen, str) else chosen,
            bedrock_tier=get("bedrock_tier"), compare_models=bool(get("compare_models")), rate=getattr(ns, "rate", None),
            rate_duration_s=getattr(ns, "rate_duration", None),
        )  # fmt: skip

    def record(self, bfcl_concurrency: int) -> dict[str, Any]:
        """What ``run.json`` ``options`` keeps of these options, under each one's declared key (the chat
        part's plan adds the keys of :data:`PLANNED`; the bfcl and quality parts record their own options with what
        else they used, :func:`~..parts.bfcl.options_record`)."""
        own: dict[str, Any] = {}
        if "bfcl" in self.demos:
            own.update(bfcl.options_record(n=self.bfcl_n, seed=self.bfcl_seed, stream=self.bfcl_stream,
                                           concurrency=bfcl_concurrency))
        if "quality" in self.demos:
            own.update(quality.options_record(n=self.quality_n, seed=self.quality_seed,
                                              concurrency=self.quality_concurrency))
        from ..analysis.traffic import Traffic

        out: dict[str, Any] = {}
        for option in declared.OPTIONS:
            key = option.record
            if key is None or key in PLANNED or key in own or option.part not in (None, *self.demos):
                continue
            value = getattr(self, key)
            if value is not None or key not in WHEN_GIVEN:
                out[key] = value.record().model_dump() if isinstance(value, Traffic) else \
                    list(value) if isinstance(value, tuple) else value
        return {**out, **own}


def with_max_tokens(traffic: Traffic, max_tokens: int | None) -> Traffic:
    """The workload with ``--max-tokens`` as its ``output_tokens_mean`` where it states none (its prompt lengths and
    ``input_per_output`` follow again; the reference's prompt stays the reference's); the two given and different
    are refused.

    Raises:
        OptionError: both given, with different values.
    """
    if max_tokens is None or traffic.output_tokens_mean == max_tokens:
        return traffic
    from ..analysis.traffic import from_mapping, given_keys

    given = given_keys(traffic)
    if "output_tokens_mean" in given or traffic.prompts or traffic.trace:
        raise OptionError(f"--max-tokens {max_tokens} and the workload's output_tokens_mean "
                          f"{traffic.output_tokens_mean:g} both say how many output tokens a request asks for: "
                          "give one of them")
    kept = {"preset": traffic.preset} if traffic.preset and "preset" not in given else {}
    out = from_mapping({**given, **kept, "output_tokens_mean": max_tokens}, source=traffic.source)
    return out.model_copy(update={"derived": {**out.derived, "output_tokens_mean": "--max-tokens"},
                                  "defaulted": out.defaulted + tuple(kept)})


def recommendation_record(options: Any) -> dict[str, Any]:
    """What ``run.json`` options keep of ``--workload``, ``--min-accuracy``, ``--min-quality`` and
    ``--compare-models`` (the command's options, or ``python -m agent.report``'s); the quality floor is the option,
    else the workload's ``min_quality``."""
    from ..analysis.traffic import default_traffic  # pydantic: loaded when a run starts, not for --help

    traffic = getattr(options, "workload", None) or default_traffic()
    floor = getattr(options, "min_quality", None)
    return {"workload": traffic.record().model_dump(), "min_accuracy": getattr(options, "min_accuracy", None),
            "min_quality": floor if floor is not None else traffic.min_quality,
            "compare_models": bool(getattr(options, "compare_models", False))}
