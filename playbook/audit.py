"""The application side of the audit commands: points in time, log filters, revert, import, stats.

Small functions over `projections.timeline`; rendering lives in `playbook.report`.
"""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from eventlog.decide import ImportLegacy, ReplaceContent, SkipReason, decide
from eventlog.domain import SECTION_SLUGS, PlaybookState
from eventlog.errors import PlaybookError
from eventlog.events import Cause, Event, KeyPointImported, LearningCompleted, LearningFailed, LearningRequested
from eventlog.events import LearningSkipped, OperationSkipped, PlaybookImported, TransactionCommitted
from eventlog.events import LearningGivenUp
from eventlog.evolve import apply_transaction
from eventlog.registry import FAMILIES, SHORT_NAMES, TAGS, mentions, tag_of
from eventlog.store import Committed, LogReader, Transaction
from eventlog.wholelines import WholeLines
from projections.repository import PlaybookRepository
from projections.snapshot import playbook_dict
from projections.revert import RevertPlan
from projections.timeline import Timeline, read_transaction

from .errors import UsageError
from .when import check_prefix, resolve


# --- event type names -------------------------------------------------------------------------------

def _squash(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())


_LOOKUP: dict[str, frozenset[str]] = {}
for _tag in TAGS:
    _LOOKUP[_squash(_tag)] = frozenset({_tag})
    _LOOKUP[_squash(SHORT_NAMES[_tag])] = frozenset({_tag})
_LOOKUP.update({_squash(name): tags for name, tags in FAMILIES.items()})


def event_types(values: list[str] | None) -> frozenset[str] | None:
    """The tags named by `--type` values (repeatable, comma-separated, case-insensitive), or None for all."""
    if not values:
        return None
    tags: set[str] = set()
    for value in values:
        for name in value.split(","):
            if not name.strip():
                continue
            found = _LOOKUP.get(_squash(name))
            if found is None:
                known = ", ".join(sorted({*SHORT_NAMES.values(), *FAMILIES}))
                raise UsageError(f"unknown event type {name.strip()!r} (known: {known}, or a tag like KeyPointDeleted)",
                                 value=name.strip())
            tags |= found
    return frozenset(tags)


# --- points in time -----------------------------------------------------------------------------------


class PointState(msgspec.Struct):
    """The playbook at one point of the log: `seq` is that of the last transaction it includes."""

    state: PlaybookState
    seq: int
    commit: Any = None  # the TransactionCommitted of that transaction, if any


def _commit_ending_at(timeline: Timeline, seq: int) -> Any:
    return timeline.commit_ending_at(seq)


def state_at(timeline: Timeline, when: str, before: bool = False) -> PointState:
    state = timeline.state_at(resolve(timeline, when, before))
    return PointState(state=state, seq=state.seq, commit=_commit_ending_at(timeline, state.seq))


def end_of_log(timeline: Timeline) -> PointState:
    refs = timeline.refs
    if not refs:
        return PointState(state=PlaybookState(), seq=0)
    return PointState(state=timeline.state_at(refs[-1].end), seq=refs[-1].end.seq, commit=refs[-1].commit)


# --- the log ------------------------------------------------------------------------------------------


class Selected(msgspec.Struct):
    """A transaction chosen by `log`, and its events that match the filters (all of them when none)."""

    transaction: Transaction
    events: list[Any]


def select(timeline: Timeline, *, n: int | None = 20, session: str | None = None, entry: str | None = None,
           types: frozenset[str] | None = None, since: str | None = None, until: str | None = None) -> list[Selected]:
    """Transactions newest first that match every filter given, at most `n` (None: all)."""
    if n is not None and n < 0:
        raise UsageError("-n must be 0 or more", value=str(n))
    # Positions compare by seq: a seq WHEN resolves to a seq alone (no byte offset).
    low = resolve(timeline, since, before=True).seq if since else None
    high = resolve(timeline, until).seq if until else None

    def matching(transaction: Transaction) -> list[Any]:
        events = transaction.events
        if types is not None:
            events = [e for e in events if tag_of(e) in types]
        if entry is not None:
            events = [e for e in events if isinstance(e, Event) and mentions(e, entry)]
        return events

    def keep(transaction: Transaction) -> bool:
        if session is not None and transaction.commit.session != session:
            return False
        if high is not None and transaction.end.seq > high:
            return False
        if low is not None and transaction.end.seq <= low:
            return False
        return (types is None and entry is None) or bool(matching(transaction))

    if low is None:
        found = timeline.newest(n, keep=keep)
    else:  # read back from the end only as far as `since`
        found = []
        for ref in reversed(timeline.refs):
            if ref.end.seq <= low or (n is not None and len(found) >= n):
                break
            transaction = read_transaction(timeline.path, ref)
            if keep(transaction):
                found.append(transaction)
    return [Selected(transaction=t, events=matching(t)) for t in found]


# --- revert -------------------------------------------------------------------------------------------


class Reverted(msgspec.Struct):
    """What `revert` planned and, unless a dry run, appended (None when it changed nothing)."""

    plan: RevertPlan
    committed: Committed | None
    dry_run: bool


def revert(repo: PlaybookRepository, target: str, force: bool = False, dry_run: bool = False) -> Reverted:
    """Undo one transaction or everything one session did, as a new transaction (itself revertible).

    Raises `RevertConflict` when later transactions touched the same entries, unless `force`.
    """
    timeline = Timeline(repo)
    if len(target.strip()) >= 6:
        check_prefix(timeline, target.strip(), digits_are_seq=False)
    plan = timeline.plan_revert(target.strip(), force)
    if dry_run or not plan.events:
        return Reverted(plan=plan, committed=None, dry_run=dry_run)
    # The plan's target is the log up to the last indexed transaction without the reverted
    # ones: its base is the state at that same point. ReplaceContent applies only what differs
    # between the two to the fresh state under the lock, so a transaction written meanwhile stays.
    base = plan.base
    cause = Cause(source="revert", note=f"revert of {', '.join(plan.transactions)}")
    committed = repo.append([ReplaceContent(target=playbook_dict(plan.target), origin="revert", base=base)], cause)
    return Reverted(plan=plan, committed=committed, dry_run=False)


# --- import -------------------------------------------------------------------------------------------


class Imported(msgspec.Struct):
    path: str
    committed: Committed | None
    header: PlaybookImported | None
    entries: list[KeyPointImported]
    rejected: list[OperationSkipped]
    present: list[OperationSkipped] = []
    """Entries not imported because the playbook already holds their text."""


def import_file(repo: PlaybookRepository, file: str) -> Imported:
    """Append a legacy playbook.json (any format the spec covers) to the log, as one `import` transaction."""
    path = Path(file)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise PlaybookError(f"cannot read {file}: {exc.strerror or exc}") from exc
    try:
        data = msgspec.json.decode(raw)
    except msgspec.DecodeError as exc:
        raise PlaybookError(f"{file} is not JSON ({exc}); nothing was imported") from exc
    # A name that is not UTF-8 arrives with lone surrogates (surrogateescape), which the log cannot
    # hold: its undecodable bytes are recorded as backslash escapes of the bytes (\xff).
    shown = str(path.resolve()).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")

    decided: list[Event] = []

    def decider(state: PlaybookState) -> list[Event]:
        # Decided under the lock: genesis only when the log is still empty.
        decided[:] = decide(state, ImportLegacy(data=data, path=shown, genesis=state.seq == 0))
        if not any(isinstance(e, KeyPointImported) for e in decided) and all(
                e.reason == SkipReason.DUPLICATE_TEXT for e in decided if isinstance(e, OperationSkipped)) and any(
                isinstance(e, OperationSkipped) for e in decided):
            return []  # every entry is already in the playbook: nothing to record
        return decided

    committed = repo.append(decider, Cause(source="import", note=f"playbook import {shown}"))
    events = committed.events if committed is not None else decided
    skipped = [e for e in events if isinstance(e, OperationSkipped)]
    return Imported(
        path=shown, committed=committed,
        header=next((e for e in events if isinstance(e, PlaybookImported)), None),
        entries=[e for e in events if isinstance(e, KeyPointImported)],
        rejected=[e for e in skipped if e.reason != SkipReason.DUPLICATE_TEXT],
        present=[e for e in skipped if e.reason == SkipReason.DUPLICATE_TEXT],
    )


# --- stats --------------------------------------------------------------------------------------------


class Stats(msgspec.Struct):
    seq: int
    last_updated: str | None
    sections: dict[str, int]
    entries: int
    transactions: int
    sources: dict[str, int]
    events: dict[str, int]
    most_helpful: list[dict]
    most_harmful: list[dict]
    learning: dict[str, int]
    per_day: dict[str, dict[str, int]]
    backend: str = ""
    """How learning reaches the model (see `playbook.backend.describe`)."""


class _Counted(msgspec.Struct):
    """What `stats` counts of a line: its type, and the source and time of a commit or a learning outcome."""

    type: str
    source: Any = None
    at: Any = None


_counted = msgspec.json.Decoder(_Counted)
_OUTCOMES = {LearningCompleted: "completed", LearningFailed: "failed", LearningSkipped: "skipped"}
_OUTCOME_TAGS = {str(kind.__struct_config__.tag): name for kind, name in _OUTCOMES.items()}
_REQUESTED = str(LearningRequested.__struct_config__.tag)
_GIVEN_UP = str(LearningGivenUp.__struct_config__.tag)
_COMMIT = str(TransactionCommitted.__struct_config__.tag)


_type_of = operator.attrgetter("type")


def _lines_up_to(path: Path, end: int) -> Iterator[list[_Counted]]:
    """The lines of the log before byte `end` (whole lines, as a fold left them), decoded for counting, per chunk."""
    try:
        handle = open(path, "rb", buffering=0)
    except (FileNotFoundError, NotADirectoryError):
        return
    with handle:
        done = 0
        for buffer, size in WholeLines(handle):
            size = min(size, end - done)
            if size <= 0:
                return
            with memoryview(buffer) as view:
                yield _counted.decode_lines(view[:size])
            done += size


def stats(repo: PlaybookRepository, top: int = 5) -> Stats:
    """Counts over the whole log and the playbook at its end.

    The playbook is the store's fast fold, which checks the chain; the counts come from a second read of
    the bytes that fold vouched for, each line decoded as its type alone (and a commit's source and time)."""
    state = PlaybookState()
    reader = LogReader(repo.log_path)
    reader.fold(state)
    transactions = 0
    sources: dict[str, int] = {}
    events: Counter[str] = Counter()
    learning = {"requested": 0, "completed": 0, "failed": 0, "skipped": 0, "given_up": 0}
    per_day: dict[str, dict[str, int]] = {}
    for records in _lines_up_to(repo.log_path, reader.position.offset):
        tags = Counter(map(_type_of, records))
        commits = tags.pop(_COMMIT, 0)
        events.update(tags)
        transactions += commits
        learning["requested"] += tags.get(_REQUESTED, 0)
        learning["given_up"] += tags.get(_GIVEN_UP, 0)
        if any(tag in tags for tag in _OUTCOME_TAGS):
            waiting: list[str] = []
            for record in records:
                if (kind := _OUTCOME_TAGS.get(record.type)) is not None:
                    waiting.append(kind)
                elif record.type == _COMMIT and waiting:
                    day = per_day.setdefault(str(record.at)[:10], {"completed": 0, "failed": 0, "skipped": 0})
                    for kind in waiting:
                        learning[kind] += 1
                        day[kind] += 1
                    waiting = []
        for record in records if commits else ():
            if record.type == _COMMIT:
                sources[record.source] = sources.get(record.source, 0) + 1
    learning["pending"] = len(state.pending)
    learning["waiting_for_retry"] = sum(1 for p in state.pending.values() if p.attempts)
    entries = [(section, kp) for section, kp in state.entries()]

    def row(section: str, kp) -> dict:
        return {"name": kp.name, "section": section, "text": kp.text, "helpful": kp.helpful, "harmful": kp.harmful}

    helpful = sorted((e for e in entries if e[1].helpful > 0), key=lambda e: (-e[1].helpful, e[1].harmful, e[1].name))
    harmful = sorted((e for e in entries if e[1].harmful > 0), key=lambda e: (-e[1].harmful, e[1].helpful, e[1].name))
    return Stats(
        seq=state.seq, last_updated=state.last_updated,
        sections={section: len(state.sections[section]) for section in SECTION_SLUGS},
        entries=len(entries), transactions=transactions,
        sources=dict(sorted(sources.items())),
        events={tag: events[tag] for tag in sorted(events, key=lambda t: (TAGS.index(t) if t in TAGS else len(TAGS), t))},
        most_helpful=[row(*e) for e in helpful[:top]], most_harmful=[row(*e) for e in harmful[:top]],
        learning=learning, per_day=dict(sorted(per_day.items())),
    )
