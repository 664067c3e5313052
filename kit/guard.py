"""``python kit/guard.py -- COMMAND...``: run COMMAND, and take its whole process group down with it.

:func:`kit.processes.spawn` with ``guard=True`` starts a helper (the agent's llama-server and
``aws ssm start-session``) through this guard, as the leader of a new process group. The guard
runs the command in that group and, when any of these happens, stops the whole group (SIGTERM,
then SIGKILL):

* it gets SIGTERM or SIGINT (its parent closing the forward or the rig);
* its parent dies without cleaning up (SIGKILL, a crash): noticed by the parent-death
  signal and by the parent pid changing;
* the command exits by itself: anything it left behind in the group (the
  session-manager-plugin started by the AWS CLI) is stopped too.

So no helper's children outlive the program that started it, whatever happens to that program.
Run as a script, and only the standard library is imported here, to keep start-up short.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

GRACE_S = 4.0
POLL_S = 0.2


def _stop_group(child: subprocess.Popen) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    group = os.getpgid(0)
    try:
        os.killpg(group, signal.SIGTERM)
    except ProcessLookupError:  # pragma: no cover
        pass
    try:
        child.wait(timeout=GRACE_S)
    except subprocess.TimeoutExpired:
        pass
    # Leftover grandchildren (or a child ignoring SIGTERM) are killed with the guard itself.
    if _others_in_group(group) or child.poll() is None:
        os.killpg(group, signal.SIGKILL)


def _others_in_group(group: int) -> bool:
    me = os.getpid()
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                text = handle.read().decode(errors="replace")
        except OSError:
            continue
        fields = text[text.rindex(")") + 2:].split()
        if fields[0] != "Z" and int(fields[2]) == group:
            return True
    return not os.path.isdir("/proc")  # elsewhere: assume there may be, and kill the group


_stop_asked = False


def _ask_stop(signum: int, frame: object) -> None:
    """SIGTERM or SIGINT: noted, and acted on at the next poll. Raising from the handler instead could interrupt
    the stopping itself (the parent-death signal often lands just after the poll saw the parent gone), and leave
    the command running after the guard."""
    global _stop_asked
    _stop_asked = True


def main(argv: list[str]) -> int:
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        print("usage: python kit/guard.py -- COMMAND [ARG...]", file=sys.stderr)
        return 2
    parent = os.getppid()
    signal.signal(signal.SIGTERM, _ask_stop)
    signal.signal(signal.SIGINT, _ask_stop)
    child = subprocess.Popen(argv)  # same process group as the guard
    while True:
        try:
            code = child.wait(timeout=POLL_S)
        except subprocess.TimeoutExpired:
            if _stop_asked or os.getppid() != parent:  # told to, or the program that started it is gone
                _stop_group(child)
                return 143
            continue
        _stop_group(child)  # the command ended: clear out what it left behind
        return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
