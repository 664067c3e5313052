"""The ``tasks`` lane end to end through the runner against a scripted server that answers a planted set of BFCL
multi-turn tasks with their ground truth and the rest wrongly: the lane reports exactly the planted share, the
paired test finds a planted difference and none between identical servers, the recommendation chooses by $ per
successful task, limits stop tasks, bad input is one line and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

import agent.run as run_module
from agent.bench.analysis import stats, summary
from agent.bench.analysis.blocks import tasks as tasks_block
from agent.bench.results.records import parse_record
from agent.bench.results.run import BackendPrice, TokenPrice
from agent.bench.results import schema as results_schema
from agent.bench.tasks.multi_turn import CATEGORIES, TASKS_PER_CATEGORY, load_tasks, sample_tasks

from tests.agent.bench.conftest import openai_backend, run_demo
from tests.agent.bench.fakes.openai_fake import FakeOpenAI
from tests.agent.bench.fakes.task_answers import TaskAnswers

N = 50
PLANTED = 10


def test_every_category_holds_the_tasks_the_option_allows():
    assert {c: len(load_tasks(c)) for c in CATEGORIES} == dict.fromkeys(CATEGORIES, TASKS_PER_CATEGORY)


def test_the_lane_reports_exactly_the_planted_share(tmp_path):
    tasks = sample_tasks("base", N, 0)
    right = {t.id for t in tasks[:PLANTED]}
    with FakeOpenAI(TaskAnswers("base", right)) as server:
        code, s, records, out = run_demo(tmp_path, [openai_backend("g6", server.base_url)], "tasks",
                                         "--tasks-n", str(N), "--tasks-concurrency", "16")
    assert code == 0
    b = s["backends"]["g6"]["tasks"]
    assert (b["run"], b["graded"], b["succeeded"], b["errors"], b["success"]) == (N, N, PLANTED, 0, PLANTED / N)
    assert b["interval"] == [round(x, 4) for x in stats.wilson_interval(PLANTED, N)]
    assert {d["task"] for d in b["detail"] if d["succeeded"]} == right
    assert set(b["failure_types"]) == {"multi_turn:empty_turn_model_response"}
    # priced: the g6 instance's hour shared over the tasks it served; failures are paid for
    assert b["usd_per_success"] == pytest.approx(b["usd_per_task"] * N / PLANTED, rel=1e-3)
    assert b["task_s_p50"] <= b["task_s_p90"] and b["turns"]["mean"] > 1 and b["tool_calls"]["mean"] > 1
    schema = json.loads((Path(results_schema.__file__).parent / "requests.schema.json").read_text())
    jsonschema.validate(records[0], schema)
    r = next(r for r in records if r["task"] in right and len(r["turns"]) > 2)
    assert len(r["steps"]) == len(r["turns"]) == r["turns_given"] and r["calls"][0]["result"]
    assert s["recommendation"]["chosen_by"] == "usd_per_successful_task" and s["recommendation"]["choice"] == "g6"
    text = (out / "REPORT.md").read_text()
    assert "## Tasks (BFCL multi-turn, done by the agent)" in text and "10/50 = 20.0%" in text
    assert "chosen by $ per successful task" in text and (out / "usd_per_successful_task.png").is_file()
    assert "<h2>Tasks (BFCL multi-turn, done by the agent)</h2>" in (out / "REPORT.html").read_text()
    # an interrupted lane reports what ran, and how many planned tasks did not
    run_json = json.loads((out / "run.json").read_text())
    partial = summary.summarize(records[:10], {**run_json, "interrupted": True}).backends["g6"].tasks
    assert (partial.run, partial.unsent, partial.planned) == (10, N - 10, N)


def test_pairs_find_a_planted_difference_and_none_between_identical_servers(tmp_path):
    tasks = sample_tasks("base", 7, 1)
    good, poor = {t.id for t in tasks}, {tasks[0].id}
    with FakeOpenAI(TaskAnswers("base", good)) as a, FakeOpenAI(TaskAnswers("base", good)) as twin, \
            FakeOpenAI(TaskAnswers("base", poor)) as b:
        backends = [openai_backend("g6", a.base_url), openai_backend("g6e", twin.base_url),
                    openai_backend("g5", b.base_url)]
        code, s, _, out = run_demo(tmp_path, backends, "tasks", "--tasks-n", "7", "--tasks-seed", "1",
                                   "--tasks-concurrency", "8", "--min-task-success", "0.5")
    pairs = {(p["a"], p["b"]): p for p in s["tasks_pairs"]}
    same = pairs[("g6", "g6e")]
    assert (same["only_a"], same["only_b"], same["p_value"], same["verdict"]) == (0, 0, 1.0, "no measurable difference")
    planted = pairs[("g6", "g5")]
    assert (planted["only_a"], planted["only_b"], planted["difference"]) == (6, 0, round(-6 / 7, 4))
    assert planted["p_value"] == pytest.approx(2 * 0.5**6, rel=1e-3) and planted["verdict"].startswith("g6 is better than g5")
    assert planted["ci95"][1] < 0
    rec = s["recommendation"]
    assert rec["chosen_by"] == "usd_per_successful_task" and rec["choice"] in ("g6", "g6e")
    assert "below the floor of 50.0%" in rec["by_task"]["disqualified"]["g5"]
    assert "B - A (points)" in (out / "REPORT.md").read_text()


def test_limits_stop_tasks_and_they_fail(tmp_path):
    tasks = sample_tasks("base", 4, 2)
    with FakeOpenAI(TaskAnswers("base", {t.id for t in tasks})) as server:
        _, s, records, _ = run_demo(tmp_path, [openai_backend("g6", server.base_url)], "tasks", "--tasks-n", "4",
                                    "--tasks-seed", "2", "--tasks-max-tool-calls", "1")
    b = s["backends"]["g6"]["tasks"]
    assert (b["succeeded"], b["stopped"]) == (0, 4)
    assert all(r["stopped"] == "tool-call limit of 1 reached" for r in records)
    assert all(d["reason"].startswith("multi_turn:force_terminated") for d in b["detail"])
    # priced per token (Bedrock): each task's input and output tokens at the list price
    typed = [parse_record(r) for r in records]
    outcomes = [tasks_block.outcome(r) for r in typed]
    usd, basis, _ = tasks_block.cost(typed, outcomes, BackendPrice(per_token=TokenPrice(usd_per_m_input=1.0,
                                                                                        usd_per_m_output=4.0)))
    assert usd == pytest.approx(sum(r["usage"]["input_tokens"] + 4 * r["usage"]["output_tokens"] for r in records) / 1e6)
    assert basis.startswith("per token")


def test_the_agents_search_finds_the_most_agents_within_the_target(tmp_path):
    tasks = sample_tasks("base", 2, 4)
    with FakeOpenAI(TaskAnswers("base", {tasks[0].id})) as server:
        backend = openai_backend("g6", server.base_url)
        _, s, records, out = run_demo(tmp_path / "met", [backend], "tasks", "--tasks-n", "2", "--tasks-seed", "4",
                                      "--tasks-agent-target", "task_s_p90=600", "--tasks-max-agents", "2")
        _, missed, _, _ = run_demo(tmp_path / "missed", [backend], "tasks", "--tasks-n", "2", "--tasks-seed", "4",
                                   "--tasks-agent-target", "agent_output_tok_s=1e9")
    block = s["backends"]["g6"]["tasks"]
    levels = block["agents"]["levels"]
    assert [(lv["agents"], lv["tasks"], lv["succeeded"], lv["met"]) for lv in levels] == [
        (1, 2, 1, True), (2, 4, 2, True)]  # two tasks per agent, the lane's tasks cycled
    assert block["agents"]["agents_per_instance"] == 2 and block["run"] == 2  # the lane's own figures apart
    assert block["agents"]["usd_per_success_at_load"] == levels[-1]["usd_per_success"] is not None
    assert {r["phase"] for r in records} == {"lane", "agents"}
    assert "at 2 agents at once" in s["recommendation"]["headline"]
    assert "### How many agents at once (target: task_s_p90 <= 600)" in (out / "REPORT.md").read_text()
    search = missed["backends"]["g6"]["tasks"]["agents"]
    assert [lv["met"] for lv in search["levels"]] == [False] and search["agents_per_instance"] is None


@pytest.mark.parametrize("argv,says", [
    (["--tasks-category", "hard"], "argument --tasks-category: invalid choice: 'hard' (choose from 'base', "
                                   "'miss_func', 'miss_param', 'long_context')"),
    (["--tasks-n", "201"], "argument --tasks-n: 201 is above the 200 tasks a category holds: give at most 200"),
    (["--tasks-max-turns", "0"], "argument --tasks-max-turns: 0 is too small: give at least 1"),
    (["--tasks-max-tool-calls", "0"], "argument --tasks-max-tool-calls: 0 is too small: give at least 1"),
    (["--tasks-agent-target", "speed=3"], "argument --tasks-agent-target: unknown key 'speed' (choose from "
                                          "agent_output_tok_s, task_s_p90)"),
    (["--tasks-time-limit", "0"], "argument --tasks-time-limit: 0 is not a usable number of seconds: give a finite "
                                  "number above 0"),
])
def test_bad_input_is_one_line_and_exit_2(argv, says, capsys):
    with pytest.raises(SystemExit) as done:
        run_module.main(["--demos", "tasks", *argv], env={})
    assert done.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0] == f"python -m agent.run: error: {says} (see --help)", err
