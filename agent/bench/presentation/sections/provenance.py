"""The section "What served each backend": every fact read at run time beside the catalog's expectation, each
mismatch flagged first."""

from __future__ import annotations

from ...results.blocks.provenance import FACTS, FactCheck
from ...results.formatting import MISSING
from ...results.summary import Summary
from ..labels import backend_label
from ..markdown import table

VERDICTS = {"match": "matches", "mismatch": "**MISMATCH**", "not reported": "not reported",
            "read": "read (nothing to compare)"}
INTRO = ("Read at run time: from each server over the way the benchmark reached it (vLLM's `/version`, llama.cpp's "
         "`/props`, `/v1/models`), from EC2 (`DescribeInstances`), the rig's boot report in its log, SageMaker "
         "(`DescribeEndpoint`) and Bedrock (`GetInferenceProfile`, a 1-token `Converse`); beside what the catalog "
         "expects. A fact the server or API did not give is *not reported*, with the reason.")


def _read(c: FactCheck) -> str:
    if c.read is None:
        return f"not reported: {c.not_reported}"
    return f"{c.read} ({c.read_source})" if c.read_source else c.read


def _expected(c: FactCheck) -> str:
    if c.expected is None:
        return f"({c.expected_source})" if c.expected_source else MISSING
    return f"{c.expected} ({c.expected_source})" if c.expected_source else c.expected


def section(summary: Summary) -> list[str]:
    """The section's lines (none when no backend's provenance was read: a run from before it was)."""
    read = {name: b.provenance for name, b in summary.backends.items() if b.provenance is not None}
    if not read:
        return []
    out = ["## What served each backend", "", INTRO, ""]
    flagged = [f"- **{backend_label(summary, name)}**: {m}." for name, p in read.items() for m in p.mismatches]
    if flagged:
        out += [f"**Mismatches with the catalog ({len(flagged)}):**", ""] + flagged + [""]
    else:
        out += ["No fact that was read differs from the catalog's expectation.", ""]
    rows = [[backend_label(summary, name), FACTS.get(c.fact, c.fact), _read(c), _expected(c), VERDICTS[c.verdict]]
            for name, p in read.items() for c in p.facts]
    return out + table(["backend", "fact", "read (source)", "catalog expects (source)", "check"], rows) + [""]
