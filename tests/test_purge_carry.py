"""What a purge of ours is taken to have redacted in a line of the shared history, when the carry reads it."""

from __future__ import annotations

import msgspec

from projections.purge_carry import _redacted_from


def _line(text: str) -> bytes:
    return msgspec.json.encode({"type": "KeyPointAdded", "text": text})[:-1] + b',"h":"' + b"0" * 32 + b'"}'


def test_a_line_that_reads_two_ways_across_an_escape_is_no_redaction_rather_than_a_crash() -> None:
    # The shortest reading splits the first `\u0001` escape: no text, so the line is not taken for a redaction.
    assert _redacted_from(_line("[REDACTED:match]01abc[REDACTED:match]"), _line("\x01abc01abc\x01abc")) is None


def test_the_texts_a_purge_took_out_leave_out_an_earlier_redaction() -> None:
    found = _redacted_from(_line("see [REDACTED:match] and [REDACTED:match]"),
                           _line("see [REDACTED:match] and kestrel"))
    assert found == ["kestrel"]
    assert _redacted_from(_line("same"), _line("same")) is None
