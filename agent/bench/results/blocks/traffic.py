"""The ``traffic`` block of one backend: what its chat part was sent of the workload, as asked and as its server
counted it, whether the workload fits its limits, and how its count was calibrated (docs/traffic.md, "Your
traffic")."""

from __future__ import annotations

from typing import Literal

from ..base import Frozen


class Lengths(Frozen):
    """Token lengths of the measured requests (the cold request, made before the calibration, left out)."""

    n: int
    mean: float | None
    stddev: float | None
    """The population standard deviation."""
    values: list[int]
    """Every request's length, in the order sent (the plot's data)."""


class TrafficFit(Frozen):
    """The workload against a backend's limits, checked before anything was sent: written to ``run.json``
    (``traffic.fit``) and carried as it is into the summary's ``traffic`` block."""

    max_prompt_tokens: int | None
    max_total_tokens: int | None
    limits_source: str
    requests: int
    """The requests (a session's turns each) the share is stated over."""
    fitting: int
    share: float
    reason: str | None
    """Why the first request that does not fit does not (None: every one fits)."""


class CalibrationBlock(Frozen):
    """The line from the project's text to the server's count (``slope`` tokens per unit, ``offset`` tokens)."""

    slope: float
    offset: float
    calibrated: bool
    why: str
    prompts: int
    """The exchange's prompts with a count."""


class TrafficBlock(Frozen):
    """What the backend was asked and what its server counted; ``differs`` says where the two part."""

    source: Literal["reference", "synthetic", "prompts file", "trace"]
    requests: int
    """Measured requests sent (timed and at every level; the cold request apart)."""
    not_sent: int
    """Requests of the workload not sent: over the backend's limits (``part: chat_not_sent``)."""
    fit: TrafficFit | None
    disqualified: str | None
    """Why the backend cannot take the workload (some of its requests do not fit), with the limit and the share."""
    calibration: CalibrationBlock | None
    ignore_eos: bool | None
    """Exactly the output tokens asked were asked for; False: what came is what the server chose to write."""
    prompt_asked: Lengths | None
    """None where the prompt is given (the reference's, a prompts file's): nothing was asked but what it is."""
    prompt_counted: Lengths
    output_asked: Lengths
    output_counted: Lengths
    prompt_mean_error: float | None
    """Counted mean over asked mean, less 1 (the goal: within 0.02)."""
    prompt_stddev_ratio: float | None
    """Counted standard deviation over asked (the goal: within 0.9 to 1.1); None where 0 was asked."""
    output_mean_error: float | None
    within_goal: bool | None
    """Prompt mean within 2% and spread within 10% of the asked (None: nothing asked, or nothing counted)."""
    differs: list[str]
    """Where asked and counted part, one line each (empty: they agree)."""
