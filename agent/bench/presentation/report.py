"""``REPORT.md`` and its plots, rendered from ``summary.json`` only.

Nothing is computed here that is not in the summary: the report formats figures, it does not
make them (a test renders the report again from ``summary.json`` and compares).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from . import bfcl_report, cost_plot, slo_report, which_one
from .markdown import table
from ..analysis.stats import PERCENTILE_METHOD

PLOTS = {
    "decode": "decode_tok_per_s.png",
    "cost": "usd_per_m_output.png",
    "ttft": "ttft_ms.png",
}

METHODS = [
    ("TTFT", "arrival of the first chunk carrying content minus the moment the request was sent "
             "(client clock, `time.perf_counter`, timestamped on receipt)"),
    ("ITL", "gaps between successive content chunks, first token excluded, pooled over all timed requests; "
            "a chunk may carry more than one token"),
    ("e2e", "last byte of the response minus the send time"),
    ("decode tok/s", "(output tokens - tokens of the first arrival) / (last arrival - first arrival), per "
                     "request, where an arrival is one network read (chunks read together share its time); with "
                     "one token per chunk this is (output tokens - 1) / (last chunk - first chunk). Output tokens "
                     "from the server's usage, never from counting chunks; the first arrival's tokens counted from "
                     "its events when usage shows one token per event, else estimated from its share of the "
                     "characters. A reply is *multi-token* when its arrivals carried more than 2 tokens on average or "
                     "its events several tokens: its arrival times follow buffering, not decoding. A backend's "
                     "decode figures come from its per-token replies; only when every reply was multi-token are "
                     "they multi-token ones, marked so, not comparable with per-token streams and kept out of the "
                     "bandwidth-ceiling share; empty for a non-streamed reply"),
    ("client tok/s", "output tokens / e2e (the reference's figure: prefill and network included)"),
    ("aggregate tok/s", "at each concurrency level, the output tokens of its successful requests / their wall "
                        "time (first send to last byte), exactly c requests in flight; empty when a successful "
                        "request has no usage count"),
    ("requests/s", "successful requests of a level / the same wall time"),
    ("failed request", "HTTP error, timeout, refused or dropped connection, an error event in the stream, a "
                       "stream cut off with neither a finish reason nor its end marker, finish reason abort or "
                       "error (or a content filter), an event that is not a chat-completion chunk, an empty "
                       "completion, 200 OK with zero tokens. No figure is computed from a failed request; its "
                       "count is beside every figure"),
    ("resends", "a request written on a reused keep-alive connection that the server had already closed is "
                "sent once more on a new connection with a fresh clock; each resend is counted"),
    ("cold", "the first request a backend got in this run (the untimed warm-up), reported apart from the "
             "timed ones"),
    ("percentiles", PERCENTILE_METHOD),
    ("$ per M output", "$/h / (aggregate output tok/s x 3600) x 1e6, at each measured concurrency; Bedrock: "
                       "output $/M + (input tokens per output token) x input $/M"),
    ("24x7 monthly", "$/h x 730 h"),
    ("break-even", "$/h / (Bedrock $ per output token x 3600): the sustained output tok/s above which the rig "
                   "is cheaper; monthly tokens = that rate x 3600 x 730; shown output-only and at the "
                   "measured input:output mix of the rig's own chat requests"),
    ("ceiling", "device bandwidth / bytes streamed per decode step (batch 1, KV reads ignored); per-core "
                "bandwidth for a single-NeuronCore graph; share = measured decode p50 / ceiling"),
    ("failed (agent run)", "the run raised (timeout, transport error, max_tokens) or its reply was empty; it gets "
                           "no grade and is counted apart from the graded runs"),
    ("correct", "the count the final answer states equals the true count; the count is read from the numbers that "
                "can only be counts (thresholds, ranges, id lists, tool arguments, the restated table size, negated "
                "numbers and counts of the other ids are set aside; corrections are followed); 95% Wilson interval "
                "over the graded runs"),
    ("unreadable", "no single count can be read with confidence (none stated, conflicting counts, a hedged count); "
                   "its own verdict, never a wrong count"),
    ("right filter", "the call the final answer relied on, the last valid count_ids call (known op, integer value, "
                     "no missing or extra argument), selects exactly the true id set; first call right and the "
                     "number of distinct filters tried are shown beside it"),
    ("text tool calls", "one per tool call written as text instead of being made; a text that describes a call the "
                        "model really made (same tool, same arguments) is not one"),
]


def _f(value: Any, digits: int = 1, unit: str = "") -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}{unit}"
    if isinstance(value, float):
        return f"{value:,.{digits}f}{unit}"
    return str(value)


def _pcts(dist: Mapping[str, Any] | None, digits: int = 1) -> str:
    if not dist or not dist.get("n"):
        return "-"
    return f"{_f(dist['p50'], digits)} / {_f(dist['p90'], digits)} / {_f(dist['p99'], digits)}"


def _name(summary: Mapping[str, Any], name: str) -> str:
    b = summary["backends"].get(name, {})
    tags = []
    if b.get("constrained"):
        tags.append("constrained")
    if b.get("toy_model"):
        tags.append("CPU toy model")
    if b.get("custom"):
        tags.append("custom server")
    return f"{name} ({', '.join(tags)})" if tags else name


def _grade(block: Mapping[str, Any] | None, key: str, interval: bool = False, failed: bool = True) -> str:
    """``k/n`` over the graded (not failed) runs, with its 95% interval and the failed runs beside
    it when asked."""
    if not block or block.get(key) is None:
        return "-"
    ci = f" [{_ci(block.get(f'{key}_ci95'))}]" if interval and block.get(f"{key}_ci95") else ""
    apart = f" ({block['errors']} failed)" if failed and block.get("errors") else ""
    return f"{block[key]}/{block['graded']}{ci}{apart}"


def _ci(interval: Sequence[float] | None) -> str:
    return "-" if not interval else f"{interval[0] * 100:.0f}-{interval[1] * 100:.0f}%"


def plot_names(summary: Mapping[str, Any]) -> dict[str, str]:
    """The plots :func:`make_plots` draws for ``summary``: ``{key: file name}``."""
    backends = summary["backends"]
    out: dict[str, str] = {}
    if any(b.get("chat") and b["chat"]["decode_tok_per_s"]["n"] for b in backends.values()):
        out["decode"] = PLOTS["decode"]
    if any(lv["usd_per_m_output"] is not None for b in backends.values() for lv in b["cost"]["per_concurrency"]):
        out["cost"] = PLOTS["cost"]
    if any(b.get("chat") and b["chat"]["ttft_ms"].get("values") for b in backends.values()):
        out["ttft"] = PLOTS["ttft"]
    out.update(slo_report.plot_names(summary))
    return out


def render(summary: Mapping[str, Any]) -> str:
    """The whole REPORT.md as text."""
    plots = plot_names(summary)
    run = summary["run"]
    backends: Mapping[str, Any] = summary["backends"]
    names = list(backends)
    out: list[str] = ["# Benchmark report", ""]
    out += [
        f"- Started: {run.get('started')}; finished: {run.get('finished') or 'not finished'}",
        f"- Git: `{run.get('git_sha') or 'unknown'}`",
        "- Versions: " + ", ".join(f"{k} {v}" for k, v in (run.get("versions") or {}).items()),
        f"- Options: {_options(run.get('options') or {})}",
        f"- Agent model settings (explicit timeouts and retries): {_options(run.get('settings') or {})}",
        f"- Percentiles: {PERCENTILE_METHOD}",
    ]
    if run.get("interrupted"):
        out.append("- **Interrupted**: this run was stopped early; figures cover what finished.")
    for note in run.get("notes") or []:
        out.append(f"- {note}")
    for name in names:
        b = backends[name]
        if b.get("toy_model"):
            out.append(f"- **{name}: figures come from a CPU-served toy model ({b['model_id']}), not from "
                       "accelerator hardware. They show that the harness works, not how fast a real rig is.**")
        if b.get("constrained"):
            out.append(f"- **{name}: constrained tool use.** Its first agent turn is a JSON-schema-constrained "
                       "choice among the tools made by the server's grammar, not the model's own tool call. "
                       "The grader still judges the filter it picked.")
    out.append("")
    out += which_one.section(summary)

    out += ["## Scoreboard", ""]
    rows = []
    for name in names:
        b = backends[name]
        chat, cnt, strict, cost = b.get("chat"), b.get("counting"), b.get("counting_strict"), b.get("cost") or {}
        c1 = next((lv for lv in cost.get("per_concurrency", []) if lv["concurrency"] == 1), None)
        rows.append([
            _name(summary, name),
            _decode_p50(chat),
            _f(chat["ttft_ms"]["p50"]) if chat else "-",
            _f(chat["e2e_ms"]["p50"], 0) if chat else "-",
            _f(chat["client_tok_per_s"]["p50"]) if chat else "-",
            _grade(cnt, "correct", interval=True),
            _grade(cnt, "right_filter", interval=True),
            _grade(strict, "correct", interval=True),
            _grade(strict, "right_filter", interval=True),
            _f(c1["usd_per_m_output"], 2) if c1 else "-",
            "yes" if b.get("completed") else "**no**",
        ])
    out += table(["backend", "decode tok/s p50", "TTFT ms p50", "e2e ms p50", "client tok/s p50",
                   "correct", "right filter", "strict correct", "strict right filter", "$/M out (c=1)",
                   "completed"], rows)
    out.append("")
    failures = [(n, f) for n in names for f in backends[n].get("failures") or []]
    if failures:
        out += ["Failures:", ""] + [f"- {n}: {f}" for n, f in failures] + [""]
    skipped = [(n, p, r) for n in names for p, r in (backends[n].get("skipped") or {}).items()]
    if skipped:
        out += ["Not run:", ""] + [f"- {n} {p}: {r}" for n, p, r in skipped] + [""]

    out += _grading(summary)
    out += bfcl_report.section(summary, _name)
    out += _orchestrator(summary)
    out += _chat(summary)
    out += slo_report.section(summary, _name)
    out += _cost(summary)
    out += _ceiling(summary)
    out += _metadata(summary)
    if plots:
        out += ["## Plots", ""]
        titles = {"decode": "Decode rate by backend", "cost": "$ per million output tokens",
                  "ttft": "TTFT distribution", "slo": "Latency p99 against concurrency, with the target"}
        for key, file in plots.items():
            out += [f"![{titles.get(key, key)}]({file})", ""]
    out += ["## How each figure is computed", ""]
    out += [f"- **{k}**: {v}" for k, v in METHODS]
    out += ["", "Every figure above is computed from `summary.json`, which is computed from `requests.jsonl` "
            "and `run.json` (`agent/bench/analysis/summary.py`).", ""]
    return "\n".join(out)


def _options(options: Mapping[str, Any]) -> str:
    """``key=value`` pairs; a list as ``a,b``, a mapping as ``(k=v; ...)`` without its unset keys."""

    def text(value: Any) -> str:
        if isinstance(value, list):
            return ",".join(map(str, value))
        if isinstance(value, Mapping):
            return "(" + "; ".join(f"{k}={text(v)}" for k, v in value.items() if v is not None) + ")"
        return str(value)

    return ", ".join(f"{k}={text(v)}" for k, v in options.items())


def _grading(summary: Mapping[str, Any]) -> list[str]:
    backends = summary["backends"]
    out = ["## Counting (graded tool use)", ""]
    for part, title in (("counting", "Reference question set"), ("counting_strict", "Strict question set")):
        blocks = {n: b[part] for n, b in backends.items() if b.get(part)}
        if not blocks:
            continue
        first = next(iter(blocks.values()))
        out += [f"### {title}", "",
                f"Question: \"{first['question']}\" Ids: {first['ids']}. True answer: {first['truth']} "
                f"({first['truth_filter']}). Tools: {first['tools']}.", ""]
        if part == "counting":
            out += ["The reference's ids have a gap from 4 to 9, so any threshold from `id > 3` to `id >= 10` "
                    "selects the same ids and grades as the right filter here; the strict set below closes it.",
                    ""]
        else:
            out += ["Every id from 0 to 14 is present, so only `id >= 10` (or its integer twin `id > 9`) "
                    "selects the true ids.", ""]
        rows = []
        for n, c in blocks.items():
            rows.append([_name(summary, n), c["runs"], c["errors"], _grade(c, "correct", failed=False),
                         _ci(c.get("correct_ci95")), c["wrong"], c["unreadable"],
                         _grade(c, "right_filter", failed=False), _ci(c.get("right_filter_ci95")),
                         _grade(c, "first_call_right", failed=False), c["several_filters"], c["tool_calls"], c["invalid_tool_calls"],
                         c["text_tool_calls"],
                         ", ".join(f"`{k}` x{v}" for k, v in c["filters_sent"].items()) or "-",
                         _f(c["seconds"]["p50"], 2)])
        out += table(["backend", "runs", "failed", "correct", "correct 95% CI", "wrong", "unreadable",
                       "right filter", "right filter 95% CI", "first call right", "runs with several filters",
                       "tool calls", "invalid calls", "text tool calls", "filters sent", "s p50"], rows)
        out += ["", "Correct, right filter and first call right count the graded runs (failed runs apart); "
                "95% CI: Wilson score interval.", ""]
        rows = []
        for n, c in blocks.items():
            for d in c["detail"]:
                rows.append([_name(summary, n), d["run"], _f(d.get("seq")), d["verdict"],
                             _f(d["quoted"]), d["reading"][:120], _f(d.get("last_filter")),
                             _f(d["right_filter"]), _f(d.get("first_call_right")), d.get("distinct_filters", "-"),
                             " ".join(d["answer"].split())[-120:] or "-"])
        out += ["Every run, with the record it came from (`seq` in requests.jsonl):", ""]
        out += table(["backend", "run", "seq", "verdict", "count read", "how it was read / why not", "last filter",
                       "right filter", "first call right", "filters tried", "answer (end)"], rows)
        out.append("")
        for n, c in blocks.items():
            for call in c["invalid_calls"]:
                out.append(f"- {n} run {call['run']}: invalid call `{call['name']}({_args(call['input'])})`: "
                           f"{call['reason']}")
            for t in c["text_calls"]:
                out.append(f"- {n} run {t['run']}: tool call written as text instead of being made: "
                           f"`{t['snippet'][:120]}`")
        out.append("")
    return out


def _args(value: Any) -> str:
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={v!r}" for k, v in value.items())
    return repr(value)


def _orchestrator(summary: Mapping[str, Any]) -> list[str]:
    o = summary["orchestrator"]
    out = ["## Orchestrator (is the summary true?)", ""]
    if not o.get("ran"):
        out += [f"Not run: {o.get('reason') or 'not selected'}.", ""]
        return out
    label = " (constrained)" if o.get("constrained") else ""
    out += [
        f"- Orchestrator: {o['backend']}{label}; {len(o['asks'])} ask calls; asked: {', '.join(o['asked']) or 'none'}",
        f"- Not asked: {', '.join(o['not_asked']) or 'none'}",
        f"- Measured winner (fastest successful ask): {o['winner_measured'] or '-'}",
        f"- Structured answer (`submit_summary`, checked in code): {_submitted(o)}",
        f"- Winner: {_verdict(o)}",
        f"- Winner named in the free text: {_text_winner(o)}",
    ]
    if o.get("text_disagrees"):
        out.append(f"- **The free text and the structured answer disagree**: the text names {o['winner_claimed']}, "
                   f"the submitted winner is {o['winner_submitted']}.")
    out.append(f"- Quoted table in the free text: {o['table_quote']} (matches the scoreboard: "
               f"{'yes' if o['table_matches'] else 'no'}; scoreboard called: {'yes' if o.get('scoreboard_called') else 'no'})")
    if o.get("failure"):
        out.append(f"- **Failed run** (no grade): {o['failure']}")
    if o.get("follow_up_error"):
        out.append(f"- Follow-up turn failed: {o['follow_up_error']}")
    if o.get("constrained"):
        out.append("- Constrained mode: each agent run makes one schema-constrained tool choice; the structured answer "
                   "comes from a follow-up turn whose choice the grammar limits to `submit_summary` with an offered "
                   "backend as winner.")
    out += ["", "The scoreboard computed in code:", ""]
    out += (o.get("scoreboard") or "(the agent never called scoreboard)").splitlines()
    out += ["", "The agent's reply:", ""]
    out += ["> " + ln for ln in (o.get("reply") or "(no reply)").splitlines()] + [""]
    if o.get("follow_up_reply"):
        out += ["Its reply after the follow-up turn:", ""]
        out += ["> " + ln for ln in o["follow_up_reply"].splitlines()] + [""]
    return out


def _submitted(o: Mapping[str, Any]) -> str:
    if not o.get("submitted"):
        return "not submitted"
    where = "in the run" if o.get("submitted_via") == "run" else "in the follow-up turn"
    return (f"submitted {where}: winner `{o.get('winner_submitted_raw')}`, table {o.get('submitted_table_quote')} "
            "against the scoreboard")


def _verdict(o: Mapping[str, Any]) -> str:
    verdict = o.get("winner_verdict")
    if verdict == "wrong":
        return (f"**wrong: the agent submitted {o['winner_submitted']}, the scoreboard puts "
                f"{o['winner_measured']} first**")
    if verdict == "right":
        return f"right ({o['winner_submitted']})"
    if verdict == "unclear":
        return "unclear: the submitted winner names no offered backend (not graded wrong)"
    return str(verdict)


def _text_winner(o: Mapping[str, Any]) -> str:
    status = o.get("winner_text")
    if status == "named":
        return str(o["winner_claimed"])
    if status == "unclear":
        return "unclear (it names more than one backend as the winner)"
    return "none named"


def _decode_p50(chat: Mapping[str, Any] | None) -> str:
    if not chat or chat["decode_tok_per_s"]["p50"] is None:
        return "-"
    value = _f(chat["decode_tok_per_s"]["p50"])
    return value if chat.get("decode_comparable") else f"{value} (multi-token)"


def _chat(summary: Mapping[str, Any]) -> list[str]:
    backends = summary["backends"]
    out = ["## Chat benchmark", ""]
    blocks = {n: b["chat"] for n, b in backends.items() if b.get("chat")}
    if not blocks:
        return out + ["Not run.", ""]
    out += ["p50 / p90 / p99; n = timed requests at concurrency 1 (the cold request is apart). Failed requests "
            "are counted under errors and left out of every figure.", ""]
    rows = []
    for n, c in blocks.items():
        rows.append([_name(summary, n), c["requests"], c["errors"], "yes" if c["streamed"] else "no",
                     _pcts(c["ttft_ms"]), _pcts(c["itl_ms"], 2), _pcts(c["e2e_ms"], 0),
                     _pcts(c["decode_tok_per_s"]), _pcts(c["client_tok_per_s"]),
                     _requested_returned(c),
                     c["usage_missing"]])
    out += table(["backend", "n", "errors", "streamed", "TTFT ms", "ITL ms", "e2e ms", "decode tok/s",
                   "client tok/s", "tokens requested / returned", "usage missing"], rows)
    out += [""] + [f"- {_name(summary, n)}: decode tok/s {_decode_basis(c)}" for n, c in blocks.items()]
    out += ["", "Cold (first) request:", ""]
    rows = [[_name(summary, n), _f(c["cold"]["ttft_ms"]), _f(c["cold"]["e2e_ms"], 0), _f(c["cold"]["output_tokens"]),
             c["cold"]["error"] or "-"] for n, c in blocks.items() if c.get("cold")]
    out += table(["backend", "TTFT ms", "e2e ms", "output tokens", "error"], rows)
    out += ["", "Aggregate output rate per concurrency level (successful requests only):", ""]
    rows = [[_name(summary, n), lv["concurrency"], lv["requests"], lv["errors"], lv.get("resends", 0),
             _f(lv["wall_s"], 2), _f(lv["output_tok_per_s"]), _f(lv["requests_per_s"], 2)]
            for n, c in blocks.items() for lv in c["levels"]]
    out += table(["backend", "concurrency", "requests", "errors", "resends", "wall s", "output tok/s",
                   "requests/s"], rows)
    resent = [(n, c) for n, c in blocks.items() if c.get("resends")]
    if resent:
        out += ["", "Resends (a reused connection the server had closed; sent again on a new one, fresh clock):", ""]
        out += [f"- {n}: {c['resends']} resent; {c.get('new_connections', 0)} requests went out on a new connection"
                for n, c in resent]
    reasons = [(n, r, k) for n, c in blocks.items() for r, k in c["error_reasons"].items()]
    if reasons:
        out += ["", "Errors:", ""] + [f"- {n}: {r} (x{k})" for n, r, k in reasons]
    out.append("")
    return out


def _decode_basis(c: Mapping[str, Any]) -> str:
    basis = c.get("decode_basis") or {}
    if not basis:
        return "not measured (no streamed reply with a decode interval and a usage count)"
    multi = basis.get("multi_token", 0)
    if c.get("decode_comparable"):
        left_out = f"; {multi} repl{'y' if multi == 1 else 'ies'} that came in multi-token chunks left out" if multi else ""
        return f"from {basis['per_token']} replies in per-token chunks: comparable{left_out}"
    return (f"from {multi} replies in multi-token chunks: the first arrival's tokens are left out of each rate, "
            "but arrival times follow the server's or relay's buffering, so these figures are not comparable with "
            "per-token streams and stay out of the bandwidth-ceiling share")


def _requested_returned(c: Mapping[str, Any]) -> str:
    d = c["output_tokens"]
    if not d.get("n"):
        return f"{c['requested_tokens']} / -"
    spread = f"{_f(d['min'], 0)}-{_f(d['max'], 0)}"
    short = f", {c['returned_short']} short" if c.get("returned_short") else ""
    return f"{c['requested_tokens']} / {_f(d['p50'], 0)} ({spread}{short})"


def _cost(summary: Mapping[str, Any]) -> list[str]:
    backends = summary["backends"]
    prices = summary.get("prices") or {}
    out = ["## Cost", ""]
    if prices.get("offline"):
        out += [f"**Prices come from the dated offline price file** ({prices.get('offline_reason') or 'offline'}), "
                "not from the Pricing API.", ""]
    rows = []
    for n, b in backends.items():
        p = (prices.get("backends") or {}).get(n) or {}
        price = p.get("hourly") or p.get("per_token")
        if not price:
            rows.append([_name(summary, n), "-", "-", "-", p.get("reason") or b["cost"].get("reason") or "-"])
            continue
        what = (f"${price['usd_per_hour']}/h {price.get('instance_type', '')}" if "usd_per_hour" in price
                else f"${price['usd_per_m_input']}/M in, ${price['usd_per_m_output']}/M out")
        rows.append([_name(summary, n), what, price.get("source"), price.get("as_of"),
                     f"{price.get('region', '')} {price.get('note', '')}".strip() or "-"])
    out += table(["backend", "price", "source", "as of", "region / note"], rows)
    ref = prices.get("bedrock_reference")
    if ref:
        out += ["", f"Break-even is against Bedrock {ref.get('model_id')}: ${ref['usd_per_m_input']}/M input, "
                f"${ref['usd_per_m_output']}/M output ({ref.get('source')}, as of {ref.get('as_of')})."]
    out += [""]
    rows = []
    for n, b in backends.items():
        cost = b["cost"]
        for lv in cost["per_concurrency"]:
            rows.append([_name(summary, n), lv["concurrency"], _f(lv["output_tok_per_s"]),
                         _f(lv["usd_per_m_output"], 3)])
    if rows:
        out += table(["backend", "concurrency", "output tok/s", "$ per M output tokens"], rows) + [""]
    rows = []
    for n, b in backends.items():
        cost = b["cost"]
        if cost.get("monthly_24x7_usd") is None:
            continue
        be = cost.get("break_even") or {}
        for r in be.get("rows") or [{}]:
            rows.append([_name(summary, n), _f(cost["usd_per_hour"], 4), _f(cost["monthly_24x7_usd"], 2),
                         r.get("mix", "-"), _f(r.get("input_per_output"), 3),
                         _f(r.get("bedrock_usd_per_m_output_effective"), 4), _f(r.get("output_tok_per_s")),
                         _f(r.get("monthly_output_tokens"))])
    if rows:
        out += ["24x7 monthly cost and break-even against Bedrock (input:output mix stated per row):", ""]
        out += table(["backend", "$/h", "24x7 $/month (730 h)", "mix", "input tokens per output token",
                       "Bedrock $/M output at that mix", "break-even output tok/s", "break-even tokens/month"],
                      rows) + [""]
    return out


def _ceiling(summary: Mapping[str, Any]) -> list[str]:
    out = ["## Bandwidth ceiling", ""]
    rows, sources = [], []
    for n, b in summary["backends"].items():
        c = b["ceiling"]
        rows.append([_name(summary, n), c.get("device") or "-", _f(c.get("bandwidth_gb_s"), 0),
                     c.get("bandwidth_basis") or "-", c.get("precision") or "-", _f(c.get("bytes_per_step_gb"), 2),
                     _f(c.get("ceiling_tok_per_s")), _f(c.get("measured_decode_tok_per_s")),
                     "-" if c.get("share") is None else f"{c['share'] * 100:.0f}%",
                     "-" if c.get("chip_share") is None else f"{c['chip_share'] * 100:.0f}%",
                     c.get("reason") or ""])
        sources += [s for s in c.get("sources") or [] if s not in sources]
    out += table(["backend", "device", "GB/s", "basis", "precision", "GB per step", "ceiling tok/s",
                   "measured decode p50", "share", "share of whole chip", "note"], rows)
    out += ["", "Sources:", ""] + [f"- {s}" for s in sources] + [""]
    return out


def _metadata(summary: Mapping[str, Any]) -> list[str]:
    out = ["## Backends and run metadata", ""]
    rows = []
    for b in summary["run"].get("backends", []):
        meta = b.get("metadata") or {}
        rows.append([b["name"], b["label"], b["kind"], b["model_id"],
                     "; ".join(f"{k}: {v}" for k, v in meta.items()) or "-"])
    out += table(["backend", "label", "kind", "model", "metadata (instance, region, zone, AMI, image, engine, "
                   "serve flags, how reached)"], rows)
    out.append("")
    return out


def make_plots(summary: Mapping[str, Any], out_dir: Path) -> dict[str, str]:
    """Draw the three PNG plots into ``out_dir``; returns ``{key: file name}`` of those drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    backends = summary["backends"]
    drawn: dict[str, str] = {}
    chat = {n: b["chat"] for n, b in backends.items() if b.get("chat") and b["chat"]["decode_tok_per_s"]["n"]}
    if chat:
        fig, ax = plt.subplots(figsize=(7, 3.8))
        names = list(chat)
        p50 = [chat[n]["decode_tok_per_s"]["p50"] for n in names]
        lo = [p - chat[n]["decode_tok_per_s"]["min"] for n, p in zip(names, p50)]
        hi = [chat[n]["decode_tok_per_s"]["max"] - p for n, p in zip(names, p50)]
        ax.bar([_name(summary, n) for n in names], p50, yerr=[lo, hi], capsize=4, color="#4C72B0")
        ax.set_ylabel("decode tok/s (p50, min-max)")
        ax.set_title("Decode rate by backend")
        fig.tight_layout()
        fig.savefig(out_dir / PLOTS["decode"], dpi=110)
        plt.close(fig)
        drawn["decode"] = PLOTS["decode"]
    cost_rows = [(n, lv) for n, b in backends.items() for lv in b["cost"]["per_concurrency"]
                 if lv["usd_per_m_output"] is not None]
    if cost_rows:
        fig, ax = plt.subplots(figsize=(7, 3.8))
        labels = [f"{_name(summary, n)}\nc={lv['concurrency']}" for n, lv in cost_rows]
        ax.bar(labels, [lv["usd_per_m_output"] for _, lv in cost_rows], color="#55A868")
        ax.set_ylabel("$ per million output tokens")
        ax.set_title("$ per million output tokens, by concurrency")
        fig.tight_layout()
        fig.savefig(out_dir / PLOTS["cost"], dpi=110)
        plt.close(fig)
        drawn["cost"] = PLOTS["cost"]
    ttft = {n: b["chat"]["ttft_ms"]["values"] for n, b in backends.items()
            if b.get("chat") and b["chat"]["ttft_ms"].get("values")}
    if ttft:
        fig, ax = plt.subplots(figsize=(7, 3.8))
        ax.boxplot(list(ttft.values()), showfliers=True)
        ax.set_xticks(range(1, len(ttft) + 1), [_name(summary, n) for n in ttft])
        for i, values in enumerate(ttft.values(), start=1):
            ax.plot([i] * len(values), values, "o", alpha=0.5, color="#C44E52", markersize=4)
        ax.set_ylabel("TTFT ms")
        ax.set_title("Time to first token, timed requests")
        fig.tight_layout()
        fig.savefig(out_dir / PLOTS["ttft"], dpi=110)
        plt.close(fig)
        drawn["ttft"] = PLOTS["ttft"]
    drawn.update(cost_plot.draw(summary, out_dir))
    drawn.update(slo_report.make_plot(summary, out_dir, _name))
    return drawn
