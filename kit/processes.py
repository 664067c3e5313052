"""Child processes that never outlive the command: each in a process group of its own, stopped as a group.

Every child (the agent's llama-server and ``aws ssm start-session`` with the
session-manager-plugin it starts, the test relay; the rehearsal's ``cdk`` commands, the
benchmark, the local rig and moto's server) is started in a new session, so a terminal's
Ctrl-C reaches only this program, which decides what each child is told and then stops
each group: the first signal (SIGTERM, or SIGINT for a command that should wind down and
write what it has) to the whole group, a grace period, SIGKILL to whatever is left.

A helper that must not outlive this program even when it is killed outright runs under
``kit/guard.py`` (``guard=True``): the guard leads the group, stops it when this program
dies in any way, and clears out what the command leaves behind when it exits. On Linux it
also gets SIGTERM from the kernel when this program dies (PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Sequence

logger = logging.getLogger(__name__)

STOP_GRACE_S = 5.0
"""Time a helper's group gets after the first signal before SIGKILL (more than the guard's own 4 s)."""
COMMAND_GRACE_S = 20.0
"""The same for a command the rehearsal runs (``cdk``, the benchmark, the local rig, moto's server)."""
GUARD = Path(__file__).with_name("guard.py")

_PR_SET_PDEATHSIG = 1
try:  # resolved here, not in the forked child
    _prctl = ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None
except (OSError, AttributeError):  # pragma: no cover
    _prctl = None


def _die_with_parent() -> None:  # runs in the child between fork and exec
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)


def spawn(command: Sequence[str], *, log: IO[bytes] | int | None = subprocess.DEVNULL,
          stdout: IO[bytes] | int | None = None, stdin: IO[bytes] | int | None = subprocess.DEVNULL,
          cwd: str | os.PathLike | None = None, env: dict[str, str] | None = None,
          guard: bool = False) -> subprocess.Popen:
    """Start ``command`` in its own session and process group.

    Args:
        log: where its output goes (stderr, and stdout unless ``stdout`` is given): a file,
            ``subprocess.DEVNULL`` (the default), or None for this program's own.
        stdout: its standard output when not ``log`` (``subprocess.PIPE`` to read it).
        stdin: its standard input (default: none; None: this program's own).
        guard: run it under ``kit/guard.py``; the returned process is then the guard, the
            leader of the group. The parent-death signal is only set when called from the main
            thread: the kernel sends it when the *thread* that forked exits, which would kill a
            child started from a short-lived worker thread (the guard also notices its parent's
            death by polling).
    """
    command = [sys.executable, str(GUARD), "--", *command] if guard else list(command)
    preexec = None
    if guard and _prctl is not None and threading.current_thread() is threading.main_thread():
        preexec = _die_with_parent
    process = subprocess.Popen(command, stdin=stdin, stdout=stdout if stdout is not None else log, stderr=log,
                               start_new_session=True, preexec_fn=preexec, env=env, cwd=cwd)
    logger.debug("pid=<%s>, command=<%s> | started", process.pid, " ".join(command))
    return process


def signal_group(process: subprocess.Popen, signum: int) -> None:
    """Send ``signum`` to every process in the group ``process`` leads (none left: nothing to do)."""
    try:
        os.killpg(process.pid, signum)  # start_new_session: the child leads its own group
    except ProcessLookupError:
        pass
    except PermissionError:  # pragma: no cover - the id was reused by someone else's group
        logger.warning("pgid=<%s> | not ours any more, not signalled", process.pid)


def stop(process: subprocess.Popen | None, first: int = signal.SIGTERM,
         grace_s: float = STOP_GRACE_S) -> int | None:
    """Send ``first`` to the process's group, wait ``grace_s``, then kill the group; return its exit status.

    Safe to call more than once, with None, and on a process that already exited (its group may
    still hold children, e.g. a session-manager-plugin whose aws CLI parent died).
    """
    if process is None:
        return None
    signal_group(process, first)
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        logger.warning("pid=<%s> | did not stop within %.0f s of signal %d, killing", process.pid, grace_s, first)
    signal_group(process, signal.SIGKILL)  # whatever is left of the group (the leader or its children)
    try:
        return process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:  # pragma: no cover - unkillable (D state)
        logger.error("pid=<%s> | still running after SIGKILL", process.pid)
        return None


class Running:
    """The processes in flight now, so an interrupt can reach every one of them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._processes: set[subprocess.Popen] = set()

    def add(self, process: subprocess.Popen) -> subprocess.Popen:
        with self._lock:
            self._processes.add(process)
        return process

    def discard(self, process: subprocess.Popen) -> None:
        with self._lock:
            self._processes.discard(process)

    def stop_all(self, first: int = signal.SIGINT, grace_s: float = COMMAND_GRACE_S) -> None:
        """Stop every process in flight at once (in parallel), each as :func:`stop` does."""
        with self._lock:
            processes = list(self._processes)
        threads = [threading.Thread(target=stop, args=(p, first, grace_s), daemon=True) for p in processes]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
