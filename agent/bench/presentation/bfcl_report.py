"""The BFCL section of ``REPORT.md``, rendered from ``summary.json`` only."""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from ..tasks.bfcl_cases import CATEGORIES
from .markdown import table

SAME_WEIGHTS = ("g6", "sagemaker")
"""Two backends that serve the same weights with the same tool parser (vLLM, ``gemma4``)."""
LISTED = 10
"""Wrong answers listed per backend (the rest are in ``summary.json``)."""

METHOD = [
    "Cases: a seeded sample of the Berkeley Function Calling Leaderboard's non-live Python categories "
    "(`bfcl-eval`'s own files), the same cases for every backend, drawn evenly across the categories.",
    "Each case is sent through the backend's own tool interface: the OpenAI `tools` field for vLLM and "
    "llama.cpp (the server's tool parser makes the calls), Converse `toolConfig` for Bedrock, the same "
    "OpenAI payload through `InvokeEndpoint` for SageMaker (streamed with `--bfcl-stream`, `ConverseStream` on "
    "Bedrock). Tool names have `.` replaced by `_` (as "
    "BFCL's own OpenAI handler does).",
    "Grade: BFCL's AST checker on the calls made (not on the text); an irrelevance case is right when "
    "no call is made. Accuracy is over the cases a backend answered; a failed request is an error, "
    "counted apart and never graded.",
    "Call written as text: no call made, and the text names an offered function followed by `(`, or "
    "holds a JSON `\"name\": \"<function>\"` or a tool-call marker (the same detector as the counting grade).",
    "Intervals: 95% Wilson score. Pairs: McNemar's exact test on the cases both backends answered; "
    "p < 0.05 is called a measurable difference (each pair on its own, no correction for the number "
    "of pairs).",
]


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def _rate(block: Mapping[str, Any] | None) -> str:
    if not block or not block.get("cases"):
        return "-"
    return (f"{block['correct']}/{block['cases']} = {_pct(block['accuracy'])} "
            f"({_pct(block['ci95_low'])}-{_pct(block['ci95_high'])})")


def _share(k: int, n: int) -> str:
    return f"{k}/{n} ({_pct(k / n)})" if n else "-"


def section(summary: Mapping[str, Any], name: Callable[[Mapping[str, Any], str], str]) -> list[str]:
    """The section's lines; ``name`` labels a backend (constrained, toy model) as the report does."""
    blocks = {n: b["bfcl"] for n, b in summary["backends"].items() if b.get("bfcl")}
    options = (summary.get("run") or {}).get("options") or {}
    if not blocks and "bfcl" not in (options.get("demos") or []):
        return []
    out = ["## Tool calling (BFCL cases)", ""]
    if not blocks:
        return out + ["Not run on any backend (see \"Not run\" above).", ""]
    out += [f"{options.get('bfcl_n', '-')} cases per backend, seed {options.get('bfcl_seed', '-')}, "
            f"bfcl-eval {options.get('bfcl_eval', '-')}, concurrency {options.get('bfcl_concurrency', '-')}, "
            f"at most {options.get('bfcl_max_tokens', '-')} output tokens per case. Accuracy: right / answered "
            "(95% Wilson interval).", ""]
    rows = []
    for n, b in blocks.items():
        interface = b.get("interface") or "-"
        rows.append([name(summary, n), interface + (", streamed" if b.get("streamed") else ""), b["requests"],
                     _rate(b), _share(b["text_calls"], b["cases"]),
                     _share(b["missed_calls"], b.get("relevant_cases", 0)),
                     _share(b["spurious_calls"], b.get("irrelevance_cases", 0)), b["errors"]])
    out += table(["backend", "interface", "cases sent", "accuracy", "call written as text",
                   "no call where one was due", "a call where none was", "errors"], rows)
    out += ["", "By category (right / answered, 95% Wilson interval):", ""]
    rows = [[name(summary, n)] + [_rate(b["by_category"].get(c)) for c in CATEGORIES] for n, b in blocks.items()]
    out += table(["backend", *CATEGORIES], rows)
    out.append("")
    notes = [f"- **{n}: constrained.** Its calls come from a reply held to a JSON schema of the offered functions "
             "by the server's grammar, not from the model's own tool calls."
             for n, b in blocks.items() if b.get("constrained")]
    out += notes + ([""] if notes else [])
    out += _pairs(summary.get("bfcl_pairs") or [])
    out += _wrong(blocks)
    out += ["How these figures are computed:", ""] + [f"- {m}" for m in METHOD] + [""]
    return out


def _pairs(pairs: Sequence[Mapping[str, Any]]) -> list[str]:
    if not pairs:
        return []
    out = ["", "### Paired comparison (the same cases, McNemar exact test)", ""]
    rows = [[p["a"], p["b"], p["cases"], p["only_a"], p["only_b"], f"{p['p_value']:.2g}", p["verdict"],
             p.get("same_verdict", "-"), p.get("same_calls", "-")] for p in pairs]
    out += table(["A", "B", "answered by both", "only A right", "only B right", "p", "verdict", "same verdict",
                   "same calls"], rows)
    out.append("")
    twin = next((p for p in pairs if {p["a"], p["b"]} == set(SAME_WEIGHTS)), None)
    if twin:
        differing = twin.get("differing_cases") or []
        agree = ("they agree on every case" if not differing else
                 f"they disagree on {len(differing)}: {', '.join(f'`{c}`' for c in differing[:LISTED])}"
                 + (" ..." if len(differing) > LISTED else ""))
        out += [f"**g6 and sagemaker serve the same weights with the same tool parser:** of {twin['cases']} cases "
                f"both answered, {agree}; the very same calls on {twin.get('same_calls', '-')}. "
                f"McNemar: {twin['verdict']}.", ""]
    return out


def _wrong(blocks: Mapping[str, Mapping[str, Any]]) -> list[str]:
    out = []
    for n, b in blocks.items():
        wrong = [d for d in b.get("detail") or [] if d["outcome"] not in ("correct", "error")]
        for d in wrong[:LISTED]:
            text = f"; written as text: `{d['text_call'][:100]}`" if d.get("text_call") else ""
            out.append(f"- {n} `{d['case']}` (record {d['seq']}): {d['outcome']}: {d['reason'] or ''}{text}")
        if len(wrong) > LISTED:
            out.append(f"- {n}: {len(wrong) - LISTED} more wrong answers in `summary.json` "
                       f"(`backends.{n}.bfcl.detail`)")
        for reason, k in (b.get("error_reasons") or {}).items():
            out.append(f"- {n}: error: {reason} (x{k})")
    return (["Wrong answers (each names its record in `requests.jsonl`) and errors:", ""] + out + [""]) if out else []
