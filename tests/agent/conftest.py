"""Fixtures for the agent's tests: a tiny OpenAI-compatible server, a fake benchmark runner, a machine with no
AWS and one with moto's, the real local rig, process trees."""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import types
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

import boto3
import pytest
from moto import mock_aws

from agent.backends import Backend
from agent.kinds import descriptor
from agent.local_rig import LocalRigError, RunningRig, find_installation, local_rig_process
from kit import guard


class _ChatHandler(BaseHTTPRequestHandler):
    """Answers ``POST /v1/chat/completions`` with a fixed completion and usage."""

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802 (http.server naming)
        length = int(self.headers.get("Content-Length", "0"))
        request = json.loads(self.rfile.read(length) or b"{}")
        self.server.requests.append((self.path, request))  # type: ignore[attr-defined]
        if self.path != "/v1/chat/completions":
            self.send_error(404)
            return
        body = json.dumps({
            "id": "chatcmpl-test", "object": "chat.completion", "model": request.get("model"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "OK"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
        }).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # silence
        pass


class ChatServer:
    """An OpenAI-compatible chat server on 127.0.0.1, in a thread."""

    def __init__(self, port: int = 0) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), _ChatHandler)
        self.httpd.daemon_threads = True
        self.httpd.requests = []  # type: ignore[attr-defined]
        self.port = self.httpd.server_address[1]
        # shutdown() waits for the loop's next look at its flag: every 0.5 s by default, in each test's teardown
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def requests(self) -> list:
        return self.httpd.requests  # type: ignore[attr-defined]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def chat_server() -> Iterator[ChatServer]:
    server = ChatServer()
    yield server
    server.close()


AWS_VARS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE")


class FakeRunner(types.ModuleType):
    """Stands in for agent.bench.command.runner: records the call, returns a chosen exit code."""

    def __init__(self, code: int = 0) -> None:
        super().__init__("agent.bench.command.runner")
        self.code = code
        self.calls: list[dict[str, Any]] = []

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--demos", default="counting,orchestrator,chat", help="which parts to run")

    def check_options(self, options: argparse.Namespace) -> None:
        """Its one option takes any value: nothing to check across options."""

    def run(self, backends: list[Backend], options: argparse.Namespace, *, out_dir: Path, session: Any) -> int:
        self.calls.append({"backends": list(backends), "options": options, "out_dir": out_dir, "session": session,
                           "out_dir_ready": (out_dir / "requests.jsonl").is_file(),
                           "alive": {b.name: _answers(b) for b in backends
                                     if b.base_url and descriptor(b.kind).auth is None}})  # AWS's endpoint: signed
        return self.code


def _answers(backend: Backend) -> bool:
    from agent.reach.probe import chat_once

    return bool(chat_once(backend.base_url, backend.model_id, timeout_s=30)["choices"])


@pytest.fixture
def fake_runner(monkeypatch: pytest.MonkeyPatch) -> FakeRunner:
    fake = FakeRunner()
    monkeypatch.setitem(sys.modules, "agent.bench.command.runner", fake)
    return fake


@pytest.fixture
def no_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A machine with no AWS configuration at all."""
    for key in AWS_VARS:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))


@pytest.fixture
def aws() -> Iterator[boto3.Session]:
    with mock_aws():
        yield boto3.Session(region_name="us-east-1")


CI_VARIABLE = "CI"
"""Set (to anything but empty, 0, false or no) by CI services and by ``.ci/run``."""


def in_ci() -> bool:
    """Whether this run is CI, where a test that needs the local rig must run or fail."""
    return os.environ.get(CI_VARIABLE, "").strip().lower() not in ("", "0", "false", "no")


def local_rig_missing() -> str | None:
    """Why the local rig cannot be started here, or None when it is installed."""
    try:
        find_installation()
    except LocalRigError as exc:
        return str(exc)
    return None


def require_local_rig() -> None:
    """Skip the calling test when the local rig is missing; in CI, fail it instead.

    A skip passes, so in CI a missing rig would silently drop every real-model test;
    ``scripts/setup`` installs the rig, and CI must prove it works.
    """
    missing = local_rig_missing()
    if missing is None:
        return
    if in_ci():
        pytest.fail(f"the local rig is missing and this is CI ({CI_VARIABLE}={os.environ[CI_VARIABLE]}), "
                    f"where tests that need it must run: {missing}", pytrace=False)
    pytest.skip(f"local rig not installed: {missing} (in CI, with {CI_VARIABLE}=true, this test fails instead)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "local_rig: needs the real local rig; skipped when it is missing, "
                                       "failed when it is missing in CI")


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("local_rig") is not None:
        require_local_rig()


@pytest.fixture(scope="session")
def local_rig() -> Iterator[RunningRig]:
    """The real local rig (the llama.cpp server + SmolLM2), started once per test session.

    Skipped, with the reason, when it is not installed, and failed for that in CI;
    ``scripts/setup`` installs it.
    """
    require_local_rig()
    with local_rig_process() as rig:
        yield rig


# --- process trees (Linux /proc) -----------------------------------------------------


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of a process, or None if it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = text[text.rindex(")") + 2:].split()
    return fields[0], int(fields[1])


def descendants(pid: int) -> set[int]:
    """Every live descendant of ``pid``."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = _stat(int(entry))
            if stat is not None:
                children.setdefault(stat[1], []).append(int(entry))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def alive(pids: set[int]) -> set[int]:
    """The pids that still run (zombies waiting to be reaped do not count)."""
    return {pid for pid in pids if (stat := _stat(pid)) is not None and stat[0] != "Z"}


GONE_WITHIN_S = guard.POLL_S + guard.GRACE_S + 20
"""How long a helper may outlive the process that started it: its guard notices the death within ``POLL_S``,
signals the group, gives it ``GRACE_S`` and kills what is left; 20 s more for a loaded machine (a window of
5 s in all failed once in CI, with the guard's own worst case at 4.2 s; one of 9.2 s failed once in CI while the
rag end-to-end test's llama-server held both cores, and once in four runs here beside three busy loops). A check
that passes returns as soon as every process is gone."""


def alive_after(pids: set[int], seconds: float = GONE_WITHIN_S) -> set[int]:
    """The pids still running ``seconds`` after the call, or none sooner: a killed process's children are
    signalled, reparented and reaped asynchronously, so one may outlive its leader's exit by moments."""
    deadline = time.monotonic() + seconds
    while alive(pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive(pids)
