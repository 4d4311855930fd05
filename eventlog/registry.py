"""Every event type in one table: its class, CLI short name, the entries it names, its fold handler.

Adding an event type is one class in `eventlog.events`, one `EventType` entry in
`REGISTRY` below (with its handler in `eventlog.handlers`), and its rendering in
`playbook.rendering.report`. The log's decoder, the fold's light views, the CLI's `--type`
names, the timeline's "which entries did this change" and the audit's ordering all
read from here; the tests check that every entry is complete.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Union

import msgspec

from . import events as ev
from . import handlers as h
from .domain import PlaybookState

Handler = Callable[[PlaybookState, Any], bool]


@dataclass(frozen=True, slots=True)
class EventType:
    """One event type and everything the rest of the code needs to know about it."""

    cls: type[ev.Event]
    short: str
    """Its name for `playbook log --type` (the tag itself is accepted too)."""
    apply: Handler
    """How it changes a state (see `eventlog.handlers`)."""
    reads: tuple[str, ...]
    """The fields `apply` reads: the fold decodes only these (a field the handler starts to read must be added)."""
    touches: tuple[str, ...] = ()
    """Fields holding the names of the entries it changes (a str, or a list of str)."""
    cites: tuple[str, ...] = ()
    """Fields that name entries without changing them (a list of names, or request data searched as JSON)."""
    family: str | None = None
    """A `--type` name that selects this type together with the others of the same family."""

    @property
    def tag(self) -> str:
        return str(self.cls.__struct_config__.tag)


REGISTRY: tuple[EventType, ...] = (
    EventType(ev.PlaybookImported, "playbook-imported", h.playbook_imported,
              ("at", "version", "last_updated", "genesis"), family="imported"),
    EventType(ev.KeyPointImported, "imported", h.imported, ("section", "name", "text", "helpful", "harmful"),
              touches=("name",), family="imported"),
    EventType(ev.KeyPointAdded, "added", h.added, ("section", "name", "text", "helpful", "harmful"), touches=("name",)),
    EventType(ev.KeyPointUpdated, "updated", h.updated, ("name", "text"), touches=("name",)),
    EventType(ev.KeyPointsMerged, "merged", h.merged, ("section", "name", "text", "sources", "helpful", "harmful"),
              touches=("name", "sources")),
    # An absorption leaves the key point's text and counters as they were: named, not touched, like a stale mark.
    EventType(ev.KeyPointAbsorbed, "absorbed", h.absorbed, ("name",), cites=("name",)),
    EventType(ev.KeyPointDeleted, "deleted", h.removed, ("name",), touches=("name",)),
    EventType(ev.KeyPointEvaluated, "evaluated", h.counters, ("name", "helpful", "harmful"), touches=("name",)),
    EventType(ev.KeyPointPruned, "pruned", h.removed, ("name",), touches=("name",)),
    EventType(ev.KeyPointMoved, "moved", h.moved, ("name", "to_section"), touches=("name",)),
    EventType(ev.CountersSet, "counters", h.counters, ("name", "helpful", "harmful"), touches=("name",)),
    EventType(ev.SectionReordered, "reordered", h.reordered, ("section", "names")),
    EventType(ev.VersionSet, "version", h.version, ("version",)),
    EventType(ev.OperationSkipped, "skipped", h.skipped, (), cites=("operation",)),
    EventType(ev.TailRepaired, "repaired", h.housekeeping, ()),
    EventType(ev.SnapshotSetAside, "set-aside", h.housekeeping, ()),
    EventType(ev.HistoryRewritten, "rewritten", h.housekeeping, ()),
    EventType(ev.LearningRequested, "requested", h.requested, ("at", "request", "hook", "transcript", "session"),
              family="learning"),
    EventType(ev.LearningCompleted, "completed", h.completed,
              ("request", "transcript", "through_line", "cited", "injected"), cites=("cited",), family="learning"),
    EventType(ev.LearningFailed, "failed", h.failed, ("at", "request", "attempt"), family="learning"),
    EventType(ev.LearningGivenUp, "given-up", h.given_up, ("request",), family="learning"),
    EventType(ev.PlaybookDisabled, "disabled", h.disabled, ()),
    EventType(ev.PlaybookEnabled, "enabled", h.enabled, ()),
    EventType(ev.LearningSkipped, "learning-skipped", h.learned, ("request", "transcript", "through_line"),
              family="learning"),
    # Marking stale changes how a key point is ranked, not what it says: named, not touched (a revert of an
    # earlier transaction is not held up by it).
    EventType(ev.KeyPointMarkedStale, "stale", h.marked_stale, ("name",), cites=("name",)),
    EventType(ev.CurationHeld, "held", h.skipped, (), cites=("operations",)),
    EventType(ev.ModelCallRecorded, "model-call", h.housekeeping, ()),
    EventType(ev.LearningDeferred, "deferred", h.housekeeping, (), family="learning"),
    # A merge's records change nothing in the playbook: the events replayed beside them did.
    EventType(ev.BranchesMerged, "branches-merged", h.housekeeping, ()),
    EventType(ev.MergeConflictResolved, "conflict", h.housekeeping, (), cites=("name",)),
    EventType(ev.ProposalRecorded, "proposed", h.proposed,
              ("at", "tx", "proposal", "operation", "base", "request", "held"), cites=("operation",), family="review"),
    EventType(ev.ProposalAccepted, "accepted", h.decided, ("proposal",), family="review"),
    EventType(ev.ProposalRejected, "rejected", h.decided, ("proposal",), family="review"),
    EventType(ev.ProposalExpired, "expired", h.decided, ("proposal",), family="review"),
)
"""In the order the audit lists them."""

COMMIT_READS: tuple[str, ...] = ("seq", "at")
"""What the fold reads of a `TransactionCommitted` line."""

BY_TYPE: dict[type, EventType] = {entry.cls: entry for entry in REGISTRY}
BY_TAG: dict[str, EventType] = {entry.tag: entry for entry in REGISTRY}
EVENT_TYPES: tuple[type[ev.Event], ...] = tuple(entry.cls for entry in REGISTRY)
TAGS: tuple[str, ...] = tuple(entry.tag for entry in REGISTRY)
RECORD_TAGS: frozenset[str] = frozenset({*TAGS, str(ev.TransactionCommitted.__struct_config__.tag)})
SHORT_NAMES: dict[str, str] = {entry.tag: entry.short for entry in REGISTRY}
"""The short form of each event type accepted by `--type` (the tag itself is accepted too)."""
FAMILIES: dict[str, frozenset[str]] = {
    family: frozenset(entry.tag for entry in REGISTRY if entry.family == family)
    for family in dict.fromkeys(entry.family for entry in REGISTRY if entry.family)
}

AnyRecord: Any = Union[(*EVENT_TYPES, ev.TransactionCommitted)]
@lru_cache(maxsize=1)
def record_decoder() -> msgspec.json.Decoder[Any]:
    """Decodes any line this version knows, as the full record; built on first use and kept.

    Building it resolves the annotations of every record type, a good part of the import of the log's
    machinery, which a command that reads no line does not need."""
    return msgspec.json.Decoder(AnyRecord)


@lru_cache(maxsize=1)
def unknown_decoder() -> msgspec.json.Decoder[ev.UnknownRecord]:
    """Decodes any record line as its type and seq only; built on first use and kept."""
    return msgspec.json.Decoder(ev.UnknownRecord)


def tag_of(record: ev.Record | ev.UnknownRecord) -> str:
    """The `type` a record has on its line."""
    if isinstance(record, ev.UnknownRecord):
        return record.type
    return str(type(record).__struct_config__.tag)


def touched_names(event: ev.Event) -> set[str]:
    """The entries an event changes."""
    entry = BY_TYPE.get(type(event))
    names: set[str] = set()
    if entry is not None:
        for field in entry.touches:
            value = getattr(event, field)
            if isinstance(value, str):
                names.add(value)
            else:
                names.update(value)
    return names


def cites(event: ev.Event, name: str) -> bool:
    """True when `event` names entry `name` without changing it (a list of names, or request data
    that holds `name` as a JSON string)."""
    entry = BY_TYPE.get(type(event))
    for field in entry.cites if entry is not None else ():
        value = getattr(event, field)
        if isinstance(value, list) and all(isinstance(item, str) for item in value):
            if name in value:
                return True
        elif (needle := json_string(name)) is not None and needle in msgspec.json.encode(value):
            return True
    return False


def mentions(event: ev.Event, name: str) -> bool:
    """True when `event` concerns entry `name` (changes it, was skipped while aiming at it, or cites it).

    Asked of every event of every transaction `history` reads: the fields are compared in place."""
    entry = BY_TYPE.get(type(event))
    if entry is None:
        return False
    for field in entry.touches:
        value = getattr(event, field)
        if value == name if isinstance(value, str) else name in value:
            return True
    return bool(entry.cites) and cites(event, name)


def json_string(name: str) -> bytes | None:
    """`name` as a JSON string in the log, or None when no record can hold it: a lone surrogate
    (what a command-line argument that is not UTF-8 becomes) has no UTF-8 form, and the log is UTF-8."""
    try:
        return msgspec.json.encode(name)
    except UnicodeEncodeError:
        return None
