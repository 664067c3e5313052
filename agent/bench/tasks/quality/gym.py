"""The five suites drawn from ``reasoning-gym``'s seeded generators (Apache-2.0, pinned in
``requirements.txt``; github.com/open-thought/reasoning-gym).

Each reasoning-gym dataset makes its item ``i`` from ``Random(seed + i)`` alone, so an item does not
depend on how many are drawn. The questions are the generators' own (counts of one in the singular);
each key is checked against the answer worked out from the question itself (:mod:`.keys`): an item
whose key disagrees is left out, except the family and syllogism suites, whose keys are the relation
and the validity worked out here (the generator inverts every in-law key and calls some invalid
syllogisms valid). The lane adds the system turn and its grading (a number, or one label of a fixed
set).
"""

from __future__ import annotations

import importlib.metadata
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import count
from typing import Any, Callable, Final, Iterator, Mapping

from . import keys
from .items import Item

DISTRIBUTION: Final = "reasoning-gym"
PINNED_VERSION: Final = "0.1.25"
SETUP_HINT: Final = f"install it with `.venv/bin/pip install {DISTRIBUTION}=={PINNED_VERSION}` or run ./scripts/setup"
STREAM_SIZE: Final = 100_000
"""The datasets' virtual size: more than any lane draws (GSM-Symbolic draws its template sequence
of this length up front; a longer one starts with the same templates)."""

GYM_FAMILY_LABELS: Final = (
    "mother", "father", "sister", "brother", "daughter", "son", "wife", "husband", "grandmother", "grandfather",
    "aunt", "uncle", "niece", "nephew", "mother-in-law", "father-in-law",
)  # fmt: skip
"""reasoning-gym's ``family_relationships`` answers (its ``Relationship`` values)."""
FAMILY_LABELS: Final = (*GYM_FAMILY_LABELS, "daughter-in-law", "son-in-law")
"""The family suite's labels: reasoning-gym's, and the two its in-law questions need (it keys "What is
Mia to Patricia?" by Patricia's role, "mother-in-law", when Mia is Patricia's daughter-in-law)."""

Names = tuple[frozenset[str], frozenset[str]]
"""The generator's female and male names: the sex a family story leaves to its names."""
Keyed = Callable[[str, str, Names], "tuple[str, str] | None"]
"""A suite's check: (question, generator's key, names) to the question and key the lane asks, or None
to leave the item out."""


def _arithmetic(question: str, key: str, names: Names) -> tuple[str, str] | None:
    value = keys.arithmetic(question)
    return (question, key) if value is not None and value == Fraction(key) else None


def _aiw(question: str, key: str, names: Names) -> tuple[str, str] | None:
    question = keys.singular_counts(question)
    value = keys.aiw(question)
    return (question, key) if value is not None and str(value) == key else None


def _syllogism(question: str, key: str, names: Names) -> tuple[str, str] | None:
    valid = keys.syllogism(question)
    return None if valid is None else (question, "Yes" if valid else "No")


def _family(question: str, key: str, names: Names) -> tuple[str, str] | None:
    relation = keys.family(question, *names)
    return (question, relation) if relation in FAMILY_LABELS else None


def _as_generated(question: str, key: str, names: Names) -> tuple[str, str] | None:
    return question, key


class QualityUnavailableError(RuntimeError):
    """The ``reasoning-gym`` package (the lane's generators) is not installed."""


@dataclass(frozen=True, slots=True)
class GymSuite:
    """One suite: a reasoning-gym dataset with its settings and how its answers are graded."""

    name: str
    dataset: str
    kind: str
    keyed: Keyed
    config: Mapping[str, Any] = field(default_factory=dict)
    labels: tuple[str, ...] = ()

    def grading(self) -> dict[str, Any]:
        return {"kind": self.kind, "labels": list(self.labels)} if self.labels else {"kind": self.kind}


SUITES: Final = (
    # Two to four terms of one or two digits, with brackets and negatives: hard enough without
    # working that a 2B model gets some wrong.
    # A division that does not come out whole is keyed by integer division: left out.
    GymSuite("arithmetic", "basic_arithmetic", "number", _arithmetic,
             {"min_terms": 2, "max_terms": 4, "min_digits": 1, "max_digits": 2}),
    GymSuite("gsm_symbolic", "gsm_symbolic", "number", _as_generated),
    # The sibling and friend puzzles about the person the story introduces: the colleague ones
    # (about 170 tokens) never fit, and the sibling template that asks about another name is left out.
    GymSuite("aiw", "aiw", "number", _aiw),
    GymSuite("syllogism", "syllogism", "choice", _syllogism, labels=("Yes", "No")),
    # Families of 3 to 5 people (the default 4 to 8 makes stories a third longer to prefill).
    GymSuite("family", "family_relationships", "choice", _family, {"min_family_size": 3, "max_family_size": 5},
             labels=FAMILY_LABELS),
)  # fmt: skip


def installed_version() -> str | None:
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None


CELLPYLIB_SOURCE: Final = r".*[\\/]cellpylib[\\/]"
"""The source files of ``cellpylib``, which reasoning-gym imports: Python names a compiler warning by its file."""


@contextmanager
def quiet_dependencies() -> Iterator[None]:
    """Without the ``SyntaxWarning``s ``cellpylib`` 2.4 raises (``"is" with a literal``) each time Python compiles it
    from source: wherever no bytecode is cached, as under ``PYTHONDONTWRITEBYTECODE=1``, every quality command would
    print four of them. They are that package's, not the user's to act on."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=SyntaxWarning, module=CELLPYLIB_SOURCE)
        yield


def stream(suite: GymSuite, suite_seed: int, lane_seed: int) -> Iterator[Item]:
    """The suite's items in order (every one, fitting or not; :func:`.lane.select` keeps those that fit).

    Raises:
        QualityUnavailableError: reasoning-gym is not installed.
    """
    try:
        with quiet_dependencies():
            import reasoning_gym
            from reasoning_gym.graphs.family_relationships import FamilyRelationshipsConfig
    except ImportError:
        raise QualityUnavailableError(f"the {DISTRIBUTION} package is not installed; {SETUP_HINT}") from None

    family = FamilyRelationshipsConfig()
    names = (frozenset(family.female_names), frozenset(family.male_names))
    dataset = reasoning_gym.create_dataset(suite.dataset, seed=suite_seed, size=STREAM_SIZE, **suite.config)
    grading = suite.grading()
    for index in count():
        entry = dataset[index]
        keyed = suite.keyed(entry["question"], str(entry["answer"]), names)
        if keyed is None:
            continue
        yield Item(id=f"{suite.name}/{lane_seed}/{index}", suite=suite.name,
                   source=f"reasoning-gym {suite.dataset}[{index}] (seed {suite_seed})",
                   question=keyed[0], answer=keyed[1], grading=grading)  # fmt: skip
