"""End to end on fake servers: the evidence folder, its schema, recomputation, failures, interruption."""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path

import jsonschema
import pydantic
import pytest

from agent import report as report_cli
from agent.bench.command import evidence, runner
from agent.bench.presentation import report
from agent.bench.analysis import summary
from agent.bench.results import schema as schema_module

from tests.agent.bench.conftest import make_options

from tests.agent.bench.conftest import openai_backend
from tests.agent.bench.fakes.openai_fake import FakeOpenAI
from tests.agent.bench.fakes.scripted import Script


def run_fake(tmp_path: Path, backends, *argv: str) -> tuple[int, Path]:
    out = tmp_path / "out"
    code = runner.run(backends, make_options(*argv), out, None)
    return code, out


def test_evidence_folder_on_fake_backends(tmp_path, fake_agent_server, fake_neuron_server):
    g6 = openai_backend("g6", fake_agent_server.base_url)
    inf2 = openai_backend("inf2", fake_neuron_server.base_url, kind="neuron", tool_calls=False,
                          model_id="gemma-4-E2B-it", max_prompt_tokens=128,
                          metadata={"instance_type": "inf2.xlarge", "region": "us-east-2"})
    code, out = run_fake(tmp_path, [g6, inf2], "--runs", "2", "--concurrency", "1,2")
    assert code == 0
    for name in ("requests.jsonl", "run.json", "summary.json", "REPORT.md", "decode_tok_per_s.png",
                 "usd_per_m_output.png", "ttft_ms.png"):
        assert (out / name).is_file(), name
    s = json.loads((out / "summary.json").read_text())
    summary.validate(s)
    records = evidence.read_requests(out / "requests.jsonl")
    parts = {(r["backend"], r["part"]) for r in records}
    assert ("g6", "counting") in parts and ("g6", "counting_strict") in parts and ("inf2", "chat") in parts
    assert ("inf2", "counting") not in parts and ("g6", "orchestrator") in parts
    g = s["backends"]["g6"]
    assert g["counting"]["runs"] == 2 and g["counting"]["correct"] == 2 and g["counting"]["right_filter"] == 2
    assert g["counting_strict"]["correct"] == 0  # the fake always says 8; the strict truth is 9
    assert g["chat"]["requests"] == 2 and g["chat"]["errors"] == 0 and g["chat"]["cold"]["ttft_ms"] is not None
    assert [lv["concurrency"] for lv in g["chat"]["levels"]] == [1, 2]
    assert g["chat"]["levels"][1]["requests"] == 4
    assert g["cost"]["per_concurrency"][0]["usd_per_m_output"] > 0 and g["cost"]["monthly_24x7_usd"] == 587.5
    assert g["ceiling"]["ceiling_tok_per_s"] == 161.3
    i = s["backends"]["inf2"]
    assert i["counting"] is None and "Neuron" in i["skipped"]["counting"] and i["completed"]
    assert i["chat"]["streamed"] is False and i["chat"]["decode_tok_per_s"]["n"] == 0
    o = s["orchestrator"]
    assert o["ran"] and o["asked"] == ["g6", "inf2"] and o["not_asked"] == []
    assert o["table_quote"] == "exact" and o["winner_claimed"] == "g6"
    assert o["submitted_via"] == "run" and o["winner_submitted"] == "g6" and o["submitted_table_quote"] == "exact"
    assert o["wrong_winner"] is (o["winner_measured"] != "g6")
    assert s["prices"]["offline"] is True and "offline price file" in (out / "REPORT.md").read_text()

    # the report leads with the answer; the run's settings are at the end
    text = (out / "REPORT.md").read_text()
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert headings[0] == "## Which one?" and headings[-1] == "## Run settings"
    assert text.index("> **") < text.index("## Scoreboard") < text.index("- Options: demos=")
    assert text.index("## Run settings") < text.index("- Versions: python")

    # every figure recomputes: summary from requests.jsonl + run.json, the report from summary.json
    again = summary.summarize(records, json.loads((out / "run.json").read_text()))
    assert again.as_json() == s
    assert report.render(summary.validate(s)) == (out / "REPORT.md").read_text()


def test_without_a_terminal_progress_is_one_line_per_part_and_level(tmp_path, fake_agent_server, capsys):
    """A run whose stderr is a log or a pipe (here pytest's capture) says what it is doing, a line per
    part and per concurrency level, not one per request."""
    g6 = openai_backend("g6", fake_agent_server.base_url)
    code, _ = run_fake(tmp_path, [g6], "--runs", "3", "--concurrency", "1,2", "--demos", "chat,counting")
    lines = [ln.split("] ", 1)[1] for ln in capsys.readouterr().err.splitlines() if ln.startswith("[")]
    assert code == 0
    assert lines == ["g6: chat", "g6 chat concurrency 2 (6 requests)", "g6: counting", "g6: counting_strict"]


def test_failing_backend_is_recorded_and_the_others_go_on(tmp_path, fake_agent_server):
    good = openai_backend("g6", fake_agent_server.base_url)
    dead = openai_backend("g5g", "http://127.0.0.1:9/v1", metadata={"instance_type": "g5g.2xlarge"})
    code, out = run_fake(tmp_path, [good, dead], "--runs", "1", "--demos", "chat,counting")
    assert code == 1
    s = json.loads((out / "summary.json").read_text())
    assert s["backends"]["g6"]["completed"] is True
    bad = s["backends"]["g5g"]
    assert bad["completed"] is False and any("every request failed" in f for f in bad["failures"])
    assert bad["counting"]["errors"] == 1 and "Connect" in bad["counting"]["detail"][0]["error"]
    report_text = (out / "REPORT.md").read_text()
    assert "g5g: chat: every request failed" in report_text
    # every request failed: not a backend that "misses the target"
    assert bad["slo"]["every_request_failed"] is True
    assert bad["slo"]["capacity_reason"].startswith("every request failed (1 of 1; most often: ClientConnectorError")
    assert not [line for line in report_text.splitlines() if line.startswith("| g5g") and "misses the target" in line]
    assert "| g5g | every request failed (1 of 1;" in report_text


def test_max_tokens_and_text_tool_calls_are_graded_not_raised(tmp_path):
    def script(body):
        if body.get("tools") and not any(m.get("role") == "tool" for m in body["messages"]):
            return Script(tool_call=("count_ids", {"op": ">=", "value": "10"}))  # value as a string
        return Script(final='count_ids(op=">=", value=10) gives 8 ids and then some more', finish="length")

    with FakeOpenAI(Script(choose=script)) as fake:
        code, out = run_fake(tmp_path, [openai_backend("g6", fake.base_url)], "--runs", "1", "--demos", "counting")
    s = json.loads((out / "summary.json").read_text())
    c = s["backends"]["g6"]["counting"]
    assert c["errors"] == 1 and c["detail"][0]["error"].startswith("max_tokens")
    assert c["invalid_tool_calls"] == 1 and c["invalid_calls"][0]["reason"] == "bad type: value is str '10'"
    assert c["text_tool_calls"] == 1 and c["answer_status"] == {"failed": 1}
    # a failed run is not graded: no correct, no right filter, no interval over nothing
    assert c["graded"] == 0 and c["right_filter"] == 0 and c["correct_ci95"] is None and c["right_filter_ci95"] is None
    assert c["detail"][0]["verdict"] == "failed" and c["detail"][0]["right_filter"] is None
    assert code == 1 and any("every run failed" in f for f in s["backends"]["g6"]["failures"])


def test_an_interrupt_in_the_first_seconds_leaves_a_run_the_report_opens(tmp_path, fake_agent_server, monkeypatch):
    """Ctrl-C while the prices are read (before any request): run.json says interrupted, the summary and
    report are written, and python -m agent.report rebuilds the folder."""
    from agent import report as report_cli
    from agent.bench.command import run_info

    def interrupted(*_args):
        raise KeyboardInterrupt

    monkeypatch.setattr(run_info, "prices_for", interrupted)
    out = tmp_path / "out"
    with pytest.raises(KeyboardInterrupt):
        runner.run([openai_backend("g6", fake_agent_server.base_url)], make_options("--runs", "1"), out, None)
    run = json.loads((out / "run.json").read_text())
    assert run["interrupted"] is True and run["finished"] and run["prices"]["offline_reason"].startswith("not fetched")
    assert (out / "requests.jsonl").read_text() == "" and (out / "summary.json").is_file()
    assert report_cli.main([str(out)]) == 0


def test_no_agent_capable_backend_means_no_orchestrator(tmp_path, fake_neuron_server):
    inf2 = openai_backend("inf2", fake_neuron_server.base_url, kind="neuron", tool_calls=False, metadata={})
    code, out = run_fake(tmp_path, [inf2], "--runs", "1")
    s = json.loads((out / "summary.json").read_text())
    assert code == 0 and s["orchestrator"]["ran"] is False
    assert "no selected backend can drive an agent" in s["orchestrator"]["reason"]


def test_a_summary_without_the_required_shape_is_refused_by_the_model_and_the_schema(tmp_path, fake_neuron_server):
    inf2 = openai_backend("inf2", fake_neuron_server.base_url, kind="neuron", tool_calls=False, metadata={})
    _, out = run_fake(tmp_path, [inf2], "--runs", "1", "--demos", "chat")
    s = json.loads((out / "summary.json").read_text())
    schema = json.loads((Path(schema_module.__file__).parent / "summary.schema.json").read_text())
    jsonschema.validate(s, schema)  # what a run writes is what the committed schema describes
    del s["backends"]["inf2"]["chat"]["ttft_ms"]["p99"]
    with pytest.raises(pydantic.ValidationError):
        summary.validate(s)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(s, schema)
    s = json.loads((out / "summary.json").read_text())
    del s["orchestrator"]["wrong_winner"]
    with pytest.raises(pydantic.ValidationError):
        summary.validate(s)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(s, schema)


def test_interrupted_run_leaves_valid_files(tmp_path, fake_agent_server, monkeypatch):
    g6 = openai_backend("g6", fake_agent_server.base_url)
    calls = {"n": 0}
    original = evidence.RequestLog.append

    def append(self, record):
        calls["n"] += 1
        if calls["n"] == 4:
            raise KeyboardInterrupt
        return original(self, record)

    monkeypatch.setattr(evidence.RequestLog, "append", append)
    out = tmp_path / "out"
    with pytest.raises(KeyboardInterrupt):
        runner.run([g6], make_options("--runs", "5"), out, None)
    s = json.loads((out / "summary.json").read_text())
    summary.validate(s)
    assert s["run"]["interrupted"] is True and s["backends"]["g6"]["chat"]["requests"] == 2
    assert "Interrupted" in (out / "REPORT.md").read_text()
    assert not [p for p in os.listdir(out) if p.endswith(".tmp")]


def test_an_orchestrator_cut_off_mid_run_is_neither_not_selected_nor_completed(tmp_path, fake_agent_server,
                                                                                monkeypatch, capsys):
    original = evidence.RequestLog.append

    def append(self, record):
        if record.get("part") == "orchestrator_ask":
            raise KeyboardInterrupt
        return original(self, record)

    monkeypatch.setattr(evidence.RequestLog, "append", append)
    out = tmp_path / "out"
    with pytest.raises(KeyboardInterrupt):
        runner.run([openai_backend("g6", fake_agent_server.base_url)], make_options("--runs", "1"), out, None)
    s = json.loads((out / "summary.json").read_text())
    assert s["orchestrator"]["ran"] is False
    assert s["orchestrator"]["reason"] == "the run was interrupted before the orchestrator finished"
    assert s["backends"]["g6"]["completed"] is False
    text = (out / "REPORT.md").read_text()
    assert "Not run: the run was interrupted before the orchestrator finished." in text and "not selected" not in text
    scoreboard_rows = text.split("## Scoreboard")[1].splitlines()
    assert [line for line in scoreboard_rows if line.startswith("| g6 |")][0].endswith("| **no** |")
    capsys.readouterr()
    assert report_cli.main([str(out)]) == 0  # what python -m agent.report shows of the interrupted run
    scoreboard = capsys.readouterr().out
    assert [line for line in scoreboard.splitlines() if line.startswith("g6 ")][0].split()[1] == "no"


def test_torn_last_line_is_skipped(tmp_path):
    path = tmp_path / "requests.jsonl"
    log = evidence.RequestLog(path)
    log.append({"part": "counting", "backend": "x", "run": 1, "answer": "8", "calls": [], "texts": ["8"],
                "error": None})
    log.close()
    with open(path, "a") as fh:
        fh.write('{"seq": 2, "part": "ch')
    assert [r["seq"] for r in evidence.read_requests(path)] == [1]


def test_atomic_write_replaces_whole_files(tmp_path):
    target = tmp_path / "summary.json"
    evidence.write_json(target, {"a": 1})
    evidence.write_json(target, {"a": 2})
    assert json.loads(target.read_text()) == {"a": 2}
    assert os.listdir(tmp_path) == ["summary.json"]


def test_results_dir_is_fresh_even_for_runs_in_the_same_second(tmp_path):
    started = datetime(2026, 11, 30, 12, 0, 0, tzinfo=timezone.utc)
    first = evidence.fresh_results_dir(tmp_path, started)
    second = evidence.fresh_results_dir(tmp_path, started)
    assert first != second and second.name == first.name + "-2"
    assert (first / "requests.jsonl").exists() and (second / "requests.jsonl").exists()
