"""Every option of the benchmark in one place: the parser's groups, each default written once (a
constant of the module that uses it), the checks across options, and the typed options a run reads
(:class:`BenchOptions`) and records in ``run.json``.

An option that only one part reads is refused, with the fix, when that part is not in ``--demos``
(``--bfcl-n 50`` without ``bfcl`` would otherwise be ignored without a word). Such options default
to None in the parser so that "given" can be told from "left at its default"; :class:`BenchOptions`
puts the defaults in.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from ..analysis.slo import DEFAULT_BUDGET_S, DEFAULT_MAX_CONCURRENCY, DEFAULT_REPEATS_WITH_TARGET, Target
from ...backends import KNOWN
from ..parts import bfcl, quality
from ..parts.stopping import DEFAULT_MAX_CONSECUTIVE_FAILURES
from ..tasks.workload import CHAT_MAX_TOKENS, ORCHESTRATOR_QUESTION
from .argtypes import (MAX_CONCURRENCY, bfcl_cases, choices_list, concurrency_levels, non_negative_int, positive_int,
                       positive_seconds, quality_items, quality_seed, seed, share, target, workload)

if TYPE_CHECKING:
    from ..analysis.traffic import Traffic

DEMOS = ("counting", "orchestrator", "chat", "bfcl", "quality")
DEFAULT_DEMOS = ("counting", "orchestrator", "chat")
DEFAULT = "default"
"""In ``--demos``, the default parts (``--demos default,quality`` adds the quality lane to them)."""
DEFAULT_RUNS = 5
DEFAULT_TOOLS = "engine"
REQUEST_TIMEOUT_S = 300.0
AUTO = "auto"


class OptionError(ValueError):
    """Options that do not fit together: one line naming the problem and the fix."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the benchmark's options (``--runs`` and ``--out`` are the command's own)."""
    _benchmark(parser.add_argument_group("benchmark"))
    _target(parser.add_argument_group("latency target (SLO capacity, goodput)"))
    _bfcl(parser.add_argument_group("bfcl (tool calling, BFCL cases)"))
    _quality(parser.add_argument_group("quality (answer quality: the same seeded items on every backend)"))
    _recommendation(parser.add_argument_group("recommendation"))


def demos_list(text: str) -> list[str]:
    """``--demos``: some of :data:`DEMOS`, ``default`` standing for :data:`DEFAULT_DEMOS`."""
    out: list[str] = []
    for part in choices_list((*DEMOS, DEFAULT))(text):
        out += DEFAULT_DEMOS if part == DEFAULT else [part]
    return list(dict.fromkeys(out))


def _benchmark(g: Any) -> None:
    g.add_argument("--demos", type=demos_list, default=list(DEFAULT_DEMOS), metavar="LIST",
                   help="parts to run, comma-separated: counting (graded tool use, both question sets), "
                        "orchestrator (an agent asks every backend; its summary is checked), chat (streamed "
                        "timings), bfcl (BFCL tool-calling cases through each backend's tool interface), quality "
                        "(seeded questions with checkable answers through each backend's chat interface); "
                        f"default stands for the default parts (e.g. default,quality). Default: "
                        f"{','.join(DEFAULT_DEMOS)}")
    g.add_argument("--tools", choices=("engine", "rows"), default=DEFAULT_TOOLS,
                   help="counting tools: engine = count_ids(op, value) (graded on the filter sent); rows = "
                        f"list_ids() and the model counts (default: {DEFAULT_TOOLS})")
    g.add_argument("--concurrency", type=concurrency_levels, metavar="LIST",
                   help="chat concurrency levels, e.g. 1,4,16: at each level c, c x --runs requests with c in "
                        "flight; aggregate output tok/s and $/M per level (default: 1); auto: search for the "
                        f"highest level that meets the --slo target, at most {MAX_CONCURRENCY} (docs/benchmark.md)")
    g.add_argument("--max-tokens", type=positive_int, default=CHAT_MAX_TOKENS, metavar="N",
                   help=f"output tokens requested per chat request (default: {CHAT_MAX_TOKENS}, the reference's)")
    g.add_argument("--ignore-eos", action="store_true",
                   help="ask OpenAI-compatible servers (vLLM, llama.cpp) for exactly --max-tokens tokens")
    g.add_argument("--question", default=ORCHESTRATOR_QUESTION,
                   help=f"the orchestrator's question (default: {ORCHESTRATOR_QUESTION!r})")
    g.add_argument("--request-timeout", type=positive_seconds, default=REQUEST_TIMEOUT_S, metavar="S",
                   help=f"timeout of one timed request, and of one agent run (default: {REQUEST_TIMEOUT_S:.0f})")
    g.add_argument("--max-consecutive-failures", type=non_negative_int, default=DEFAULT_MAX_CONSECUTIVE_FAILURES,
                   metavar="N",
                   help="stop a backend after N failed requests in a row within a part, and skip its other "
                        f"parts; 0 never stops (default: {DEFAULT_MAX_CONSECUTIVE_FAILURES})")  # fmt: skip


def _target(g: Any) -> None:
    g.add_argument("--slo", type=target, metavar="KEY=MS,...",
                   help="the latency target of the chat part: per-request limits in ms that 99%% of requests must "
                        "meet, from ttft_p99_ms, itl_p99_ms, e2e_p99_ms (e.g. --slo ttft_p99_ms=1000,itl_p99_ms=100). "
                        "Default: ttft_p99_ms=1000,itl_p99_ms=100 (interactive chat; the report says why)")
    g.add_argument("--repeats", type=positive_int, metavar="N",
                   help="run every chat concurrency level N times; each figure gets its 95%% interval "
                        f"(default: {DEFAULT_REPEATS_WITH_TARGET} with --slo or --concurrency auto, else 1)")
    g.add_argument("--max-concurrency", type=positive_int, metavar="N",
                   help=f"highest level --concurrency auto may try (default: {DEFAULT_MAX_CONCURRENCY})")
    g.add_argument("--slo-budget", type=positive_seconds, metavar="S",
                   help="seconds per backend for its chat requests and the search; no level or request starts "
                        f"after it, requests in flight finish (default: {DEFAULT_BUDGET_S:.0f})")


def _bfcl(g: Any) -> None:
    g.add_argument("--bfcl-n", type=bfcl_cases, metavar="N",
                   help=f"cases per backend, drawn evenly from the five categories, or 'all' (1,240) "
                        f"(default: {bfcl.DEFAULT_N})")
    g.add_argument("--bfcl-seed", type=seed, metavar="S",
                   help=f"seed of the case sample; every backend gets the same cases (default: {bfcl.DEFAULT_SEED})")
    g.add_argument("--bfcl-stream", action="store_true", default=None,
                   help="stream the replies (tests the streaming tool parser; ConverseStream on Bedrock) "
                        "(default: whole replies)")


def _quality(g: Any) -> None:
    g.add_argument("--quality-n", type=quality_items, metavar="N",
                   help=f"items per backend; the first N of the seed, taken in turn from six suites (default: "
                        f"{quality.DEFAULT_N})")
    g.add_argument("--quality-seed", type=quality_seed, metavar="S",
                   help=f"seed of the items; every backend and every run with this seed gets the same ones "
                        f"(default: {quality.DEFAULT_SEED})")
    g.add_argument("--quality-concurrency", type=positive_int, metavar="N",
                   help=f"requests in flight per backend (the Neuron rigs get 1) (default: "
                        f"{quality.DEFAULT_CONCURRENCY})")
    g.add_argument("--quality-reference", choices=KNOWN, metavar="NAME",
                   help="the backend every other one is compared against in the report's precision section "
                        "(default: the highest-precision backend measured, by the catalog's bytes per weight)")


def _recommendation(g: Any) -> None:
    g.add_argument("--workload", type=workload, metavar="SPEC|FILE",
                   help="your traffic, as KEY=VALUE,... or a YAML file with the same keys: output_tokens_per_month "
                        "(e.g. 2B), input_per_output (input tokens per output token), peak_to_average (busiest "
                        "hour over the average), tool_calls (yes/no). Default: 100M, 5, 3, yes (stated in the "
                        "report)")
    g.add_argument("--min-accuracy", type=share, metavar="SHARE",
                   help="tool-calling accuracy floor (BFCL part), e.g. 0.8 or 80%%; a backend below it is "
                        "disqualified (default: no floor)")
    g.add_argument("--min-quality", type=share, metavar="SHARE",
                   help="answer-quality floor (quality part), e.g. 0.7 or 70%%; a backend whose quality's upper "
                        "95%% bound is below it is disqualified; the --workload key min_quality is the same floor "
                        "(default: no floor)")


PART_OPTIONS: dict[str, tuple[tuple[str, str], ...]] = {
    "chat": (("slo", "--slo"), ("repeats", "--repeats"), ("max_concurrency", "--max-concurrency"),
             ("slo_budget", "--slo-budget")),
    "bfcl": (("bfcl_n", "--bfcl-n"), ("bfcl_seed", "--bfcl-seed"), ("bfcl_stream", "--bfcl-stream")),
    "quality": (("quality_n", "--quality-n"), ("quality_seed", "--quality-seed"),
                ("quality_concurrency", "--quality-concurrency"), ("quality_reference", "--quality-reference")),
}
"""The options only one part reads, by part (the namespace's name, the option as typed)."""


def check(namespace: argparse.Namespace) -> None:
    """Refuse options that do not fit the parts chosen.

    Raises:
        OptionError: one line naming the option, why it does nothing, and the fix.
    """
    demos = list(getattr(namespace, "demos", None) or DEFAULT_DEMOS)
    if getattr(namespace, "concurrency", None) == AUTO and "chat" not in demos:
        raise OptionError(f"--concurrency auto searches the chat part's capacity, and --demos {','.join(demos)} "
                          "has no chat: add chat to --demos, or leave --concurrency out")
    for part, names in PART_OPTIONS.items():
        given = [flag for name, flag in names if getattr(namespace, name, None) is not None]
        if given and part not in demos:
            raise OptionError(f"{', '.join(given)} only change{'s' if len(given) == 1 else ''} the {part} part, "
                              f"and --demos {','.join(demos)} has no {part}: add {part} to --demos, or leave "
                              f"{'it' if len(given) == 1 else 'them'} out")
    _check_quality_floor(namespace)


def _check_quality_floor(namespace: argparse.Namespace) -> None:
    """``--min-quality`` and the workload's ``min_quality`` are one floor: two different values are refused."""
    option = getattr(namespace, "min_quality", None)
    traffic = getattr(namespace, "workload", None)
    given = traffic.min_quality if traffic is not None else None
    if option is not None and given is not None and option != given:
        raise OptionError(f"--min-quality {option:g} and the --workload key min_quality={given:g} are the same floor "
                          "with two values: give one of them")


@dataclass(frozen=True)
class BenchOptions:
    """The options a run reads, with every default in (from the parsed command line)."""

    demos: tuple[str, ...]
    runs: int
    tools: str
    concurrency: tuple[int, ...] | str
    max_tokens: int
    ignore_eos: bool
    question: str
    request_timeout_s: float
    max_consecutive_failures: int
    target: Target | None
    repeats: int | None
    max_concurrency: int
    slo_budget_s: float
    bfcl_n: int | None
    bfcl_seed: int
    bfcl_stream: bool
    quality_n: int
    quality_seed: int
    quality_concurrency: int
    traffic: Traffic
    min_accuracy: float | None
    min_quality: float | None
    quality_reference: str | None
    backends: tuple[str, ...] | None
    """The backends the user chose (``--backends`` or ``BACKENDS``); None: every one found."""
    bedrock_tier: str = "standard"
    """``--bedrock-tier`` (the command's option): Bedrock's service tier, for its price and the break-even."""

    @classmethod
    def from_namespace(cls, ns: argparse.Namespace) -> BenchOptions:
        get: Callable[[str, Any], Any] = lambda name, default: default if getattr(ns, name, None) is None \
            else getattr(ns, name)  # noqa: E731
        bfcl_n = get("bfcl_n", bfcl.DEFAULT_N)
        levels = get("concurrency", (1,))
        from ..analysis.traffic import default_traffic  # pydantic: loaded when a run starts, not for --help

        traffic = get("workload", None) or default_traffic()
        chosen = get("backends", None)
        return cls(
            demos=tuple(get("demos", DEFAULT_DEMOS)), runs=int(get("runs", DEFAULT_RUNS)), tools=get("tools", DEFAULT_TOOLS),
            concurrency=levels if levels == AUTO else tuple(levels), max_tokens=int(get("max_tokens", CHAT_MAX_TOKENS)),
            ignore_eos=bool(get("ignore_eos", False)), question=get("question", ORCHESTRATOR_QUESTION),
            request_timeout_s=float(get("request_timeout", REQUEST_TIMEOUT_S)),
            max_consecutive_failures=int(get("max_consecutive_failures", DEFAULT_MAX_CONSECUTIVE_FAILURES)),
            target=get("slo", None), repeats=get("repeats", None),
            max_concurrency=int(get("max_concurrency", DEFAULT_MAX_CONCURRENCY)),
            slo_budget_s=float(get("slo_budget", DEFAULT_BUDGET_S)),
            bfcl_n=None if bfcl_n == bfcl.ALL else int(bfcl_n), bfcl_seed=int(get("bfcl_seed", bfcl.DEFAULT_SEED)),
            bfcl_stream=bool(get("bfcl_stream", False)), quality_n=int(get("quality_n", quality.DEFAULT_N)),
            quality_seed=int(get("quality_seed", quality.DEFAULT_SEED)),
            quality_concurrency=int(get("quality_concurrency", quality.DEFAULT_CONCURRENCY)),
            traffic=traffic, min_accuracy=get("min_accuracy", None),
            min_quality=get("min_quality", traffic.min_quality), quality_reference=get("quality_reference", None),
            backends=tuple(n.strip() for n in chosen.split(",") if n.strip()) if isinstance(chosen, str) else chosen,
            bedrock_tier=get("bedrock_tier", "standard"),
        )  # fmt: skip

    def record(self, bfcl_concurrency: int) -> dict[str, Any]:
        """What ``run.json`` ``options`` keeps of these options (the search plan adds its own)."""
        out: dict[str, Any] = {
            "demos": list(self.demos), "runs": self.runs, "tools": self.tools, "max_tokens": self.max_tokens,
            "ignore_eos": self.ignore_eos, "question": self.question, "request_timeout_s": self.request_timeout_s,
            "max_consecutive_failures": self.max_consecutive_failures, **recommendation_record(self),
            "bedrock_tier": self.bedrock_tier,
        }  # fmt: skip
        if "bfcl" in self.demos:
            out.update(bfcl.options_record(n=self.bfcl_n, seed=self.bfcl_seed, stream=self.bfcl_stream,
                                           concurrency=bfcl_concurrency))
        if "quality" in self.demos:
            out.update(quality.options_record(n=self.quality_n, seed=self.quality_seed,
                                              concurrency=self.quality_concurrency))
            if self.quality_reference:
                out["quality_reference"] = self.quality_reference
        if self.backends is not None:
            out["backends"] = list(self.backends)
        return out


def recommendation_record(options: Any) -> dict[str, Any]:
    """What ``run.json`` options keep of ``--workload``, ``--min-accuracy`` and ``--min-quality`` (the
    command's options, or ``python -m agent.report``'s); the quality floor is the option, else the
    workload's ``min_quality``."""
    from ..analysis.traffic import default_traffic

    traffic = getattr(options, "traffic", None) or getattr(options, "workload", None) or default_traffic()
    floor = getattr(options, "min_quality", None)
    return {"workload": traffic.record().model_dump(), "min_accuracy": getattr(options, "min_accuracy", None),
            "min_quality": floor if floor is not None else traffic.min_quality}
