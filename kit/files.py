"""The one way the project writes a file: whole or not at all.

Every file the project writes (evidence, ``plan.json``, ``timeline.json``, deploy records, the placement,
``rigs/catalog.yaml`` after ``pins refresh``) goes through :func:`write_atomic` (a typed record, a frozen
pydantic model, through :func:`write_json`): a temporary file in the same folder, flushed to disk and
renamed over the target, so an interrupted write never leaves half a file and a failed one leaves no
temporary file behind.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Union

Number = Union[int, float]
"""A number of a typed record written as it was computed: an int stays ``4``, a float ``4.0`` (a ``float``
field would write ``4.0`` for both, and a file would change its content)."""

FILE_MODE = 0o644
"""Files are readable by everyone who can read their folder, like the plots matplotlib writes (a
temporary file is created 0600, and a rename would keep that)."""


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename; the file is mode 0644."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = "wb" if isinstance(data, bytes) else "w"
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, FILE_MODE)
        with os.fdopen(fd, mode, **({} if mode == "wb" else {"encoding": "utf-8"})) as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(path: Path, record: Any) -> Path:
    """Write a typed record (a pydantic model) as ``path``: its JSON values in the model's key order, indented
    by two, one final newline; through :func:`write_atomic`."""
    write_atomic(path, json.dumps(record.model_dump(mode="json"), indent=2) + "\n")
    return path
