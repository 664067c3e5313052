"""Aggregation: ``summary.json`` as a pure function of ``requests.jsonl`` and ``run.json``.

:func:`summarize` is the only place a figure is computed: each block comes from its module in
:mod:`agent.bench.analysis.blocks`, the recommendation from :mod:`agent.bench.analysis.recommendation`;
the report only formats what it finds here, and a test recomputes the summary from the evidence
files and compares.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from ...kinds import descriptor
from ..results.records import OrchestratorRecord, RequestRecord, parse_record
from ..results.blocks.chat import ChatSummary
from ..results.blocks.cost import CeilingBlock
from ..results.run import BackendInfo, RunFile
from ..results.summary import SCHEMA_VERSION, BackendSummary, Summary
from .blocks import bfcl, quality, quality_pairs, tasks
from .blocks.capacity import slo_block, slo_pairs
from .blocks.tunnel import Forwards, tunnel_block
from .blocks.chat import summarize_chat
from .blocks.cost import cost_block, measured_mix
from .blocks.counting import summarize_counting
from .blocks.orchestrator import summarize_orchestrator
from .blocks.provenance import provenance_block
from .asked import traffic_block
from .ceiling import ceiling_for
from .open_loop import open_loop_block
from .recommendation import attach, partial
from .traffic import Traffic

INTERRUPTED = "interrupted: the run was stopped before every part finished; what was cut off is incomplete"


def _ceiling(b: BackendInfo, chat: ChatSummary | None) -> CeilingBlock:
    """The bandwidth ceiling, with why it does not apply to a toy model, an unpriced server or
    multi-token decode figures."""
    comparable = bool(chat and chat.decode_comparable)
    ceiling = ceiling_for(instance_type=b.metadata.get("instance_type"), model_id=b.model_id, kind=b.kind,
                          measured_decode_tok_s=chat.decode_tok_per_s.p50 if comparable else None)
    if chat and chat.decode_basis and not comparable and ceiling.ceiling_tok_per_s is not None:
        ceiling = ceiling.model_copy(update={"reason": "decode rate from multi-token chunks: not comparable with a "
                                                       "per-token ceiling"})
    if b.toy_model:
        return ceiling.model_copy(update={"ceiling_tok_per_s": None, "share": None, "reason": "CPU-served local rig: "
                                          "this machine's memory bandwidth is not on file"})
    if b.metadata.get("unpriced"):
        return ceiling.model_copy(update={"reason": b.metadata["unpriced"]})
    return ceiling


def _failures(parts: set[str], blocks: Mapping[str, Any], skipped: Mapping[str, str]) -> list[str]:
    """Why a backend did not complete: a selected part that produced no successful result."""
    out = []
    for part in ("counting", "counting_strict"):
        block = blocks[part]
        if "counting" in parts and part not in skipped:
            if block is None:
                out.append(f"{part}: no runs recorded")
            elif block.runs and block.errors == block.runs:
                out.append(f"{part}: every run failed ({block.detail[0].failure})")
    chat = blocks["chat"]
    if "chat" in parts and "chat" not in skipped:
        if chat is None:
            out.append("chat: no requests recorded")
        elif chat.requests == 0 or chat.errors == chat.requests:
            out.append(f"chat: every request failed ({next(iter(chat.error_reasons), 'no timed request')})")
    out += [f"{part}: {reason}" for part, reason in skipped.items() if reason.startswith("failed")]
    return out + bfcl.failures(blocks["bfcl"], parts, skipped) + quality.failures(blocks["quality"], parts, skipped) \
        + tasks.failures(blocks["tasks"], parts, skipped)


def _open_loop_failure(judged: bool, recorded: int) -> str:
    """Why the open loop gave no result: every request failed, none was recorded, or (a run stopped before run.json
    kept the open loop's window) records without the window they were sent in."""
    if judged:
        return "every request failed"
    if recorded:
        return (f"{recorded} request{'' if recorded == 1 else 's'} recorded, but run.json has no open-loop window "
                "for them (the run stopped before writing it), so they cannot be judged")
    return "no requests recorded"


def backend_summary(b: BackendInfo, by_part: Mapping[str, Sequence[RequestRecord]], run: RunFile,
                    parts: set[str]) -> BackendSummary:
    """One backend's entry of ``backends`` (before the recommendation adds its costs)."""
    chat_records = by_part.get("chat", [])
    blocks: dict[str, Any] = {
        "counting": summarize_counting(by_part.get("counting", []), "counting"),  # type: ignore[arg-type]
        "counting_strict": summarize_counting(by_part.get("counting_strict", []), "counting_strict"),  # type: ignore[arg-type]
        "chat": summarize_chat(chat_records),  # type: ignore[arg-type]
        "bfcl": bfcl.summarize(by_part.get("bfcl", [])),  # type: ignore[arg-type]
        "quality": quality.planned(quality.summarize(by_part.get("quality", [])), run),  # type: ignore[arg-type]
        "tasks": tasks.summarize(by_part.get("tasks", []), run.prices.of(b.name), run.options.tasks_n,  # type: ignore[arg-type]
                                 bool(b.toy_model), run.options.tasks_agent_target),
    }
    chat = blocks["chat"]
    price = run.prices.of(b.name)
    slo = slo_block(chat_records, run, b.name, b.kind, Forwards.of(b.metadata))  # type: ignore[arg-type]
    mix = measured_mix(slo, chat)
    cost = cost_block(hourly=price.hourly, per_token=price.per_token, levels=chat.levels if chat else [],
                      bedrock_price=run.prices.bedrock_reference, input_per_output=mix)
    if cost.reason and b.toy_model:
        cost = cost.model_copy(update={"reason": "CPU-served local rig: no hourly price applies"})
    skipped = dict(run.skipped.get(b.name, {}))
    stopped = run.stopped.get(b.name)
    log = run.open_loop.get(b.name)
    records = by_part.get("open_loop", [])
    open_loop = open_loop_block(records, log, run.options.target()) if log else None  # type: ignore[arg-type]
    failures = _failures(parts, blocks, skipped)
    if "open_loop" in parts and "open_loop" not in skipped and (not open_loop or open_loop.errors == open_loop.sent):
        failures.append("open_loop: " + _open_loop_failure(open_loop is not None, len(records)))
    if stopped:
        failures = [f for f in failures if not f.startswith(f"{stopped.part}: every")]
        failures.append(f"{stopped.part}: stopped after {stopped.after} consecutive failures ({stopped.reason}); "
                        "this backend's remaining parts were not run")
    if run.interrupted:
        failures.append(INTERRUPTED)
    return BackendSummary(
        label=b.label, kind=b.kind, model_id=b.model_id, constrained=bool(b.constrained_tools),
        toy_model=bool(b.toy_model), custom=bool(b.custom), **blocks, weights=quality_pairs.weights_of(b), cost=cost,
        ceiling=_ceiling(b, chat),
        slo=slo, skipped=skipped, stopped=stopped, failures=failures,
        completed=not failures, provenance=provenance_block(b.provenance), open_loop=open_loop,
        tunnel=tunnel_block(b.metadata, slo, open_loop,
                            bool(records) and all(r.load_from == "rig" for r in records)),  # type: ignore[union-attr]
        traffic=traffic_block([*chat_records, *records], by_part.get("chat_not_sent", []),  # type: ignore[arg-type]
                              run.traffic.get(b.name),
                              Traffic.from_dict(run.options.workload), descriptor(b.kind).ignore_eos, mix))


def summarize(records: Iterable[RequestRecord | Mapping[str, Any]], run: RunFile | Mapping[str, Any]) -> Summary:
    """The whole ``summary.json`` from the request records and the run's ``run.json``.

    Raises:
        agent.bench.results.records.RecordError: a record is not one of the known kinds.
        pydantic.ValidationError: ``run.json`` is not of the shape the command writes.
    """
    typed = [parse_record(r) for r in records]
    run = run if isinstance(run, RunFile) else RunFile.model_validate(run)
    by_part: dict[str, dict[str, list[RequestRecord]]] = {}
    for r in typed:
        by_part.setdefault(r.backend, {}).setdefault(r.part, []).append(r)
    demos = list(run.options.demos)
    backends = {b.name: backend_summary(b, by_part.get(b.name, {}), run, set(demos)) for b in run.backends}
    orchestrator = summarize_orchestrator([r for r in typed if isinstance(r, OrchestratorRecord)], run, demos)
    if orchestrator.failure and orchestrator.backend in backends:
        entry = backends[orchestrator.backend]
        backends[orchestrator.backend] = entry.model_copy(update={
            "failures": entry.failures + [f"orchestrator: {orchestrator.failure}"], "completed": False})
    weights = {n: b.weights for n, b in backends.items()}
    lane = quality_pairs.lane(run, {n: b.quality for n, b in backends.items()}, weights)
    pairs = quality_pairs.pairs({n: recs for n, parts in by_part.items() if (recs := parts.get("quality"))},  # type: ignore[misc]
                                run, lane.reference if lane else None, weights)
    backends, recommendation = attach(backends, run, pairs, lane.reference if lane else None)
    if run.interrupted:
        recommendation = partial.mark(recommendation, run, backends, orchestrator)
    return Summary(schema_version=SCHEMA_VERSION, run=run.info(), prices=run.prices, backends=backends,
                   slo_pairs=slo_pairs(backends), orchestrator=orchestrator, bfcl_pairs=bfcl.pairs(backends),
                   recommendation=recommendation, quality_pairs=pairs, quality_lane=lane,
                   tasks_pairs=tasks.pairs(backends))


def validate(data: Mapping[str, Any]) -> Summary:
    """``summary.json``'s content as a :class:`Summary`.

    Raises:
        pydantic.ValidationError: it does not have the summary's shape.
    """
    return Summary.model_validate(data)

