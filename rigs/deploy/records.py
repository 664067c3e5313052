"""What ``up`` records: each attempt, each rig's timeline and result, and the evidence folder.

The evidence folder (default ``.rigs/runs/<UTC time>-up``) holds ``up.log`` (one line per
attempt, each stamped), ``timeline-<rig>.json``, ``summary.json``, the CDK CLI's logs and the
outputs files.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from rigs.deploy import placement

from rigs import utc


@dataclass
class Attempt:
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


@dataclass
class Timeline:
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
    notes: list[str] = field(default_factory=list)


@dataclass
class RigResult:
    rig: str
    ok: bool
    region: str | None
    attempts: list[Attempt]
    timeline: Timeline
    outputs: dict[str, str] = field(default_factory=dict)
    reason: str = ""


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

    def write_json(self, name: str, data: Any) -> Path:
        path = self.directory / name
        path.write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
        return path


def default_evidence_dir() -> Path:
    return placement.state_dir() / "runs" / f"{utc.folder_stamp()}-up"

