"""The spec's public functions, as a thin facade over decide/evolve and the log.

A playbook dict is read into a `PlaybookState`, commands are decided into events,
the events are folded, and the result is written back as a dict. Nothing here
re-implements a rule. Dicts returned by `load_playbook` remember the state they
were read from (as an attribute, never as a key), so `save_playbook` appends only
what the caller changed, decided against the log's current state: two processes
that load, change and save at the same time both land.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import msgspec

from eventlog.decide import AddNewKeyPoints, ApplyOperations, Command, Evaluate, ImportLegacy, Prune, ReplaceContent
from eventlog.decide import content_state, decide, decide_all
from eventlog.domain import SECTION_SLUGS, PlaybookState
from eventlog.errors import StorageError
from eventlog.events import Cause, Event, KeyPointAdded
from eventlog.evolve import fold
from eventlog.positions import Committed
from projections.render import format_state
from projections.repository import PlaybookRepository
from projections.snapshot import playbook_dict, read_snapshot

from playbook.wiring.diagnostics import report, report_taken_in, warn
from playbook.wiring.project import repository


class LoadedPlaybook(dict[str, Any]):
    """A playbook dict that remembers the log state it came from and the commands applied since.

    `save_playbook` appends those commands themselves (so the log keeps each rating,
    addition and prune with its meaning), then whatever else was edited in the dict.
    """

    __slots__ = ("origin", "pending")

    def __init__(self, *args: Any, origin: PlaybookState | None = None, pending: list[Command] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.origin = origin
        self.pending: list[Command] = list(pending or [])


def _remember(playbook: Any, result: Any, commands: list[Command]) -> None:
    """Note on `result` the commands that turned `playbook` into it, if `playbook` came from the log."""
    if isinstance(result, LoadedPlaybook) and isinstance(playbook, LoadedPlaybook) and playbook.origin is not None:
        result.pending = [*playbook.pending, *(_detached(command) for command in commands)]


def _detached(command: Command) -> Command:
    """`command` holding its own copy of what the caller passed in (operations, ratings, new key points).

    The pending commands are replayed by `save_playbook`; a caller that reuses or edits its
    extraction result afterwards must not change what is replayed.
    """
    try:
        return copy.deepcopy(command)
    except (TypeError, ValueError, AttributeError, RecursionError, copy.Error):  # cannot be copied: replayed as it is
        return command


def _origin(playbook: Any) -> PlaybookState | None:
    return getattr(playbook, "origin", None)


def to_playbook_dict(state: PlaybookState, origin: PlaybookState | None = None) -> LoadedPlaybook:
    """The spec's dict shape for `state`: version, last_updated and all five sections."""
    return LoadedPlaybook(playbook_dict(state), origin=origin)


def _state_of(playbook: Any) -> PlaybookState:
    """The state a dict describes; IDs continue past those the log it came from ever issued."""
    state = content_state(playbook)[0]
    origin = _origin(playbook)
    if origin is not None:
        for slug, number in origin.high_water.items():
            state.high_water[slug] = max(state.high_water.get(slug, 0), number)
    return state


def _write_back(playbook: dict[str, Any], state: PlaybookState) -> None:
    """Make `playbook` hold `state`, in place, keeping the entry dicts and lists it already had.

    Each list and entry dict is kept for one section and one entry only: when the caller's
    sections share a list (or entries share a dict), the later ones get fresh objects, so
    writing one section never overwrites another.
    """
    old_sections = playbook.get("sections")
    existing: dict[str, dict[str, Any]] = {}
    if isinstance(old_sections, dict):
        for entries in old_sections.values():
            for entry in entries if isinstance(entries, list) else []:
                if isinstance(entry, dict) and isinstance(entry.get("name"), str):
                    existing.setdefault(entry["name"], entry)
    reused: set[int] = set()  # ids of the caller's lists and entry dicts already given a new content
    new_sections: dict[str, list[dict[str, Any]]] = {}
    for section in SECTION_SLUGS:
        entries = []
        for kp in state.sections[section].values():
            entry = existing.get(kp.name)
            if entry is None or id(entry) in reused:
                entry = {}
            reused.add(id(entry))
            for stray in set(entry) - {"name", "text", "helpful", "harmful"}:
                del entry[stray]
            entry.update(name=kp.name, text=kp.text, helpful=kp.helpful, harmful=kp.harmful)
            entries.append(entry)
        old = old_sections.get(section) if isinstance(old_sections, dict) else None
        if isinstance(old, list) and id(old) not in reused:
            reused.add(id(old))
            old[:] = entries
            entries = old
        new_sections[section] = entries
    if isinstance(old_sections, dict):
        old_sections.clear()
        old_sections.update(new_sections)
    else:
        playbook["sections"] = new_sections
    playbook.pop("key_points", None)


def _new_dict(playbook: dict[str, Any], state: PlaybookState) -> LoadedPlaybook:
    """A new dict holding `state`, with the other top-level keys of `playbook` copied."""
    result = LoadedPlaybook(copy.deepcopy({k: v for k, v in playbook.items() if k not in ("sections", "key_points")}),
                            origin=_origin(playbook), pending=getattr(playbook, "pending", None))
    result["sections"] = to_playbook_dict(state)["sections"]
    return result


def _scrubbed(value: Any, what: str) -> Any:
    """`value` (an extraction result, operations) with its secrets redacted, as the learner redacts a model's
    reply; one line on stderr says which kinds, if any."""
    from projections.redactor import Redactor  # detect-secrets: loaded by the calls that take in texts

    redactor = Redactor()
    scrubbed = redactor.value(value)
    said = redactor.said()
    if said is not None:
        warn(f"{said} from {what}")
    return scrubbed


def _apply_curator_operations(state: PlaybookState, operations: list[Any]) -> list[Event]:
    """The events of curator `operations` on `state` (REQ-CUR-002..005, 009, 013)."""
    return decide(state, ApplyOperations(operations))


# --- the spec's functions ---------------------------------------------------------------------


def load_playbook() -> dict[str, Any]:
    """The project's playbook from its log; a legacy playbook.json without a log is imported first.

    Returns `{version, last_updated, sections}` with all five sections. When the files
    cannot be written, what can be read is returned and one line goes to stderr.
    """
    repo = repository()
    try:
        state, taken_in = repo.take_in()
    except StorageError as exc:
        warn(f"{exc}; the playbook is read without recording anything")
        state, taken_in = _read_only_state(repo), ()
    for committed in taken_in:
        report_taken_in(committed)
    if repo.diverged is not None:
        from playbook.wiring.diagnostics import divergence_line

        warn(divergence_line(repo.diverged))
    return to_playbook_dict(state, origin=state.copy())


def _read_only_state(repo: PlaybookRepository) -> PlaybookState:
    """What the files say, computed in memory, for a project whose files cannot be written."""
    if repo.store.exists():
        return repo.current()[0]
    found = read_snapshot(repo.snapshot_path)
    if found is None or found.error is not None:
        return PlaybookState()
    data = msgspec.to_builtins(found.snapshot) if found.snapshot is not None else found.data
    return fold(decide(PlaybookState(), ImportLegacy(data=data, path=str(repo.snapshot_path))))


def save_playbook(playbook: dict[str, Any]) -> None:
    """Record in the log what changed in `playbook` since it was loaded; playbook.json follows.

    A dict that did not come from `load_playbook` replaces the playbook's content.
    A save that changes nothing appends nothing and leaves `playbook` as it is.
    Durable when it returns; raises StorageError when the files cannot be written.
    """
    if "sections" not in playbook:
        raise AssertionError("Playbook must have 'sections' key. Got keys: " + str(list(playbook.keys())))
    playbook.pop("key_points", None)
    _scrub_in_place(playbook)
    base = _origin(playbook)
    pending: list[Command] = list(getattr(playbook, "pending", []) or []) if base is not None else []
    reported: list[Event] = []
    if pending and base is not None:
        # What the facade calls produced from the loaded state (and reported); anything beyond it was edited by hand.
        reported = decide_all(base, pending)
        base = fold(reported, base)
    committed = repository().append(
        [*pending, ReplaceContent(target=playbook, origin="save_playbook", base=base)],
        Cause(source="save_playbook"),
    )
    if committed is None:
        return
    if pending and isinstance(playbook, LoadedPlaybook):
        _follow_log(playbook, committed, reported)
        return
    _rename_entries(playbook, committed.events)
    playbook["last_updated"] = committed.state.last_updated
    if isinstance(playbook, LoadedPlaybook):
        saved = content_state(playbook)[0]
        saved.high_water = dict(committed.state.high_water)
        playbook.origin, playbook.pending = saved, []
    report(committed.events)


def _scrub_in_place(playbook: dict[str, Any]) -> None:
    """Redact the secrets of `playbook` where they are, so that the caller's dict says what the log will; one
    line on stderr says which kinds, if any. What a caller wrote into the dict by hand enters the log
    like a model's reply, and is scrubbed like one."""
    from projections.redactor import Redactor  # detect-secrets: loaded by a save, not by a read

    redactor = Redactor()
    redactor.in_place(playbook)
    said = redactor.said()
    if said is not None:
        warn(f"{said} from the playbook before storing it")


def _follow_log(playbook: LoadedPlaybook, committed: Committed, reported: list[Event]) -> None:
    """The dict made to follow the log: its commands were decided against the log as it is now."""
    _write_back(playbook, committed.state)
    playbook["version"] = committed.state.version
    playbook["last_updated"] = committed.state.last_updated
    playbook.origin, playbook.pending = committed.state.copy(), []
    report(committed.events, already=reported)


def _rename_entries(playbook: dict[str, Any], events: Sequence[Event]) -> None:
    """The entries whose name a concurrent writer took renamed in the caller's dict, as the log named them."""
    renamed = {e.proposed_name: e.name for e in events if isinstance(e, KeyPointAdded) and e.proposed_name}
    if not renamed:
        return
    done: set[int] = set()  # an entry dict met again (shared lists or entries) is renamed once
    for entries in playbook["sections"].values():
        for entry in entries if isinstance(entries, list) else []:
            if isinstance(entry, dict) and id(entry) not in done and entry.get("name") in renamed:
                done.add(id(entry))
                entry["name"] = renamed[entry["name"]]


def format_playbook(playbook: dict[str, Any]) -> str:
    """The playbook as prompt text (REQ-SECT-003); "" when it has no entries."""
    return format_state(content_state(playbook)[0])


def update_playbook_data(playbook: dict[str, Any], extraction_result: dict[str, Any]) -> dict[str, Any]:
    """Apply an extraction result: operations (or new_key_points), then evaluations, then pruning.

    Without an `operations` list the dict is changed in place and returned; with one,
    the caller's dict is never changed and a new dict is returned (the original one
    if the operations raise).
    """
    result = _scrubbed(extraction_result, "the extraction result") if isinstance(extraction_result, dict) else {}
    operations = result.get("operations")
    state = _state_of(playbook)
    if isinstance(operations, list):
        try:
            events = _apply_curator_operations(state, operations) if operations else []
        except Exception as exc:  # rollback: nothing of this call is applied
            warn(f"operations failed and were rolled back: {exc}")
            return playbook
        after = fold(events, state)
        events += decide_all(after, [Evaluate(result.get("evaluations", [])), Prune()])
        report(events)
        updated = _new_dict(playbook, fold(events, state))
        _remember(playbook, updated, [ApplyOperations(operations), Evaluate(result.get("evaluations", [])), Prune()])
        return updated
    commands: list[Command] = [AddNewKeyPoints(result.get("new_key_points", [])),
                               Evaluate(result.get("evaluations", [])), Prune()]
    events = decide_all(state, commands)
    report(events)
    _write_back(playbook, fold(events, state))
    _remember(playbook, playbook, commands)
    return playbook


def apply_structured_operations(playbook: dict[str, Any], operations: list[dict[str, Any]]) -> dict[str, Any]:
    """Apply curator operations to a copy of `playbook` and return it (REQ-CUR-014).

    `[]` (or anything that is not a list) returns `playbook` itself; if applying raises,
    the original is returned unchanged.
    """
    if not isinstance(operations, list) or not operations:
        return playbook
    operations = _scrubbed(operations, "the operations")
    state = _state_of(playbook)
    try:
        events = _apply_curator_operations(state, operations)
    except Exception as exc:
        warn(f"operations failed and were rolled back: {exc}")
        return playbook
    report(events)
    updated = _new_dict(playbook, fold(events, state))
    _remember(playbook, updated, [ApplyOperations(operations)])
    return updated


def prune_harmful(playbook: dict[str, Any]) -> dict[str, Any]:
    """Remove, in place, every entry with `harmful >= 3 and harmful > helpful`; return the dict."""
    state = _state_of(playbook)
    events = decide(state, Prune())
    if events:
        report(events)
        _write_back(playbook, fold(events, state))
        _remember(playbook, playbook, [Prune()])
    return playbook
