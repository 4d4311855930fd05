"""What a purge of ours is taken to have redacted in a line of the shared history, when the carry reads it."""

from __future__ import annotations

import msgspec

from projections.purge_carry import _redacted_from

HASH = b',"h":"' + b"0" * 32 + b'"}'


def _line(text: str) -> bytes:
    return msgspec.json.encode({"type": "KeyPointAdded", "text": text})[:-1] + HASH


def test_the_texts_a_purge_took_out_are_read_from_the_strings_not_their_spelling() -> None:
    assert _redacted_from(_line("[REDACTED:match]01abc[REDACTED:match]"),
                          _line("\x01abc01abc\x01abc")) == ["\x01abc", "\x01abc"]
    legacy = b'{"type":"KeyPointAdded","text":"caf\\u00e9 kestrel"' + HASH  # an escape where ours has the letter
    assert _redacted_from(_line("caf\u00e9 [REDACTED:match]"), legacy) == ["kestrel"]


def test_a_redaction_an_earlier_purge_left_is_no_text_of_this_one() -> None:
    assert _redacted_from(_line("see [REDACTED:match] and [REDACTED:match]"),
                          _line("see [REDACTED:match] and kestrel")) == ["kestrel"]
    assert _redacted_from(_line("same"), _line("same")) is None


def test_a_line_with_many_redactions_that_is_not_the_shared_one_is_told_at_once() -> None:
    # A pattern with a wildcard per redaction, tried every way, takes time exponential in their number here.
    ours = _line(" ".join(["[REDACTED:match]"] * 40) + " end")
    assert _redacted_from(ours, _line(" ".join(["ab cd ef"] * 40) + " eNd")) is None
    assert _redacted_from(ours, _line(" ".join(["kestrel"] * 40) + " end")) == ["kestrel"] * 40


def test_only_text_is_redacted_never_what_a_record_is() -> None:
    def line(seq: int, text: str) -> bytes:
        return msgspec.json.encode({"type": "KeyPointAdded", "seq": seq, "text": text})[:-1] + HASH

    assert _redacted_from(line(3, "[REDACTED:match]"), line(4, "x")) is None
    assert _redacted_from(line(3, "[REDACTED:match]"), line(3, "x")) == ["x"]


def test_redactions_side_by_side_stood_for_one_text_each() -> None:
    assert _redacted_from(_line("[REDACTED:match][REDACTED:match] is a name"),
                          _line("kestrelkestrel is a name")) == ["kestrel"]
    assert _redacted_from(_line("[REDACTED:match][REDACTED:match] cluster"),
                          _line("[REDACTED:match]kestrel cluster")) == ["kestrel"]
    # No telling where one ends: each but the last is taken for a character, so a copy holding any is refused.
    assert _redacted_from(_line("[REDACTED:match][REDACTED:match]!"), _line("kestrelfalcon!")) == ["k", "estrelfalcon"]
