"""The ``provenance`` block: each fact read at run time beside the catalog's expectation, and a verdict.

Pure: ``run.json``'s readings in, the block out. Two values are the same fact when:

- engine, service tier: equal, ignoring case;
- engine version: equal, ignoring a leading ``v``, or the read one is the expected one with a local or
  build suffix (``0.30.0+cu130``, llama.cpp's ``b7342-1a2b3c``); ``0.30.1`` is not ``0.30.0``;
- image digest: the same ``sha256:...`` (a reference ``repo@sha256:...`` counts by its digest);
- KV cache tokens, concurrency: vLLM's logged figure within 5% of ``python -m rigs fit``'s prediction
  (:data:`PREDICTION_TOLERANCE`);
- anything else (model id, context length, instance type): equal.
"""

from __future__ import annotations

import re

from ...results.blocks.provenance import FACTS, FactCheck, Provenance, ProvenanceBlock, Reading, Verdict

_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
PREDICTION_TOLERANCE = 0.05
"""How far vLLM's logged KV cache may be from the prediction and still match it (the sizing's goal)."""
PREDICTED = ("kv_cache_tokens", "max_concurrency")


def _text(value: str | int | None) -> str | None:
    return None if value is None else str(value)


def _version(value: str) -> str:
    return value.strip().lower().removeprefix("v")


def same(fact: str, read: str | int, expected: str | int) -> bool:
    """Whether ``read`` is the value the catalog expects for ``fact`` (the rules above)."""
    r, e = str(read).strip(), str(expected).strip()
    if fact in ("engine", "service_tier"):
        return r.lower() == e.lower()
    if fact == "engine_version":
        r, e = _version(r), _version(e)
        return r == e or r.startswith((e + "+", e + "-"))
    if fact in PREDICTED:
        try:
            return abs(float(r) - float(e)) <= PREDICTION_TOLERANCE * float(e)
        except ValueError:
            return False
    if fact == "image_digest":
        found, wanted = _DIGEST.search(r), _DIGEST.search(e)
        return bool(found and wanted and found.group() == wanted.group())
    return r == e


def check(fact: str, read: Reading | None, expected: Reading | None) -> FactCheck:
    """One fact's row: what was read (or why not), what the catalog expects, and the verdict."""
    read_value = read.value if read else None
    expected_value = expected.value if expected else None
    verdict: Verdict
    if read_value is None:
        verdict = "not reported"
    elif expected_value is None:
        verdict = "read"
    else:
        verdict = "match" if same(fact, read_value, expected_value) else "mismatch"
    not_reported = None
    if read_value is None:
        not_reported = (read.not_reported if read else None) or "not read for this kind of backend"
    return FactCheck(fact=fact, read=_text(read_value), read_source=read.source if read else None,
                     not_reported=not_reported, expected=_text(expected_value),
                     expected_source=expected.source if expected else None, verdict=verdict)


def provenance_block(provenance: Provenance | None) -> ProvenanceBlock | None:
    """The block for one backend (None when ``run.json`` has no provenance: a run before it was read)."""
    if provenance is None:
        return None
    names = [f for f in FACTS if f in provenance.read or f in provenance.expected]
    names += sorted(f for f in {*provenance.read, *provenance.expected} if f not in FACTS)
    facts = [check(f, provenance.read.get(f), provenance.expected.get(f)) for f in names]
    mismatches = [f"{FACTS.get(c.fact, c.fact)} is {c.read} ({c.read_source}) where the catalog expects {c.expected} "
                  f"({c.expected_source})" for c in facts if c.verdict == "mismatch"]
    return ProvenanceBlock(read_at=provenance.read_at, facts=facts, mismatches=mismatches)
