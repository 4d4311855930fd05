"""The write side's one cycle, over any `EventStore`: fold the tail, repair, decide, append, apply.

`commit` is what every write of the playbook runs while holding the store's lock: from a
known point of the log (a checkpoint) it folds what was written since, cuts a torn tail
(recording that it did), decides the caller's commands against that fresh state, and
appends the result as one transaction at the position it read. It knows the store only
through the `EventStore` protocol, so it runs the same on the JSONL log and in memory.
"""

from __future__ import annotations

from .decision import Decision
from .domain import PlaybookState
from .errors import CorruptLogError
from .events import Cause, Event
from .evolve import apply
from .positions import Committed, Position
from .storage import Decider, EventStore

def commit(store: EventStore, state: PlaybookState, position: Position, decide: Decider,
           cause: Cause, shared: bool = False) -> Committed | None:
    """Append what `decide` returns for the state at the log's end, as one transaction; None when nothing.

    `state`/`position` are a known point of the log (a checkpoint); a position the log no
    longer holds is ignored and the whole log folded. The caller holds `store.locked()`.
    `state` is changed in place and returned in the result; with `shared` (someone else holds
    `state` too) it is left as it is and the result holds a state of its own, which shares the
    entries no event changed.
    """
    if position.offset and not store.holds(position):
        state, position, shared = PlaybookState(), Position(), False
    if shared and store.size() != position.offset:
        state, shared = state.copy(), False  # the fold below changes it in place
    state, position, torn = store.fold(state, position)
    events: list[Event] = []
    if torn is not None and torn.damage is not None:
        raise CorruptLogError(getattr(store, "path", "log"), torn.damage_line, torn.damage_offset,
                              f"{torn.damage}; nothing is appended after a line that cannot be read whole "
                              "(playbook verify says what to do)")
    if torn is not None:
        events.append(store.cut(torn))
    decided = decide(state)
    if not decided and not events:
        return None
    events.extend(decided)
    written = store.write(position, events, cause)
    if shared:
        apart = Decision(state)  # copies an entry only before an event would change it in place
        for event in written.events:
            apart.emit(event)
        state = apart.state
    else:
        for event in written.events:
            apply(state, event)
    state.seq = written.commit.seq
    return Committed(events=written.events, commit=written.commit, state=state, position=written.position)


def append_locked(store: EventStore, state: PlaybookState, position: Position, decide: Decider, cause: Cause
                  ) -> Committed | None:
    """`commit` on `store`, whose lock the caller holds: what every store's writer runs, the same on each."""
    return commit(store, state, position, decide, cause)
