"""Text that is safe to print: what came from a model, a log or a hook input never reaches a terminal raw."""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: importing typing costs a start-up what the standard-library-only paths avoid
if TYPE_CHECKING:
    import re
    from typing import Any

UNSAFE_CHARACTERS = "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
"""Control characters (C0, DEL, C1), bidi controls, line and paragraph separators, lone surrogates: none of them
is printable (`str.isprintable`), which is how a text without any is told at C speed."""
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_unsafe: list[re.Pattern[str]] = []
"""UNSAFE_CHARACTERS compiled, once a text needs it: `re` costs the quick paths more than their own work."""


def _escape(match: re.Match[str]) -> str:
    ch = match.group()
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean(value: Any) -> str:
    """`value` as one line of text with every unsafe character written as an escape, repr-style."""
    text = value if isinstance(value, str) else str(value)
    if text.isprintable():  # no unsafe character at all: the common case, at C speed
        return text
    if not _unsafe:
        import re

        _unsafe.append(re.compile(UNSAFE_CHARACTERS))
    return _unsafe[0].sub(_escape, text)
