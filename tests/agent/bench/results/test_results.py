"""The typed results: the committed JSON Schemas are the ones the models generate, a run's files
validate against them, and the request log refuses a record a reader could not read back."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from agent.bench.command import evidence, runner
from agent.bench.results import schema
from agent.bench.results.records import RecordError

from tests.agent.bench.conftest import make_options

from tests.agent.bench.conftest import openai_backend


def committed(name: str) -> dict:
    return json.loads((schema.HERE / name).read_text())


def test_the_committed_schemas_are_what_the_models_generate():
    assert schema.stale() == [], "run: python -m agent.bench.results.schema --write"
    assert schema.main(["--check"]) == 0


def test_a_stale_schema_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys):
    for name in schema.SCHEMAS:
        (tmp_path / name).write_text(schema.render(name))
    edited = committed("summary.schema.json")
    edited["$defs"]["ChatSummary"]["required"].remove("ttft_ms")  # a hand edit, or a model changed since
    (tmp_path / "summary.schema.json").write_text(json.dumps(edited, indent=2) + "\n")
    monkeypatch.setattr(schema, "HERE", tmp_path)
    assert schema.stale() == ["summary.schema.json"]
    assert schema.main(["--check"]) == 1
    assert "summary.schema.json is stale: run python -m agent.bench.results.schema --write" in capsys.readouterr().err


def test_a_runs_files_validate_against_the_committed_schemas(tmp_path: Path, fake_agent_server):
    out = tmp_path / "out"
    runner.run([openai_backend("g6", fake_agent_server.base_url)], make_options("--runs", "1"), out, None)
    records = evidence.read_requests(out / evidence.REQUESTS)
    assert {r["part"] for r in records} == {"chat", "counting", "counting_strict", "orchestrator", "orchestrator_ask"}
    for record in records:
        jsonschema.validate(record, committed("requests.schema.json"))
    jsonschema.validate(json.loads((out / evidence.SUMMARY).read_text()), committed("summary.schema.json"))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**records[0], "part": "quality"}, committed("requests.schema.json"))


def test_the_log_refuses_a_record_it_could_not_read_back(tmp_path: Path):
    path = tmp_path / "requests.jsonl"
    log = evidence.RequestLog(path)
    with pytest.raises(RecordError, match=r"^record 1 \(part 'chat'\): phase: Field required \(and \d+ more problems\)$"):
        log.append({"part": "chat", "backend": "x"})
    with pytest.raises(RecordError, match="part 'quality'"):
        log.append({"part": "quality", "backend": "x"})
    kept = log.append({"part": "counting", "backend": "x", "run": 1, "answer": "8", "calls": [], "texts": ["8"],
                       "error": None})
    log.close()
    assert kept.seq == 1  # a refused record takes no number
    assert [json.loads(line) for line in path.read_text().splitlines()] == [
        {"seq": 1, "part": "counting", "backend": "x", "run": 1, "answer": "8", "calls": [], "texts": ["8"],
         "error": None}]
