"""Fixtures for the benchmark's tests: backends, options and a fake tool-calling server."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from agent.backends import Backend
from agent.bench.analysis import summary
from agent.bench.command import evidence, runner

from tests.agent.bench.fakes.openai_fake import FakeOpenAI
from tests.agent.bench.fakes.scripted import Script


def make_options(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out")
    runner.add_arguments(parser)
    return parser.parse_args(list(argv))


def run_demo(tmp_path: Path, backends: list[Backend], demo: str, *argv: str) -> tuple[int, dict, list[dict], Path]:
    """One part (``--demos demo``) run on ``backends`` into ``tmp_path/out``: the exit status, the validated
    summary, the request records and the folder."""
    out = tmp_path / "out"
    code = runner.run(backends, make_options("--demos", demo, *argv), out, None)
    s = json.loads((out / "summary.json").read_text())
    summary.validate(s)
    return code, s, evidence.read_requests(out / "requests.jsonl"), out


def agent_script(body: dict[str, Any]) -> Script:
    """A well-behaved tool-calling model: count_ids(>=, 10) for counting, ask every backend then the
    scoreboard for the orchestrator, and a final answer quoting the last tool result."""
    tools = [t["function"]["name"] for t in body.get("tools") or []]
    messages = body.get("messages") or []
    called = [c["function"]["name"] for m in messages for c in m.get("tool_calls") or []]
    if "count_ids" in tools:
        return Script(tool_call=("count_ids", {"op": ">=", "value": 10}),
                      final="There are 8 ids that are 10 or more.")
    if "scoreboard" in tools:
        results = [m["content"] for m in messages if m.get("role") == "tool"]
        texts = [r if isinstance(r, str) else " ".join(c.get("text", "") for c in r) for r in results]
        table = next((t for t in reversed(texts) if t.startswith("| backend")), "")
        for name in tools:
            if name not in called:
                args = ({} if name == "scoreboard" else {"winner": "g6", "table": table} if name == "submit_summary"
                        else {"prompt": "What is the capital of France?"})
                return Script(tool_call=(name, args), call_after_results=True)
        return Script(final=f"{table}\n\nThe fastest response came from g6.")
    if any("capital of France" in str(m.get("content")) for m in messages):
        return Script(text="Paris")
    return Script(chunk_delay_s=0.001)


@pytest.fixture
def fake_agent_server():
    with FakeOpenAI(Script(choose=agent_script)) as fake:
        yield fake


@pytest.fixture
def fake_neuron_server():
    with FakeOpenAI(Script(mode="no_sse", text="The ocean covers most of the planet.")) as fake:
        yield fake


def openai_backend(name: str, url: str, **kw: Any) -> Backend:
    defaults = dict(label=f"{name} label", kind="openai", model_id="xbill9/gemma-4-E2B-it-qat-q4_0-w4a16-ct-text-emb4",
                    tool_calls=True, base_url=url, metadata={"instance_type": "g6.xlarge", "region": "us-east-2"})
    defaults.update(kw)
    return Backend(name=name, **defaults)
