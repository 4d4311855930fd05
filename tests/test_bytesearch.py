"""The byte search gives what repeated `bytes.find` gives, through the C library and without it."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eventlog import bytesearch
from eventlog.bytesearch import occurrences

ALPHABET = b'"ab-1\n'


def by_find(data: bytes, needle: bytes, begin: int, end: int) -> list[int]:
    found, at = [], data.find(needle, begin, end)
    while at >= 0:
        found.append(at)
        at = data.find(needle, at + 1, end)
    return found


@pytest.fixture(params=["memmem", "find"])
def road(request, monkeypatch):
    if request.param == "find":
        monkeypatch.setattr(bytesearch, "_memmem", lambda: None)
    else:
        assert bytesearch._memmem() is not None  # the C library of every machine the project runs on has one
    return request.param


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])  # the road is the same for every example
@given(data=st.binary(max_size=300).map(lambda b: bytes(ALPHABET[x % len(ALPHABET)] for x in b)),
       needle=st.sampled_from([b'"a', b"a", b"aa", b'"ab-1"', b"\n", b"b-1\n"]),
       begin=st.integers(0, 320), end=st.integers(0, 320))
def test_each_occurrence_within_the_range_in_order_overlapping_ones_included(road, data, needle, begin, end):
    assert list(occurrences(data, needle, begin, end)) == by_find(data, needle, begin, end)
    assert list(occurrences(data, needle)) == by_find(data, needle, 0, len(data))


def test_a_long_buffer_is_searched_to_its_end(road):
    data = b"x" * 5_000_000 + b'"oth-114"' + b"y" * 1000 + b'"oth-114"'
    assert list(occurrences(data, b'"oth-114"')) == [5_000_000, 5_001_009]
    assert list(occurrences(data, b'"oth-114"', 5_000_001, len(data) - 1)) == []
