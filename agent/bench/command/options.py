"""The benchmark's options as a run reads them: the parser's benchmark groups and the checks across options
(from the declarations, :mod:`.declared`), and the typed options a run reads (:class:`BenchOptions`, every
default from its declaration) and records in ``run.json`` (:meth:`BenchOptions.record`).

An option that only one part reads is refused, with the fix, when that part is not in ``--demos``
(``--bfcl-n 50`` without ``bfcl`` would otherwise be ignored without a word).
"""

from __future__ import annotations

import argparse
from dataclasses import asdict, is_dataclass
from typing import TYPE_CHECKING, Any

from ..results.target import Target
from ..parts import bfcl, open_loop, quality, tasks
from ..tasks.reference import CHAT_MAX_TOKENS
from . import declared
from .declared import AUTO, BENCH_GROUPS, DEFAULT_DEMOS, GIVEN, PART_OPTIONS, PLAN, Declared

if TYPE_CHECKING:
    from ..analysis.traffic import Traffic
    from ..parts.capacity import LevelPlan
    from ..results.run import RunOptions


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
    given = BenchOptions.of(namespace)
    demos = run_demos(given)
    if given.concurrency == AUTO and "chat" not in demos:
        raise OptionError(f"--concurrency auto searches the chat part's capacity, and --demos {','.join(demos)} "
                          "has no chat: add chat to --demos, or leave --concurrency out")
    for part, names in PART_OPTIONS.items():
        flags = [o.flag for o in BenchOptions.given(namespace, (declared.OPTION[n] for n in names))]
        if flags and part not in demos:
            raise OptionError(f"{', '.join(flags)} only change{'s' if len(flags) == 1 else ''} the {part} part, "
                              f"and --demos {','.join(demos)} has no {part}: add {part} to --demos, or leave "
                              f"{'it' if len(flags) == 1 else 'them'} out")
    _check_open_loop(given, demos)
    _check_quality_floor(given)
    if given.load_from == "rig" and given.workload is not None and (given.workload.turns or 1) > 1:
        raise OptionError(f"--load-from rig sends single-turn requests, and the workload has sessions of "
                          f"{given.workload.turns} turns (each turn waits for the model's reply to the one before): "
                          "leave --load-from out, or give turns=1")
    if given.max_tokens is not None:
        from ..analysis.traffic import default_traffic  # pydantic: loaded only when the option is given

        with_max_tokens(given.workload or default_traffic(), given.max_tokens)


def run_demos(given: Declared) -> list[str]:
    """The parts a run runs: ``--demos``, and the open loop when ``--rate`` is given (or the workload is a trace)."""
    demos = list(given.demos or DEFAULT_DEMOS)
    if open_loop.wanted(given.rate, given.workload) and open_loop.NAME not in demos:
        demos.append(open_loop.NAME)
    return demos


def _check_open_loop(given: Declared, demos: list[str]) -> None:
    """The open loop needs a rate or a workload's trace (not both), ``--rate-duration`` an open loop, ``--rate peak``
    the chat part's capacity."""
    if open_loop.NAME in demos and not open_loop.wanted(given.rate, given.workload):
        raise OptionError("--demos open_loop sends requests at a rate, and none is given: add --rate R|peak, or take "
                          "open_loop out of --demos")
    if given.rate is not None and getattr(given.workload, "trace", None):
        raise OptionError("--rate sends requests at a rate, and the workload's trace sets when its requests go "
                          "(trace_speed scales it): leave --rate out, or the trace")
    if given.rate_duration_s is not None and open_loop.NAME not in demos:
        raise OptionError("--rate-duration sets the open loop's window, and the open loop runs with --rate R|peak: "
                          "give --rate, or leave --rate-duration out")
    if given.rate == open_loop.PEAK and "chat" not in demos:
        raise OptionError(f"--rate peak sizes the rate from the chat part's SLO capacity, and --demos "
                          f"{','.join(d for d in demos if d != open_loop.NAME)} has no chat: add chat to --demos, or "
                          "give --rate R (requests per second)")


def _check_quality_floor(given: Declared) -> None:
    """``--min-quality`` and the workload's ``min_quality`` are one floor: two different values are refused."""
    option, in_workload = given.min_quality, given.workload.min_quality if given.workload is not None else None
    if option is not None and in_workload is not None and option != in_workload:
        raise OptionError(f"--min-quality {option:g} and the --workload key min_quality={in_workload:g} are the same "
                          "floor with two values: give one of them")


class BenchOptions(Declared):
    """The options a run reads (every option of the command, :class:`~.declared.Declared`), with every default
    in and each resolved (:meth:`from_namespace`): the workload with ``--max-tokens`` in it, the output tokens a
    request asks for, the quality floor, the parts the run runs."""

    @classmethod
    def from_namespace(cls, ns: argparse.Namespace) -> BenchOptions:
        from ..analysis.traffic import default_traffic  # pydantic: loaded when a run starts, not for --help

        given = cls.of(ns)
        traffic = with_max_tokens(given.workload or default_traffic(), given.max_tokens)
        chosen = given.backends
        return given.replace(
            demos=tuple(run_demos(given)),
            concurrency=given.concurrency if given.concurrency == AUTO else tuple(given.concurrency),
            max_tokens=int(given.max_tokens or traffic.output_tokens_mean or CHAT_MAX_TOKENS),
            bfcl_n=None if given.bfcl_n == bfcl.ALL else int(given.bfcl_n), workload=traffic,
            min_quality=given.min_quality if given.min_quality is not None else traffic.min_quality,
            backends=tuple(n.strip() for n in chosen.split(",") if n.strip()) if isinstance(chosen, str) else chosen,
        )  # fmt: skip

    @property
    def target(self) -> Target:
        """The latency target (``--slo``, or the default)."""
        return self.slo

    def as_json(self) -> dict[str, Any]:
        """The options as ``--parsed-options`` prints them (a target as its limits, a workload as its keys)."""
        return {name: asdict(value) if is_dataclass(value) and not isinstance(value, type) else value
                for name, value in self.as_dict().items()}

    def chat_plan(self) -> LevelPlan:
        """How the chat part measures its levels under these options (the target, the levels, the search)."""
        from ..parts.capacity import LevelPlan

        return LevelPlan.of(target=self.target, concurrency=self.concurrency, repeats=self.repeats,
                       max_concurrency=self.max_concurrency, budget_s=self.slo_budget_s)

    def record(self, bfcl_concurrency: int, plan: LevelPlan | None = None) -> RunOptions:
        """What ``run.json`` ``options`` keeps of these options, each under its name: those declared to be
        recorded (:attr:`~.declared.RunOption.record`), the chat part's plan (:meth:`chat_plan`) as it resolved
        its own, and the bfcl and quality parts' options with what else they used
        (:func:`~..parts.bfcl.options_record`)."""
        from ..results.run import RunOptions, RunWorkload

        own: dict[str, Any] = {}
        if "bfcl" in self.demos:
            own.update(bfcl.options_record(n=self.bfcl_n, seed=self.bfcl_seed, stream=self.bfcl_stream,
                                           concurrency=bfcl_concurrency))
        if "quality" in self.demos:
            own.update(quality.options_record(n=self.quality_n, seed=self.quality_seed,
                                              concurrency=self.quality_concurrency))
        if "tasks" in self.demos:
            own.update(tasks.options_record(
                category=self.tasks_category, n=self.tasks_n, seed=self.tasks_seed, concurrency=self.tasks_concurrency,
                limits=tasks.Limits(self.tasks_max_turns, self.tasks_max_tool_calls, self.tasks_time_limit_s)))
        out: dict[str, Any] = {}
        for option in declared.OPTIONS:
            if option.record in (None, PLAN) or option.name in own or option.part not in (None, *self.demos):
                continue
            value = getattr(self, option.name)
            if value is not None or option.record != GIVEN:
                out[option.name] = list(value) if isinstance(value, tuple) else \
                    RunWorkload.of(value.record()) if option is Declared.workload else value
        return RunOptions(**out, **own, **(plan or self.chat_plan()).record())


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
