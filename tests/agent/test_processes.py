"""Helper processes: own group, stopped as a group, nothing left when the helper exits by itself."""

from __future__ import annotations

import time

from agent.processes import spawn, stop

from .conftest import alive, descendants


def _wait_exit(process, timeout_s: float = 10.0) -> int:
    return process.wait(timeout=timeout_s)


def test_stop_takes_the_whole_group() -> None:
    process = spawn(["/bin/sh", "-c", "sleep 300 & sleep 300 & wait"])
    deadline = time.monotonic() + 30  # generous: the guard is a Python process, slow to start on a loaded machine
    while len(descendants(process.pid)) < 3 and time.monotonic() < deadline:  # sh + 2 sleeps
        time.sleep(0.02)
    tree = descendants(process.pid) | {process.pid}
    assert len(tree) >= 4
    stop(process)
    assert alive(tree) == set()


def test_leftovers_of_a_helper_that_exits_are_cleared() -> None:
    """Like the AWS CLI exiting while its session-manager-plugin still runs."""
    process = spawn(["/bin/sh", "-c", "sleep 300 & sleep 0.3; exit 3"])
    time.sleep(0.1)
    tree = descendants(process.pid)
    assert _wait_exit(process) in (3, -9)  # -9: the guard cleared the group, itself included
    deadline = time.monotonic() + 5
    while alive(tree) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert alive(tree) == set()


def test_exit_status_passes_through_the_guard() -> None:
    assert _wait_exit(spawn(["/bin/sh", "-c", "exit 7"])) == 7


def test_stop_is_idempotent() -> None:
    process = spawn(["/bin/true"])
    _wait_exit(process)
    stop(process)
    stop(process)
