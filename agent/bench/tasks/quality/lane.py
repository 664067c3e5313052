"""The lane's items for a size and a seed (:func:`select`), and its version (:func:`version`).

The suites take turns in a fixed order (:data:`SUITE_ORDER`): item ``k`` of the lane is the
``k // 6``-th fitting item of suite ``k % 6``'s own stream, and every stream is a function of the
seed alone. So ``select(600, s)`` starts with ``select(300, s)``: runs of different sizes pair on
the items they share, and every backend of a run gets the very same items.
"""

from __future__ import annotations

import hashlib
from typing import Final, Iterator

from . import gym, instructions
from .items import Item

LANE: Final = "quality-2"
"""The lane's own version: raised whenever an item, the system prompt, a cap or a grading rule changes."""

SUITE_ORDER: Final = ("arithmetic", "gsm_symbolic", "syllogism", "instructions", "aiw", "family")
MAX_N: Final = 10_000
MAX_SEED: Final = 2**31 - 1


def version() -> str:
    """The version string every record and export row carries: the lane's, and the generators' package."""
    return f"{LANE}/reasoning-gym-{gym.installed_version() or 'missing'}"


def suite_seed(suite: str, seed: int) -> int:
    """The seed of one suite's stream: a hash of the suite's name and the lane's seed, so two suites
    never share a random sequence."""
    return int.from_bytes(hashlib.sha256(f"{suite}/{seed}".encode()).digest()[:4], "big")


def check_size(n: int, seed: int) -> None:
    """Raises ValueError (a one-line message) for a size or seed the lane does not take."""
    if not 1 <= n <= MAX_N:
        raise ValueError(f"--n {n}: give a number of items from 1 to {MAX_N:,}")
    if not 0 <= seed <= MAX_SEED:
        raise ValueError(f"--seed {seed}: give a seed from 0 to {MAX_SEED}")


def _stream(suite: str, seed: int) -> Iterator[Item]:
    own = suite_seed(suite, seed)
    if suite == "instructions":
        return instructions.stream(own, seed)
    return gym.stream(next(s for s in gym.SUITES if s.name == suite), own, seed)


def select(n: int, seed: int) -> list[Item]:
    """The first ``n`` items of seed ``seed``; only items whose whole prompt fits every backend.

    Raises:
        ValueError: ``n`` or ``seed`` out of range.
        gym.QualityUnavailableError: reasoning-gym is not installed.
    """
    check_size(n, seed)
    streams = {suite: (item for item in _stream(suite, seed) if item.fits()) for suite in SUITE_ORDER}
    return [next(streams[SUITE_ORDER[k % len(SUITE_ORDER)]]) for k in range(n)]
