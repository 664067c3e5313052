"""Latency targets (SLOs): whether a request meets one, what a concurrency level achieves under
it, and the SLO capacity of a backend. Pure functions of the chat records and ``run.json``.

The definitions follow goodput as vLLM's benchmark (``--goodput``), GuideLLM (SLO attainment)
and DistServe (Zhong et al., OSDI 2024) define it; docs/benchmark.md states them in full:

* A **target** is a limit per request on time to first token, inter-token latency and/or end
  to end, in ms, named for the share of requests that must meet it: ``ttft_p99_ms=1000`` reads
  "99% of requests see their first token within 1,000 ms" (GuideLLM's phrasing).
* A request **meets** the target when it succeeded (no ``error``) and every set limit holds for
  it. Its TTFT is the first content chunk's arrival (for a reply that arrives in one piece, the
  whole reply's arrival: that is when its reader sees the first token); its ITL is its mean gap
  between content chunks, (last - first) / (chunks - 1) (none for a one-piece reply, which then
  passes that limit); its e2e is the last byte. A failed request never meets it.
* A level **holds** when at least 99% of its requests met the target: ``100 x met >= 99 x
  requests``, failed requests included in ``requests`` (SLO attainment).
* **Goodput** = requests that met the target (and their output tokens) per second of the
  level's wall time, per repeat; a level's figure is the mean over its repeats with a 95%
  Student t interval (:func:`agent.bench.analysis.stats.mean_interval`).
* The **SLO capacity** is the highest concurrency that held with every lower level measured
  holding too (the first level that missed bounds it).
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from . import stats
from ..command.argtypes import positive_int, positive_seconds

TARGET_KEYS = ("ttft_p99_ms", "itl_p99_ms", "e2e_p99_ms")
METRIC_OF = {"ttft_p99_ms": "ttft_ms", "itl_p99_ms": "itl_ms", "e2e_p99_ms": "e2e_ms"}
LABEL_OF = {"ttft_p99_ms": "TTFT", "itl_p99_ms": "ITL", "e2e_p99_ms": "e2e"}
ATTAINMENT_PERCENT = 99
"""The share of requests, in percent, that must meet a ``*_p99_ms`` target for a level to hold."""

DEFAULT_TARGET: dict[str, float | None] = {"ttft_p99_ms": 1000.0, "itl_p99_ms": 100.0, "e2e_p99_ms": None}
DEFAULT_BASIS = (
    "interactive chat: the first words within 1 s, the limit within which a user's flow of thought "
    "stays uninterrupted (Nielsen, 'Response Times: The 3 Important Limits', 1993); then a new chunk "
    "at least every 100 ms, i.e. 10 tokens/s or more, about twice as fast as people read (238 words a "
    "minute, Brysbaert 2019, about 5 tokens/s); no end-to-end limit, since that depends on the reply's "
    "length. Looser than GuideLLM's chat-application example (TTFT 200 ms, ITL 50 ms for 99% of "
    "requests), which assumes a server next to its users rather than one reached through a tunnel"
)
EXAMPLE = "e.g. --slo ttft_p99_ms=1000,itl_p99_ms=100"


# --- the target -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """Per-request limits in ms (None = not set) and where they came from (``default`` | ``option``)."""

    ttft_p99_ms: float | None = None
    itl_p99_ms: float | None = None
    e2e_p99_ms: float | None = None
    source: str = "default"

    def limits(self) -> dict[str, float]:
        """The limits that are set: ``{key: ms}``."""
        return {k: v for k, v in self.as_dict().items() if v is not None}

    def as_dict(self) -> dict[str, float | None]:
        return {k: getattr(self, k) for k in TARGET_KEYS}

    def describe(self) -> str:
        """``TTFT <= 1,000 ms and ITL <= 100 ms for 99% of requests``."""
        parts = [f"{LABEL_OF[k]} <= {v:,g} ms" for k, v in self.limits().items()]
        return " and ".join(parts) + f" for {ATTAINMENT_PERCENT}% of requests"

    @classmethod
    def default(cls) -> Target:
        return cls(**DEFAULT_TARGET, source="default")  # type: ignore[arg-type]

    @classmethod
    def from_run(cls, run: Mapping[str, Any]) -> Target:
        """The target recorded in ``run.json`` options (the default for evidence recorded without one)."""
        options = run.get("options") or {}
        given = options.get("slo")
        if not isinstance(given, Mapping):
            return cls.default()
        return cls(**{k: given.get(k) for k in TARGET_KEYS}, source=options.get("slo_source") or "option")


def parse_target(text: str) -> Target:
    """``ttft_p99_ms=1000,itl_p99_ms=100`` as a :class:`Target`; only the keys given are set.

    Raises:
        ValueError: one line naming the problem and what to write instead.
    """
    limits: dict[str, float] = {}
    items = [p.strip() for p in text.split(",") if p.strip()]
    if not items:
        raise ValueError(f"give at least one limit, {EXAMPLE}")
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep:
            raise ValueError(f"{item!r} is not KEY=MS ({EXAMPLE})")
        if key not in TARGET_KEYS:
            raise ValueError(f"unknown limit {key!r}; use {', '.join(TARGET_KEYS)} ({EXAMPLE})")
        if key in limits:
            raise ValueError(f"{key} is given twice")
        try:
            ms = float(value)
        except ValueError:
            raise ValueError(f"{key}={value.strip()!r} is not a number of milliseconds ({EXAMPLE})") from None
        if not math.isfinite(ms) or ms <= 0:
            raise ValueError(f"{key}={value.strip()}: a limit must be a positive, finite number of milliseconds")
        limits[key] = ms
    return Target(**limits, source="option")


def _target_arg(text: str) -> Target:
    try:
        return parse_target(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


DEFAULT_REPEATS_WITH_TARGET = 3
DEFAULT_MAX_CONCURRENCY = 64
DEFAULT_BUDGET_S = 600.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--slo``, ``--repeats``, ``--max-concurrency``, ``--slo-budget`` (``--concurrency auto`` is the runner's)."""
    g = parser.add_argument_group("latency target (SLO capacity, goodput)")
    g.add_argument("--slo", type=_target_arg, metavar="KEY=MS,...",
                   help="the latency target: per-request limits in ms that 99%% of requests must meet, from "
                        f"{', '.join(TARGET_KEYS)} ({EXAMPLE}). Default: ttft_p99_ms=1000,itl_p99_ms=100 "
                        "(interactive chat; the report says why)")
    g.add_argument("--repeats", type=positive_int, metavar="N",
                   help="run every chat concurrency level N times; each figure gets its 95%% interval "
                        f"(default: {DEFAULT_REPEATS_WITH_TARGET} with --slo or --concurrency auto, else 1)")
    g.add_argument("--max-concurrency", type=positive_int, default=DEFAULT_MAX_CONCURRENCY, metavar="N",
                   help=f"highest level --concurrency auto may try (default: {DEFAULT_MAX_CONCURRENCY})")
    g.add_argument("--slo-budget", type=positive_seconds, default=DEFAULT_BUDGET_S, metavar="S",
                   help="seconds per backend for its chat requests and the search; no level or request starts "
                        f"after it, requests in flight finish (default: {DEFAULT_BUDGET_S:.0f})")


# --- one request ----------------------------------------------------------------------------


@dataclass(frozen=True)
class RequestFigures:
    """What one chat record says about the target (ms; None where not measured)."""

    ok: bool
    ttft_ms: float | None
    itl_ms: float | None
    e2e_ms: float | None
    output_tokens: int | None


def request_figures(record: Mapping[str, Any]) -> RequestFigures:
    """TTFT, mean inter-chunk gap and e2e of one chat record, as the target judges them."""
    ok = not record.get("error")
    chunks = [c for c in (record.get("chunk_ms") or []) if c is not None]
    itl = (chunks[-1] - chunks[0]) / (len(chunks) - 1) if ok and len(chunks) >= 2 else None
    tokens = record.get("output_tokens")
    return RequestFigures(
        ok=ok,
        ttft_ms=record.get("first_ms") if ok else None,
        itl_ms=itl,
        e2e_ms=record.get("done_ms") if ok else None,
        output_tokens=tokens if ok and isinstance(tokens, int) else None,
    )


def missed_limits(fig: RequestFigures, target: Target) -> list[str]:
    """The set limits this request missed (``["error"]`` for a failed request); empty = it met the target."""
    if not fig.ok:
        return ["error"]
    out = []
    for key, limit in target.limits().items():
        value = getattr(fig, METRIC_OF[key])
        if value is None:
            if key == "itl_p99_ms":
                continue  # one piece or one chunk: no gap after the first token
            out.append(key)  # not measured: cannot be shown to meet it
        elif value > limit:
            out.append(key)
    return out


def request_met(record: Mapping[str, Any], target: Target) -> bool:
    return not missed_limits(request_figures(record), target)


def attains(met: int, requests: int) -> bool:
    """Whether ``met`` of ``requests`` reach the attainment (99%), in integers: 100 x met >= 99 x n."""
    return requests > 0 and 100 * met >= ATTAINMENT_PERCENT * requests


def allowed_misses(planned: int) -> int:
    """Misses a level of ``planned`` requests can have and still hold: n - ceil(0.99 n) = floor(n / 100)."""
    return planned * (100 - ATTAINMENT_PERCENT) // 100


class LevelTally:
    """Running count of one level's requests while it runs, to stop it once it cannot hold."""

    def __init__(self, target: Target, planned: int) -> None:
        self.target = target
        self.planned = planned
        self.requests = 0
        self.met = 0

    def add(self, record: Mapping[str, Any]) -> None:
        self.requests += 1
        self.met += request_met(record, self.target)

    @property
    def missed(self) -> int:
        return self.requests - self.met

    @property
    def decided_miss(self) -> bool:
        """More requests missed than the planned total allows: the level cannot hold any more."""
        return self.missed > allowed_misses(self.planned)

    @property
    def holds(self) -> bool:
        return self.requests >= self.planned and attains(self.met, self.requests)


# --- one level ------------------------------------------------------------------------------


def repeat_of(record: Mapping[str, Any]) -> int:
    """The record's repeat (1-based); a record without one is repeat 1."""
    return int(record.get("repeat") or 1)


def span_s(records: Iterable[Mapping[str, Any]]) -> float:
    """First send to last byte of a set of requests, in seconds."""
    records = list(records)
    start = min(r["sent_s"] for r in records)
    end = max(r["sent_s"] + (r.get("done_ms") or 0) / 1000.0 for r in records)
    return end - start


def wall_s(records: Iterable[Mapping[str, Any]]) -> float:
    """A level's wall time: the sum over its repeats of each repeat's first send to last byte."""
    by_repeat: dict[int, list[Mapping[str, Any]]] = {}
    for r in records:
        by_repeat.setdefault(repeat_of(r), []).append(r)
    return sum(span_s(rs) for rs in by_repeat.values())


def _rate(count: float, seconds: float) -> float | None:
    return count / seconds if seconds > 0 else None


def _interval(values: Sequence[float | None], digits: int) -> tuple[float | None, list[float] | None]:
    mi = stats.mean_interval([v for v in values if v is not None])
    if mi is None:
        return None, None
    mean, low, high = mi
    return round(mean, digits), [round(low, digits), round(high, digits)]


def _p(values: Sequence[float], p: int) -> float | None:
    v = stats.percentile(values, p)
    return None if v is None else round(v, 3)


def level_block(concurrency: int, records: Sequence[Mapping[str, Any]], target: Target,
                log: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Every figure of one concurrency level under ``target``.

    Args:
        records: the level's chat records (timed and sweep phases, every repeat).
        log: the run's record of this level (planned requests, why it stopped), if any.
    """
    by_repeat: dict[int, list[Mapping[str, Any]]] = {}
    for r in records:
        by_repeat.setdefault(repeat_of(r), []).append(r)
    per_repeat = []
    rates: list[tuple[float | None, float | None, float | None]] = []  # unrounded, for the means
    missed_by: dict[str, int] = {}
    ok_figs: list[RequestFigures] = []
    for k in sorted(by_repeat):
        rs = by_repeat[k]
        met = met_tokens = ok_tokens = errors = 0
        for r in rs:
            fig = request_figures(r)
            missed = missed_limits(fig, target)
            for key in missed:
                missed_by[key] = missed_by.get(key, 0) + 1
            if fig.ok:
                ok_figs.append(fig)
                ok_tokens += fig.output_tokens or 0
            else:
                errors += 1
            if not missed:
                met += 1
                met_tokens += fig.output_tokens or 0
        span = span_s(rs)
        rates.append((_rate(met, span), _rate(met_tokens, span), _rate(ok_tokens, span)))
        per_repeat.append({
            "repeat": k, "requests": len(rs), "errors": errors, "met": met, "wall_s": round(span, 3),
            "goodput_req_per_s": stats.round_or_none(rates[-1][0], 3),
            "goodput_output_tok_per_s": stats.round_or_none(rates[-1][1], 2),
            "output_tok_per_s": stats.round_or_none(rates[-1][2], 2),
        })  # fmt: skip
    requests = sum(p["requests"] for p in per_repeat)
    met = sum(p["met"] for p in per_repeat)
    goodput_req, goodput_req_ci = _interval([r[0] for r in rates], 3)
    goodput_tok, goodput_tok_ci = _interval([r[1] for r in rates], 2)
    output_tok, output_tok_ci = _interval([r[2] for r in rates], 2)
    share_ci = stats.wilson_interval(met, requests)
    planned = (log or {}).get("planned_requests")
    complete = planned is None or requests >= planned
    if complete:
        verdict = "holds" if attains(met, requests) else "misses"
    else:
        verdict = "misses" if requests - met > allowed_misses(planned) else "undecided"
    one_piece = sum(1 for f in ok_figs if f.itl_ms is None)
    ttft = [f.ttft_ms for f in ok_figs if f.ttft_ms is not None]
    itl = [f.itl_ms for f in ok_figs if f.itl_ms is not None]
    e2e = [f.e2e_ms for f in ok_figs if f.e2e_ms is not None]
    return {
        "concurrency": concurrency,
        "repeats": len(per_repeat),
        "requests": requests,
        "errors": sum(p["errors"] for p in per_repeat),
        "met": met,
        "met_share": round(met / requests, 4) if requests else None,
        "goodput_req_per_s": goodput_req,
        "goodput_output_tok_per_s": goodput_tok,
        "output_tok_per_s": output_tok,
        "ttft_p99_ms": _p(ttft, 99),
        "itl_p99_ms": _p(itl, 99),
        "e2e_p99_ms": _p(e2e, 99),
        "ttft_p50_ms": _p(ttft, 50),
        "itl_p50_ms": _p(itl, 50),
        "e2e_p50_ms": _p(e2e, 50),
        "holds": verdict == "holds",
        "verdict": verdict,
        "planned_requests": planned,
        "stopped": (log or {}).get("stopped"),
        "missed_by": dict(sorted(missed_by.items())),
        "one_piece_replies": one_piece,
        "ci95": {
            "goodput_req_per_s": goodput_req_ci,
            "goodput_output_tok_per_s": goodput_tok_ci,
            "output_tok_per_s": output_tok_ci,
            "met_share": None if share_ci is None else [round(share_ci[0], 4), round(share_ci[1], 4)],
        },
        "per_repeat": per_repeat,
    }


# --- capacity -------------------------------------------------------------------------------

NEURON_REASON = (
    "The Neuron server answers one request at a time: its model is a graph compiled ahead of time for "
    "one sequence of fixed shape (batch 1), and requests take turns behind one lock, so a second request "
    "in flight waits for the whole of the first"
)


def capacity_of(levels: Sequence[Mapping[str, Any]]) -> tuple[int | None, int | None]:
    """``(capacity, first level that missed)`` over the decided levels in order of concurrency."""
    capacity = first_miss = None
    for lv in sorted(levels, key=lambda x: x["concurrency"]):
        if lv["verdict"] == "undecided":
            continue
        if lv["verdict"] == "misses":
            first_miss = lv["concurrency"]
            break
        capacity = lv["concurrency"]
    return capacity, first_miss


def _why_missed(lv: Mapping[str, Any], target: Target) -> str:
    parts = [f"{lv['met']}/{lv['requests']} requests met it"]
    by = lv.get("missed_by") or {}
    if by.get("error"):
        parts.append(f"{by['error']} failed")
    for key, limit in target.limits().items():
        if by.get(key):
            value = lv.get(key)
            shown = f", p99 {value:,.0f} ms" if value is not None else ""
            parts.append(f"{by[key]} over the {LABEL_OF[key]} limit of {limit:,g} ms{shown}")
    if by.get("ttft_p99_ms") and lv.get("one_piece_replies"):
        parts.append(f"{lv['one_piece_replies']} replies came in one piece, so their first token came with the last")
    if lv.get("stopped") == "missed":
        parts.append("stopped early once it could no longer hold")
    return "; ".join(parts)


def capacity_reason(levels: Sequence[Mapping[str, Any]], capacity: int | None, first_miss: int | None,
                    target: Target, kind: str, search: Mapping[str, Any]) -> str:
    by_c = {lv["concurrency"]: lv for lv in levels}
    if not levels:
        return "no chat requests were measured"
    if capacity is None:
        if first_miss is None:
            return "no level was measured to the end (the time budget ran out)"
        return f"misses the target even at concurrency {first_miss} ({_why_missed(by_c[first_miss], target)})"
    held = by_c[capacity]
    reason = f"held at {capacity} ({held['met']}/{held['requests']} requests met it)"
    if first_miss is not None:
        reason += f"; missed at {first_miss} ({_why_missed(by_c[first_miss], target)})"
        if first_miss - capacity > 1:
            reason += (f". Levels {capacity + 1} to {first_miss - 1} were not measured, so the capacity lies "
                       f"between {capacity} and {first_miss - 1}")
        later = [c for c, lv in sorted(by_c.items()) if c > first_miss and lv["verdict"] == "holds"]
        if later:
            reason += (f". Level(s) {', '.join(map(str, later))} held after {first_miss} missed; the capacity "
                       "is taken below the first miss")
    else:
        why = {"max_concurrency": "--max-concurrency", "max_levels": f"the {search.get('max_levels')}-level limit of the search",
               "budget": "the time budget"}.get(str(search.get("stopped")))
        reason += "; every level measured held" + (f", up to {why}" if why else "")
        reason += ", so the real capacity may be higher"
    if kind == "neuron" and capacity == 1:
        reason += f". {NEURON_REASON}."
    elif kind == "neuron":
        reason += (". Note: the Neuron server is documented as serving one request at a time; this run "
                   "measured more")
    return reason


# --- the block of one backend ---------------------------------------------------------------


def chat_levels(records: Iterable[Mapping[str, Any]]) -> dict[int, list[Mapping[str, Any]]]:
    """The timed and sweep chat records of one backend by concurrency (the cold request is apart)."""
    out: dict[int, list[Mapping[str, Any]]] = {}
    for r in records:
        if r.get("phase") in ("timed", "sweep"):
            out.setdefault(int(r.get("concurrency", 1)), []).append(r)
    return out


def slo_block(records: Sequence[Mapping[str, Any]], run: Mapping[str, Any],
              backend: Mapping[str, Any]) -> dict[str, Any] | None:
    """``summary.json`` ``backends.<name>.slo`` from the backend's chat records and ``run.json``."""
    by_level = chat_levels(records)
    if not by_level:
        return None
    target = Target.from_run(run)
    log = ((run.get("slo_search") or {}).get(backend["name"])) or {}
    level_logs = {int(e["concurrency"]): e for e in log.get("levels") or []}
    levels = [level_block(c, by_level[c], target, level_logs.get(c)) for c in sorted(by_level)]
    capacity, first_miss = capacity_of(levels)
    order = [int(c) for c in log.get("order") or sorted(by_level)]
    search = {
        "mode": log.get("mode", "levels"),
        "rule": log.get("rule") or "the levels given with --concurrency, each measured in full",
        "order": order,
        "levels_measured": len(levels),
        "max_concurrency": log.get("max_concurrency"),
        "max_levels": log.get("max_levels"),
        "budget_s": log.get("budget_s"),
        "seconds": log.get("seconds"),
        "stopped": log.get("stopped"),
        "bracket": [capacity, first_miss],
        "exact": first_miss is not None and (capacity or 0) + 1 == first_miss,
    }
    return {
        "target": target.as_dict(),
        "target_source": target.source,
        "target_text": target.describe(),
        "target_basis": DEFAULT_BASIS if target.source == "default" else "set with --slo",
        "attainment": ATTAINMENT_PERCENT / 100,
        "capacity_concurrency": capacity,
        "capacity_reason": capacity_reason(levels, capacity, first_miss, target, backend.get("kind", ""), search),
        "search": search,
        "levels": levels,
    }


def at_capacity(block: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The level at a backend's SLO capacity, or None."""
    if not block or block.get("capacity_concurrency") is None:
        return None
    return next((lv for lv in block.get("levels") or [] if lv.get("concurrency") == block["capacity_concurrency"]),
                None)


def slo_pairs(backends: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every two backends compared on goodput (output tok/s) at their SLO capacity.

    A backend that misses the target at its lowest level loses to one that holds somewhere. Two
    that both hold are ranked only when their 95% intervals do not overlap (else ``tie``), and
    only with at least two repeats each (else ``thin``: one repeat gives no interval).
    """
    names = [n for n, b in backends.items() if b.get("slo")]
    out = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            la, lb = at_capacity(backends[a]["slo"]), at_capacity(backends[b]["slo"])
            row: dict[str, Any] = {
                "a": a, "b": b, "figure": "goodput_output_tok_per_s at SLO capacity",
                "a_capacity": backends[a]["slo"]["capacity_concurrency"],
                "b_capacity": backends[b]["slo"]["capacity_concurrency"],
                "a_value": la and la["goodput_output_tok_per_s"], "b_value": lb and lb["goodput_output_tok_per_s"],
                "a_ci95": la and la["ci95"]["goodput_output_tok_per_s"],
                "b_ci95": lb and lb["ci95"]["goodput_output_tok_per_s"],
            }  # fmt: skip
            row.update(_verdict(a, b, la, lb))
            out.append(row)
    return out


def _verdict(a: str, b: str, la: Mapping[str, Any] | None, lb: Mapping[str, Any] | None) -> dict[str, Any]:
    if la is None and lb is None:
        return {"verdict": "neither", "better": None, "reason": "neither meets the target at any level measured"}
    if la is None or lb is None:
        better = b if la is None else a
        return {"verdict": "b" if la is None else "a", "better": better,
                "reason": f"only {better} meets the target at some level"}
    if min(la["repeats"], lb["repeats"]) < 2 or not la["ci95"]["goodput_output_tok_per_s"] \
            or not lb["ci95"]["goodput_output_tok_per_s"]:
        return {"verdict": "thin", "better": None,
                "reason": "fewer than two repeats at a capacity level: no interval, not ranked"}
    ia, ib = la["ci95"]["goodput_output_tok_per_s"], lb["ci95"]["goodput_output_tok_per_s"]
    if stats.intervals_overlap((ia[0], ia[1]), (ib[0], ib[1])):
        return {"verdict": "tie", "better": None, "reason": "the 95% intervals overlap"}
    better = a if la["goodput_output_tok_per_s"] > lb["goodput_output_tok_per_s"] else b
    return {"verdict": "a" if better == a else "b", "better": better,
            "reason": "the 95% intervals do not overlap"}
