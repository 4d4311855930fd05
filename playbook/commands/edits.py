"""The user's own changes to the playbook: add, edit and remove a key point, undo the last learning cycle.

Each is decided by the same rules as a curator's operation (`ApplyOperations`) and appended as one
transaction attributed to the user (source `manual:<verb>`, with the Claude Code session it was
typed in, when there is one). A request the rules would skip (an unknown ID, a text already in
the playbook) records nothing and is refused with one line saying why.

What the user types is scrubbed like a model's reply before it is decided: a secret pasted into
`playbook add` (or `/remember`) would otherwise be injected into every later session and shared
with the log. One line on stderr, and the transaction's note, say which kinds were redacted.
"""

from __future__ import annotations

import os
from typing import Any, Literal

import msgspec

from eventlog.decide import ApplyOperations, decide
from eventlog.domain import MAX_TEXT_LENGTH, OTHERS, SECTION_SLUGS, PlaybookState
from eventlog.errors import PlaybookError
from eventlog.events import Cause, Event, LearningCompleted, OperationSkipped
from eventlog.registry import touched_names
from eventlog.store import Committed
from projections.repository import PlaybookRepository
from projections.timeline import Timeline, read_transaction

from playbook.errors import UsageError
from playbook.wiring.diagnostics import warn

Verb = Literal["add", "edit", "rm"]


class EditRefused(PlaybookError):
    """The rules would not apply the user's change: `reason` is the skip's reason, and nothing was recorded."""

    def __init__(self, message: str, *, reason: str) -> None:
        self.reason = reason
        super().__init__(message)


def section_named(given: str | None) -> str:
    """The canonical section a user means: its name in any case, its ID prefix (`pat`), or a word that
    starts only one section's name (`patterns`, `preferences`); none given is OTHERS."""
    if given is None or not given.strip():
        return OTHERS
    wanted = " ".join(given.replace("&", " ").split()).upper()
    for canonical, slug in SECTION_SLUGS.items():
        if wanted in (" ".join(canonical.replace("&", " ").split()), slug.upper()):
            return canonical
    words = wanted.split()
    found = [canonical for canonical in SECTION_SLUGS
             if all(any(word.startswith(part) for word in canonical.split()) for part in words)]
    if len(found) == 1:
        return found[0]
    known = ", ".join(f"{canonical} ({slug})" for canonical, slug in SECTION_SLUGS.items())
    raise UsageError(f"unknown section {given!r}: one of {known}", value=given)


def _text(text: str) -> str:
    cleaned = text.strip()
    if not cleaned:
        raise UsageError("the text is empty", value=text)
    if len(cleaned) > MAX_TEXT_LENGTH:
        raise UsageError(f"the text has {len(cleaned)} characters; a key point holds at most {MAX_TEXT_LENGTH}",
                         value=text[:40])
    return cleaned


def _existing(state: PlaybookState, name: str) -> None:
    if state.get(name) is None:
        raise PlaybookError(f"no key point {name} in the playbook (playbook show lists them)")


def _cause(verb: Verb, detail: str, said: str | None) -> Cause:
    # Inside Claude Code (a slash command, or Claude running the CLI), the session it was typed in.
    session = os.environ.get("CLAUDE_CODE_SESSION_ID") or None
    note = f"by the user: playbook {verb} {detail}"[:200]
    return Cause(source=f"manual:{verb}", session=session, note=note if said is None else f"{note}; {said}")


def _scrubbed(text: str) -> tuple[str, str | None]:
    """`text` with its secrets redacted, and `redacted N secrets (kinds)` when there were any."""
    from projections.redactor import Redactor  # detect-secrets: loaded for a typed text, not for `undo`

    redactor = Redactor()
    return redactor.text(text), redactor.said()


def _apply(repo: PlaybookRepository, operation: dict[str, Any], verb: Verb, detail: str, said: str | None = None,
           what: str = "the text") -> Committed:
    """Decide `operation` under the log's lock and append it, or refuse it whole with the rules' reason;
    `said` is what was redacted from `what` the user typed, told once the change is stored."""
    refused: list[OperationSkipped] = []

    def decider(state: PlaybookState) -> list[Event]:
        events = decide(state, ApplyOperations([operation], origin="user"))
        refused[:] = [e for e in events if isinstance(e, OperationSkipped)]
        return [] if refused else events

    committed = repo.append(decider, _cause(verb, detail, said))
    if refused:
        skip = refused[0]
        raise EditRefused(f"nothing changed: {skip.detail}", reason=skip.reason)
    if committed is None:
        raise PlaybookError("nothing changed")
    if said is not None:
        warn(f"{said} from {what} before storing it")
    return committed


def add(repo: PlaybookRepository, text: str, section: str | None = None) -> Committed:
    """Add a key point in `section` (OTHERS when None); refused when the playbook already holds the text."""
    canonical = section_named(section)
    value, said = _scrubbed(text)
    value = _text(value)
    held = next((kp.name for _, kp in repo.state().entries() if kp.text == value), None)
    if held is not None:
        raise EditRefused(f"nothing changed: the playbook already holds this text as {held}", reason="duplicate_text")
    return _apply(repo, {"type": "ADD", "text": value, "section": canonical}, "add", f"in {canonical}", said)


def edit(repo: PlaybookRepository, name: str, text: str) -> Committed:
    """Re-word key point `name`; refused for an unknown ID or the text it already has."""
    value, said = _scrubbed(text)
    value = _text(value)
    state = repo.state()
    _existing(state, name)
    current = state.get(name)
    if current is not None and current.text == value:
        raise EditRefused(f"nothing changed: {name} already reads so", reason="unchanged_text")
    return _apply(repo, {"type": "UPDATE", "target_id": name, "text": value}, "edit", name, said)


def remove(repo: PlaybookRepository, name: str, reason: str | None = None) -> Committed:
    """Delete key point `name`, with the user's reason (kept in the log); refused for an unknown ID."""
    _existing(repo.state(), name)
    why, said = _scrubbed((reason or "").strip()) if reason else ("", None)
    return _apply(repo, {"type": "DELETE", "target_id": name, "reason": why or "removed by the user"}, "rm", name,
                  said, "the reason")


# --- undo ---------------------------------------------------------------------------------------------


class LastLearning(msgspec.Struct, frozen=True):
    """The newest learning transaction that changed the playbook and is not reverted yet."""

    tx: str
    at: str
    source: str
    session: str | None


def last_learning(repo: PlaybookRepository) -> LastLearning | None:
    """The transaction `playbook undo` reverts: the newest learning cycle (a hook's, with a model's reply)
    that changed a key point and that no revert has undone since; None when there is none."""
    timeline = Timeline(repo)
    reverted: set[str] = set()
    for ref in reversed(timeline.refs):
        commit = ref.commit
        if commit.source.startswith("revert"):
            reverted.update(_reverted_by(commit.note))
            continue
        if commit.tx in reverted or not commit.source.startswith(("hook:", "learn")):
            continue
        events = read_transaction(timeline.path, ref).events
        if not (commit.model or any(isinstance(e, LearningCompleted) for e in events)):
            continue
        if any(touched_names(e) for e in events if isinstance(e, Event)):
            return LastLearning(tx=commit.tx, at=commit.at, source=commit.source, session=commit.session)
    return None


def _reverted_by(note: str | None) -> list[str]:
    """The transactions a revert's note names (`revert of A, B`, as `playbook.commands.audit.revert` writes it)."""
    prefix = "revert of "
    if not note or not note.startswith(prefix):
        return []
    return [tx.strip() for tx in note[len(prefix):].split(",") if tx.strip()]
