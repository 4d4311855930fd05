"""The application side of the audit commands: points in time, log filters, revert, import, stats.

Small functions over `projections.timeline`; rendering lives in `playbook.rendering.report`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from itertools import compress, repeat
from operator import attrgetter, is_
from pathlib import Path
from typing import Any

import msgspec

from eventlog.decide import ImportLegacy, ReplaceContent, SkipReason, decide
from eventlog.domain import SECTION_SLUGS, KeyPoint, PlaybookState
from eventlog.errors import PlaybookError
from eventlog.events import Cause, Event, KeyPointImported, LearningCompleted, LearningFailed, LearningRequested
from eventlog.events import LearningSkipped, OperationSkipped, PlaybookImported, TransactionCommitted
from eventlog.events import LearningGivenUp, ModelCallRecorded, UnknownRecord
from eventlog.registry import FAMILIES, SHORT_NAMES, TAGS, mentions, tag_of
from eventlog.store import Committed, LogReader, Transaction
from eventlog.wholecheck import parallel_fold
from projections.outside import scrubbed_content
from projections.repository import PlaybookRepository
from projections.snapshot import playbook_dict
from projections.revert import RevertPlan
from projections import revert as reverts
from projections.timeline import Timeline, read_transaction
from projections.usage import UsageReport, usage_report

from playbook.errors import UsageError
from playbook.wiring.diagnostics import warn
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
    plan = reverts.plan_revert(timeline, target.strip(), force)
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
    taken = scrubbed_content(data, f"playbook import {shown}")
    data = taken.data

    decided: list[Event] = []

    def decider(state: PlaybookState) -> list[Event]:
        # Decided under the lock: genesis only when the log is still empty.
        decided[:] = decide(state, ImportLegacy(data=data, path=shown, genesis=state.seq == 0))
        if not any(isinstance(e, KeyPointImported) for e in decided) and all(
                e.reason == SkipReason.DUPLICATE_TEXT for e in decided if isinstance(e, OperationSkipped)) and any(
                isinstance(e, OperationSkipped) for e in decided):
            return []  # every entry is already in the playbook: nothing to record
        return decided

    committed = repo.append(decider, Cause(source="import", note=taken.note))
    if committed is not None and taken.said is not None:
        warn(f"{taken.said} from {shown} before storing it")
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
    most_helpful: list[dict[str, Any]]
    most_harmful: list[dict[str, Any]]
    learning: dict[str, int]
    per_day: dict[str, dict[str, int]]
    backend: str = ""
    """How learning reaches the model (see `playbook.learner.backend.describe`)."""


_OUTCOMES = {str(kind.__struct_config__.tag): name
             for kind, name in ((LearningCompleted, "completed"), (LearningFailed, "failed"), (LearningSkipped, "skipped"))}
_COUNTED = {str(LearningRequested.__struct_config__.tag): "requested",
            str(LearningGivenUp.__struct_config__.tag): "given_up"}
_COMMIT = str(TransactionCommitted.__struct_config__.tag)
_PER_TRANSACTION = frozenset({*_OUTCOMES, str(ModelCallRecorded.__struct_config__.tag)})
"""A run holding one of these (or an unknown record) is counted transaction by transaction."""


_source_of = attrgetter("source")


def _tag_of_type(kind: type) -> str:
    return str(kind.__struct_config__.tag)  # type: ignore[attr-defined]  # a fold's view has its record's tag


class _Tally:
    """What `stats` counts, fed the records of each run of whole transactions as the fold applies them."""

    def __init__(self) -> None:
        self.kinds: Counter[type] = Counter()
        self.unknown: Counter[str] = Counter()
        self.sources: Counter[str] = Counter()
        self.learning = {"requested": 0, "completed": 0, "failed": 0, "skipped": 0, "given_up": 0}
        self.per_day: dict[str, dict[str, int]] = {}
        self.calls: list[tuple[list[Any], TransactionCommitted]] = []
        """The transactions that recorded model calls: their calls and their commit."""

    def add(self, records: list[Any]) -> None:
        kinds = Counter(map(type, records))
        self.kinds.update(kinds)
        if UnknownRecord not in kinds and not any(_tag_of_type(kind) in _PER_TRANSACTION for kind in kinds):
            # the usual run: only its commits' sources to count
            commits = compress(records, map(is_, map(type, records), repeat(TransactionCommitted)))
            self.sources.update(map(_source_of, commits))
            return
        events: list[Any] = []
        for record in records:
            if type(record) is TransactionCommitted:
                self._transaction(events, record)
                events = []
            else:
                events.append(record)

    def _transaction(self, events: list[Any], commit: TransactionCommitted) -> None:
        self.sources[commit.source] += 1
        self.unknown.update(event.type for event in events if type(event) is UnknownRecord)
        if calls := [event for event in events if type(event) is ModelCallRecorded]:
            self.calls.append((calls, commit))
        for event in events:
            if type(event) is not UnknownRecord and (kind := _OUTCOMES.get(_tag_of_type(type(event)))) is not None:
                day = self.per_day.setdefault(commit.at[:10], {"completed": 0, "failed": 0, "skipped": 0})
                self.learning[kind] += 1
                day[kind] += 1

    def events(self) -> dict[str, int]:
        """Events per type (commits apart), in the order the audit lists types, unknown ones last."""
        counts = Counter({_tag_of_type(kind): n for kind, n in self.kinds.items() if kind is not UnknownRecord})
        counts.update(self.unknown)
        counts.pop(_COMMIT, None)
        for tag, name in _COUNTED.items():
            self.learning[name] = counts.get(tag, 0)
        return {tag: counts[tag] for tag in sorted(counts, key=lambda t: (TAGS.index(t) if t in TAGS else len(TAGS), t))}


def _top(state: PlaybookState, top: int, key: Callable[[KeyPoint], tuple[int, int, str]]) -> list[dict[str, Any]]:
    """The `top` entries by `key` among those whose leading count (negated) is above 0, as rows."""
    ranked = sorted((key(kp), section, kp) for section, kp in state.entries() if key(kp)[0] < 0)
    return [{"name": kp.name, "section": section, "text": kp.text, "helpful": kp.helpful, "harmful": kp.harmful}
            for _key, section, kp in ranked[:top]]


_WHOLE = (ModelCallRecorded, TransactionCommitted)
"""What the counting sees as the records themselves (the rest as the fold's light views)."""


def _two_cores(repo: PlaybookRepository) -> tuple[PlaybookState, _Tally] | None:
    """The playbook at the log's end and the counts over the log, on a large log's two-core road
    (`eventlog.wholecheck`: the chain checked on another core, every seq here); None when it does not vouch
    for its result (or the log is small), and then the single-process road gives the verdict.

    With a playbook.json that every reader trusts, the log is counted and not applied: its state is that
    snapshot's with the short tail after it folded."""
    state, position = repo.checkpoint()
    tally = _Tally()
    if not position.offset:
        state = PlaybookState()
        return (state, tally) if parallel_fold(repo.log_path, state, tally.add, _WHOLE) is not None else None
    reader = parallel_fold(repo.log_path, PlaybookState(), tally.add, _WHOLE, apply=False)
    if reader is None:
        return None
    tail = LogReader(repo.log_path, position)
    try:
        tail.fold(state, until=reader.position.offset)
    except PlaybookError:
        return None
    return (state, tally) if tail.position == reader.position else None


def stats(repo: PlaybookRepository, top: int = 5, strict: bool = False) -> tuple[Stats, UsageReport]:
    """Counts over the whole log, the playbook at its end, and what learning's model calls used.

    One pass over the log: the store's fast fold, which checks the chain, shows the records it
    applies to the counting (light views; commits and model calls whole). On a large log the chain is
    checked on another core, and a trusted playbook.json spares the fold (`_two_cores`). `strict`: the
    strict reader's road (the verdicts are the same)."""
    found = None if strict else _two_cores(repo)
    if found is None:
        state, tally = PlaybookState(), _Tally()
        LogReader(repo.log_path, strict=strict).fold(state, observe=tally.add, whole=_WHOLE, seqs=True)
    else:
        state, tally = found
    events = tally.events()
    learning = {**tally.learning, "pending": len(state.pending),
                "waiting_for_retry": sum(1 for p in state.pending.values() if p.attempts)}
    result = Stats(
        seq=state.seq, last_updated=state.last_updated, entries=len(state.where),
        sections={section: len(state.sections[section]) for section in SECTION_SLUGS},
        transactions=sum(tally.sources.values()), sources=dict(sorted(tally.sources.items())),
        events=events, learning=learning, per_day=dict(sorted(tally.per_day.items())),
        most_helpful=_top(state, top, lambda kp: (-kp.helpful, kp.harmful, kp.name)),
        most_harmful=_top(state, top, lambda kp: (-kp.harmful, kp.helpful, kp.name)),
    )
    return result, usage_report(tally.calls)
