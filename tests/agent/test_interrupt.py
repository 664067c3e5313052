"""Ctrl-C and SIGTERM: whatever the command started is gone afterwards (a leftover child fails)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from agent.local_rig import free_port

from tests.agent.conftest import ChatServer

from tests.agent.conftest import alive_after

from tests.agent.conftest import descendants

PROJECT = Path(__file__).resolve().parents[2]

# A benchmark stand-in that says it is running, then waits to be interrupted.
RUN_WITH_WAITING_RUNNER = textwrap.dedent("""
    import sys, time, types
    runner = types.ModuleType("agent.bench.command.runner")
    def run(backends, options, *, out_dir, session):
        print("RUNNING " + ",".join(b.name for b in backends), flush=True)
        time.sleep(600)
        return 0
    runner.run = run
    runner.add_arguments = lambda parser: None  # no options of its own, so none to check
    runner.check_options = lambda options: None
    sys.modules["agent.bench.command.runner"] = runner
    from agent.run import main
    sys.exit(main(sys.argv[1:]))
""")

HOLD_FORWARDS = textwrap.dedent("""
    import sys, time
    from agent.reach.forwarding import ForwardSet, RelayPortForward
    target, *ports = map(int, sys.argv[1:])
    with ForwardSet() as forwards:
        for i, port in enumerate(ports):
            forwards.add(RelayPortForward(f"rig{i}", target_port=target, local_port=port)).open("m", 20)
        print("RUNNING", flush=True)
        time.sleep(600)
""")


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_EC2_METADATA_DISABLED="true", AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
               AWS_CONFIG_FILE=str(tmp_path / "none"), PYTHONPATH=str(PROJECT))
    return env


def _start(args: list[str], tmp_path: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, *args], cwd=PROJECT, env=_env(tmp_path), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _wait_for_line(process: subprocess.Popen, prefix: str, timeout_s: float = 60) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if line.startswith(prefix):
            return line
        if not line and process.poll() is not None:
            break
    process.kill()
    raise AssertionError(f"no {prefix!r} line; stderr: {process.stderr.read()}")


def _interrupt_and_check(process: subprocess.Popen, sig: signal.Signals, expected_children: int) -> int:
    children = descendants(process.pid)
    assert len(children) >= expected_children, children
    process.send_signal(sig)
    try:
        code = process.wait(timeout=30)
    finally:
        process.kill()
    left = alive_after(children)
    assert left == set(), f"left behind: {left}"
    return code


@pytest.mark.local_rig
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_run_command_interrupted_leaves_no_process(sig: signal.Signals, tmp_path: Path) -> None:
    process = _start(["-c", RUN_WITH_WAITING_RUNNER, "--local", "--backends", "local", "--out", str(tmp_path)],
                     tmp_path)
    assert _wait_for_line(process, "RUNNING").strip() == "RUNNING local"
    assert _interrupt_and_check(process, sig, expected_children=1) == 130
    assert "interrupted; everything this command started has been stopped" in process.stderr.read()


@pytest.mark.local_rig
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_local_rig_holder_interrupted_leaves_no_process(sig: signal.Signals, tmp_path: Path) -> None:
    """Guard and server process both go, also when the holder is killed outright."""
    process = _start(["-m", "agent.local_rig"], tmp_path)
    started = json.loads(_wait_for_line(process, "{"))
    assert started["pid"] in descendants(process.pid)
    code = _interrupt_and_check(process, sig, expected_children=2)  # the guard, the server process
    assert code == (-signal.SIGKILL if sig == signal.SIGKILL else 130)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_forwards_interrupted_leave_no_process(sig: signal.Signals, chat_server: ChatServer, tmp_path: Path) -> None:
    process = _start(["-c", HOLD_FORWARDS, str(chat_server.port), str(free_port()), str(free_port())], tmp_path)
    _wait_for_line(process, "RUNNING")
    code = _interrupt_and_check(process, sig, expected_children=2)
    assert code != 0


def test_killed_holder_takes_its_direct_child_along(tmp_path: Path, chat_server: ChatServer) -> None:
    """Even SIGKILL (no cleanup possible) does not orphan the helper: PR_SET_PDEATHSIG."""
    process = _start(["-c", HOLD_FORWARDS, str(chat_server.port), str(free_port())], tmp_path)
    _wait_for_line(process, "RUNNING")
    _interrupt_and_check(process, signal.SIGKILL, expected_children=1)


HOLD_FORWARD_WITH_GRANDCHILD = textwrap.dedent("""
    import sys, time
    from agent.reach.forwarding import RelayPortForward
    class TwoLevel(RelayPortForward):
        # like `aws ssm start-session`, which runs session-manager-plugin as its own child
        def command(self):
            return ["/bin/sh", "-c", " ".join(super().command()) + " & wait"]
    target, port = map(int, sys.argv[1:])
    forward = TwoLevel("rig", target_port=target, local_port=port)
    forward.open("m", 20)
    print("RUNNING", flush=True)
    time.sleep(600)
""")


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_grandchildren_of_a_dead_holder_are_stopped(sig: signal.Signals, tmp_path: Path,
                                                    chat_server: ChatServer) -> None:
    """A helper's own children (the session-manager-plugin under the AWS CLI) go too, even on SIGKILL."""
    process = _start(["-c", HOLD_FORWARD_WITH_GRANDCHILD, str(chat_server.port), str(free_port())], tmp_path)
    _wait_for_line(process, "RUNNING")
    _interrupt_and_check(process, sig, expected_children=3)  # guard, sh, relay
