"""The fit against vLLM's own start-up logs (``vllm_startup_logs.yaml``): every row's "GPU KV cache size" predicted
from its config.json, card, engine version and flags, and the error (``benchmarks/fit_vs_logs.py`` prints it).

The sizing's promise (docs/rigs.md): over the rows of vLLM 0.10 or later, the median |error| is at most 5%, the worst
at most 15%, and every start-up the table holds is predicted to fit. A row whose error has a known cause outside
the model may be listed in :data:`EXCEPTIONS` with that cause; it still must not be predicted not to fit.
"""

from __future__ import annotations

import importlib.util
import statistics
import sys

import pytest

from tests.conftest import PROJECT_DIR

_spec = importlib.util.spec_from_file_location("fit_vs_logs", PROJECT_DIR / "benchmarks" / "fit_vs_logs.py")
assert _spec is not None and _spec.loader is not None
fit_vs_logs = sys.modules.setdefault("fit_vs_logs", importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(fit_vs_logs)

EXCEPTIONS: dict[str, str] = {}
"""Rows left out of the worst-error bound, each with its reason."""


@pytest.fixture(scope="module")
def predicted():
    rows = [r for r in fit_vs_logs.load() if r.version >= fit_vs_logs.RIGS_ENGINES]
    return [(r, fit_vs_logs.predict(r)) for r in rows]


def test_every_recent_row_is_sized(predicted):
    assert len(predicted) >= 30
    assert [r.data["id"] for r, _ in predicted if r.arch is None] == []


def test_median_error_of_kv_tokens_is_within_5_percent_and_the_worst_within_15(predicted):
    errors = {r.data["id"]: fit_vs_logs.error_percent(f.kv_tokens, r.data["logged"]["kv_tokens"])
              for r, f in predicted}
    assert statistics.median(abs(e) for e in errors.values()) <= 5
    outside = {k: round(e, 1) for k, e in errors.items() if abs(e) > 15 and k not in EXCEPTIONS}
    assert outside == {}
    assert set(EXCEPTIONS) <= set(errors)


def test_every_logged_start_up_is_predicted_to_fit(predicted):
    """Each row is a server that started: one sequence of its max_model_len fitted its KV cache."""
    assert [(r.data["id"], f.why) for r, f in predicted if not f.fits] == []
