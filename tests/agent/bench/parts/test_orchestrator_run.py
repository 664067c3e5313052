"""The orchestrator end to end on fake servers: the structured answer made in the run, in the
follow-up turn, and by the local rig's constrained model; every check recomputes from the evidence."""

from __future__ import annotations

import json
from pathlib import Path

from agent.bench.command import evidence, runner
from agent.bench.presentation import report
from agent.bench.analysis import summary
from agent.bench.clients.constrained import CONSTRAINED_ANSWER_MAX_CHARS

from tests.agent.bench.conftest import make_options

from tests.agent.bench.conftest import openai_backend
from tests.agent.bench.fakes.openai_fake import FakeOpenAI
from tests.agent.bench.fakes.scripted import Script

ASK_MAX_TOKENS = 64  # the orchestrator's ask_ requests come from the timer with this cap


def run_orchestrator_only(tmp_path: Path, backends) -> tuple[int, dict, Path]:
    out = tmp_path / "out"
    code = runner.run(backends, make_options("--runs", "1", "--demos", "orchestrator"), out, None)
    s = json.loads((out / "summary.json").read_text())
    summary.validate(s)
    records = evidence.read_requests(out / "requests.jsonl")
    again = summary.summarize(records, json.loads((out / "run.json").read_text()))
    assert again.as_json() == s  # every verdict recomputes from the evidence
    assert report.render(summary.validate(s)) == (out / "REPORT.md").read_text()
    return code, s, out


def tool_results(messages) -> list[str]:
    out = []
    for m in messages:
        if m.get("role") == "tool":
            c = m["content"]
            out.append(c if isinstance(c, str) else " ".join(part.get("text", "") for part in c))
    return out


def test_an_agent_that_does_not_submit_commits_in_the_follow_up(tmp_path):
    def script(body):
        tools = [t["function"]["name"] for t in body.get("tools") or []]
        called = [c["function"]["name"] for m in body["messages"] for c in m.get("tool_calls") or []]
        if body.get("max_tokens") == ASK_MAX_TOKENS:
            return Script(text="Paris")
        if tools == ["submit_summary"]:  # the follow-up turn: only the structured answer is offered
            return Script(tool_call=("submit_summary", {"winner": "g6", "table": ""}), final="Submitted.")
        for name in ("ask_g6", "scoreboard"):
            if name not in called:
                return Script(tool_call=(name, {} if name == "scoreboard" else {"prompt": "Capital of France?"}),
                              call_after_results=True)
        table = tool_results(body["messages"])[-1]
        return Script(final=f"{table}\n\nCompared with the others, g6 was the fastest.")

    with FakeOpenAI(Script(choose=script)) as fake:
        code, s, out = run_orchestrator_only(tmp_path, [openai_backend("g6", fake.base_url)])
    o = s["orchestrator"]
    assert code == 0 and o["ran"] and o["failure"] is None
    assert o["submitted"] and o["submitted_via"] == "follow-up" and o["winner_verdict"] == "right"
    assert o["winner_text"] == "named" and o["winner_claimed"] == "g6" and not o["text_disagrees"]
    assert o["table_quote"] == "exact" and o["follow_up_reply"] == "Submitted."
    record = next(r for r in evidence.read_requests(out / "requests.jsonl") if r["part"] == "orchestrator")
    assert "submit_summary" in record["system_prompt"] and record["follow_up"]["calls"][0]["name"] == "submit_summary"
    text = (out / "REPORT.md").read_text()
    assert "submitted in the follow-up turn: winner `g6`" in text and "- Winner: right (g6)" in text


def test_the_constrained_local_rig_completes_and_is_labelled(tmp_path):
    def script(body):
        fmt = body.get("response_format")
        if fmt and fmt["json_schema"]["name"] == "answer":  # the text answer, held to a bounded length
            assert fmt["json_schema"]["schema"]["properties"]["answer"]["maxLength"] == CONSTRAINED_ANSWER_MAX_CHARS
            return Script(text=json.dumps({"answer": "The tool returned Paris."}))
        if fmt:  # a constrained tool choice: the schema lists the tools offered
            schema = fmt["json_schema"]["schema"]
            offered = [o["properties"]["tool"]["const"] for o in schema.get("oneOf", [schema])]
            if offered == ["submit_summary"]:
                call = {"tool": "submit_summary", "arguments": {"winner": "local", "table": "| local | Paris |"}}
            else:
                call = {"tool": "ask_local", "arguments": {"prompt": "What is the capital of France?"}}
            return Script(text=json.dumps(call))
        if body.get("max_tokens") == ASK_MAX_TOKENS:
            return Script(text="Paris")
        return Script(text="The tool returned Paris.")

    with FakeOpenAI(Script(choose=script)) as fake:
        local = openai_backend("local", fake.base_url, tool_calls=False, constrained_tools=True, toy_model=True,
                               model_id="SmolLM2-135M-Instruct", metadata={})
        code, s, out = run_orchestrator_only(tmp_path, [local])
        choices = [r for r in fake.requests if r.get("response_format", {}).get("json_schema", {}).get("name")
                   == "tool_call"]
    o = s["orchestrator"]
    assert code == 0 and s["backends"]["local"]["completed"] and o["constrained"]
    assert o["asked"] == ["local"] and o["submitted_via"] == "follow-up" and o["winner_verdict"] == "right"
    assert o["submitted_table_quote"] == "absent"  # it never called scoreboard: nothing to match
    # the grammar admitted only an offered backend as the winner
    follow = choices[-1]["response_format"]["json_schema"]["schema"]
    assert follow["properties"]["arguments"]["properties"]["winner"]["enum"] == ["local"]
    text = (out / "REPORT.md").read_text()
    assert "Orchestrator: local (constrained)" in text and "Constrained mode: each agent run makes one" in text
    assert o["reply"] == "The tool returned Paris."  # the bounded answer, unwrapped


def test_an_empty_orchestrator_reply_is_a_failure(tmp_path):
    def script(body):
        if body.get("max_tokens") == ASK_MAX_TOKENS:
            return Script(text="Paris")
        called = [c["function"]["name"] for m in body["messages"] for c in m.get("tool_calls") or []]
        if "ask_g6" not in called:
            return Script(tool_call=("ask_g6", {"prompt": "Capital?"}))
        return Script(final="")

    with FakeOpenAI(Script(choose=script)) as fake:
        code, s, _ = run_orchestrator_only(tmp_path, [openai_backend("g6", fake.base_url)])
    o = s["orchestrator"]
    assert code == 1 and o["winner_verdict"] == "failed" and o["failure"].startswith("empty reply")
    assert not o["wrong_winner"] and not o["submitted"] and o["follow_up_reply"] is None
    assert any(f.startswith("orchestrator: empty reply") for f in s["backends"]["g6"]["failures"])
