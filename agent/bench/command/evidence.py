"""The evidence folder: ``requests.jsonl``, ``run.json``, ``summary.json``, ``REPORT.md``, plots.

Writes survive interruption: every request is appended to ``requests.jsonl`` as one complete
line and flushed at once; JSON and Markdown files are written to a temporary file in the same
folder and renamed over the target, so a reader never sees half a file. A reader of
``requests.jsonl`` leaves out a line that is not a record (a torn last line: a process killed in the middle of a
write; a broken line anywhere else) and says which, by its number (:func:`read_evidence`).

One folder holds one run: :func:`claim_folder` creates ``requests.jsonl`` exclusively (``O_EXCL``),
so a second run into the same folder, or two runs started in the same second, can never append
to another run's records. Every JSON written here is strict JSON: a NaN or infinity that slipped
through is written as ``null``, never as a bare ``NaN``.
"""

from __future__ import annotations

import itertools
import json
import math
import os
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:
    from ..results.records import RequestRecord
    from ..results.run import RunFile

from kit import utc
from kit.files import write_atomic

REQUESTS = "requests.jsonl"
RUN = "run.json"
SUMMARY = "summary.json"
REPORT = "REPORT.md"
EVIDENCE = (REQUESTS, RUN, SUMMARY, REPORT)


class FolderInUse(ValueError):
    """The evidence folder cannot be used by this run (it is a file, or holds another run's evidence)."""


_claimed: dict[Path, bool] = {}
"""Folders this process claimed, and whether it created them."""


def claim_folder(path: Path) -> Path:
    """Make ``path`` this run's evidence folder (created if needed). Claiming it again before the run
    ends (:func:`end_claim`) is a no-op, so the command can claim it before starting servers and the
    runner again when it starts.

    Raises:
        FolderInUse: ``path`` is a file, or already holds a run's evidence files.
        OSError: the folder cannot be created.
    """
    path = Path(path)
    if path.resolve() in _claimed:
        return path
    return _claim_new(path)


def _claim_new(path: Path) -> Path:
    if path.exists() and not path.is_dir():
        raise FolderInUse(f"{path} is a file: give a folder (new or empty) for the evidence")
    created = not path.exists()
    path.mkdir(parents=True, exist_ok=True)
    found = [name for name in EVIDENCE if (path / name).exists()]
    if found:
        raise FolderInUse(f"{path} already holds a run's evidence ({', '.join(found)}): give a new folder, or "
                          "leave out --out for a fresh results/<UTC timestamp>/")  # fmt: skip
    try:
        os.close(os.open(path / REQUESTS, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    except FileExistsError:
        raise FolderInUse(f"{path}: another run started writing into this folder just now; give another one") from None
    _claimed[path.resolve()] = created
    return path


def fresh_results_dir(root: Path, started: datetime | None = None) -> Path:
    """A new claimed folder ``<root>/<UTC timestamp>/`` (``-2``, ``-3`` ... when that name is taken,
    e.g. by another run started in the same second)."""
    stamp = utc.folder_stamp(started)
    names = itertools.chain([stamp], (f"{stamp}-{n}" for n in itertools.count(2)))
    while True:
        try:
            return _claim_new(root / next(names))
        except FolderInUse:
            continue


def release_if_unused(path: Path) -> None:
    """Undo :func:`claim_folder` when no run started in the folder (no ``run.json``, no record):
    remove the empty ``requests.jsonl``, and the folder when this process created it and nothing
    else is in it."""
    path = Path(path)
    key = path.resolve()
    if key not in _claimed or (path / RUN).exists():
        return
    requests = path / REQUESTS
    try:
        if requests.stat().st_size == 0:
            requests.unlink()
        if _claimed[key] and not any(path.iterdir()):
            path.rmdir()
    except OSError:
        return
    del _claimed[key]


def end_claim(path: Path) -> None:
    """The run in ``path`` is over: a later claim of the folder (in this process too) is refused."""
    _claimed.pop(Path(path).resolve(), None)


def strict_json(obj: Any, **kwargs: Any) -> str:
    """``json.dumps`` that never writes ``NaN`` or ``Infinity`` (not JSON): such a float becomes null."""
    try:
        return json.dumps(obj, allow_nan=False, default=str, **kwargs)
    except ValueError:
        return json.dumps(_finite(obj), allow_nan=False, default=str, **kwargs)


def _finite(obj: Any) -> Any:
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def write_json(path: Path, obj: Any) -> None:
    write_atomic(path, strict_json(obj, indent=2) + "\n")


def write_run(path: Path, run: RunFile) -> None:
    """``run.json`` written from its model (:class:`~..results.run.RunFile`, checked as it was built: a key the
    model does not know, a missing one or a value of the wrong type failed where it was made)."""
    write_json(path, run.as_json())


class RequestLog:
    """Append-only ``requests.jsonl``: one JSON object per line, flushed per record.

    Each record is validated through its model (:mod:`agent.bench.results.records`) before it is
    written, so a line that a reader could not read is never written: a record of an unknown part,
    or with a field of the wrong type, raises :class:`~agent.bench.results.records.RecordError`.
    """

    def __init__(self, path: Path) -> None:
        from ..results import records  # pydantic: imported when a run starts, not for --help

        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._records = records
        self._fh = open(path, "a", encoding="utf-8")
        self._seq = 0

    def append(self, record: Mapping[str, Any] | RequestRecord) -> RequestRecord:
        """Number ``record`` (its ``seq``), check it and write it; returns its model."""
        if isinstance(record, Mapping):
            model = self._records.parse_record({"seq": self._seq + 1, **record})
        else:
            model = record.model_copy(update={"seq": self._seq + 1})
        self._fh.write(strict_json(self._records.record_json(model), ensure_ascii=False) + "\n")
        self._fh.flush()
        self._seq += 1
        return model

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._fh.close()


def read_requests(path: Path) -> list[dict[str, Any]]:
    """Every complete record of a ``requests.jsonl`` (a line that is not one is left out: :func:`read_evidence`
    says which)."""
    return read_evidence(path)[0]


def read_evidence(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """Every complete record of a ``requests.jsonl``, and one line for each line that is not one, with its number:
    a torn last line (a process killed while writing it) or a broken line in the middle (a file edited or
    damaged), each left out of every figure."""
    records: list[dict[str, Any]] = []
    broken: list[int] = []
    if not path.exists():
        return records, []
    with open(path, encoding="utf-8", errors="replace") as fh:
        lines = fh.read().splitlines()
    last = max((n for n, line in enumerate(lines, 1) if line.strip()), default=0)
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if isinstance(record, dict):
            records.append(record)
        else:
            broken.append(number)
    why = {True: "torn (the run stopped while writing it)", False: "not a JSON record"}
    return records, [f"{path.name} line {n} is {why[n == last]}: left out of every figure" for n in broken]
