"""UTC time stamps, in the three forms the project writes.

- :func:`iso_seconds`: ``2026-11-29T19:27:05Z``, in logs, timelines and the placement file;
- :func:`iso_millis`: ``2026-11-29T19:27:05.123Z``, in the benchmark's request records;
- :func:`folder_stamp`: ``2026-11-29T192705Z``, in the name of an evidence folder (no colons,
  which some file systems and tools refuse).

Every stamp is of an aware moment converted to UTC; :func:`parse` reads the ISO forms back.
"""

from __future__ import annotations

from datetime import datetime, timezone


def now() -> datetime:
    """The current moment, aware, in UTC."""
    return datetime.now(timezone.utc)


def at_epoch(epoch_s: float) -> datetime:
    """The moment ``epoch_s`` seconds after the Unix epoch, aware, in UTC."""
    return datetime.fromtimestamp(epoch_s, timezone.utc)


def iso_seconds(moment: datetime | None = None) -> str:
    """``moment`` (default: now) to the second, e.g. ``2026-11-29T19:27:05Z``."""
    return _iso(moment, "seconds")


def iso_millis(moment: datetime | None = None) -> str:
    """``moment`` (default: now) to the millisecond, e.g. ``2026-11-29T19:27:05.123Z``."""
    return _iso(moment, "milliseconds")


def folder_stamp(moment: datetime | None = None) -> str:
    """``moment`` (default: now) for a folder name, e.g. ``2026-11-29T192705Z``."""
    return f"{(moment or now()).astimezone(timezone.utc):%Y-%m-%dT%H%M%SZ}"


def parse(stamp: str | None) -> datetime | None:
    """An ISO stamp (``Z`` or an offset) as an aware UTC moment; None for None or ''."""
    if not stamp:
        return None
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).astimezone(timezone.utc)


def _iso(moment: datetime | None, timespec: str) -> str:
    return (moment or now()).astimezone(timezone.utc).isoformat(timespec=timespec).replace("+00:00", "Z")
