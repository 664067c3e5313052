"""Child processes of a rehearsal, each in a process group of its own, always stopped.

A child in its own session does not receive the terminal's Ctrl-C: the rehearsal decides what
each one is told (the benchmark is interrupted and writes its evidence; a ``cdk`` command is
stopped), and stops the whole group, so nothing it started outlives it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from typing import IO, Sequence


def spawn(command: Sequence[str], *, log: IO[bytes] | None = None, stdin: int | None = subprocess.DEVNULL,
          stdout: int | IO[bytes] | None = None, cwd: str | os.PathLike | None = None,
          env: dict[str, str] | None = None) -> subprocess.Popen:
    """Start ``command`` in a new session (its own process group)."""
    return subprocess.Popen(list(command), stdin=stdin, stdout=stdout if stdout is not None else log,
                            stderr=log if log is not None else None, cwd=cwd, env=env, start_new_session=True)


def signal_group(process: subprocess.Popen, signum: int) -> None:
    try:
        os.killpg(process.pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def stop(process: subprocess.Popen | None, first: int = signal.SIGTERM, grace_s: float = 20.0) -> int | None:
    """Send ``first`` to the process's group, wait ``grace_s``, then kill the group. Returns the exit status."""
    if process is None:
        return None
    if process.poll() is None:
        signal_group(process, first)
        try:
            process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            signal_group(process, signal.SIGKILL)
            process.wait(timeout=10)
    signal_group(process, signal.SIGKILL)  # anything the leader left behind in its group
    return process.returncode


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

    def stop_all(self, first: int = signal.SIGINT, grace_s: float = 20.0) -> None:
        with self._lock:
            processes = list(self._processes)
        threads = [threading.Thread(target=stop, args=(p, first, grace_s), daemon=True) for p in processes]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
