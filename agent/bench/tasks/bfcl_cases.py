"""The Berkeley Function Calling Leaderboard cases: load them from the pinned ``bfcl-eval``
package and draw the seeded, stratified sample every backend answers.

Only the five non-live Python categories are used (single-turn, graded by BFCL's AST checker):
``simple`` (one function, one call), ``multiple`` (several functions, one call), ``parallel``
(one function, several calls), ``parallel_multiple`` (several functions, several calls) and
``irrelevance`` (no offered function fits: the right answer makes no call). The cases, their
function documents and their possible answers are the package's own data files, read in place;
nothing is downloaded.
"""

from __future__ import annotations

import importlib.metadata
import importlib.resources
import json
import random
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final

PACKAGE: Final = "bfcl_eval"
DISTRIBUTION: Final = "bfcl-eval"
PINNED_VERSION: Final = "2026.3.23"
"""The version ``scripts/setup`` installs (with ``--no-deps``); the cases and answers are its files."""

CATEGORIES: Final = ("simple", "multiple", "parallel", "parallel_multiple", "irrelevance")
NEEDS: Final = {"parallel": "parallel_tool_calls", "parallel_multiple": "parallel_tool_calls"}
"""What a category asks of a backend beyond one tool call: several calls in one reply. A backend whose endpoint does
not offer it (``not_offered_<feature>`` in its metadata, from the catalog) is not sent those cases."""
ALL_CASES: Final = 1240
"""The cases of the five categories in the pinned version (400 + 200 + 200 + 200 + 240): ``--bfcl-n`` is at most
this, checked before the package is read (a test counts them)."""
_FILES: Final = {
    "simple": "BFCL_v4_simple_python.json",
    "multiple": "BFCL_v4_multiple.json",
    "parallel": "BFCL_v4_parallel.json",
    "parallel_multiple": "BFCL_v4_parallel_multiple.json",
    "irrelevance": "BFCL_v4_irrelevance.json",
}
SETUP_HINT: Final = (f"install it with `.venv/bin/pip install --no-deps {DISTRIBUTION}=={PINNED_VERSION}` "
                     "or run ./scripts/setup")


class BfclUnavailableError(RuntimeError):
    """The ``bfcl-eval`` package (its cases and checker) is not installed."""


@dataclass(frozen=True, slots=True)
class Case:
    """One BFCL case.

    Attributes:
        id: BFCL's id, e.g. ``simple_python_12`` or ``irrelevance_3``.
        category: One of :data:`CATEGORIES`.
        messages: The conversation to send (BFCL's first and only turn).
        functions: BFCL's function documents, as shipped (``type: dict``, dotted names ...).
        ground_truth: BFCL's possible answers (``[{name: {param: [allowed values]}}]``); None for
            ``irrelevance``, whose right answer is no call.
    """

    id: str
    category: str
    messages: list[dict[str, Any]]
    functions: list[dict[str, Any]]
    ground_truth: list[dict[str, Any]] | None

    @property
    def index(self) -> int:
        """The case's number within its category (the digits after the last ``_``)."""
        return int(self.id.rsplit("_", 1)[1])


def installed_version() -> str | None:
    """The installed ``bfcl-eval`` version, or None."""
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None


def _data_dir() -> Any:
    try:
        return importlib.resources.files(PACKAGE) / "data"
    except ModuleNotFoundError:
        raise BfclUnavailableError(f"the {DISTRIBUTION} package is not installed; {SETUP_HINT}") from None


def _read_lines(resource: Any) -> list[dict[str, Any]]:
    return [json.loads(line) for line in resource.read_text(encoding="utf-8").splitlines() if line.strip()]


@lru_cache(maxsize=1)
def load_cases() -> dict[str, tuple[Case, ...]]:
    """Every case of the five categories, by category, in BFCL's order.

    Raises:
        BfclUnavailableError: ``bfcl-eval`` is not installed (the message says how to install it).
    """
    data = _data_dir()
    out: dict[str, tuple[Case, ...]] = {}
    for category in CATEGORIES:
        name = _FILES[category]
        try:
            rows = _read_lines(data / name)
            answers = {} if category == "irrelevance" else {
                a["id"]: a["ground_truth"] for a in _read_lines(data / "possible_answer" / name)}
        except FileNotFoundError:
            raise BfclUnavailableError(f"{DISTRIBUTION} has no {name}; {SETUP_HINT}") from None
        out[category] = tuple(
            Case(id=row["id"], category=category, messages=row["question"][0], functions=row["function"],
                 ground_truth=None if category == "irrelevance" else answers[row["id"]])
            for row in rows
        )
    return out


def allocate(n: int, sizes: dict[str, int]) -> dict[str, int]:
    """How many cases each category gets out of ``n``: equal shares (earlier categories take the
    remainder), and a category with fewer cases than its share passes the rest to the others.

    Equal shares keep every category's interval about as narrow as the others', and make the
    pooled accuracy close to the mean of the category accuracies (how BFCL averages them).
    """
    left = {c: s for c, s in sizes.items() if s > 0}
    out = {c: 0 for c in sizes}
    remaining = min(n, sum(left.values()))
    while remaining and left:
        share, extra = divmod(remaining, len(left))
        for i, c in enumerate(list(left)):
            take = min(left[c], share + (1 if i < extra else 0))
            out[c] += take
            left[c] -= take
            remaining -= take
        left = {c: s for c, s in left.items() if s > 0}
    return out


def sample_cases(n: int | None, seed: int) -> list[Case]:
    """The seeded, stratified sample: ``n`` cases (None: all of them), the same for every backend.

    Each category is drawn with its own generator seeded by ``"<seed>:<category>"``, so the draw
    in one category does not depend on the others; cases come back by category, then BFCL order.
    """
    cases = load_cases()
    if n is None:
        return [c for category in CATEGORIES for c in cases[category]]
    counts = allocate(n, {c: len(cases[c]) for c in CATEGORIES})
    out: list[Case] = []
    for category in CATEGORIES:
        drawn = random.Random(f"{seed}:{category}").sample(cases[category], counts[category])
        out += sorted(drawn, key=lambda c: c.index)
    return out
