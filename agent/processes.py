"""Child processes that never outlive the command: own process group, stopped as a group.

Every helper process (llama-server, ``aws ssm start-session`` and the
session-manager-plugin it starts, the test relay) is started in a new session, so a
terminal's Ctrl-C reaches only this program, which then stops each group in order:
SIGTERM to the whole group, a grace period, SIGKILL. On Linux the direct child also
gets SIGTERM from the kernel if this program dies without cleaning up (PR_SET_PDEATHSIG).
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
"""Time a process group gets after SIGTERM before SIGKILL."""

_PR_SET_PDEATHSIG = 1
try:  # resolved here, not in the forked child
    _prctl = ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None
except (OSError, AttributeError):  # pragma: no cover
    _prctl = None


def _die_with_parent() -> None:  # runs in the child between fork and exec
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)


GUARD = Path(__file__).resolve().parent.parent / "rigs" / "guard.py"


def spawn(command: Sequence[str], log: IO[bytes] | None = None,
          env: dict[str, str] | None = None, cwd: Path | None = None, guard: bool = True) -> subprocess.Popen:
    """Start ``command`` in its own session and process group, output to ``log``.

    With ``guard`` (the default) the command runs under ``agent/guard.py``, which
    stops the whole group when this program dies in any way, and clears out what the
    command leaves behind when it exits (see that module). The returned process is
    then the guard, the leader of the group.

    The parent-death signal is only set when called from the main thread: the kernel
    sends it when the *thread* that forked exits, which would kill a child started from
    a short-lived worker thread (the guard also notices its parent's death by polling).
    """
    if guard:
        command = [sys.executable, str(GUARD), "--", *command]
    preexec = None
    if _prctl is not None and threading.current_thread() is threading.main_thread():
        preexec = _die_with_parent
    process = subprocess.Popen(
        list(command), stdin=subprocess.DEVNULL,
        stdout=log if log is not None else subprocess.DEVNULL,
        stderr=subprocess.STDOUT if log is not None else subprocess.DEVNULL,
        start_new_session=True, preexec_fn=preexec, env=env, cwd=cwd,
    )
    logger.debug("pid=<%s>, command=<%s> | started", process.pid, " ".join(command))
    return process


def stop(process: subprocess.Popen, grace_s: float = STOP_GRACE_S) -> int | None:
    """Stop the process and every process in its group; return its exit status.

    Safe to call more than once and on a process that already exited (its group may
    still hold children, e.g. a session-manager-plugin whose aws CLI parent died).
    """
    pgid = process.pid  # start_new_session: the child leads its own group
    _signal_group(pgid, signal.SIGTERM)
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        logger.warning("pid=<%s> | did not stop within %.0f s of SIGTERM, killing", process.pid, grace_s)
    # Whatever is left of the group (the leader or its children) is killed outright.
    _signal_group(pgid, signal.SIGKILL)
    try:
        return process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:  # pragma: no cover - unkillable (D state)
        logger.error("pid=<%s> | still running after SIGKILL", process.pid)
        return None


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass
    except PermissionError:  # pragma: no cover - the id was reused by someone else's group
        logger.warning("pgid=<%s> | not ours any more, not signalled", pgid)
