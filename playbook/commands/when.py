"""The command line's WHEN: a seq, a transaction or session id (or a prefix), an ISO time, a time ago.

`2h`, `3d`, `1w` (s, m, h, d, w) count back from now; a trailing `^` means just before.
What the log itself can name (seq, transaction, session, ISO time) is `Timeline.resolve`'s;
this adds the typing conveniences and refuses what would silently name the wrong point.
"""

from __future__ import annotations

import re
import sys
from datetime import datetime, timedelta, timezone

from eventlog.store import Position
from projections.timeline import Timeline, TimelineError, parse_time

from playbook.errors import UsageError

_RELATIVE = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhdw])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def resolve(timeline: Timeline, when: str, before: bool = False) -> Position:
    """`Timeline.resolve`, plus: a trailing `^` means `before`, and an ambiguous transaction prefix is an error.

    `Timeline.resolve` takes the first (or last) transaction a prefix begins; two transactions
    sharing a 6+ character prefix must not be told apart silently, so this refuses the prefix.
    """
    text = when.strip()
    if text.endswith("^"):
        text, before = text[:-1].strip(), True
    if not text:
        raise UsageError(f"{when!r} names no point in the log", value=when)
    check_prefix(timeline, text)
    if text.isdecimal() and len(text) < 16:  # what Timeline.resolve reads as a seq number
        refs = timeline.refs
        last = refs[-1].end.seq if refs else 0
        if int(text) > last:
            # Past the end: a short id of a session or transaction made of digits, or a mistake
            # that must not silently show the end of the log.
            matching = timeline.match(text) if len(text) >= 6 else []
            if matching:
                index = matching[0] if before else matching[-1]
                return refs[index].start if before else refs[index].end
            raise TimelineError(f"seq {text} is past the end of the log (the last seq is {last})", named=text)
    return _point(timeline, text, when, before, None)


def check_prefix(timeline: Timeline, text: str, digits_are_seq: bool = True) -> None:
    """Refuse a transaction prefix shared by several transactions; note a number that also begins one."""
    if len(text) < 6:
        return
    txs = timeline.txs_beginning(text)
    # the test Timeline.resolve applies (isdecimal, not isdigit: int() rejects "³")
    if digits_are_seq and text.isdecimal() and len(text) < 16:
        refs = timeline.refs
        if txs and int(text) <= (refs[-1].end.seq if refs else 0):  # read as a seq number first
            print(f"playbook: note: {text} is read as a seq number; it also begins transaction(s) "
                  f"{', '.join(txs[:3])} (give more characters to name a transaction)", file=sys.stderr)
        return
    if len(txs) > 1 and text not in txs:
        raise TimelineError(f"{text!r} is ambiguous: it begins transactions {', '.join(txs[:5])}", named=text,
                            candidates=tuple(txs))


def _point(timeline: Timeline, text: str, when: str, before: bool, now: datetime | None) -> Position:
    """Timeline.resolve's order (seq, transaction or session, then a time), with times ago."""
    if (text.isdecimal() and len(text) < 16) or timeline.match(text):
        return timeline.resolve(text, before=before)
    moment = parse_moment(text, now)
    if moment is None:
        raise TimelineError(f"{when!r} is neither a time, a duration ago, a seq, a transaction nor a session",
                            named=when)
    return timeline.position_at(moment)


def parse_moment(text: str, now: datetime | None = None) -> datetime | None:
    """The time `text` names (`2h` ago, or an ISO time), or None when it names none."""
    now = now or datetime.now(timezone.utc)
    if match := _RELATIVE.match(text):
        try:
            return now - timedelta(**{_UNITS[match.group(2)]: float(match.group(1))})
        except OverflowError:  # beyond timedelta (999999999 days) or before datetime.min
            raise TimelineError(f"{text!r} is too long ago: it reaches before the year 1", named=text) from None
    try:
        return parse_time(text)
    except ValueError:
        return None
