"""The evidence folder: ``requests.jsonl``, ``run.json``, ``summary.json``, ``REPORT.md``, plots.

Writes survive interruption: every request is appended to ``requests.jsonl`` as one complete
line and flushed at once; JSON and Markdown files are written to a temporary file in the same
folder and renamed over the target, so a reader never sees half a file. A reader of
``requests.jsonl`` skips a torn last line (a process killed in the middle of a write).
"""

from __future__ import annotations

import json
import os
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

REQUESTS = "requests.jsonl"
RUN = "run.json"
SUMMARY = "summary.json"
REPORT = "REPORT.md"


def utc_now() -> str:
    """Now, as an ISO-8601 UTC timestamp with milliseconds."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def utc_iso(epoch_s: float) -> str:
    return datetime.fromtimestamp(epoch_s, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def results_dir(root: Path, started: datetime | None = None) -> Path:
    """``results/<UTC timestamp>/`` under ``root`` (a fresh name, never an existing folder)."""
    stamp = (started or datetime.now(timezone.utc)).strftime("%Y-%m-%dT%H%M%SZ")
    path = root / stamp
    n = 1
    while path.exists():
        n += 1
        path = root / f"{stamp}-{n}"
    return path


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = "wb" if isinstance(data, bytes) else "w"
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, mode, **({} if mode == "wb" else {"encoding": "utf-8"})) as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_json(path: Path, obj: Any) -> None:
    write_atomic(path, json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n")


class RequestLog:
    """Append-only ``requests.jsonl``: one JSON object per line, flushed per record."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._fh = open(path, "a", encoding="utf-8")
        self._seq = 0

    def append(self, record: dict[str, Any]) -> dict[str, Any]:
        self._seq += 1
        record = {"seq": self._seq, **record}
        self._fh.write(json.dumps(record, default=str, ensure_ascii=False) + "\n")
        self._fh.flush()
        return record

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._fh.close()


def read_requests(path: Path) -> list[dict[str, Any]]:
    """Every complete record of a ``requests.jsonl`` (a torn last line is skipped)."""
    return list(iter_requests(path))


def iter_requests(path: Path) -> Iterator[dict[str, Any]]:
    if not path.exists():
        return
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            try:
                yield json.loads(line)
            except ValueError:
                continue
