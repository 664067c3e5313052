"""The one way the project waits for something: :func:`poll_until`.

Every wait-until loop (an instance coming up, a stack gone, a server answering, a port held) asks one
question again and again until it has an answer or its time is up. Standard library only, so the
agent, the rehearsal and the offline server use it alike. Where boto3 has a waiter for the thing
waited for, that waiter is used instead.
"""

from __future__ import annotations

import time
from typing import Callable, TypeVar

T = TypeVar("T")


class WaitTimeout(TimeoutError):
    """The answer did not come in time; the message names what was waited for and for how long."""

    def __init__(self, what: str, timeout_s: float):
        super().__init__(f"{what}: no answer after {timeout_s:g} s")
        self.what = what
        self.timeout_s = timeout_s


def poll_until(check: Callable[[], T | None], *, timeout_s: float, interval_s: float, what: str,
               clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> T:
    """Call ``check`` until it returns something other than None, and return that.

    ``check`` is called at once, then every ``interval_s`` (never sleeping past the deadline), and a
    last time at the deadline. It raises to stop the wait early (a process that exited, a failed
    stack): that exception reaches the caller as it is. After ``timeout_s`` without an answer,
    :class:`WaitTimeout` naming ``what``.
    """
    deadline = clock() + timeout_s
    while True:
        answer = check()
        if answer is not None:
            return answer
        remaining = deadline - clock()
        if remaining <= 0:
            raise WaitTimeout(what, timeout_s)
        sleep(min(interval_s, remaining))
