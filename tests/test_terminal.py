"""Log times print as `YYYY-MM-DD HH:MM:SS` in UTC, whatever zone and precision the log wrote them with."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from playbook.rendering.terminal import when
import pytest

zones = st.one_of(st.none(), st.integers(-23 * 60, 23 * 60).map(lambda m: timezone(timedelta(minutes=m))))


@pytest.mark.slow
@given(moment=st.datetimes(min_value=datetime(2, 1, 1), max_value=datetime(9998, 12, 31)), zone=zones,
       spec=st.sampled_from(["auto", "seconds", "microseconds"]))
def test_a_log_time_prints_as_its_utc_second(moment, zone, spec):
    moment = moment.replace(tzinfo=zone)
    utc = moment.astimezone(timezone.utc) if zone is not None else moment
    assert when(moment.isoformat(timespec=spec)) == utc.strftime("%Y-%m-%d %H:%M:%S")


def test_what_is_not_a_time_prints_as_itself_made_safe():
    assert when("yesterday\x1b[31m") == "yesterday\\x1b[31m" and when("") == when(None) == "-"
