"""The BFCL section: accuracy per backend and per category with its interval, what the wrong answers
were, and every two backends compared on the same cases."""

from __future__ import annotations

from typing import Mapping, Sequence

from ...results.blocks.bfcl import BfclPair, BfclSummary, Rate
from ...results.formatting import MISSING, percent
from ...results.summary import Summary
from ..labels import backend_label, not_run
from ..markdown import table

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
    "Not offered: a case needing what a managed endpoint does not offer for its model (parallel tool calls, "
    "from the catalog's `bedrock_endpoint` and its public source) is not sent to it, and is left out of its "
    "accuracy and of its pairs; it is counted apart, never as a failure.",
    "Call written as text: no call made, and the text names an offered function followed by `(`, or "
    "holds a JSON `\"name\": \"<function>\"` or a tool-call marker (the same detector as the counting grade).",
    "Intervals: 95% Wilson score. Pairs: McNemar's exact test on the cases both backends answered; "
    "p < 0.05 is called a measurable difference (each pair on its own, no correction for the number "
    "of pairs).",
]


def _rate(block: Rate | None) -> str:
    if not block or not block.cases:
        return MISSING
    return (f"{block.correct}/{block.cases} = {percent(block.accuracy, 1)} "
            f"({percent(block.ci95_low, 1)}-{percent(block.ci95_high, 1)})")


def _share(k: int, n: int) -> str:
    return f"{k}/{n} ({percent(k / n, 1)})" if n else MISSING


def _pairs(pairs: Sequence[BfclPair]) -> list[str]:
    if not pairs:
        return []
    out = ["", "### Paired comparison (the same cases, McNemar exact test)", ""]
    rows = [[p.a, p.b, p.cases, p.only_a, p.only_b, f"{p.p_value:.2g}", p.verdict, p.same_verdict, p.same_calls]
            for p in pairs]
    out += table(["A", "B", "answered by both", "only A right", "only B right", "p", "verdict", "same verdict",
                  "same calls"], rows)
    out.append("")
    twin = next((p for p in pairs if {p.a, p.b} == set(SAME_WEIGHTS)), None)
    if twin:
        differing = twin.differing_cases
        agree = ("they agree on every case" if not differing else
                 f"they disagree on {len(differing)}: {', '.join(f'`{c}`' for c in differing[:LISTED])}"
                 + (" ..." if len(differing) > LISTED else ""))
        out += [f"**g6 and sagemaker serve the same weights with the same tool parser:** of {twin.cases} cases "
                f"both answered, {agree}; the very same calls on {twin.same_calls}. McNemar: {twin.verdict}.", ""]
    return out


def _not_offered(blocks: Mapping[str, BfclSummary]) -> list[str]:
    """One line per backend whose endpoint does not offer what some cases need: which cases, and why."""
    out = [f"- **{n}: {sum(b.not_offered.values())} cases not offered** "
           f"({', '.join(f'{c} {k}' for c, k in b.not_offered.items())}): {'; '.join(b.not_offered_why)}. Not sent, "
           "left out of its accuracy and its pairs, not counted as failures."
           for n, b in blocks.items() if b.not_offered]
    return out + [""] if out else []


def _wrong(blocks: Mapping[str, BfclSummary]) -> list[str]:
    out = []
    for n, b in blocks.items():
        wrong = [d for d in b.detail if d.outcome not in ("correct", "error", "not_offered")]
        for d in wrong[:LISTED]:
            text = f"; written as text: `{d.text_call[:100]}`" if d.text_call else ""
            out.append(f"- {n} `{d.case}` (record {d.seq}): {d.outcome}: {d.reason or ''}{text}")
        if len(wrong) > LISTED:
            out.append(f"- {n}: {len(wrong) - LISTED} more wrong answers in `summary.json` "
                       f"(`backends.{n}.bfcl.detail`)")
        out += [f"- {n}: error: {reason} (x{k})" for reason, k in b.error_reasons.items()]
    return (["Wrong answers (each names its record in `requests.jsonl`) and errors:", ""] + out + [""]) if out else []


def section(summary: Summary) -> list[str]:
    """The section's lines; none when the part was neither selected nor run."""
    blocks = {n: b.bfcl for n, b in summary.backends.items() if b.bfcl}
    options = summary.run.options
    if not blocks and "bfcl" not in (options.demos or []):
        return []
    out = ["## Tool calling (BFCL cases)", ""]
    if not blocks:
        return out + [not_run(summary, "bfcl", "Not run on any backend (see \"Not run\" above)."), ""]
    given = options.model_dump()
    out += [f"{given.get('bfcl_n', MISSING)} cases per backend, seed {given.get('bfcl_seed', MISSING)}, bfcl-eval "
            f"{given.get('bfcl_eval', MISSING)}, concurrency {given.get('bfcl_concurrency', MISSING)}, at most "
            f"{given.get('bfcl_max_tokens', MISSING)} output tokens per case. Accuracy: right / answered (95% Wilson "
            "interval).", ""]
    rows = [[backend_label(summary, n), (b.interface or MISSING) + (", streamed" if b.streamed else ""), b.requests,
             _rate(b), _share(b.text_calls, b.cases), _share(b.missed_calls, b.relevant_cases),
             _share(b.spurious_calls, b.irrelevance_cases), b.errors] for n, b in blocks.items()]
    out += table(["backend", "interface", "cases sent", "accuracy", "call written as text",
                  "no call where one was due", "a call where none was", "errors"], rows)
    out += ["", "By category (right / answered, 95% Wilson interval):", ""]
    categories = list(dict.fromkeys(c for b in blocks.values() for c in (*b.by_category, *b.not_offered)))
    out += table(["backend", *categories], [[backend_label(summary, n)] + [
        "not offered" if c in b.not_offered and c not in b.by_category else _rate(b.by_category.get(c))
        for c in categories] for n, b in blocks.items()])
    out.append("")
    out += _not_offered(blocks)
    notes = [f"- **{n}: constrained.** Its calls come from a reply held to a JSON schema of the offered functions "
             "by the server's grammar, not from the model's own tool calls." for n, b in blocks.items() if b.constrained]
    out += notes + ([""] if notes else [])
    out += _pairs(summary.bfcl_pairs) + _wrong(blocks)
    return out + ["How these figures are computed:", ""] + [f"- {m}" for m in METHOD] + [""]
