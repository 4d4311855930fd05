"""Text that is safe to print: what came from a model, a log or a hook input never reaches a terminal raw."""

from __future__ import annotations

import re

TYPE_CHECKING = False  # not typing's: importing typing costs a start-up what the standard-library-only paths avoid
if TYPE_CHECKING:
    from typing import Any

# Control characters (C0, DEL, C1), bidi controls, line and paragraph separators, lone surrogates.
UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match) -> str:
    ch = match.group()
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean(value: Any) -> str:
    """`value` as one line of text with every unsafe character written as an escape, repr-style."""
    text = value if isinstance(value, str) else str(value)
    if text.isascii() and text.isprintable():  # no control character at all: the common case, at C speed
        return text
    return UNSAFE.sub(_escape, text)
