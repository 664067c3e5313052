"""The open loop's schedule, pure (no clock, no sleeping): the rate held exactly, the gaps' spread as each
arrival process has it, a trace's timestamps kept and scaled, the same schedule for the same seed."""

from __future__ import annotations

import math

import pytest

from agent.bench.tasks.arrivals import arrival_offsets, gaps_cv, realized_rate, replay_offsets


def test_poisson_at_200_per_s_for_30_s_has_the_rate_and_the_spread_of_poisson():
    times = arrival_offsets(200, 30, "poisson", seed=7)
    assert len(times) == 6000 and times[0] == 0.0 and times[-1] < 30.0
    assert realized_rate(times) == pytest.approx(200, rel=0.02)
    assert gaps_cv(times) == pytest.approx(1.0, rel=0.10)  # exponential gaps: standard deviation = mean


@pytest.mark.parametrize("shape", [0.25, 4.0])
def test_gamma_gaps_spread_as_one_over_the_root_of_the_shape(shape: float):
    times = arrival_offsets(50, 100, "gamma", burstiness=shape, seed=3)
    assert len(times) == 5000 and realized_rate(times) == pytest.approx(50, rel=0.02)
    assert gaps_cv(times) == pytest.approx(1 / math.sqrt(shape), rel=0.10)  # 2.0 (bursty) and 0.5 (smooth)


def test_constant_arrivals_are_evenly_spaced():
    times = arrival_offsets(4, 2, "constant")
    assert times == pytest.approx([0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75])
    assert gaps_cv(times) == pytest.approx(0.0, abs=1e-9)


def test_the_same_seed_gives_the_same_schedule_and_another_seed_another():
    assert arrival_offsets(10, 5, "poisson", seed=1) == arrival_offsets(10, 5, "poisson", seed=1)
    assert arrival_offsets(10, 5, "poisson", seed=1) != arrival_offsets(10, 5, "poisson", seed=2)


def test_a_window_shorter_than_one_gap_still_sends_one_request():
    assert arrival_offsets(0.1, 2) == [0.0]


def test_a_trace_keeps_its_gaps_scaled_by_its_speed():
    assert replay_offsets([1000, 1000, 1250, 3000]) == pytest.approx([0.0, 0.0, 0.25, 2.0])
    assert replay_offsets([1000, 1000, 1250, 3000], speed=2) == pytest.approx([0.0, 0.0, 0.125, 1.0])


@pytest.mark.parametrize("call,says", [
    (lambda: arrival_offsets(0, 30), "must be positive"),
    (lambda: arrival_offsets(5, 30, "gamma", burstiness=0), "must be positive"),
    (lambda: arrival_offsets(5, 30, "bursty"), "give one of constant, poisson, gamma"),
    (lambda: replay_offsets([]), "no requests"),
    (lambda: replay_offsets([10, 5]), "must not decrease"),
    (lambda: replay_offsets([10, 20], speed=0), "trace_speed must be more than 0"),
])
def test_bad_values_are_refused_with_the_reason(call, says: str):
    with pytest.raises(ValueError, match=says):
        call()
