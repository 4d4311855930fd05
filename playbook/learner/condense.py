"""Condensing what a transcript's tool calls and outputs say, for the models.

The user's messages and the assistant's text are kept whole. A tool's output is cut to its head and
tail with a marker saying how much was cut, and the lines of the cut part that look like errors
(tracebacks, `Error:`, `FAILED`, ...) are kept; a tool error keeps more. A file's contents read by a
tool keep only their head. An output that repeats an earlier one word for word (the same file read
again, the same command run again) is replaced by a line saying so. `PLAIN` is the reading before
condensing (each output's first 1,000 characters).
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import msgspec

__all__ = ["CONDENSED", "Caps", "PLAIN", "Reading", "cut", "tool_result", "tool_use"]


class Caps(msgspec.Struct, frozen=True, kw_only=True):
    """How much of each tool call and tool output reaches the models (characters)."""

    tool_input: int = 200
    """Of a tool call's input (its command, path, pattern, ...), on one line."""
    tool_result: int = 240
    """Of a tool's output: its head and tail, two thirds of it the tail (where a command's verdict is)."""
    tool_error: int = 1200
    """Of an output the tool marked as an error."""
    file_read: int = 160
    """Of a file's contents read by a tool (Read, NotebookRead): its head; the model can read the file again."""
    error_lines: int = 600
    """Of the lines of a cut part that look like errors, kept in order."""
    repeat_min: int = 200
    """An output of at least this many characters that equals an earlier one is replaced by a back-reference."""
    collapse_repeats: bool = True
    head_only: bool = False
    """Cut to the head alone, without the tail or the error lines (the reading before condensing)."""


CONDENSED = Caps()
PLAIN = Caps(tool_result=1000, tool_error=1000, file_read=1000, error_lines=0, collapse_repeats=False, head_only=True)
_FILE_READERS = frozenset({"Read", "NotebookRead"})
_LINE_NUMBER = re.compile(r"^ *\d+\t", re.MULTILINE)
# A line that reports an error (not code that handles one: `except ValueError:`, `class XError`)
_ERROR_LINE = re.compile(
    r"^\s*(?:Traceback \(most recent call last\)|[\w.]*(?:Error|Exception|Warning)\b:?|E\s{2,}\S|FAILED\b|ERROR\b"
    r"|FAIL\b|fatal:|error(?:\[\w+\])?:|panic:)|No such file or directory|[Pp]ermission denied|command not found"
    r"|[Ee]xit code [1-9]",
)
# the input field that says best what a tool call did, by preference
_TOOL_KEYS = ("command", "file_path", "notebook_path", "path", "pattern", "url", "query", "description", "skill", "prompt")


def _truncate(text: str, limit: int) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit} more chars]"


def cut(text: str, limit: int, caps: Caps, head_only: bool = False) -> str:
    """`text` within about `limit` characters: its head and tail around a marker, plus the error lines of
    the part cut out (or its head alone, with `head_only`)."""
    text = text.strip()
    if len(text) <= limit:
        return text
    if head_only or caps.head_only:
        return f"{text[:limit]}… [{len(text) - limit:,} more chars]"
    head = limit // 3
    tail = limit - head
    middle = text[head:len(text) - tail]
    kept: list[str] = []
    room = caps.error_lines
    for line in middle.splitlines():
        line = line.strip()
        if line and room > 0 and _ERROR_LINE.search(line):
            line = line[:room]
            kept.append(line)
            room -= len(line) + 1
    errors = "\n".join(kept)
    marker = f"… [{len(middle):,} chars cut" + (f"; error lines kept:]\n{errors}\n[…] …" if kept else "] …")
    return f"{text[:head]}{marker}{text[len(text) - tail:]}"


def _one_line(text: str) -> str:
    return " ".join(text.split())


class Reading:
    """What reading one transcript remembers across records: the caps, which tool each call id was (and
    what it read), and the outputs seen so far (to collapse repeats)."""

    def __init__(self, caps: Caps) -> None:
        self.caps = caps
        self.calls: dict[str, tuple[str, str]] = {}
        self.seen: dict[bytes, str] = {}


def tool_use(block: dict[str, Any], reading: Reading) -> str:
    name = block.get("name") if isinstance(block.get("name"), str) else "?"
    tool_input = block.get("input")
    summary = ""
    if isinstance(tool_input, dict):
        for key in _TOOL_KEYS:
            value = tool_input.get(key)
            if isinstance(value, str) and value.strip():
                summary = value
                break
        else:
            if tool_input:
                try:
                    summary = json.dumps(tool_input, ensure_ascii=False, sort_keys=True)
                except (TypeError, ValueError, RecursionError):
                    summary = "…"
    elif isinstance(tool_input, str):
        summary = tool_input
    summary = _truncate(_one_line(summary), reading.caps.tool_input)
    if isinstance(block.get("id"), str):
        reading.calls[block["id"]] = (str(name), summary)
    return f"[tool {name}: {summary}]" if summary else f"[tool {name}]"


def tool_result(block: dict[str, Any], reading: Reading) -> str:
    content = block.get("content")
    parts: list[str] = []
    if isinstance(content, str):
        parts.append(content)
    elif isinstance(content, list):
        for item in content:
            if isinstance(item, dict):
                if item.get("type") == "text" and isinstance(item.get("text"), str):
                    parts.append(item["text"])
                elif item.get("type") == "image":
                    parts.append("[image]")
            elif isinstance(item, str):
                parts.append(item)
    error = block.get("is_error") is True
    label = "tool error" if error else "tool result"
    whole = "\n".join(parts).strip()
    caps = reading.caps
    tool, target = reading.calls.get(str(block.get("tool_use_id")), ("?", ""))
    if caps.collapse_repeats and len(whole) >= caps.repeat_min:
        # A file read with line numbers (Read's `   12\t...`) and dumped by `cat` is one dump.
        bare = _LINE_NUMBER.sub("", whole).strip()
        key = hashlib.blake2b(bare.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        if (earlier := reading.seen.get(key)) is not None:
            return f"[{label}: {len(whole):,} characters, the same as the earlier output of {earlier}]"
        reading.seen[key] = f"{tool} {target}".strip()
    if error:
        text = cut(whole, caps.tool_error, caps)
    elif tool in _FILE_READERS:
        text = cut(whole, caps.file_read, caps, head_only=True)
    else:
        text = cut(whole, caps.tool_result, caps)
    return f"[{label}: {text}]" if text else f"[{label}]"
