"""Stopping a backend early: a hung or dead backend must not cost the run every timeout.

At the defaults (5 runs, a 300 s request timeout) a backend that accepts connections and never
answers would hold the run for about an hour and a half: six chat requests, ten counting runs and
the orchestrator, each waiting out its timeout. The runner counts each part's consecutive failures
per backend; at ``--max-consecutive-failures`` it cancels that part, records the stop in
``run.json`` (``stopped``) and skips the backend's remaining parts.

The same rule in every part: what counts is every failed request (a record of a part that sends
requests, :data:`REQUEST_PARTS`: its failure is the server's), and an agent run that failed on a
timeout or a connection (a model that keeps writing too much or answering badly is graded, not
stopped). A success ends the streak.
"""

from __future__ import annotations

import re
from typing import Any, Mapping


DEFAULT_MAX_CONSECUTIVE_FAILURES = 3
REQUEST_PARTS = frozenset({"chat", "orchestrator_ask", "bfcl", "quality"})
"""Parts whose records are one request each (the others' records are agent runs)."""


class BackendStopped(Exception):
    """Raised out of the record call that reached the limit, so the part sends nothing more; the
    runner also cancels the part's task, which ends requests still in flight."""


class FailureStreak:
    """Consecutive failed records of the part each backend is running.

    Args:
        limit: Failures in a row that stop a backend (0: never).
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._count: dict[str, int] = {}

    def start(self, backend: str) -> None:
        """A new part begins for ``backend``: its count starts again."""
        self._count[backend] = 0

    def observe(self, backend: str, record: Mapping[str, Any]) -> dict[str, Any] | None:
        """Count one finished record; the stop (``{"after", "reason"}``) the moment the limit is reached."""
        if not record.get("error"):
            self._count[backend] = 0
            return None
        if not backend_failure(record):
            return None
        count = self._count.get(backend, 0) + 1
        self._count[backend] = count
        if self.limit and count == self.limit:
            return {"after": count, "reason": str(record["error"])[:200]}
        return None


_UNREACHABLE = re.compile(r"timeout|timed out|connect|refused|unreachable", re.IGNORECASE)


def backend_failure(record: Mapping[str, Any]) -> bool:
    """Whether a failed record says the backend is down or hung rather than that the model misbehaved."""
    return record.get("part") in REQUEST_PARTS or bool(_UNREACHABLE.search(str(record.get("error"))))
