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

`requested` says whether the session, from its first line, holds a user request: a prompt,
or a slash command other than the plugin's own (`own_commands`, which the plugin carries
out itself: a session of only those has nothing to learn).

`lines` is where the next read should start (`start_line`): the number of
complete lines read. A last line without its newline that does not parse yet is
not counted: Claude Code may be in the middle of appending it.

What is read is condensed for the models by `playbook.learner.condense` (`CONDENSED` by default).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Literal

import msgspec

from eventlog.domain import SECTION_SLUGS
from eventlog.values import NothingToLearn

from .condense import CONDENSED, Caps, Reading, tool_result, tool_use
from .lines import BrokenLine, TranscriptError, lines_of, open_transcript, record_of

__all__ = ["Message", "PLUGIN", "PLUGIN_COMMANDS", "Transcript", "TranscriptError", "cited_ids", "nothing_to_learn",
           "read_transcript", "without_private"]

PLUGIN = "event-sourced-playbook"
"""The plugin's name (`.claude-plugin/plugin.json`): Claude Code names its commands `/PLUGIN:NAME`."""
PLUGIN_COMMANDS = frozenset({"doctor", "forget", "learn", "remember", "show", "undo", "why"})
"""The plugin's own slash commands (`commands/*.md`)."""


# user text that Claude Code writes around local slash commands (/compact, /clear, ...)
_WRAPPER_PREFIXES = (
    "<command-name>",
    "<command-message>",
    "<command-args>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
)

_COMMAND_NAME = re.compile(r"<command-name>\s*/?([^<\s]+)\s*</command-name>")
_ID = re.compile(r"(?:" + "|".join(map(re.escape, SECTION_SLUGS.values())) + r")-\d+|kpt_\d+")
_BRACKET = re.compile(r"\[([^\[\]\n]{1,300})\]")
_PRIVATE = re.compile(r"<private\s*>.*?(?:</private\s*>|\Z)", re.IGNORECASE | re.DOTALL)
PRIVATE_MARK = "[private]"


class Message(msgspec.Struct, frozen=True):
    role: Literal["user", "assistant"]
    content: str


class Transcript(msgspec.Struct, frozen=True):
    messages: list[Message]
    lines: int
    broken_lines: int
    requested: bool = False
    """A user turn of the session, from its first line, asks something of the assistant."""
    own_commands: list[str] = []
    """The plugin's own commands (`show`, `why`, ...) the session ran before its first request (all of them when
    it has none), in order, each once."""


# -- records -------------------------------------------------------------------


def _clean(text: str) -> str:
    """The text as valid UTF-8 (lone surrogates become '?')."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")


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


def _blocks(content: list[Any]) -> Iterator[tuple[Any, str | None, dict[str, Any]]]:
    """(type, its text when it is a text block, the block) for each content block that is an object."""
    for block in content:
        if isinstance(block, dict):
            kind = block.get("type")
            text = block.get("text")
            yield kind, text if kind == "text" and isinstance(text, str) else None, block


def _user_text(content: Any, reading: Reading) -> str:
    if isinstance(content, str):
        return "" if _is_wrapper(content) else without_private(content)
    parts: list[str] = []
    for kind, text, block in _blocks(content):
        if text is not None:
            if not _is_wrapper(text):
                parts.append(without_private(text))
        elif kind == "tool_result":
            parts.append(tool_result(block, reading))
        elif kind == "image":
            parts.append("[image]")
        elif kind == "document":
            parts.append("[document]")
    return "\n".join(p for p in parts if p.strip())


def _assistant_text(content: Any, reading: Reading) -> str:
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for kind, text, block in _blocks(content):
        if text is not None:
            parts.append(text)
        elif kind in ("tool_use", "server_tool_use"):
            parts.append(tool_use(block, reading))
        # thinking, redacted_thinking and anything else: not conversation
    return "\n".join(p for p in parts if p.strip())


def _is_conversation(record: dict[str, Any]) -> bool:
    return record.get("type") in ("user", "assistant")


def _shown(record: dict[str, Any], subagent: bool) -> bool:
    """Whether a conversation record is part of the conversation the models see."""
    if record.get("isSidechain") is True and not subagent:
        return False
    return not (
        record.get("isMeta") is True
        or record.get("isCompactSummary") is True
        or record.get("isVisibleInTranscriptOnly") is True
        or record.get("isApiErrorMessage") is True
    )


def _own_command(text: str) -> str | None:
    """The plugin command a command wrapper runs (`show`), or None for any other command."""
    found = _COMMAND_NAME.search(text)
    plugin, colon, name = found.group(1).partition(":") if found else ("", "", "")
    return name if colon and plugin == PLUGIN and name in PLUGIN_COMMANDS else None


def _turn(record: dict[str, Any], subagent: bool) -> tuple[bool, list[str]]:
    """(whether a user record asks something of the assistant, the plugin's own commands it runs).

    A prompt, an image or a document asks; so does a slash command other than the plugin's own, which
    may expand into a prompt. Tool results, the output of local commands and meta records do not."""
    if record.get("type") != "user" or not _shown(record, subagent):
        return False, []
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    texts: list[str] = []
    if isinstance(content, str):
        texts.append(content)
    elif isinstance(content, list):
        for kind, text, _block in _blocks(content):
            if kind in ("image", "document"):
                return True, []
            if text is not None:
                texts.append(text)
    own: list[str] = []
    for text in texts:
        if not _is_wrapper(text):
            if without_private(text).strip():
                return True, []
        elif (command := _own_command(text)) is not None:
            own.append(command)
        elif _COMMAND_NAME.search(text):
            return True, []
    return False, own


def _message(record: dict[str, Any], subagent: bool, reading: Reading) -> Message | None:
    """The record's message, or None when it is not conversation. Raises BrokenLine."""
    if not _is_conversation(record) or not _shown(record, subagent):
        return None
    message = record.get("message")
    if not isinstance(message, dict):
        raise BrokenLine("a conversation record without a message")
    content = message.get("content")
    if not isinstance(content, (str, list)):
        raise BrokenLine("a message without content")
    role = record["type"]
    text = _user_text(content, reading) if role == "user" else _assistant_text(content, reading)
    text = _clean(text).strip()
    return Message(role=role, content=text) if text else None


# -- the public functions --------------------------------------------------------


class _Conversation:
    """What reading one transcript has found so far: its messages, the lines counted, the broken ones."""

    def __init__(self, subagent: bool | None, caps: Caps) -> None:
        self.subagent = subagent
        self.reading = Reading(caps)
        self.messages: list[Message] = []
        self.count = 0
        self.broken = 0
        self.requested = False
        self.own_commands: dict[str, None] = {}

    def _notice(self, record: dict[str, Any]) -> None:
        if self.subagent is None and _is_conversation(record):
            self.subagent = record.get("isSidechain") is True
        if not self.requested:
            asks, own = _turn(record, bool(self.subagent))
            self.requested = asks
            self.own_commands.update(dict.fromkeys(own))

    def skip(self, line: bytes | None) -> None:
        """A line before `start_line`: counted, and read only while it is not yet known whether the transcript
        is a subagent's and whether the session asked anything."""
        self.count += 1
        if (self.subagent is None or not self.requested) and line is not None:
            try:
                record = record_of(line)
            except BrokenLine:
                return
            self._notice(record)

    def read(self, line: bytes | None, terminated: bool) -> bool:
        """Takes one line in; False for a last line that does not parse yet (it is read next time)."""
        try:
            record = record_of(line)
        except BrokenLine:
            if not terminated:
                return False
            self.count += 1
            self.broken += 1
            return True
        self.count += 1
        self._notice(record)
        try:
            message = _message(record, bool(self.subagent), self.reading)
        except BrokenLine:
            self.broken += 1
            return True
        if message is None:
            return True
        if self.messages and self.messages[-1].role == message.role:
            last = self.messages[-1]
            self.messages[-1] = Message(role=message.role, content=f"{last.content}\n{message.content}")
        else:
            self.messages.append(message)
        return True


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
    found = _Conversation(True if path.name.startswith("agent-") else None, caps)
    handle = open_transcript(path)
    try:
        with handle:
            for line, terminated in lines_of(handle, max_line_bytes):
                if found.count < start_line:
                    found.skip(line)
                elif not found.read(line, terminated):
                    break
    except OSError as exc:
        raise TranscriptError(f"cannot read transcript {path}: {exc.strerror or type(exc).__name__}") from exc
    return Transcript(messages=found.messages, lines=found.count, broken_lines=found.broken,
                      requested=found.requested, own_commands=list(found.own_commands))


def nothing_to_learn(transcript: Transcript) -> NothingToLearn | None:
    """Why `transcript` holds nothing a learning cycle could learn from, or None when it may: a session that
    asked nothing of the assistant but the plugin's own commands, which the plugin carries out itself."""
    if transcript.requested:
        return None
    return "only the playbook's own slash commands" if transcript.own_commands else "no user request in the session"


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
