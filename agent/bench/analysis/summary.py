"""Aggregation: ``summary.json`` as a pure function of ``requests.jsonl`` and ``run.json``.

:func:`summarize` is the only place a figure is computed; the report only formats what it
finds here, and a test recomputes the summary from the evidence files and compares.
"""

from __future__ import annotations

import json
from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from . import bfcl_summary, slo, stats
from .ceiling import ceiling_for
from .cost import cost_block, prices_of
from .decode import MULTI_TOKEN, PER_TOKEN, decode_rate
from ..grading.counting import grade_counting
from ..grading.orchestrator import check_orchestrator
from .recommend import attach as attach_recommendation
from ..tasks.workload import QUESTION_SETS, QuestionSet

SCHEMA_PATH = Path(__file__).with_name("summary.schema.json")
SCHEMA_VERSION = "1.0"
COUNTING_PARTS = {q.name: q for q in QUESTION_SETS}


def _qset_for(part: str, record: Mapping[str, Any]) -> QuestionSet:
    base = COUNTING_PARTS[part]
    ids = tuple(record.get("ids") or base.ids)
    return QuestionSet(base.name, ids, record.get("question") or base.question, base.truth_op, base.truth_value)


def _ci95(successes: int, n: int) -> list[float] | None:
    interval = stats.wilson_interval(successes, n)
    return None if interval is None else [round(interval[0], 4), round(interval[1], 4)]


def summarize_counting(records: Sequence[Mapping[str, Any]], part: str) -> dict[str, Any] | None:
    """Grade every run of one question set on one backend and count the verdicts.

    Failed runs (an error or an empty reply) are counted apart: ``graded`` = ``runs`` - ``errors``
    is the denominator of ``correct``, ``right_filter`` and their 95% Wilson intervals.
    """
    if not records:
        return None
    qset = _qset_for(part, records[0])
    tools = records[0].get("tools", "engine")
    runs = []
    filters: Counter[str] = Counter()
    verdicts: Counter[str] = Counter()
    failures: Counter[str] = Counter()
    invalid: list[dict[str, Any]] = []
    text_calls: list[dict[str, Any]] = []
    described = 0
    seconds = []
    for r in records:
        g = grade_counting(qset, r.get("tools", tools), r.get("answer"), r.get("calls") or [], r.get("texts") or [],
                           r.get("error"))  # fmt: skip
        verdicts[g.verdict] += 1
        if g.failure:
            failures[g.failure] += 1
        filters.update(g.filters)
        invalid.extend({"run": r["run"], **c.as_dict()} for c in g.invalid_calls)
        text_calls.extend({"run": r["run"], "snippet": c.snippet} for c in g.text_tool_calls)
        described += len(g.text_calls) - len(g.text_tool_calls)
        if r.get("seconds") is not None and not g.failed:
            seconds.append(r["seconds"])
        runs.append(
            {
                "run": r["run"],
                "seq": r.get("seq"),
                "verdict": g.verdict,
                "correct": g.correct,
                "quoted": g.quoted,
                "reading": g.reading,
                "right_filter": g.right_filter,
                "first_call_right": g.first_call_right,
                "last_filter": g.last_filter,
                "filters": list(g.filters),
                "distinct_filters": g.distinct_filters,
                "tool_calls": len(g.calls),
                "invalid_tool_calls": len(g.invalid_calls),
                "text_tool_calls": len(g.text_tool_calls),
                "failure": g.failure,
                "error": r.get("error"),
                "seconds": r.get("seconds"),
                "answer": (r.get("answer") or "")[-300:],
                "output_tokens": (r.get("usage") or {}).get("output_tokens"),
            }
        )
    graded = [d for d in runs if d["verdict"] != "failed"]
    correct = sum(1 for d in graded if d["correct"])
    engine = tools != "rows"
    right = sum(1 for d in graded if d["right_filter"]) if engine else None
    return {
        "question": qset.question,
        "ids": list(qset.ids),
        "truth": qset.truth,
        "truth_filter": f"id {qset.truth_op} {qset.truth_value}",
        "tools": tools,
        "constrained": any(r.get("constrained") for r in records),
        "runs": len(runs),
        "errors": len(runs) - len(graded),
        "graded": len(graded),
        "correct": correct,
        "wrong": verdicts["wrong"],
        "unreadable": verdicts["unreadable"],
        "correct_ci95": _ci95(correct, len(graded)),
        "right_filter": right,
        "right_filter_ci95": _ci95(right, len(graded)) if right is not None else None,
        "first_call_right": sum(1 for d in graded if d["first_call_right"]) if engine else None,
        "several_filters": sum(1 for d in graded if d["distinct_filters"] > 1),
        "tool_calls": sum(r["tool_calls"] for r in runs),
        "invalid_tool_calls": sum(r["invalid_tool_calls"] for r in runs),
        "text_tool_calls": sum(r["text_tool_calls"] for r in runs),
        "text_calls_describing_made_calls": described,
        "answer_status": dict(sorted(verdicts.items())),
        "failure_reasons": dict(failures.most_common()),
        "filters_sent": dict(filters.most_common()),
        "invalid_calls": invalid,
        "text_calls": text_calls,
        "seconds": stats.distribution(seconds, keep_values=False),
        "detail": runs,
    }


def request_metrics(r: Mapping[str, Any]) -> dict[str, Any]:
    """Per-request figures from one chat record (times in ms relative to its send). A failed
    request (``error`` set) yields no figure at all."""
    ok = not r.get("error")
    out_tokens = r.get("output_tokens") if ok else None
    first, done = r.get("first_ms"), r.get("done_ms")
    chunks = [c for c in (r.get("chunk_ms") or []) if c is not None]
    streamed = ok and bool(r.get("streamed")) and len(chunks) > 1
    decode, basis = decode_rate(out_tokens, chunks, r.get("chunk_chars")) if streamed else (None, None)
    return {
        "ok": ok,
        "ttft_ms": first if streamed else None,
        "e2e_ms": done if ok else None,
        "itl_ms": [b - a for a, b in zip(chunks, chunks[1:])] if streamed else [],
        "decode_tok_per_s": decode,
        "decode_basis": basis,
        "client_tok_per_s": stats.client_tok_per_s(out_tokens, done / 1000.0 if done else None) if ok else None,
        "output_tokens": out_tokens,
        "prompt_tokens": r.get("prompt_tokens") if ok else None,
    }


def summarize_level(concurrency: int, rs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One concurrency level: counts of every request, figures from the successful ones only.

    The wall time runs, in each repeat, from the first successful request's send to the last one's
    last byte, summed over the level's repeats; requests/s counts successful requests; the aggregate
    output rate is None when any successful request lacks a usage count (its tokens would be
    missing from the sum)."""
    ok = [r for r in rs if not r.get("error")]
    tokens = [r.get("output_tokens") for r in ok]
    usage_missing = sum(1 for t in tokens if t is None)
    wall = rate = per_s = None
    if ok:
        span = slo.wall_s(ok)
        if span > 0:
            wall = span
            per_s = len(ok) / wall
            if not usage_missing:
                rate = stats.aggregate_tok_per_s([t for t in tokens if t is not None], 0.0, wall)
    return {
        "concurrency": concurrency,
        "requests": len(rs),
        "ok": len(ok),
        "errors": len(rs) - len(ok),
        "resends": sum(int(r.get("reconnects") or 0) for r in rs),
        "usage_missing": usage_missing,
        "wall_s": None if wall is None else round(wall, 3),
        "output_tokens": sum(t for t in tokens if t is not None),
        "output_tok_per_s": None if rate is None else round(rate, 2),
        "requests_per_s": None if per_s is None else round(per_s, 3),
    }


def summarize_chat(records: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """Chat figures of one backend: steady-state (concurrency 1) distributions, the cold request,
    and the aggregate rate per concurrency level."""
    if not records:
        return None
    timed = [r for r in records if r.get("phase") == "timed"]
    cold = [r for r in records if r.get("phase") == "cold"]
    m = [request_metrics(r) for r in timed]
    errors = Counter(str(r["error"]) for r in records if r.get("error"))
    ok_timed = [x for x in m if x["ok"]]
    by_level = slo.chat_levels(records)
    levels = [summarize_level(c, by_level[c]) for c in sorted(by_level)]
    cold_block = None
    if cold:
        c = request_metrics(cold[0])
        cold_block = {
            "ttft_ms": c["ttft_ms"],
            "e2e_ms": c["e2e_ms"],
            "output_tokens": c["output_tokens"],
            "error": cold[0].get("error"),
        }
    requested = sorted({r.get("requested_tokens") for r in timed if r.get("requested_tokens") is not None})
    returned = [x["output_tokens"] for x in ok_timed if x["output_tokens"] is not None]
    prompt_tokens = [x["prompt_tokens"] for x in ok_timed if x["prompt_tokens"] is not None]
    usage_missing = sum(1 for x in ok_timed if x["output_tokens"] is None)
    mix = None
    if returned and prompt_tokens and len(prompt_tokens) == len(returned) and sum(returned) > 0:
        mix = sum(prompt_tokens) / sum(returned)
    bases = Counter(x["decode_basis"] for x in ok_timed if x["decode_basis"])
    # per-token figures where there are any (a reply buffered now and then is left out, and counted);
    # only a backend whose every reply came in multi-token chunks gets a multi-token distribution
    decode_from = PER_TOKEN if bases[PER_TOKEN] else MULTI_TOKEN
    return {
        "requests": len(timed),
        "errors": sum(1 for x in m if not x["ok"]),
        "error_reasons": dict(errors.most_common()),
        "resends": sum(int(r.get("reconnects") or 0) for r in records),
        "new_connections": sum(1 for r in records if r.get("new_connection") is True),
        "streamed": any(r.get("streamed") and len(r.get("chunk_ms") or []) > 1 for r in timed),
        "ttft_ms": stats.distribution([x["ttft_ms"] for x in ok_timed]),
        "itl_ms": stats.distribution([g for x in ok_timed for g in x["itl_ms"]], keep_values=False),
        "e2e_ms": stats.distribution([x["e2e_ms"] for x in ok_timed]),
        "decode_tok_per_s": stats.distribution(
            [x["decode_tok_per_s"] for x in ok_timed if x["decode_basis"] == decode_from], digits=2),
        "decode_basis": dict(sorted(bases.items())),
        "decode_comparable": bool(bases[PER_TOKEN]),
        "client_tok_per_s": stats.distribution([x["client_tok_per_s"] for x in ok_timed], digits=2),
        "output_tokens": stats.distribution(returned, digits=0),
        "requested_tokens": requested[0] if len(requested) == 1 else requested,
        "returned_short": sum(1 for n in returned if requested and n < max(requested)),
        "usage_missing": usage_missing,
        "input_per_output": None if mix is None else round(mix, 4),
        "cold": cold_block,
        "levels": levels,
    }


def summarize(records: Iterable[Mapping[str, Any]], run: Mapping[str, Any]) -> dict[str, Any]:
    """The whole ``summary.json`` from the request records and the run's ``run.json``."""
    records = list(records)
    by_part: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for r in records:
        by_part.setdefault((r["backend"], r["part"]), []).append(r)
    prices = run.get("prices") or {}
    bedrock_price = prices.get("bedrock_reference")
    parts = set(run.get("options", {}).get("demos") or ["counting", "orchestrator", "chat"])
    backends: dict[str, Any] = {}
    for b in run.get("backends", []):
        name = b["name"]
        counting = summarize_counting(by_part.get((name, "counting"), []), "counting")
        strict = summarize_counting(by_part.get((name, "counting_strict"), []), "counting_strict")
        chat = summarize_chat(by_part.get((name, "chat"), []))
        hourly, per_token = prices_of(prices, name)
        levels = chat["levels"] if chat else []
        cost = cost_block(
            hourly=hourly,
            per_token=per_token,
            levels=levels,
            bedrock_price=bedrock_price,
            input_per_output=chat["input_per_output"] if chat else None,
        )
        if cost["reason"] and b.get("toy_model"):
            cost["reason"] = "CPU-served local rig: no hourly price applies"
        comparable = bool(chat and chat["decode_comparable"])
        ceiling = ceiling_for(
            instance_type=(b.get("metadata") or {}).get("instance_type"),
            model_id=b["model_id"],
            kind=b["kind"],
            measured_decode_tok_s=chat["decode_tok_per_s"]["p50"] if comparable else None,
        )
        if chat and chat["decode_basis"] and not comparable and ceiling["ceiling_tok_per_s"] is not None:
            ceiling["reason"] = "decode rate from multi-token chunks: not comparable with a per-token ceiling"
        if b.get("toy_model"):
            ceiling["ceiling_tok_per_s"] = ceiling["share"] = None
            ceiling["reason"] = "CPU-served local rig: this machine's memory bandwidth is not on file"
        elif (b.get("metadata") or {}).get("unpriced"):
            ceiling["reason"] = b["metadata"]["unpriced"]
        skipped = dict((run.get("skipped") or {}).get(name, {}))
        bfcl = bfcl_summary.summarize(by_part.get((name, "bfcl"), []))
        stopped = (run.get("stopped") or {}).get(name)
        failures = _failures(name, parts, counting, strict, chat, skipped, by_part)
        failures += bfcl_summary.failures(bfcl, parts, skipped)
        if stopped:
            failures = [f for f in failures if not f.startswith(f"{stopped['part']}: every")]
            failures.append(f"{stopped['part']}: stopped after {stopped['after']} consecutive failures "
                            f"({stopped['reason']}); this backend's remaining parts were not run")
        backends[name] = {
            "label": b["label"],
            "kind": b["kind"],
            "model_id": b["model_id"],
            "constrained": bool(b.get("constrained_tools")),
            "toy_model": bool(b.get("toy_model")),
            "custom": bool(b.get("custom")),
            "counting": counting,
            "counting_strict": strict,
            "chat": chat,
            "bfcl": bfcl,
            "cost": cost,
            "ceiling": ceiling,
            "slo": slo.slo_block(by_part.get((name, "chat"), []), run, b),
            "skipped": skipped,
            "stopped": stopped,
            "failures": failures,
            "completed": not failures,
        }
    orchestrator = summarize_orchestrator([r for r in records if r["part"] == "orchestrator"], run)
    if orchestrator.get("failure") and orchestrator.get("backend") in backends:
        entry = backends[orchestrator["backend"]]
        entry["failures"].append(f"orchestrator: {orchestrator['failure']}")
        entry["completed"] = False
    out = {
        "schema_version": SCHEMA_VERSION,
        "run": {k: run[k] for k in ("started", "finished", "git_sha", "versions", "backends", "options", "settings",
                                    "methods", "interrupted", "notes") if k in run},  # fmt: skip
        "prices": prices,
        "backends": backends,
        "slo_pairs": slo.slo_pairs(backends),
        "orchestrator": orchestrator,
        "bfcl_pairs": bfcl_summary.pairs(backends),
    }
    attach_recommendation(out, run)
    return out


def _failures(
    name: str, parts: set[str], counting: Any, strict: Any, chat: Any, skipped: Mapping[str, str],
    by_part: Mapping[tuple[str, str], Sequence[Mapping[str, Any]]],
) -> list[str]:
    """Why a backend did not complete: a selected part that produced no successful result."""
    out = []
    for part, block in (("counting", counting), ("counting_strict", strict)):
        if "counting" in parts and part not in skipped:
            if block is None:
                out.append(f"{part}: no runs recorded")
            elif block["runs"] and block["errors"] == block["runs"]:
                out.append(f"{part}: every run failed ({block['detail'][0]['failure']})")
    if "chat" in parts and "chat" not in skipped:
        if chat is None:
            out.append("chat: no requests recorded")
        elif chat["requests"] == 0 or chat["errors"] == chat["requests"]:
            reason = next(iter(chat["error_reasons"]), "no timed request")
            out.append(f"chat: every request failed ({reason})")
    for part, reason in skipped.items():
        if reason.startswith("failed"):
            out.append(f"{part}: {reason}")
    return out


def summarize_orchestrator(records: Sequence[Mapping[str, Any]], run: Mapping[str, Any]) -> dict[str, Any]:
    """The orchestrator's checks, recomputed from its record."""
    base: dict[str, Any] = {
        "ran": False, "backend": None, "constrained": False, "asked": [], "not_asked": [], "winner_claimed": None,
        "winner_text": "none", "winner_measured": None, "submitted": False, "submitted_via": None,
        "winner_submitted": None, "winner_submitted_raw": None, "winner_verdict": "not run",
        "wrong_winner": False, "submitted_table_quote": "absent", "text_disagrees": False, "table_matches": False,
        "table_quote": "absent", "scoreboard_called": False, "scoreboard": None, "reply": None, "asks": [],
        "error": None, "failure": None, "follow_up_error": None, "follow_up_reply": None,
        "reason": (run.get("orchestrator") or {}).get("reason"),
    }  # fmt: skip
    if not records:
        return base
    r = records[-1]
    base.update(check_orchestrator(r))
    base.update(
        {
            "ran": True,
            "backend": r["backend"],
            "seq": r.get("seq"),
            "constrained": bool(r.get("constrained")),
            "scoreboard": (r.get("scoreboards") or [None])[-1],
            "reply": r.get("reply"),
            "follow_up_reply": (r.get("follow_up") or {}).get("reply"),
            "asks": r.get("asks") or [],
            "error": r.get("error"),
            "seconds": r.get("seconds"),
        }
    )
    return base


@lru_cache(maxsize=1)
def load_schema() -> dict[str, Any]:
    return json.loads(SCHEMA_PATH.read_text())


def validate(summary: Mapping[str, Any]) -> None:
    """Validate against ``summary.schema.json``.

    Raises:
        jsonschema.ValidationError: the summary does not match the schema.
    """
    import jsonschema

    jsonschema.validate(summary, load_schema())
