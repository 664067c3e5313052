"""Child processes (kit/processes.py): a group of their own, stopped as a group, the first signal
escalated to SIGKILL, every process in flight stopped at once; and under the guard (the agent's helpers), the
whole group stopped and nothing left behind when the helper exits by itself."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import time
from pathlib import Path

from kit.processes import Running, spawn, stop
from kit.waiting import poll_until
from tests.agent.conftest import alive_after
from tests.agent.conftest import descendants


def wait_for_children(process: subprocess.Popen, count: int) -> set[int]:
    deadline = time.monotonic() + 30  # generous: a loaded machine starts processes slowly
    while len(descendants(process.pid)) < count and time.monotonic() < deadline:
        time.sleep(0.02)
    return descendants(process.pid) | {process.pid}


def test_a_command_leads_a_group_and_session_of_its_own():
    """So the terminal's Ctrl-C reaches only this program, which decides what each child is told."""
    process = spawn(["sleep", "30"])
    try:
        assert os.getpgid(process.pid) == os.getsid(process.pid) == process.pid != os.getpgrp()
    finally:
        assert stop(process) == -signal.SIGTERM


def test_a_group_that_ignores_the_first_signal_is_killed_after_the_grace():
    process = spawn(["/bin/sh", "-c", "trap '' INT; sleep 300 & wait"])
    tree = wait_for_children(process, 1)
    started = time.monotonic()
    assert stop(process, signal.SIGINT, grace_s=0.5) == -signal.SIGKILL
    assert time.monotonic() - started < 5 and alive_after(tree) == set()


def test_an_interrupt_reaches_every_command_in_flight_at_once():
    running = Running()
    processes = [running.add(spawn(["sleep", "300"])) for _ in range(3)]
    started = time.monotonic()
    running.stop_all(signal.SIGINT, grace_s=30)
    assert [p.returncode for p in processes] == [-signal.SIGINT] * 3
    assert time.monotonic() - started < 10  # in parallel, and none waited out its grace
    assert stop(processes[0]) == -signal.SIGINT  # stopping again is harmless


def test_output_goes_to_the_log_unless_stdout_is_taken(tmp_path: Path):
    script = ["/bin/sh", "-c", "echo out; echo err >&2"]
    with (tmp_path / "both.log").open("ab") as log:
        assert spawn(script, log=log).wait(timeout=10) == 0
    assert sorted((tmp_path / "both.log").read_text().split()) == ["err", "out"]
    with (tmp_path / "err.log").open("ab") as log:
        process = spawn(script, log=log, stdout=subprocess.PIPE)
        assert process.communicate(timeout=10)[0] == b"out\n"
    assert (tmp_path / "err.log").read_text() == "err\n"


# --- under the guard (the agent's helpers) ---------------------------------------------------------


def test_stop_takes_the_whole_guarded_group():
    process = spawn(["/bin/sh", "-c", "sleep 300 & sleep 300 & wait"], guard=True)
    tree = wait_for_children(process, 3)  # the guard is a Python process: slow to start on a loaded machine
    assert len(tree) >= 4  # guard, sh, 2 sleeps
    stop(process)
    assert alive_after(tree) == set()


def test_leftovers_of_a_helper_that_exits_are_cleared(tmp_path: Path):
    """Like the AWS CLI exiting while its session-manager-plugin still runs. The helper leaves a child behind and
    exits only when told, so the child is known to run when it does (a fixed pause let a slow start exit first,
    or be looked at before its child existed, and nothing was checked)."""
    left, go = tmp_path / "left", tmp_path / "go"
    wait_for_go = f"while [ ! -e {shlex.quote(str(go))} ]; do sleep 0.01; done"
    process = spawn(["/bin/sh", "-c", f"sleep 300 & echo $! > {shlex.quote(str(left))}; {wait_for_go}; exit 3"],
                    guard=True)

    def written() -> int | None:
        text = left.read_text().strip() if left.exists() else ""
        return int(text) if text else None

    leftover = poll_until(written, timeout_s=30, interval_s=0.02, what="the helper's child")  # a slow start: 30 s
    tree = descendants(process.pid)
    assert leftover in tree  # the sleep, under the shell, under the guard
    go.touch()
    assert process.wait(timeout=30) in (3, -9)  # -9: the guard cleared the group, itself included
    assert alive_after(tree) == set()


def test_exit_status_passes_through_the_guard():
    assert spawn(["/bin/sh", "-c", "exit 7"], guard=True).wait(timeout=10) == 7


def test_stop_is_idempotent():
    process = spawn(["/bin/true"], guard=True)
    assert process.wait(timeout=10) == 0
    assert stop(process) == stop(process) == 0
