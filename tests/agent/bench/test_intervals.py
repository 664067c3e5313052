"""Interval and paired-test arithmetic against published values."""

from __future__ import annotations

import pytest

from agent.bench.analysis import stats


def test_wilson_four_of_five_matches_the_issue_figure() -> None:
    low, high = stats.wilson_interval(4, 5)
    assert (round(low, 3), round(high, 3)) == (0.376, 0.964)


@pytest.mark.parametrize(
    ("k", "n", "expected"),
    [
        # Newcombe (1998), Statistics in Medicine 17:857-872, table I, method 3 (Wilson score).
        (81, 263, (0.2553, 0.3662)),
        (15, 148, (0.0624, 0.1605)),
        (0, 20, (0.0, 0.1611)),
        (1, 29, (0.0061, 0.1718)),
    ],
)
def test_wilson_matches_newcombe(k: int, n: int, expected: tuple[float, float]) -> None:
    low, high = stats.wilson_interval(k, n)
    assert low == pytest.approx(expected[0], abs=1e-4)
    assert high == pytest.approx(expected[1], abs=1e-4)


def test_wilson_refuses_impossible_counts_and_has_no_interval_for_no_cases() -> None:
    assert stats.wilson_interval(0, 0) is None
    with pytest.raises(ValueError):
        stats.wilson_interval(6, 5)


def test_mean_interval_uses_student_t() -> None:
    mean, low, high = stats.mean_interval([10.0, 12.0, 14.0])
    # s = 2, n = 3, t(2) = 4.303: half-width 4.303 * 2 / sqrt(3) = 4.969
    assert mean == 12.0
    assert (round(low, 3), round(high, 3)) == (7.031, 16.969)
    assert stats.mean_interval([5.0]) == (5.0, 5.0, 5.0)
    assert stats.mean_interval([]) is None


def test_overlap_is_a_tie() -> None:
    assert stats.intervals_overlap((1.0, 2.0), (2.0, 3.0))
    assert not stats.intervals_overlap((1.0, 1.9), (2.0, 3.0))


@pytest.mark.parametrize(
    ("only_a", "only_b", "p"),
    [
        (0, 0, 1.0),
        (5, 5, 1.0),
        (10, 0, 0.001953125),  # 2 * 0.5**10
        (8, 2, 0.109375),  # 2 * (1 + 10 + 45) / 1024
    ],
)
def test_mcnemar_exact(only_a: int, only_b: int, p: float) -> None:
    assert stats.mcnemar_exact(only_a, only_b) == pytest.approx(p)
