"""Custom resource: when a rig's lifetime ends, LifetimeMinutes after this deploy.

Synth never reads the clock; this runs at deploy time, when the resource is created or
a property changes (a new lifetime or a new revision of the rig's compute). Returns At
(for an EventBridge Scheduler at() expression, UTC) and Iso (ISO 8601, Z suffix).
"""
from datetime import datetime, timedelta, timezone


def compute(properties, now=None):
    minutes = int(properties["LifetimeMinutes"])
    if minutes < 1:
        raise ValueError(f"LifetimeMinutes must be at least 1, got {minutes}")
    start = now or datetime.now(timezone.utc)
    end = (start + timedelta(minutes=minutes)).replace(microsecond=0)
    return {"At": end.strftime("%Y-%m-%dT%H:%M:%S"), "Iso": end.strftime("%Y-%m-%dT%H:%M:%SZ")}
