"""Reading Claude Code transcripts: the conversation of a session, and the key points it cited.

A transcript is JSON Lines at `~/.claude/projects/<slug>/<session_id>.jsonl` (a
subagent's at `.../<session_id>/subagents/agent-<id>.jsonl`); hooks get its path
as `transcript_path` (`agent_transcript_path` for SubagentStop). Most of its
records are not conversation: attachments (hook output, environment, skill
listings), api-request-* records, queue operations, cost state, system records
(stop-hook summaries, compaction boundaries). Only `user` and `assistant`
records are kept, and of those not the meta ones (see docs/claude-code-notes.md).
What the user wrote between `<private>` and `</private>` in a prompt is dropped
here, so it reaches neither the model nor the log.

An assistant turn is written as one record per content block; consecutive
records of one role are merged into one Message.

Reading never fails on the content of a line: a line that is not a JSON object
(truncated, binary junk, empty, too long, too deeply nested) is counted in
`broken_lines` and skipped. Only a path that cannot be read raises TranscriptError.

`lines` is where the next read should start (`start_line`): the number of
complete lines read. A last line without its newline that does not parse yet is
not counted: Claude Code may be in the middle of appending it.

What is read is condensed for the models (`Caps`; `CONDENSED` by default). The user's
messages and the assistant's text are kept whole. A tool's output is cut to its head and
tail with a marker saying how much was cut, and the lines of the cut part that look like
errors (tracebacks, `Error:`, `FAILED`, ...) are kept; a tool error keeps more. A file's
contents read by a tool keep only their head. An output that repeats an earlier one word
for word (the same file read again, the same command run again) is replaced by a line
saying so. `PLAIN` is the reading before condensing (each output's first 1,000 characters).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Literal

import msgspec

from eventlog.domain import SECTION_SLUGS
from eventlog.errors import PlaybookError

__all__ = ["CONDENSED", "Caps", "Message", "PLAIN", "Transcript", "TranscriptError", "cited_ids", "read_transcript",
           "without_private"]


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
TOOL_INPUT_CHARS = CONDENSED.tool_input
TOOL_RESULT_CHARS = CONDENSED.tool_result
_FILE_READERS = frozenset({"Read", "NotebookRead"})
_LINE_NUMBER = re.compile(r"^ *\d+\t", re.MULTILINE)
# A line that reports an error (not code that handles one: `except ValueError:`, `class XError`)
_ERROR_LINE = re.compile(
    r"^\s*(?:Traceback \(most recent call last\)|[\w.]*(?:Error|Exception|Warning)\b:?|E\s{2,}\S|FAILED\b|ERROR\b"
    r"|FAIL\b|fatal:|error(?:\[\w+\])?:|panic:)|No such file or directory|[Pp]ermission denied|command not found"
    r"|[Ee]xit code [1-9]",
)

# user text that Claude Code writes around local slash commands (/compact, /clear, ...)
_WRAPPER_PREFIXES = (
    "<command-name>",
    "<command-message>",
    "<command-args>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
)
# the input field that says best what a tool call did, by preference
_TOOL_KEYS = ("command", "file_path", "notebook_path", "path", "pattern", "url", "query", "description", "skill", "prompt")

_ID = re.compile(r"(?:" + "|".join(map(re.escape, SECTION_SLUGS.values())) + r")-\d+|kpt_\d+")
_BRACKET = re.compile(r"\[([^\[\]\n]{1,300})\]")
_PRIVATE = re.compile(r"<private\s*>.*?(?:</private\s*>|\Z)", re.IGNORECASE | re.DOTALL)
PRIVATE_MARK = "[private]"


class TranscriptError(PlaybookError):
    """The transcript's path cannot be read (missing, unreadable, a directory)."""


class Message(msgspec.Struct, frozen=True):
    role: Literal["user", "assistant"]
    content: str


class Transcript(msgspec.Struct, frozen=True):
    messages: list[Message]
    lines: int
    broken_lines: int


class _Broken(Exception):
    """A line that is not a readable record."""


# -- lines ---------------------------------------------------------------------


def _lines(handle: Any, max_line_bytes: int) -> Iterator[tuple[bytes | None, bool]]:
    """(line, terminated) for each line; line is None when longer than max_line_bytes.

    A line too long is skipped in pieces, never held whole in memory.
    """
    while True:
        chunk = handle.readline(max_line_bytes + 1)
        if not chunk:
            return
        if len(chunk) > max_line_bytes and not chunk.endswith(b"\n"):
            terminated = False
            while True:
                more = handle.readline(1 << 20)
                if not more:
                    break
                if more.endswith(b"\n"):
                    terminated = True
                    break
            yield None, terminated
        else:
            yield chunk, chunk.endswith(b"\n")


def _decode(line: bytes | None) -> dict[str, Any]:
    if line is None:
        raise _Broken("line too long")
    line = line.strip()
    if not line:
        raise _Broken("empty line")
    try:
        record = msgspec.json.decode(line)
    except RecursionError as exc:
        raise _Broken("nested too deeply") from exc
    except msgspec.DecodeError:
        # msgspec rejects lone UTF-16 surrogate escapes ("\ud83d"), which Node writes
        # when it slices a string mid-pair; the standard library takes them.
        try:
            record = json.loads(line.decode("utf-8"))
        except (ValueError, RecursionError) as exc:
            raise _Broken("not JSON") from exc
    if not isinstance(record, dict):
        raise _Broken("not a JSON object")
    return record


# -- records -------------------------------------------------------------------


def _clean(text: str) -> str:
    """The text as valid UTF-8 (lone surrogates become '?')."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")


def _truncate(text: str, limit: int) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit} more chars]"


def _cut(text: str, limit: int, caps: Caps, head_only: bool = False) -> str:
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


class _Reading:
    """What reading one transcript remembers across records: the caps, which tool each call id was (and
    what it read), and the outputs seen so far (to collapse repeats)."""

    def __init__(self, caps: Caps) -> None:
        self.caps = caps
        self.calls: dict[str, tuple[str, str]] = {}
        self.seen: dict[bytes, str] = {}


def _tool_use(block: dict[str, Any], reading: _Reading) -> str:
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


def _tool_result(block: dict[str, Any], reading: _Reading) -> str:
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
        text = _cut(whole, caps.tool_error, caps)
    elif tool in _FILE_READERS:
        text = _cut(whole, caps.file_read, caps, head_only=True)
    else:
        text = _cut(whole, caps.tool_result, caps)
    return f"[{label}: {text}]" if text else f"[{label}]"


def without_private(text: str) -> str:
    """`text` with each `<private>...</private>` span replaced by `[private]`.

    An opening tag never closed hides everything after it: a prompt cut short, or a tag
    mistyped at the end, must not let the private part through.
    """
    if "<private" not in text.lower():
        return text
    return _PRIVATE.sub(PRIVATE_MARK, text)


def _is_wrapper(text: str) -> bool:
    return text.lstrip().startswith(_WRAPPER_PREFIXES)


def _user_text(content: Any, reading: _Reading) -> str:
    if isinstance(content, str):
        return "" if _is_wrapper(content) else without_private(content)
    parts: list[str] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            if not _is_wrapper(block["text"]):
                parts.append(without_private(block["text"]))
        elif kind == "tool_result":
            parts.append(_tool_result(block, reading))
        elif kind == "image":
            parts.append("[image]")
        elif kind == "document":
            parts.append("[document]")
    return "\n".join(p for p in parts if p.strip())


def _assistant_text(content: Any, reading: _Reading) -> str:
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif kind in ("tool_use", "server_tool_use"):
            parts.append(_tool_use(block, reading))
        # thinking, redacted_thinking and anything else: not conversation
    return "\n".join(p for p in parts if p.strip())


def _is_conversation(record: dict[str, Any]) -> bool:
    return record.get("type") in ("user", "assistant")


def _message(record: dict[str, Any], subagent: bool, reading: _Reading) -> Message | None:
    """The record's message, or None when it is not conversation. Raises _Broken."""
    if not _is_conversation(record):
        return None
    if record.get("isSidechain") is True and not subagent:
        return None
    if (
        record.get("isMeta") is True
        or record.get("isCompactSummary") is True
        or record.get("isVisibleInTranscriptOnly") is True
        or record.get("isApiErrorMessage") is True
    ):
        return None
    message = record.get("message")
    if not isinstance(message, dict):
        raise _Broken("a conversation record without a message")
    content = message.get("content")
    if not isinstance(content, (str, list)):
        raise _Broken("a message without content")
    role = record["type"]
    text = _user_text(content, reading) if role == "user" else _assistant_text(content, reading)
    text = _clean(text).strip()
    return Message(role=role, content=text) if text else None


# -- the public functions --------------------------------------------------------


def _nonblocking(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_NONBLOCK)


def _open(path: Path) -> Any:
    # Opened with O_NONBLOCK, then checked with fstat: opening a FIFO for reading blocks until a
    # writer appears (forever, for a learner in the background), and a character device
    # (/dev/zero) never ends. Only a regular file is a transcript; the flag changes nothing for one.
    try:
        handle = open(path, "rb", opener=_nonblocking)  # noqa: SIM115 - closed by the caller
    except IsADirectoryError as exc:
        raise TranscriptError(f"cannot read transcript {path}: it is a directory") from exc
    except (OSError, ValueError) as exc:  # ValueError: an embedded NUL byte
        reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        raise TranscriptError(f"cannot read transcript {path}: {reason}") from exc
    try:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise TranscriptError(f"cannot read transcript {path}: not a regular file")
        os.set_blocking(handle.fileno(), True)
    except OSError as exc:
        handle.close()
        raise TranscriptError(f"cannot read transcript {path}: {exc.strerror or type(exc).__name__}") from exc
    except BaseException:
        handle.close()
        raise
    return handle


def read_transcript(path: str | os.PathLike[str], start_line: int = 0, max_line_bytes: int = 1_000_000,
                    caps: Caps = CONDENSED) -> Transcript:
    """The conversation in a transcript from line `start_line` (0-based) on, condensed by `caps`.

    Returns the messages, the number of complete lines in the file (the
    `start_line` of the next read), and how many lines from `start_line` on were
    not readable records.
    """
    path = Path(path)
    start_line = max(0, start_line)
    max_line_bytes = max(1, max_line_bytes)
    # a subagent's own transcript is all sidechain records: keep them there
    subagent: bool | None = True if path.name.startswith("agent-") else None
    messages: list[Message] = []
    broken = 0
    count = 0
    reading = _Reading(caps)
    handle = _open(path)
    try:
        with handle:
            for line, terminated in _lines(handle, max_line_bytes):
                index = count
                if index < start_line:
                    count += 1
                    if subagent is None and line is not None:
                        try:
                            record = _decode(line)
                        except _Broken:
                            continue
                        if _is_conversation(record):
                            subagent = record.get("isSidechain") is True
                    continue
                try:
                    record = _decode(line)
                except _Broken:
                    if not terminated:
                        break  # maybe still being written: read it next time
                    count += 1
                    broken += 1
                    continue
                count += 1
                if subagent is None and _is_conversation(record):
                    subagent = record.get("isSidechain") is True
                try:
                    message = _message(record, bool(subagent), reading)
                except _Broken:
                    broken += 1
                    continue
                if message is None:
                    continue
                if messages and messages[-1].role == message.role:
                    messages[-1] = Message(role=message.role, content=f"{messages[-1].content}\n{message.content}")
                else:
                    messages.append(message)
    except OSError as exc:
        raise TranscriptError(f"cannot read transcript {path}: {exc.strerror or type(exc).__name__}") from exc
    return Transcript(messages=messages, lines=count, broken_lines=broken)


def cited_ids(messages: Iterable[Message]) -> list[str]:
    """Key point ids cited in the assistant's text as `[pat-001]` (or `[pat-001, mis-002]`).

    Ids of the five sections (pat, mis, pref, ctx, oth) and legacy `kpt_NNN`;
    each once, in order of first appearance.
    """
    seen: dict[str, None] = {}
    for message in messages:
        if message.role != "assistant":
            continue
        for bracket in _BRACKET.finditer(message.content):
            for token in bracket.group(1).split(","):
                token = token.strip()
                if _ID.fullmatch(token):
                    seen.setdefault(token, None)
    return list(seen)
