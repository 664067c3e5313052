"""The ``quality`` block (answer quality on the quality lane's items), the ``weights`` a backend serves
(from the catalog), and the top-level ``quality_pairs`` and ``quality_lane``."""

from __future__ import annotations

from typing import Literal

from ..base import Frozen

Relation = Literal["same weights and engine", "same model", "different models", "unknown"]
"""What two backends serve: the very same weights with the same engine (they should agree), the same
model at another precision or on another engine (a difference is a precision or engine effect),
two different models (a difference is a model difference), or not known (a custom server, a
stand-in)."""


class QualityRate(Frozen):
    """One backend's outcomes on the lane's items (overall, or one suite's).

    ``accuracy`` = right / graded, graded = right + wrong + unreadable, with its 95% Wilson interval;
    failed requests and items not sent are counted apart and never graded.
    """

    items: int
    right: int
    wrong: int
    unreadable: int
    failed: int
    not_sent: int
    refusals: int
    graded: int
    accuracy: float | None
    ci95_low: float | None
    ci95_high: float | None


class QualitySummary(QualityRate):
    lane: list[str]
    """The lane versions of the records (one in a run)."""
    seed: int | None
    by_suite: dict[str, QualityRate]
    failure_reasons: dict[str, int]
    """Why requests failed, with counts."""
    planned: int | None = None
    """The lane's items this backend was to get (``--quality-n``); null where the run is not known
    (``python -m agent.quality grade`` reads records only)."""
    unsent: int | None = None
    """Planned items with no record: the run was interrupted, or the backend stopped, before they were sent
    or while they were in flight. Counted apart from ``not_sent`` (over the backend's prompt limit)."""


class Weights(Frozen):
    """What a backend serves, as the catalog states it (``rigs/catalog.yaml`` ``weights``), not measured."""

    model: str
    precision: str
    bytes_per_weight: float | None
    memory_gib: float | None
    memory_basis: str | None
    engine: str
    source: str | None


class QualityPair(Frozen):
    """Two backends on the items both had graded (a failed request on either side drops the item).

    ``a`` is the quality reference when the pair includes it. "Right" is right; "wrong" is wrong or
    unreadable. ``difference`` = accuracy of ``b`` - accuracy of ``a`` on these items, with its 95%
    interval (Newcombe's hybrid score interval for paired proportions).
    """

    a: str
    b: str
    both: int
    a_accuracy: float | None
    b_accuracy: float | None
    a_right_b_wrong: int
    a_wrong_b_right: int
    mcnemar_p: float
    difference: float | None
    ci95: tuple[float, float] | None
    significant: bool
    same_weights: bool
    relation: Relation
    power: float
    """The chance this many paired items detect a 3-point drop when 6% of the answers change."""
    verdict: str
    flag: str | None
    """Set when two backends that serve the same weights with the same engine differ significantly."""
    differs: list[str] = []
    """What differs between the two besides what they serve, as the catalog states it for a managed endpoint: the
    features one does not offer, and reasoning one does by default (the rigs are not asked to reason)."""
    flipped: list[str]
    """The items the two grade differently (right on one side only), in item order."""


class QualityLane(Frozen):
    """The lane as a whole: the reference the report compares against, and what n items can tell."""

    items: int | None
    """``--quality-n``: the items each backend was to be sent."""
    reference: str | None
    reference_reason: str
    alpha: float
    design_changed_share: float
    design_drop: float
    power: float | None
    """The chance ``items`` paired items detect a drop of ``design_drop`` when ``design_changed_share``
    of the answers change (exact McNemar, ``alpha``)."""
    false_alarm: float | None
    """The chance of calling a difference when there is none (the same changed share, half each way)."""
    wilson_half_width_at_80: float | None
    """Half the width of a 95% Wilson interval at 80% accuracy over ``power_items``."""
    power_items: int | None = None
    """The n of ``power`` and ``wilson_half_width_at_80``: ``items``, or, where a backend's items went unsent
    (an interrupted or stopped run), the fewest items a backend had graded."""
