"""The small JSON the quick roads read and write, without the `json` module: a string quoted for a hook's output,
a JSON string read back, and the top-level string members of an object. Standard library only (`_json`, the C half
of `json`), like `projections.quickroads`.
"""

from __future__ import annotations

try:  # the C half of `json`, without the rest: `import json` brings in `re` and `enum`, tens of ms
    from _json import encode_basestring_ascii, scanstring
except ImportError:  # pragma: no cover - an interpreter without the accelerator
    from json.decoder import scanstring  # type: ignore[attr-defined,no-redef]
    from json.encoder import encode_basestring_ascii


def json_quote(text: str) -> str:
    """`text` as a JSON string, in ASCII."""
    quoted: str = encode_basestring_ascii(text)
    return quoted


def json_string(text: str) -> str:
    """The JSON string that is the whole of `text`."""
    if not text.startswith('"'):
        raise ValueError("not a JSON string")
    value, end = scanstring(text, 1)
    if text[end:].strip():
        raise ValueError("more than a JSON string")
    return value


def _skip(text: str, at: int) -> int:
    """The index just past the JSON value that starts at `at` (after blanks)."""
    while text[at] in " \t\r\n":
        at += 1
    if text[at] == '"':
        return scanstring(text, at + 1)[1]
    if text[at] in "[{":
        depth = 0
        while True:
            char = text[at]
            if char == '"':
                at = scanstring(text, at + 1)[1]
                continue
            if char in "[{":
                depth += 1
            elif char in "]}":
                depth -= 1
                if depth == 0:
                    return at + 1
            at += 1
    while text[at] not in ",}] \t\r\n":
        at += 1
    return at


def top_level_strings(text: str) -> dict[str, str]:
    """The string members of the JSON object `text`, read with the C scanner alone (no `json` import);
    values of other types are skipped. ValueError or IndexError when `text` is no JSON object."""
    at = text.index("{") + 1
    if text[:at - 1].strip():
        raise ValueError("not a JSON object")
    found: dict[str, str] = {}
    while True:
        while text[at] in " \t\r\n,":
            at += 1
        if text[at] == "}":
            return found
        if text[at] != '"':
            raise ValueError("not a JSON object")
        key, at = scanstring(text, at + 1)
        while text[at] in " \t\r\n":
            at += 1
        if text[at] != ":":
            raise ValueError("not a JSON object")
        at += 1
        while text[at] in " \t\r\n":
            at += 1
        if text[at] == '"':
            value, at = scanstring(text, at + 1)
            found[key] = value
        else:
            at = _skip(text, at)
