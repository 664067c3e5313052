"""The rehearsal's timeline per rig and phase, and what the rehearsal itself cost.

Per rig and phase: deploy start, instance (or endpoint) launched, running, SSM online and ready
come from ``rigs up`` (:class:`rigs.deploy.records.Timeline`); a Neuron rig's compile at boot (AWS's vLLM Neuron
image compiling the model with NxD Inference, inside its ready timeout) from the benchmark's ``summary.json``
(provenance's ``compile_seconds``, which the agent reads from the rig's boot report); the first answer from the
benchmark's evidence
(the earliest request of that backend in ``requests.jsonl`` that did not fail: a chat request's
first token, or the end of a counting or orchestrator run); destroyed from the down step
(CloudFormation's deletion time where it gives one, else when ``cdk destroy`` returned with the
stack gone).

The cost is instance-hours x the hourly price: from the instance's launch (an endpoint's
creation) to its stack's deletion. A rig that never launched an instance cost nothing; one that
is not destroyed is counted up to now and marked so. The root volume of an EC2 rig bills too
while it exists (a few cents a day), and is not counted.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable, Sequence

from pydantic import BaseModel, ConfigDict

from kit import utc
from kit.files import Number, write_json

EVENTS = ("deploy_start", "instance_launched", "instance_running", "ssm_online", "ready", "first_answer", "destroyed")
"""The columns of the timeline, in order."""
HEADINGS = {"deploy_start": "deploy start", "instance_launched": "launched", "instance_running": "running",
            "ssm_online": "SSM online", "ready": "ready", "first_answer": "first answer", "destroyed": "destroyed"}


class _PhaseEvents(BaseModel):
    """One rig in one phase of the rehearsal: what it is, when each event happened, its price."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, use_attribute_docstrings=True)

    rig: str
    phase: str
    model_id: str
    region: str | None = None
    stack: str | None = None
    deploy_start: str | None = None
    instance_launched: str | None = None
    instance_running: str | None = None
    ssm_online: str | None = None
    ready: str | None = None
    compile_seconds: Number | None = None
    """How long the model compiled at boot (AWS's vLLM Neuron image; 0: artifacts compiled before were loaded)."""
    first_answer: str | None = None
    destroyed: str | None = None
    usd_per_hour: Number | None = None
    price: str = ""
    outcome: str = ""
    """``up``, or why not."""
    notes: list[str] = []


class PhaseTimeline(_PhaseEvents):
    """One rig in one phase of the rehearsal, filled in as the rehearsal goes (up, the benchmark, down)."""

    def billed_hours(self, now: datetime | None = None) -> float:
        """Hours from the instance's launch (the endpoint's creation) to the deletion; 0 when none launched."""
        start = utc.parse(self.instance_launched) or utc.parse(self.instance_running)
        if start is None:
            return 0.0
        end = utc.parse(self.destroyed) or now or utc.now()
        return max(0.0, (end - start).total_seconds() / 3600.0)

    def cost_usd(self, now: datetime | None = None) -> float | None:
        if self.usd_per_hour is None:
            return None
        return self.billed_hours(now) * self.usd_per_hour

    def record(self, now: datetime | None = None) -> PhaseRecord:
        """The line as ``timeline.json`` keeps it, with its billed hours and cost up to ``now``."""
        cost = self.cost_usd(now)
        return PhaseRecord(**self.model_dump(), billed_hours=round(self.billed_hours(now), 6),
                           cost_usd=None if cost is None else round(cost, 6))


class PhaseRecord(_PhaseEvents):
    """One line of ``timeline.json``: the rig's events, then what it billed."""

    model_config = ConfigDict(frozen=True)

    billed_hours: Number
    cost_usd: Number | None


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


class BenchmarkRun(_Record):
    """One phase's benchmark: how it exited, and its evidence folder."""

    exit: int | None
    folder: str | None


class TimelineRecord(_Record):
    """``timeline.json``: the rehearsal's timeline, its own cost, its benchmarks, what it left and why."""

    offline: bool
    started: str
    finished: str
    interrupted: str | None
    phases: list[PhaseRecord]
    cost_usd: Number
    """The rehearsal's own cost, instance-hours x price (rounded to a millionth of a dollar)."""
    benchmarks: dict[str, BenchmarkRun]
    """Phase (small, big) -> its benchmark."""
    skipped: dict[str, str]
    no_big_model: dict[str, str]
    left: dict[str, Any]
    """What the down step could not remove (``billing``: the resources still billing)."""
    notes: list[str]


def write(folder: Path, record: TimelineRecord) -> Path:
    """``timeline.json`` in the evidence folder."""
    return write_json(folder / "timeline.json", record)


def from_up(rig: str, phase: str, model_id: str, up_timeline: Any, outcome: str) -> PhaseTimeline:
    """A phase's timeline from what ``rigs up`` recorded (:class:`rigs.deploy.records.Timeline`)."""
    return PhaseTimeline(rig=rig, phase=phase, model_id=model_id, region=up_timeline.region,
                         deploy_start=up_timeline.deploy_start, instance_launched=up_timeline.instance_launched,
                         instance_running=up_timeline.instance_running, ssm_online=up_timeline.ssm_online,
                         ready=up_timeline.ready, outcome=outcome, notes=list(up_timeline.notes))


def first_answers(requests: Path) -> dict[str, str]:
    """Backend -> when it first answered, from an evidence folder's ``requests.jsonl`` (a torn line is skipped)."""
    earliest: dict[str, datetime] = {}
    try:
        lines = requests.read_text(encoding="utf-8").splitlines()
    except OSError:
        return {}
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        answered = _answered_at(record)
        backend = record.get("backend")
        if answered is not None and backend and (backend not in earliest or answered < earliest[backend]):
            earliest[backend] = answered
    return {backend: utc.iso_seconds(moment) for backend, moment in earliest.items()}


def compile_times(summary: Path) -> dict[str, float]:
    """Backend -> its model's compile at boot in seconds, from an evidence folder's ``summary.json`` (provenance's
    ``compile_seconds``); a backend that read none, or a summary that cannot be read, has none."""
    try:
        backends = json.loads(summary.read_text(encoding="utf-8")).get("backends", {})
    except (OSError, ValueError, AttributeError):
        return {}
    out: dict[str, float] = {}
    for name, entry in backends.items():
        facts = ((entry or {}).get("provenance") or {}).get("facts") or []
        read = next((f.get("read") for f in facts if f.get("fact") == "compile_seconds"), None)
        if isinstance(read, (int, float)) and not isinstance(read, bool):
            out[name] = float(read)
    return out


def _answered_at(record: dict[str, Any]) -> datetime | None:
    if record.get("error") or not record.get("started"):
        return None
    started = utc.parse(record["started"])
    if record.get("first_ms") is not None:
        offset_s = float(record["first_ms"]) / 1000.0
    elif record.get("seconds") is not None:
        offset_s = float(record["seconds"])
    else:
        return None
    return utc.at_epoch(started.timestamp() + offset_s)


def total_cost(phases: Iterable[PhaseTimeline], now: datetime | None = None) -> float:
    return sum(p.cost_usd(now) or 0.0 for p in phases)


def _clock(stamp: str | None, start: datetime | None, compact: bool) -> str:
    moment = utc.parse(stamp)
    if moment is None:
        return "-"
    if start is None or moment <= start:
        return f"{moment:%H:%M:%S}"
    offset = f"+{_span((moment - start).total_seconds())}"
    return offset if compact else f"{moment:%H:%M:%S} ({offset})"


def _span(seconds: float) -> str:
    whole = int(round(seconds))
    return f"{whole // 60}:{whole % 60:02d}" if whole < 3600 else f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


def rows(phases: Sequence[PhaseTimeline], now: datetime | None = None, compact: bool = False) -> list[list[str]]:
    """One row per rig and phase: times in UTC with the offset from the deploy start (``compact``: the
    deploy start's time, then only offsets), billed hours, cost."""
    out = []
    for p in phases:
        start = utc.parse(p.deploy_start)
        cost = p.cost_usd(now)
        left = "" if p.destroyed or not p.deploy_start else " (not destroyed: counted to now)"
        clocks = [_clock(getattr(p, e), start, compact) for e in EVENTS]
        compiled = "-" if p.compile_seconds is None else _span(p.compile_seconds)
        out.append([p.rig, p.phase, p.region or "-", *clocks[:COMPILED_AFTER], compiled, *clocks[COMPILED_AFTER:],
                    f"{p.billed_hours(now):.3f}", "-" if cost is None else f"${cost:.4f}{left}"])
    return out


COMPILED_AFTER = EVENTS.index("ready") + 1
"""The compile's column (a length, m:ss, not a time) follows "ready", which it is part of."""
HEADER = ["rig", "phase", "region", *(HEADINGS[e] for e in EVENTS[:COMPILED_AFTER]), "compile",
          *(HEADINGS[e] for e in EVENTS[COMPILED_AFTER:]), "hours", "cost"]


def table(phases: Sequence[PhaseTimeline], now: datetime | None = None) -> Any:
    """The timeline as a rich Table for the terminal (compact: the deploy start, then offsets)."""
    from rich.table import Table

    shown = Table(title="Timeline (UTC: the deploy start, then +m:ss after it)", header_style="bold")
    for heading in HEADER:
        shown.add_column(heading, overflow="fold")
    for row in rows(phases, now, compact=True):
        shown.add_row(*row)
    return shown


def markdown(phases: Sequence[PhaseTimeline], title: str, notes: Sequence[str] = (),
             now: datetime | None = None) -> str:
    """TIMELINE.md: the table, the total, and the notes."""
    lines = [f"# {title}", "", "Times are UTC; (+m:ss) is the time since that rig's deploy start. Cost: "
             "instance-hours (launch to deletion) x the hourly price.", "",
             "| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(row) + " |" for row in rows(phases, now)]
    lines += ["", f"The rehearsal's own cost: ${total_cost(phases, now):.4f}", ""]
    for p in phases:
        for note in p.notes:
            lines.append(f"- {p.rig} ({p.phase}): {note}")
        if p.price:
            lines.append(f"- {p.rig} ({p.phase}) price: {p.price}")
    lines += [f"- {note}" for note in notes]
    return "\n".join(lines) + "\n"
