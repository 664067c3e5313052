"""The five suites drawn from ``reasoning-gym``'s seeded generators (Apache-2.0, pinned in
``requirements.txt``; github.com/open-thought/reasoning-gym).

Each reasoning-gym dataset makes its item ``i`` from ``Random(seed + i)`` alone, so an item does not
depend on how many are drawn. The questions and reference answers are the generators' own; the
lane adds only the system turn and its grading (a number, or one label of a fixed set).
"""

from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass, field
from itertools import count
from typing import Any, Final, Iterator, Mapping

from .items import Item

DISTRIBUTION: Final = "reasoning-gym"
PINNED_VERSION: Final = "0.1.25"
SETUP_HINT: Final = f"install it with `.venv/bin/pip install {DISTRIBUTION}=={PINNED_VERSION}` or run ./scripts/setup"
STREAM_SIZE: Final = 100_000
"""The datasets' virtual size: more than any lane draws (GSM-Symbolic draws its template sequence
of this length up front; a longer one starts with the same templates)."""

FAMILY_LABELS: Final = (
    "mother", "father", "sister", "brother", "daughter", "son", "wife", "husband", "grandmother", "grandfather",
    "aunt", "uncle", "niece", "nephew", "mother-in-law", "father-in-law",
)  # fmt: skip
"""reasoning-gym's ``family_relationships`` answers (its ``Relationship`` values)."""


class QualityUnavailableError(RuntimeError):
    """The ``reasoning-gym`` package (the lane's generators) is not installed."""


@dataclass(frozen=True, slots=True)
class GymSuite:
    """One suite: a reasoning-gym dataset with its settings and how its answers are graded."""

    name: str
    dataset: str
    kind: str
    config: Mapping[str, Any] = field(default_factory=dict)
    labels: tuple[str, ...] = ()

    def grading(self) -> dict[str, Any]:
        return {"kind": self.kind, "labels": list(self.labels)} if self.labels else {"kind": self.kind}


SUITES: Final = (
    # Two to four terms of one or two digits, with brackets and negatives: hard enough without
    # working that a 2B model gets some wrong.
    GymSuite("arithmetic", "basic_arithmetic", "number",
             {"min_terms": 2, "max_terms": 4, "min_digits": 1, "max_digits": 2}),
    GymSuite("gsm_symbolic", "gsm_symbolic", "number"),
    # The sibling and friend puzzles: the colleague ones (about 170 tokens) never fit, so the size
    # rule leaves them out.
    GymSuite("aiw", "aiw", "number"),
    GymSuite("syllogism", "syllogism", "choice", labels=("Yes", "No")),
    # Families of 3 to 5 people (the default 4 to 8 makes stories a third longer to prefill).
    GymSuite("family", "family_relationships", "choice", {"min_family_size": 3, "max_family_size": 5},
             labels=FAMILY_LABELS),
)  # fmt: skip


def installed_version() -> str | None:
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None


def stream(suite: GymSuite, suite_seed: int, lane_seed: int) -> Iterator[Item]:
    """The suite's items in order (every one, fitting or not; :func:`.lane.select` keeps those that fit).

    Raises:
        QualityUnavailableError: reasoning-gym is not installed.
    """
    try:
        import reasoning_gym
    except ImportError:
        raise QualityUnavailableError(f"the {DISTRIBUTION} package is not installed; {SETUP_HINT}") from None
    dataset = reasoning_gym.create_dataset(suite.dataset, seed=suite_seed, size=STREAM_SIZE, **suite.config)
    grading = suite.grading()
    for index in count():
        entry = dataset[index]
        yield Item(id=f"{suite.name}/{lane_seed}/{index}", suite=suite.name,
                   source=f"reasoning-gym {suite.dataset}[{index}] (seed {suite_seed})",
                   question=entry["question"], answer=str(entry["answer"]), grading=grading)  # fmt: skip
