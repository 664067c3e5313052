"""The three UTC stamp forms the evidence uses, from a moment in another zone, and back."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from kit import utc

BERLIN_WINTER = timezone(timedelta(hours=1))
MOMENT = datetime(2026, 11, 29, 20, 27, 5, 123456, tzinfo=BERLIN_WINTER)  # 19:27:05.123456 UTC


def test_each_form_is_the_moment_in_utc():
    assert utc.iso_seconds(MOMENT) == "2026-11-29T19:27:05Z"
    assert utc.iso_millis(MOMENT) == "2026-11-29T19:27:05.123Z"
    assert utc.folder_stamp(MOMENT) == "2026-11-29T192705Z"
    assert utc.iso_millis(utc.at_epoch(MOMENT.timestamp())) == "2026-11-29T19:27:05.123Z"


def test_a_stamp_reads_back_as_the_same_moment():
    assert utc.parse(utc.iso_millis(MOMENT)) == MOMENT.replace(microsecond=123000)
    assert utc.parse("2026-11-29T20:27:05+01:00") == MOMENT.replace(microsecond=0)
    assert utc.parse("") is None and utc.parse(None) is None


def test_without_a_moment_it_is_now():
    before = utc.now().replace(microsecond=0)
    stamped = utc.parse(utc.iso_seconds())
    assert before <= stamped <= utc.now() and stamped.tzinfo == timezone.utc
