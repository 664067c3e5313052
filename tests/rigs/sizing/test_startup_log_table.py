"""The committed table of published vLLM start-up logs the sizing is checked against: its shape.

Every row can be traced to a public source and read by ``benchmarks/fit_vs_logs.py``; a malformed row is named
with every other one, not the first alone.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import PROJECT_DIR

TABLE = Path(__file__).with_name("vllm_startup_logs.yaml")
_spec = importlib.util.spec_from_file_location("fit_vs_logs", PROJECT_DIR / "benchmarks" / "fit_vs_logs.py")
assert _spec is not None and _spec.loader is not None
fit_vs_logs = sys.modules["fit_vs_logs"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fit_vs_logs)


@pytest.fixture(scope="module")
def rows():
    return fit_vs_logs.load(TABLE)


def test_the_table_loads_with_at_least_30_published_rows(rows):
    assert len(rows) >= 30
    assert all(r.data["source"].strip() and r.data["config_source"].strip() for r in rows)
    assert len({r.data["id"] for r in rows}) == len(rows)


def test_the_rows_span_the_rigs_cards_and_engines(rows):
    cards = {r.data["gpu"] for r in rows}
    assert {"H100 80GB", "L4", "T4"} <= cards
    assert sum(r.version >= fit_vs_logs.RIGS_ENGINES for r in rows) >= 30


def test_every_bad_row_is_named_at_once(tmp_path):
    rows = fit_vs_logs.read_rows(TABLE)[:3]
    rows[0]["source"] = ""
    del rows[1]["logged"]["kv_tokens"]
    rows[2]["id"] = rows[0]["id"]
    rows[2]["settings"]["max_model_len"] = 0
    bad = tmp_path / "table.yaml"
    bad.write_text(yaml.safe_dump(rows), encoding="utf-8")
    with pytest.raises(fit_vs_logs.TableError) as caught:
        fit_vs_logs.load(bad)
    message = str(caught.value)
    assert f"{rows[0]['id']}: source is empty" in message
    assert f"{rows[1]['id']}: logged.kv_tokens missing" in message
    assert "id used twice" in message and "settings.max_model_len is 0" in message
    assert fit_vs_logs.main(["--table", str(bad)]) == 2


def test_the_report_gives_every_row_an_error_or_the_reason_it_is_not_sized(rows):
    lines = fit_vs_logs.report(rows)
    for row in rows:
        line = next(line for line in lines if line.startswith(row.data["id"] + " "))
        assert line.endswith("%") or (row.arch is None and "unsized" in line)
