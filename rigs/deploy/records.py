"""What ``up`` records: each attempt, each rig's timeline and result, and the evidence folder.

The evidence folder (default ``.rigs/runs/<UTC time>-up``) holds ``up.log`` (one line per
attempt, each stamped), ``timeline-<rig>.json``, ``summary.json``, the CDK CLI's logs and the
outputs files.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Callable

from pydantic import BaseModel, ConfigDict, RootModel

from kit.files import write_json
from rigs.placement import placement

from kit import utc


class _Filled(BaseModel):
    """A record ``up`` fills in as the deploy goes (unknown fields refused, every assignment checked)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, use_attribute_docstrings=True)


class Attempt(_Filled):
    """One try of a rig in one region."""

    rig: str
    number: int
    region: str
    zones: tuple[str, ...]
    started: str | None = None
    ended: str | None = None
    outcome: str = "pending"
    """``up``, ``failover``, ``failed``."""
    code: str = ""
    kind: str = ""
    message: str = ""
    next_step: str = ""


class Timeline(_Filled):
    """When each step of a rig's deploy happened (``timeline-<rig>.json``)."""

    rig: str
    region: str | None = None
    zone: str | None = None
    instance_id: str | None = None
    endpoint: str | None = None
    deploy_start: str | None = None
    stack_complete: str | None = None
    instance_launched: str | None = None
    instance_running: str | None = None
    ssm_online: str | None = None
    ready: str | None = None
    launch_to_ready_seconds: float | None = None
    deploy_to_ready_seconds: float | None = None
    notes: list[str] = []


class RigResult(BaseModel):
    """How a rig's ``up`` ended: its attempts, its timeline, its stack's outputs."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rig: str
    ok: bool
    region: str | None
    attempts: list[Attempt]
    timeline: Timeline
    outputs: dict[str, str] = {}
    reason: str = ""


UpSummary = RootModel[list[RigResult]]
"""``summary.json``: every rig's result."""


class Evidence:
    """The run's evidence directory: ``up.log`` (one line per attempt) and per-rig files."""

    def __init__(self, directory: Path, say: Callable[[str], None] = print) -> None:
        self.directory = directory
        self.directory.mkdir(parents=True, exist_ok=True)
        self.log = directory / "up.log"
        self._say = say
        self._lock = threading.Lock()

    def line(self, text: str) -> None:
        with self._lock:
            self._say(text)
            with self.log.open("a", encoding="utf-8") as handle:
                handle.write(f"{utc.iso_seconds()} {text}\n")

    def write_json(self, name: str, record: BaseModel) -> Path:
        """A typed record as ``name`` in the evidence folder, through :func:`kit.files.write_json`."""
        return write_json(self.directory / name, record)


def default_evidence_dir() -> Path:
    return placement.state_dir() / "runs" / f"{utc.folder_stamp()}-up"

