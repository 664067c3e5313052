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


def test_paired_difference_interval_by_hand() -> None:
    # 20 items, 10 right on both sides, 10 wrong on both: no difference. Each accuracy is 10/20 with the
    # Wilson interval (0.2993, 0.7007); phi = (10 x 10 - 0 - 20/2) / sqrt(10^4) = 0.9 (Newcombe's
    # continuity-corrected correlation), so the half-width is 0.2007 x sqrt(2 - 2 x 0.9) = 0.0898.
    low, high = stats.paired_difference_interval(10, 0, 0, 10)
    assert (round(low, 4), round(high, 4)) == (-0.0898, 0.0898)
    # agreement narrows it: the same accuracies with the outcomes independent (phi = 0 after the
    # correction) give the square-and-add width 0.2007 x sqrt(2) = 0.2838
    low, high = stats.paired_difference_interval(5, 5, 5, 5)
    assert (round(low, 4), round(high, 4)) == (-0.2838, 0.2838)
    assert stats.paired_difference_interval(0, 0, 0, 0) is None


@pytest.mark.parametrize(("counts", "difference"), [((500, 30, 0, 70), -0.05), ((0, 0, 7, 3), 0.7),
                                                    ((90, 1, 2, 7), 0.01), ((0, 12, 0, 0), -1.0)])
def test_paired_difference_interval_holds_its_estimate_and_stays_in_bounds(counts, difference) -> None:
    low, high = stats.paired_difference_interval(*counts)
    assert -1.0 <= low <= difference <= high <= 1.0
    swapped = stats.paired_difference_interval(counts[0], counts[2], counts[1], counts[3])
    assert swapped == pytest.approx((-high, -low))


def _power_by_enumeration(n: int, right_to_wrong: float, wrong_to_right: float) -> float:
    """Every (right->wrong, wrong->right) count over n items, weighted by its multinomial probability."""
    import math

    same = 1 - right_to_wrong - wrong_to_right
    total = 0.0
    for b in range(n + 1):
        for c in range(n - b + 1):
            if stats.mcnemar_exact(b, c) < 0.05:
                ways = math.factorial(n) // (math.factorial(b) * math.factorial(c) * math.factorial(n - b - c))
                total += ways * right_to_wrong ** b * wrong_to_right ** c * same ** (n - b - c)
    return total


@pytest.mark.parametrize("n", [20, 60])
def test_mcnemar_power_matches_a_full_enumeration(n: int) -> None:
    assert stats.mcnemar_power(n, 0.15, 0.05) == pytest.approx(_power_by_enumeration(n, 0.15, 0.05), abs=1e-9)
    assert stats.mcnemar_power(n, 0.1, 0.1) == pytest.approx(_power_by_enumeration(n, 0.1, 0.1), abs=1e-9)


def test_mcnemar_power_at_the_lanes_sizes() -> None:
    # 6% of answers changing, a 3-point drop (4.5% right -> wrong, 1.5% back): docs/quality.md's figures
    assert round(stats.mcnemar_power(600, 0.045, 0.015), 3) == 0.830
    assert round(stats.mcnemar_power(300, 0.045, 0.015), 3) == 0.492
    assert round(stats.mcnemar_power(1000, 0.045, 0.015), 3) == 0.973
    assert round(stats.mcnemar_power(600, 0.03, 0.03), 3) == 0.033  # false alarms with no drop
    assert stats.mcnemar_power(0, 0.045, 0.015) == 0.0 and stats.mcnemar_power(600, 0.0, 0.0) == 0.0
