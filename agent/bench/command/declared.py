"""Every option of ``python -m agent.run``, each declared once, as a field of the command's options model
(:class:`kit.options.Option` on :class:`CommandOptions` or :class:`BenchmarkOptions`, the shape of AIPerf's and
GuideLLM's options): its flag, its one-line parser (:mod:`.argtypes`), its help, its group, the part it belongs to,
its default and whether ``run.json`` records it (under its name). The parser (:func:`add_arguments`), the part
check (:data:`PART_OPTIONS`), the typed options a run reads (:class:`~.options.BenchOptions`, a subclass of
:class:`Declared`), the docs' option tables (:mod:`.option_table`) and ``python -m agent.report``'s shared options
all read these declarations; the attribute is the option's name (``Declared.max_tokens.flag`` is
``--max-tokens``).

An option of a part has no parser default, so that "given" can be told from "left at its default"
(``--bfcl-n 50`` without ``bfcl`` in ``--demos`` is refused, not ignored); the typed options put the declared
default in. This module imports no pydantic, strands or aiohttp, so ``--help`` stays fast.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from kit.argtypes import bytes_per_s
from kit.options import Option, Options
from rigs.catalog.price_terms import PRICED_TIERS, STANDARD_TIER
from rigs.contract import REGIONS

from ...backends import KNOWN
from ...reach.forwarding import READY_TIMEOUT_S
from ...reach.tunnel import MAX_FORWARDS
from ..analysis.slo import DEFAULT_BUDGET_S, DEFAULT_MAX_CONCURRENCY, DEFAULT_REPEATS_WITH_TARGET, EXAMPLE, Target
from ..parts import bfcl, open_loop, quality, tasks
from ..parts.stopping import DEFAULT_MAX_CONSECUTIVE_FAILURES
from ..tasks.reference import CHAT_MAX_TOKENS, ORCHESTRATOR_QUESTION
from ..tasks.bfcl_cases import ALL_CASES
from ..tasks.multi_turn import CATEGORIES as TASK_CATEGORIES, TASKS_PER_CATEGORY
from .argtypes import (MAX_CONCURRENCY, agent_target, bfcl_cases, choices_list, concurrency_levels,
                       forwards, non_empty_text, non_negative_int, positive_int, positive_seconds, quality_items,
                       quality_seed, rate, seed, service_tier, share, target, task_count, workload)

DEMOS = ("counting", "orchestrator", "chat", "bfcl", "quality", "open_loop", "tasks")
DEFAULT_DEMOS = ("counting", "orchestrator", "chat")
DEFAULT = "default"
"""In ``--demos``, the default parts (``--demos default,quality`` adds the quality lane to them)."""
AUTO = "auto"
ALWAYS, GIVEN, PLAN = "always", "given", "plan"
"""How ``run.json`` records an option (:attr:`RunOption.record`)."""

GROUPS = {
    "backends": "backends",
    "run": "run",
    "benchmark": "benchmark",
    "target": "latency target (SLO capacity, goodput)",
    "open_loop": "open loop (requests at a rate, with the workload's arrivals)",
    "bfcl": "bfcl (tool calling, BFCL cases)",
    "quality": "quality (answer quality: the same seeded items on every backend)",
    "tasks": "tasks (BFCL multi-turn tasks done by the agent: success and $ per successful task)",
    "recommendation": "recommendation",
}
"""The parser's groups, in the order ``--help`` shows them (key: the title)."""
COMMAND_GROUPS = ("backends", "run")
"""The groups of the command itself (:mod:`agent.run`); the others are the benchmark's."""
BENCH_GROUPS = ("benchmark", "target", "open_loop", "bfcl", "quality", "tasks", "recommendation")


@dataclass(frozen=True, eq=False)
class RunOption(Option):
    """An option of ``python -m agent.run``: with the part that reads it and how ``run.json`` records it."""

    part: str | None = None
    """The one part that reads it; given without that part in ``--demos`` it is refused."""
    record: str | None = None
    """How ``run.json`` ``options`` records it under its name: :data:`ALWAYS`, :data:`GIVEN` (only when given),
    :data:`PLAN` (the chat part's plan records it as it resolved it); None: not recorded."""

    def parser_default(self) -> Any:
        """An option of a part has no parser default, so that "given" can be told from "left at its default"."""
        return None if self.part else self.default


def option(flags: tuple[str, ...], group: str, help: str, **more: Any) -> RunOption:
    """One option of the command, in ``group`` (a key of :data:`GROUPS`)."""
    return RunOption(flags, help, group=group, **more)


def demos_list(text: str) -> list[str]:
    """``--demos``: some of :data:`DEMOS`, ``default`` standing for :data:`DEFAULT_DEMOS`."""
    out: list[str] = []
    for part in choices_list((*DEMOS, DEFAULT))(text):
        out += DEFAULT_DEMOS if part == DEFAULT else [part]
    return list(dict.fromkeys(out))


class CommandOptions(Options):
    """The options of the command itself (:mod:`agent.run`): which backends, how they are reached, where the
    evidence goes."""

    backends = option(
        ("--backends",), "backends", f"only these backends (known: {', '.join(KNOWN)}); overrides BACKENDS",
        shown="every one that is up, or the local rig when nothing else is configured", metavar="A,B",
        record=GIVEN, more="an unknown name is an error that lists the known ones; recorded in `run.json` "
        "`options.backends` as your choice, so the recommendation chooses among them "
        "([Which one?](recommendation.md#which-one-cost-at-the-target-and-the-recommendation))")
    local = option(
        ("--local",), "backends", "also run the local rig (SmolLM2-135M on llama.cpp, CPU), started and stopped "
        "by this command", default=False, switch=True)
    list = option(
        ("--list",), "backends", "only show the backends found, how each is reached and why others are skipped",
        default=False, switch=True)
    region = option(
        ("--region",), "backends", "search only this region; also the region for Bedrock and SM_ENDPOINT (beats "
        "BEDROCK_REGION and SM_REGION)", shown=", ".join(REGIONS), metavar="R")
    profile = option(
        ("--profile",), "backends", "AWS profile", shown="the usual AWS credential chain", metavar="P")
    bedrock_tier = option(
        ("--bedrock-tier",), "backends", "Bedrock's service tier: what its requests ask for, and the price of "
        f"Bedrock and of the break-even against it; offered: the tiers rigs/prices.yaml prices "
        f"({', '.join(PRICED_TIERS)})", default=STANDARD_TIER, shown=STANDARD_TIER, type=service_tier,
        metavar="|".join(PRICED_TIERS), record=ALWAYS,
        more="`standard` sends no `serviceTier` (Bedrock's default); a Flex or Priority tier (`flex`, `priority`) is "
        "sent with every Bedrock request once `rigs/prices.yaml` has its price, dated and with its source: until "
        "then it is one line and exit status 2, before anything starts (AWS states Flex as a discount on and "
        "Priority as a premium over the Standard rate, no per-model price known here) "
        "([Bedrock's service tier](provenance.md#bedrocks-service-tier))")
    stand_in = option(
        ("--stand-in",), "backends", "offline rehearsals (python -m rigs rehearse --offline): the "
        "OpenAI-compatible server at URL plays every discovered rig; EC2 rigs are reached through a local TCP "
        "relay to its port instead of an SSM port forward, SageMaker endpoints through the SageMaker API as "
        "usual; each is labelled with the stand-in's model and not priced", metavar="URL",
        more="[below](#offline-rehearsals-the-stand-in)")
    forwards = option(
        ("--forwards",), "backends", "SSM port forwards per EC2 rig, its requests spread over them: auto opens "
        "enough that the widest level needs at most half their capacity, measured through one before the benchmark "
        f"(at most {MAX_FORWARDS}); N opens N (1: one forward, to compare against the pool)", default=AUTO, shown=AUTO, type=forwards,
        metavar="N|auto", record=ALWAYS, more="[the tunnel](tunnel.md)")
    tunnel_limit = option(
        ("--tunnel-limit",), "backends", "with --stand-in: shape each relay like one SSM session, at most "
        "BYTES_PER_S each way shared by its connections and 1 ms after each read/send cycle (the public figures: "
        "about 600000)", type=bytes_per_s, metavar="BYTES_PER_S", record=ALWAYS,
        more="[the tunnel](tunnel.md)")
    load_from = option(
        ("--load-from",), "backends", "where an EC2 rig's chat levels beyond the timed requests and its open loop are "
        "sent from: tunnel (this machine, through the port forwards) or rig (the rig's own load generator on the "
        "instance, through SSM Run Command, its results through the base stack's bucket; offline, the same load "
        "generator run here): single-turn traffic only", default="tunnel", shown="tunnel", choices=("tunnel", "rig"),
        record=ALWAYS, more="[the tunnel](tunnel.md#load-from-the-rig)")
    ready_timeout = option(
        ("--ready-timeout",), "backends", "seconds to wait for a port-forwarded server to answer a first request",
        default=READY_TIMEOUT_S, shown=f"{READY_TIMEOUT_S:.0f}", type=positive_seconds, metavar="S")
    runs = option(
        ("--runs",), "run", "runs per backend: counting runs per question set, timed chat requests, and requests "
        "per in-flight slot of a chat level", default=5, shown="5", type=positive_int, metavar="N", record=ALWAYS)
    out = option(
        ("--out",), "run", "evidence folder (files written directly in DIR); refused when it is a file or already "
        "holds a run's evidence", shown="results/<UTC timestamp>/", type=Path, metavar="DIR",
        more="helper logs go to `DIR/logs/`")
    verbose = option(
        ("-v", "--verbose"), "run", "log what is started and stopped", default=False, switch=True)


class BenchmarkOptions(Options):
    """The benchmark's options: what it sends and measures, each part's own, and what the recommendation
    prices."""

    # --- benchmark
    demos = option(
        ("--demos",), "benchmark", "parts to run, comma-separated: counting (graded tool use, both question "
        "sets), orchestrator (an agent asks every backend; its summary is checked), chat (streamed timings), bfcl "
        "(BFCL tool-calling cases through each backend's tool interface), quality (seeded questions with "
        "checkable answers through each backend's chat interface), open_loop (requests at --rate, which adds it), "
        "tasks (BFCL multi-turn tasks done by the agent on each backend's simulated APIs); "
        "default stands for the default parts (e.g. default,quality)", default=DEFAULT_DEMOS,
        shown=",".join(DEFAULT_DEMOS), type=demos_list, metavar="LIST", record=ALWAYS)
    tools = option(
        ("--tools",), "benchmark", "counting tools: engine = count_ids(op, value) (graded on the filter sent); "
        "rows = list_ids() and the model counts", default="engine", shown="engine", choices=("engine", "rows"),
        record=ALWAYS)
    concurrency = option(
        ("--concurrency",), "benchmark", "chat concurrency levels, e.g. 1,4,16: at each level c, c x --runs "
        "requests with c in flight; aggregate output tok/s and $/M per level; auto: search for the highest level "
        f"that meets the --slo target, at most {MAX_CONCURRENCY}", default=(1,), shown="1",
        type=concurrency_levels, metavar="LIST|auto", record=PLAN,
        more="[the search](capacity.md#capacity-under-a-latency-target-goodput)")
    max_tokens = option(
        ("--max-tokens",), "benchmark", "output tokens requested per chat request of the reference's prompt; "
        "with any other workload, the workload's output_tokens_mean when that is not given",
        shown=f"{CHAT_MAX_TOKENS}, the reference's (the workload's output_tokens_mean)", type=positive_int,
        metavar="N", record=ALWAYS)
    ignore_eos = option(
        ("--ignore-eos",), "benchmark", "ask OpenAI-compatible servers (vLLM, llama.cpp) for exactly "
        "--max-tokens tokens of the reference's prompt or of a prompts file (a synthetic workload asks for exactly "
        "its drawn lengths wherever the server allows it)", default=False, switch=True, record=ALWAYS)
    question = option(
        ("--question",), "benchmark", "the orchestrator's question (not empty)", default=ORCHESTRATOR_QUESTION,
        shown=repr(ORCHESTRATOR_QUESTION), type=non_empty_text, metavar="TEXT", record=ALWAYS)
    request_timeout_s = option(
        ("--request-timeout",), "benchmark", "timeout of one timed request, and of one agent run", default=300.0,
        shown="300", type=positive_seconds, metavar="S", record=ALWAYS)
    max_consecutive_failures = option(
        ("--max-consecutive-failures",), "benchmark", "stop a backend after N failed requests in a row within a "
        "part (for agent runs: N timeouts or connection failures), and skip its other parts; 0 never stops",
        default=DEFAULT_MAX_CONSECUTIVE_FAILURES, shown=str(DEFAULT_MAX_CONSECUTIVE_FAILURES),
        type=non_negative_int, metavar="N", record=ALWAYS)

    # --- the latency target
    slo = option(
        ("--slo",), "target", "the latency target of the chat part: per-request limits in ms that 99% of "
        "requests must meet, from ttft_p99_ms, itl_p99_ms, e2e_p99_ms "
        f"({EXAMPLE})", default=Target.default(),
        shown=f"{Target.default().spec()}, interactive chat; the report says why", part="chat", type=target,
        metavar="KEY=MS,...", record=PLAN)
    repeats = option(
        ("--repeats",), "target", "run every chat concurrency level N times; each figure gets its 95% interval",
        shown=f"{DEFAULT_REPEATS_WITH_TARGET} with --slo or --concurrency auto, else 1", part="chat",
        type=positive_int, metavar="N", record=PLAN)
    max_concurrency = option(
        ("--max-concurrency",), "target", "highest level --concurrency auto may try",
        default=DEFAULT_MAX_CONCURRENCY, shown=str(DEFAULT_MAX_CONCURRENCY), part="chat", type=positive_int,
        metavar="N", record=PLAN)
    slo_budget_s = option(
        ("--slo-budget",), "target", "seconds per backend for its chat requests and the search; no level or "
        "request starts after it, requests in flight finish", default=DEFAULT_BUDGET_S,
        shown=f"{DEFAULT_BUDGET_S:.0f}", part="chat", type=positive_seconds, metavar="S", record=PLAN)

    # --- the open loop
    rate = option(
        ("--rate",), "open_loop", "after the chat part, send R requests per second for --rate-duration seconds, "
        "as the workload's arrival key says (constant, poisson, gamma), whether or not the ones before were "
        "answered; peak: the rate one instance must carry at the workload's peak (from the SLO capacity the chat "
        "part found)", shown="no open loop", type=rate, metavar="R|peak", record=GIVEN,
        more="the first and second halves of the window are compared: a backend whose second half misses the "
        "target while its first met it is not sustaining, and the recommendation uses the verdict "
        "([the open loop](open-loop.md#the-open-loop-requests-at-a-rate))")
    rate_duration_s = option(
        ("--rate-duration",), "open_loop", "seconds of the open loop's window (with --rate)",
        shown=f"{open_loop.DEFAULT_DURATION_S:.0f}; a trace: its own length", type=positive_seconds, metavar="S",
        record=GIVEN)

    # --- bfcl
    bfcl_n = option(
        ("--bfcl-n",), "bfcl", "cases per backend, drawn evenly from the five categories, at most "
        f"{ALL_CASES:,}, or 'all' (all {ALL_CASES:,})",
        default=bfcl.DEFAULT_N, shown=str(bfcl.DEFAULT_N), part="bfcl", type=bfcl_cases, metavar="N",
        record=ALWAYS)
    bfcl_seed = option(
        ("--bfcl-seed",), "bfcl", "seed of the case sample; every backend gets the same cases",
        default=bfcl.DEFAULT_SEED, shown=str(bfcl.DEFAULT_SEED), part="bfcl", type=seed, metavar="S",
        record=ALWAYS)
    bfcl_stream = option(
        ("--bfcl-stream",), "bfcl", "stream the replies (tests the streaming tool parser; ConverseStream on "
        "Bedrock)", default=False, shown="whole replies", part="bfcl", switch=True, record=ALWAYS)

    # --- the quality lane
    quality_n = option(
        ("--quality-n",), "quality", "items per backend; the first N of the seed, taken in turn from six suites",
        default=quality.DEFAULT_N, shown=str(quality.DEFAULT_N), part="quality", type=quality_items,
        metavar="N", record=ALWAYS, more="[the quality lane](quality.md#precision-the-quality-lane)")
    quality_seed = option(
        ("--quality-seed",), "quality", "seed of the items; every backend and every run with this seed gets the "
        "same ones", default=quality.DEFAULT_SEED, shown=str(quality.DEFAULT_SEED), part="quality",
        type=quality_seed, metavar="S", record=ALWAYS)
    quality_concurrency = option(
        ("--quality-concurrency",), "quality", "requests in flight per backend (the Neuron rigs get 1)",
        default=quality.DEFAULT_CONCURRENCY, shown=str(quality.DEFAULT_CONCURRENCY), part="quality",
        type=positive_int, metavar="N", record=ALWAYS)
    quality_reference = option(
        ("--quality-reference",), "quality", "the backend every other one is compared against in the report's "
        "precision section", shown="the highest-precision backend measured, by the catalog's bytes per weight",
        part="quality", choices=KNOWN, metavar="NAME", record=GIVEN)

    # --- the tasks lane
    tasks_category = option(
        ("--tasks-category",), "tasks", "BFCL's multi-turn category the tasks come from: base, miss_func (a function "
        "is offered only from a later turn), miss_param (a turn lacks a value the agent must ask for), long_context "
        "(the APIs hold long content)", default=tasks.DEFAULT_CATEGORY, shown=tasks.DEFAULT_CATEGORY, part="tasks",
        choices=TASK_CATEGORIES, record=ALWAYS, more="[the tasks lane](benchmark.md#tasks-bfcl-multi-turn-tasks-done-by-the-agent)")
    tasks_n = option(
        ("--tasks-n",), "tasks", f"tasks per backend, a seeded sample of the category (at most {TASKS_PER_CATEGORY}); "
        "every backend gets the same ones", default=tasks.DEFAULT_N, shown=str(tasks.DEFAULT_N), part="tasks",
        type=task_count, metavar="N", record=ALWAYS)
    tasks_seed = option(
        ("--tasks-seed",), "tasks", "seed of the task sample", default=tasks.DEFAULT_SEED, shown=str(tasks.DEFAULT_SEED),
        part="tasks", type=seed, metavar="S", record=ALWAYS)
    tasks_max_turns = option(
        ("--tasks-max-turns",), "tasks", "user turns given per task; a task with more is stopped there and fails",
        shown="every turn", part="tasks", type=positive_int, metavar="N", record=ALWAYS)
    tasks_max_tool_calls = option(
        ("--tasks-max-tool-calls",), "tasks", "tool calls per task; the task is stopped once it has made them and fails",
        default=tasks.DEFAULT_MAX_TOOL_CALLS, shown=str(tasks.DEFAULT_MAX_TOOL_CALLS), part="tasks",
        type=positive_int, metavar="N", record=ALWAYS)
    tasks_time_limit_s = option(
        ("--tasks-time-limit",), "tasks", "seconds per task; the task is stopped then and fails",
        default=tasks.DEFAULT_TIME_LIMIT_S, shown=f"{tasks.DEFAULT_TIME_LIMIT_S:.0f}", part="tasks",
        type=positive_seconds, metavar="S", record=ALWAYS)
    tasks_concurrency = option(
        ("--tasks-concurrency",), "tasks", "tasks in flight at once on a backend: a rig's hour is shared over the "
        "tasks it serves at this concurrency", default=tasks.DEFAULT_CONCURRENCY,
        shown=str(tasks.DEFAULT_CONCURRENCY), part="tasks", type=positive_int, metavar="N", record=ALWAYS)
    tasks_agent_target = option(
        ("--tasks-agent-target",), "tasks", "after the lane, find how many agents at once a backend serves within this "
        "per-agent target: agent_output_tok_s (the median task's output tokens per second, at least) and task_s_p90 "
        "(seconds per task, at most), e.g. task_s_p90=60; levels 1, 2, 4 ... of agents running the tasks back to "
        "back, then bisection, as the capacity search", shown="no search", part="tasks", type=agent_target,
        metavar="KEY=V,...", record=GIVEN)
    tasks_max_agents = option(
        ("--tasks-max-agents",), "tasks", "the most agents at once the search tries (with --tasks-agent-target)",
        default=tasks.DEFAULT_MAX_AGENTS, shown=str(tasks.DEFAULT_MAX_AGENTS), part="tasks", type=positive_int,
        metavar="N", record=GIVEN)
    min_task_success = option(
        ("--min-task-success",), "tasks", "success floor of the tasks lane, e.g. 0.5 or 50%: the recommendation "
        "chooses by $ per successful task among the backends at or above it", shown="no floor; the choice is by $ "
        "per successful task only when no latency target was measured", part="tasks", type=share, metavar="SHARE",
        record=ALWAYS, more="[Which one?](recommendation.md#which-one-cost-at-the-target-and-the-recommendation)")

    # --- the recommendation
    workload = option(
        ("--workload",), "recommendation", "your traffic, as KEY=VALUE,... or a YAML file with the same keys: what "
        "the chat part sends (prompt_input_tokens_mean/stddev, output_tokens_mean/stddev, preset, prompts, trace, "
        "shared_prefix_tokens, turns, think_time_s, seed), how the open loop's requests arrive (arrival: constant, "
        "poisson or gamma; burstiness, gamma's shape; request_rate, requests per second at the peak) and what the "
        "recommendation prices (output_tokens_per_month, e.g. 2B; input_per_output, following from the lengths; "
        "peak_to_average; tool_calls, yes/no)",
        shown="the reference's prompt and 100 tokens; 100M, 3, yes (stated in the report)",
        type=workload, metavar="SPEC|FILE", record=ALWAYS,
        more="[Your traffic](traffic.md#your-traffic-what-the-chat-part-sends) lists every key; for the recommendation "
        "([Which one?](recommendation.md#which-one-cost-at-the-target-and-the-recommendation))")
    min_accuracy = option(
        ("--min-accuracy",), "recommendation", "tool-calling accuracy floor (BFCL part), e.g. 0.8 or 80%; a "
        "backend below it is disqualified", shown="no floor", type=share, metavar="SHARE",
        record=ALWAYS)
    min_quality = option(
        ("--min-quality",), "recommendation", "answer-quality floor (quality part), e.g. 0.7 or 70%; a backend "
        "whose quality's upper 95% bound is below it is disqualified; the --workload key min_quality is the same "
        "floor", shown="no floor", type=share, metavar="SHARE", record=ALWAYS)
    compare_models = option(
        ("--compare-models",), "recommendation", "let backends serving another model than the one the comparison "
        "is for (the model most backends serve) compete: each must have quality-lane results, and the lane decides "
        "whether it may be chosen; without it they are measured and shown, never chosen", default=False,
        switch=True, record=ALWAYS,
        more="the rule: [Different models](recommendation.md#different-models---compare-models)")


class Declared(CommandOptions, BenchmarkOptions):
    """Every option of ``python -m agent.run``."""


OPTIONS: tuple[RunOption, ...] = (*CommandOptions.options(), *BenchmarkOptions.options())  # type: ignore[assignment]
"""Every option, in ``--help``'s order within each group."""
OPTION: Mapping[str, RunOption] = {o.name: o for o in OPTIONS}
"""Every option by its name (``bfcl_n``)."""
PART_OPTIONS: Mapping[str, tuple[str, ...]] = {
    part: tuple(o.name for o in OPTIONS if o.part == part) for part in dict.fromkeys(o.part for o in OPTIONS if o.part)
}
"""The options only one part reads, by part (their names)."""


def add_arguments(parser: argparse.ArgumentParser, groups: Sequence[str]) -> None:
    """Add the options of ``groups`` (keys of :data:`GROUPS`), each group under its title."""
    Declared.add_arguments(parser, {key: GROUPS[key] for key in groups})
