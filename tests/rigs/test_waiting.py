"""poll_until: the answer as soon as there is one, no sleep past the deadline, a timeout that names what was waited for."""

from __future__ import annotations

import pytest

from kit.waiting import WaitTimeout, poll_until


class Clock:
    """A clock that moves only when the code sleeps."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def test_the_first_answer_is_returned_and_nothing_more_is_asked():
    clock, answers = Clock(), iter([None, None, "ready", "late"])
    assert poll_until(lambda: next(answers), timeout_s=10, interval_s=2, what="x", clock=clock, sleep=clock.sleep) == "ready"
    assert clock.sleeps == [2, 2]
    assert next(answers) == "late"


def test_a_falsy_answer_that_is_not_none_is_an_answer():
    clock = Clock()
    assert poll_until(lambda: 0, timeout_s=1, interval_s=1, what="x", clock=clock, sleep=clock.sleep) == 0


def test_the_last_sleep_ends_at_the_deadline_and_the_timeout_names_what_was_awaited():
    clock, calls = Clock(), []
    with pytest.raises(WaitTimeout, match=r"^the g6 instance: no answer after 5 s$") as caught:
        poll_until(lambda: calls.append(clock.now), timeout_s=5, interval_s=2, what="the g6 instance",
                   clock=clock, sleep=clock.sleep)
    assert clock.sleeps == [2, 2, 1] and calls == [0, 2, 4, 5]
    assert isinstance(caught.value, TimeoutError) and caught.value.what == "the g6 instance"


def test_an_exception_of_the_check_stops_the_wait_as_it_is():
    clock = Clock()

    def check() -> None:
        raise RuntimeError("the server exited")

    with pytest.raises(RuntimeError, match="the server exited"):
        poll_until(check, timeout_s=5, interval_s=1, what="x", clock=clock, sleep=clock.sleep)
    assert clock.sleeps == []
