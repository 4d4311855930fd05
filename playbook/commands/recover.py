"""`playbook recover`: take back into the log what a playbook.json kept aside holds beyond it.

A playbook.json ahead of the log (the log was cut, or restored from an older copy) is
moved to `playbook.json.ahead-*` by the first writer, which records where the log
stood then. Recovering it replays, onto the log as it is now, what the kept file
holds beyond that point: entries added, re-worded, re-rated or moved, as events with
origin `recovery` in a transaction whose source is `recover`. A name the log has
issued meanwhile to another entry gets the next free ID. Recovering never deletes:
an entry the log holds and the file does not stays. When the file came from another
history (or its point is unknown), only an entry of the same name and text counts as
the same entry; the file's others are added. The file itself stays where it is; a
file is recovered once.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any, Final

import msgspec

from eventlog.decide import ReplaceContent, content_state, decide_all
from eventlog.domain import PlaybookState
from eventlog.errors import PlaybookError
from eventlog.events import Cause, Event, SnapshotSetAside
from eventlog.evolve import apply_transaction
from eventlog.store import Committed, Position
from eventlog.values import Origin
from projections.outside import REDACTED, scrubbed_content
from projections.repository import PlaybookRepository
from projections.snapshot import claimed_position, read_snapshot

from playbook.wiring.diagnostics import warn

SOURCE = "recover"
ORIGIN: Final[Origin] = "recovery"


class RecoverError(PlaybookError):
    """Nothing to recover from, or a file that holds no playbook."""


class Recovered(msgspec.Struct):
    """What `recover` took back from `path` (`committed` is None when the log already held all of it)."""

    path: str
    committed: Committed | None
    base: str
    """Where the replay started: `set aside at seq N`, `claimed seq N`, or `unknown` (nothing deleted then)."""


def recover(repo: PlaybookRepository, file: str | None = None) -> Recovered:
    """Replay what the kept file `file` (default: playbook.json if it is ahead of the log, else the newest
    `playbook.json.ahead-*`) changed beyond the log, as one transaction."""
    the_snapshot = file is not None and os.path.abspath(file) == os.path.abspath(repo.snapshot_path)
    repo.refresh(writing=True)  # a playbook.json ahead of the log is recorded and kept aside first
    path = Path(file) if file is not None and not the_snapshot else _newest_kept(repo)
    found = read_snapshot(path)
    if found is None:
        raise RecoverError(f"{path}: no such file")
    if found.error is not None:
        raise RecoverError(found.error)
    data = msgspec.to_builtins(found.snapshot) if found.snapshot is not None else found.data
    if not isinstance(data, dict):
        raise RecoverError(f"{path} holds no playbook (a JSON object with sections)")
    note = f"recovered {path.name}"
    base, where = _base(repo, path, data, note)
    taken = scrubbed_content({key: value for key, value in data.items() if key != "log"}, note)
    target = taken.data

    def decider(state: PlaybookState) -> list[Event]:
        wanted = _not_held(state, target)
        start = _known_part(base, wanted, same_text=False) if base is not None else \
            _known_part(state, wanted, same_text=True)
        return decide_all(state, [ReplaceContent(target=wanted, origin=ORIGIN, base=start)])

    committed = repo.append(decider, Cause(source=SOURCE, note=taken.note))
    if committed is not None and taken.said is not None:
        warn(f"{taken.said} from {path.name} before storing it")
    return Recovered(path=str(path), committed=committed, base=where)


def waiting(repo: PlaybookRepository) -> list[Path]:
    """The kept `playbook.json.ahead-*` files (regular files, oldest first) that no recovery took back yet; none
    when the log cannot be read whole (its damage is what to say then)."""
    kept = []
    for path in sorted(repo.claude_dir.glob(f"{repo.snapshot_path.name}.ahead-*")):
        try:
            if stat.S_ISREG(path.lstat().st_mode):
                kept.append(path)
        except OSError:
            continue
    if not kept:
        return []
    try:
        taken = {transaction.commit.note for transaction in repo.store.read() if transaction.commit.source == SOURCE}
    except (PlaybookError, OSError):
        return []
    return [path for path in kept if f"recovered {path.name}" not in taken]


def waiting_line(repo: PlaybookRepository) -> str | None:
    """One line naming the newest kept file no recovery took back, and the command that takes it back; None when
    none waits. A recover or purge killed mid-way leaves playbook.json rebuilt from the log and this file the only
    copy of what it held."""
    found = waiting(repo)
    if not found:
        return None
    older = f" (and {len(found) - 1} older)" if len(found) > 1 else ""
    return (f"{found[-1]}{older} waits: a playbook.json set aside, holding what the log may not; "
            f"`playbook recover` takes it back into the log")


def _newest_kept(repo: PlaybookRepository) -> Path:
    kept = sorted(repo.claude_dir.glob(f"{repo.snapshot_path.name}.ahead-*"))
    if not kept:
        raise RecoverError(f"nothing to recover: playbook.json agrees with the log and {repo.claude_dir} holds no "
                           f"{repo.snapshot_path.name}.ahead-* file")
    return kept[-1]


def _base(repo: PlaybookRepository, path: Path, data: dict[str, Any], note: str) -> tuple[PlaybookState | None, str]:
    """The state the kept file's changes are counted from: the log where the file was set aside, or
    where the file says it stood when the log still holds that point; None when neither is known."""
    state, base, where = PlaybookState(), None, "unknown"
    for transaction in repo.store.read():
        if transaction.commit.source == SOURCE and (transaction.commit.note or "").partition(REDACTED)[0] == note:
            raise RecoverError(f"{path.name} was already recovered, in transaction {transaction.commit.tx}")
        if base is None and any(isinstance(e, SnapshotSetAside) and e.moved_to == path.name and e.kind == "ahead"
                                for e in transaction.events):
            base, where = state.copy(), f"set aside at seq {transaction.start.seq}"
        apply_transaction(state, transaction.events, transaction.commit.seq, transaction.commit.at)
    if base is not None:
        return base, where
    position = claimed_position(data)
    if position is not None and position.offset <= repo.store.size() and repo.store.holds(position):
        return repo.store.fold(PlaybookState(), Position(), position.offset)[0], f"claimed seq {position.seq}"
    return None, where


def _not_held(state: PlaybookState, target: dict[str, Any]) -> dict[str, Any]:
    """`target` without the entries the log already holds under another name (a merge renamed them, or the
    file came back another way): taken back, they would be there twice."""
    wanted, _ = content_state(target)
    held = {kp.text: kp.name for _section, kp in state.entries()}
    twice = {kp.name for _section, kp in wanted.entries() if held.get(kp.text, kp.name) != kp.name}
    sections = target.get("sections")
    if not twice or not isinstance(sections, dict):
        return target
    return {**target, "sections": {
        section: [e for e in entries if not (isinstance(e, dict) and e.get("name") in twice)]
        if isinstance(entries, list) else entries for section, entries in sections.items()}}


def _known_part(state: PlaybookState, target: dict[str, Any], same_text: bool) -> PlaybookState:
    """`state` without the entries the file does not hold (so none is deleted), and with `same_text`,
    without those it holds under the same name with another text (so they are added, not re-worded)."""
    wanted, _ = content_state(target)
    base = state.copy()
    for section, kp in list(base.entries()):
        theirs = wanted.get(kp.name)
        if theirs is None or (same_text and theirs.text != kp.text):
            del base.sections[section][kp.name]
            del base.where[kp.name]
    return base
