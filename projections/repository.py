"""The playbook of one project: its log, and playbook.json kept as the log's projection.

Every write goes through `append`: under the log's lock it first takes in what
appeared outside the log (a legacy playbook.json with no log, a snapshot edited
by hand, an unreadable snapshot set aside), then decides the caller's commands
against the fresh state, appends them as one transaction, and replaces the
snapshot. Nothing else writes playbook.json.

A snapshot that reflects a log position this log does not hold (the log was cut or
restored from an older copy, or replaced by another history) is the last copy of
what it holds beyond the log: readers leave it as it is, and a writer records
that it moves it aside, then moves it to `playbook.json.ahead-*`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple, TypeVar

from eventlog.decide import Command, decide_all
from eventlog.domain import PlaybookState
from eventlog.errors import PlaybookError, StorageError
from eventlog.events import Cause, Event
from eventlog.evolve import apply_transaction
from eventlog.faults import point as fault
from eventlog.jsonl import JsonlEventStore
from eventlog.safefiles import directory, remove
from eventlog.store import Committed, Position
from eventlog.storage import EventStore
from eventlog.unit_of_work import commit

from . import checkpoints
from .config import settings_stamp
from .injection import Ranking, injection_budget, injection_file, output_of, plan
from .injection import waiting_for_review
from .kept import Kept, still_current, texts_after
from .orgs import org_left_out, org_playbooks
from .outside import Divergence, Housekept, Outside, divergence
from .quickroads import CHECKPOINT_DIR, INJECTION_NAME, LOG_NAME, RECALL_NAME, SNAPSHOT_NAME, user_mark
from .recall import recall_file
from .snapshot import ReadSnapshot, replace_if_changed, may_lag, read_snapshot, state_of, write_snapshot


Decider = Callable[[PlaybookState], list[Event]]
T = TypeVar("T")


class TakenIn(NamedTuple):
    """The up-to-date state, and the transactions appended for what waited outside the log to get it."""

    state: PlaybookState
    taken_in: tuple[Committed, ...]


class PlaybookRepository:
    """The log at `<claude_dir>/playbook.events.jsonl` and its snapshot `<claude_dir>/playbook.json`.

    `user_dir`, when given, holds the user-level playbook that the injection projection puts ahead of
    this one (read only: it is written through a repository of its own). `user_level` marks the
    user-level playbook's own repository, whose projection injects it as the user's.

    Every file it writes is reached from `root` without following a link (`eventlog.safefiles`): by
    default the directory holding `claude_dir` (a project: its `.claude` is the repository's to shape),
    for the user-level playbook the directory the user named for it.
    """

    def __init__(self, claude_dir: Path, store: EventStore | None = None, user_dir: Path | None = None,
                 user_level: bool = False, root: Path | None = None) -> None:
        self.claude_dir = Path(claude_dir)
        self.root = Path(root) if root is not None else self.claude_dir.parent
        self.user_level = user_level
        self.user_dir = None if user_dir is None or _same_dir(Path(user_dir), self.claude_dir) else Path(user_dir)
        self.log_path = self.claude_dir / LOG_NAME
        """The JSONL log's file, which the timeline and `verify` read by its bytes."""
        self.store: EventStore = store if store is not None else JsonlEventStore(self.log_path, self.root)
        self.snapshot_path = self.claude_dir / SNAPSHOT_NAME
        self.injection_path = self.claude_dir / INJECTION_NAME
        self.recall_path = self.claude_dir / RECALL_NAME
        self._taken_in: list[Committed] = []
        self._reflected: tuple[int, int] | None = None
        """Where the log ended for the untouched playbook.json the last housekeeping read, and its size."""
        self._reflected_digest = ""
        self._kept: Kept | None = None
        """The state this object's last append left, trusted by the next one while nothing else wrote."""
        self.diverged: Divergence | None = None
        """Set when this object's last read left in place a playbook.json that holds what the log does not."""

    @property
    def taken_in(self) -> list[Committed]:
        """Every transaction this object appended for what it found outside the log, oldest first (a copy):
        for observers. A caller learns what its own call took in from `take_in`."""
        return list(self._taken_in)

    # --- reading (no lock, no writes) ---------------------------------------------------------

    def checkpoint(self) -> tuple[PlaybookState, Position]:
        """A trustworthy (state, position) to fold from: the snapshot when it is ours and matches the log."""
        return self._checkpoint_of(read_snapshot(self.snapshot_path))

    def _checkpoint_of(self, found: ReadSnapshot | None) -> tuple[PlaybookState, Position]:
        if found is not None and found.snapshot is not None:
            state, position = state_of(found.snapshot)
            if position.offset <= self.store.size() and self.store.holds(position):
                return state, position
        return PlaybookState(), Position()

    def divergence(self) -> Divergence | None:
        """How playbook.json and the log disagree, when the snapshot reflects a position the log does not hold."""
        return self._divergence(read_snapshot(self.snapshot_path))

    def _divergence(self, found: ReadSnapshot | None) -> Divergence | None:
        return divergence(self.store, found)

    def is_fresh(self) -> bool:
        """True when playbook.json is untouched and reflects the whole log: a stat of the log and a read of
        playbook.json, whatever the length of the log."""
        return self._fresh(read_snapshot(self.snapshot_path))

    def _fresh(self, found: ReadSnapshot | None) -> bool:
        return (
            found is not None and found.snapshot is not None and found.snapshot.log is not None
            and found.snapshot.log.offset == self.store.size()
        )

    def current(self) -> tuple[PlaybookState, Position]:
        """The state of the log's committed transactions, read-only (a stale snapshot is folded forward)."""
        return self._current_of(read_snapshot(self.snapshot_path))

    def _current_of(self, found: ReadSnapshot | None) -> tuple[PlaybookState, Position]:
        state, position = self._checkpoint_of(found)
        state, position, _torn = self.store.fold(state, position)
        return state, position

    def needs_housekeeping(self) -> bool:
        """True when something outside the log waits to be taken in, or the snapshot is further behind the log
        than a reader folds (see `snapshot.may_lag`)."""
        return self._needs_housekeeping(read_snapshot(self.snapshot_path))

    def _needs_housekeeping(self, found: ReadSnapshot | None) -> bool:
        if found is None:
            return self.store.exists()
        if found.snapshot is None or found.snapshot.log is None:
            return True
        if self._fresh(found):
            return False
        log = found.snapshot.log
        return not (may_lag(found.size, log.offset, self.store.size())
                    and self.store.holds(Position(offset=log.offset, seq=log.seq, hash=log.hash, line=log.line)))

    def user_playbook(self) -> tuple[PlaybookState | None, str]:
        """The user-level playbook injected ahead of this one, read-only, and its `user_mark` taken before it
        was read (so a change meanwhile leaves the projection stale); (None, "-") when there is none.

        A user-level log that cannot be read is left out (with its mark): it never stops this playbook."""
        if self.user_dir is None:
            return None, "-"
        mark = user_mark(self.user_dir)
        if mark == "-":
            return None, mark
        try:
            return PlaybookRepository(self.user_dir).current()[0], mark
        except (PlaybookError, OSError):
            return None, mark

    # --- writing --------------------------------------------------------------------------------

    def state(self) -> PlaybookState:
        """The up-to-date state, after taking in anything waiting outside the log (writes when needed).

        Reads playbook.json once when it is fresh, which is the common case."""
        return self.take_in().state

    def take_in(self) -> TakenIn:
        """`state`, with the transactions this call appended for what waited outside the log.

        A playbook.json that holds what the log does not is left as it is (`diverged` says so)."""
        found = read_snapshot(self.snapshot_path)
        self.diverged = self._divergence(found)
        if self.diverged is not None:
            return TakenIn(self.current()[0], ())
        if self._needs_housekeeping(found):
            with self.store.locked():
                done = self._housekeep(writing=False)
                if self.diverged is None:
                    self._write_snapshot(done.state, done.position)
                return TakenIn(done.state, done.taken_in)
        state, position = self._checkpoint_of(found)
        return TakenIn(self.store.fold(state, position)[0], ())

    def append(self, commands: Sequence[Command] | Decider, cause: Cause) -> Committed | None:
        """Decide `commands` against the fresh state and append them as one transaction.

        Returns None when they change nothing. Durable when it returns, with the SessionStart projection
        up to date; playbook.json too, unless it is large and the log after it still short (`may_lag`),
        and the recall index is left to the prompt that needs it (`_write_snapshot`).

        An append calls fsync once per durability need, three times at most (a torn tail cut first, or a
        checkpoint falling due, adds its own): the log, after its write and
        before anything claims its new end, since it alone holds what was decided; playbook.json's new
        content before its rename, when it is rewritten, since its name must never lead to bytes a crash
        lost (a snapshot it cannot read is set aside and recorded in the log); the SessionStart projection
        likewise, since the hook prints whatever the file holds. No directory is fsynced: a rename a crash
        undoes leaves the previous file, whole and marked with an older log position, which readers fold
        forward or take for stale. Only the log's creation fsyncs its directory.

        The object keeps the state and position its append left, and its next append starts from them
        instead of rebuilding the state from playbook.json, while the log's inode, size and mtime and
        playbook.json's digest are still those it left: another writer's append, a hand edit, a lost or
        replaced file sends it back to reading the files. The state a call returns is the writer's, to read: a
        later call leaves it as it is.
        """
        with self.store.locked():
            kept, self._kept = self._kept, None
            resumed = self._resume(kept)
            reflected: tuple[int, int] | None
            ranking, texts = None, None
            if resumed is not None:
                state, position, reflected, digest = resumed
                if kept is not None:
                    ranking, texts = kept.ranking, kept.texts
            else:
                state, position, _taken_in = self._housekeep()
                reflected, digest = self._reflected, self._reflected_digest
            given = texts
            decider: Decider = commands if callable(commands) else (lambda state: decide_all(state, commands, given))
            count = len(state.where)
            committed = commit(self.store, state, position, decider, cause, shared=resumed is not None)
            if committed is not None:
                if checkpoints.crosses(position.seq, committed.position.seq):
                    checkpoints.save(self.claude_dir / CHECKPOINT_DIR, committed.state, committed.position,
                                     root=self.root)
                state, position = committed.state, committed.position
                if ranking is not None:
                    ranking = ranking.after(state, committed.events)
                texts = texts_after(texts if resumed is not None else None, count, state, committed.events)
                fault("before-snapshot")
            lagging = reflected is not None and may_lag(reflected[1], reflected[0], position.offset)
            written, ranking = self._write_snapshot(state, position, recall=False, snapshot=not lagging,
                                                    ranking=ranking, rank=True)
            if written is not None:
                reflected, digest = (position.offset, self.snapshot_path.stat().st_size), written
            mark = self.store.mark()
            if mark is not None and reflected is not None and digest and mark[1] == position.offset:
                self._kept = Kept(state, position, mark, digest, reflected, ranking, texts)
            return committed

    def _resume(self, kept: Kept | None) -> tuple[PlaybookState, Position, tuple[int, int], str] | None:
        """Under the lock: what this object's last append left, when nothing else wrote the log or playbook.json
        since (`_housekeep`'s result, without rebuilding the state); None otherwise."""
        if kept is None or not still_current(kept, self.store, self.snapshot_path):
            return None
        self._remove_stale_temps()
        self.diverged = None
        return kept.state, kept.position, kept.reflected, kept.snapshot_digest

    def refresh(self, writing: bool = False) -> PlaybookState:
        """Bring playbook.json, the injection projection and the recall index up to date with the log.

        A reader's refresh leaves a playbook.json that holds what the log does not as it is (and sets
        `diverged`); with `writing`, it is recorded and moved aside first, as every writer does."""
        with self.store.locked():
            state, position, _taken_in = self._housekeep(writing)
            if self.diverged is None:
                self._write_snapshot(state, position)
            return state

    def replace_log(self, build: Callable[[Path], T]) -> T:
        """Under the lock, let `build(log_path)` replace the log file whole (write a new file, `os.replace`),
        then bring the projections up to date with what it wrote. Returns what `build` returns."""
        with self.store.locked():
            self._housekeep()
            result = build(self.log_path)
            state, position = self.current()
            self._write_snapshot(state, position)
            return result

    def rebuild(self) -> Position:
        """Rewrite playbook.json and the checkpoints from the whole log."""
        with self.store.locked():
            self._housekeep()  # a hand edit, an unreadable file or one ahead of the log is taken in or kept first
            return self.rebuild_locked()

    def rebuild_locked(self) -> Position:
        """`rebuild` for a caller that holds the lock and wants the derived files to follow the log as it is
        (a purge, which rewrote it): playbook.json, the hook's projection, the recall index, the checkpoints."""
        state, position = PlaybookState(), Position()
        kept = self.claude_dir / CHECKPOINT_DIR
        checkpoints.clear(kept, self.root)
        for transaction in self.store.read():
            apply_transaction(state, transaction.events, transaction.commit.seq, transaction.commit.at)
            if checkpoints.crosses(position.seq, transaction.end.seq):
                checkpoints.save(kept, state, transaction.end, root=self.root)
            position = transaction.end
        self._write_snapshot(state, position, force=True)
        return position

    def _write_snapshot(self, state: PlaybookState, position: Position, force: bool = False,
                        recall: bool = True, snapshot: bool = True, ranking: Ranking | None = None,
                        rank: bool = False) -> tuple[str | None, Ranking | None]:
        """Write playbook.json (unless `snapshot` is false) and the injection projection, each only when its
        bytes change; the recall index too unless `recall` is false. Returns playbook.json's digest when written,
        and with `rank` the injection plan's ranking of `state` (`ranking` when it is that, else a new one).

        An append leaves the recall index behind (its stamp then names an older log size): it costs a pass
        over every left-out key point, and only a prompt needs it, so the prompt hook that finds it stale
        brings it up to date (`refresh`) before it reads it."""
        digest = None
        try:
            if snapshot:
                digest = write_snapshot(self.snapshot_path, state, position, force, root=self.root)
            project = self.claude_dir.parent
            stamp = settings_stamp(project)  # before the settings are read: a change meanwhile leaves it stale
            mtime = self.snapshot_path.stat().st_mtime_ns
            user, mark = (state, "-") if self.user_level else self.user_playbook()
            orgs, org = org_playbooks()  # its mark taken before it is read, as the user's
            mark += org
            if rank and not self.user_level:
                which = (1 if user is not None and not user.disabled else 0) + sum(not o.disabled for _n, o in orgs)
                if ranking is None or ranking.which != which:
                    ranking = Ranking.of(state, which)
            else:
                ranking = None
            planned = plan(PlaybookState() if self.user_level else state, injection_budget(project), user, ranking,
                           orgs)
            replace_if_changed(self.injection_path,
                               injection_file(position.offset, mtime, output_of(planned, waiting_for_review(state)),
                                              stamp, mark), root=self.root)
            if recall:
                replace_if_changed(self.recall_path,
                                   recall_file(position.offset, mtime, stamp, state, planned.left_out, project,
                                               org_left_out(orgs, planned.org_left_out)),
                                   root=self.root)
        except OSError as exc:
            raise StorageError.failed("write", self.snapshot_path, exc) from exc
        return digest, ranking

    def _housekeep(self, writing: bool = True) -> Housekept:
        """Under the lock: take in what waits outside the log; the state at the log's end, and what it appended.

        A reader (`writing` false) only reads where playbook.json holds what the log does not."""
        done = self._take_in_outside(writing)
        self._taken_in.extend(done.taken_in)
        return done

    def _take_in_outside(self, writing: bool) -> Housekept:
        self._remove_stale_temps()
        self._reflected, self._reflected_digest, self._kept = None, "", None
        found = read_snapshot(self.snapshot_path)
        self.diverged = self._divergence(found)
        outside = Outside(self.store, self.snapshot_path, self.current, self.checkpoint, self.root)
        if self.diverged is not None:
            if not writing:
                return Housekept(*self.current(), ())
            done = outside.set_aside_diverged(self.diverged)
            self.diverged = None
            return done
        done_outside = outside.take_in(found)
        if done_outside is not None:
            return done_outside
        if found is not None and found.snapshot is not None and found.snapshot.log is not None:
            self._reflected = (found.snapshot.log.offset, found.size)  # not diverged: the log holds that position
            self._reflected_digest = found.snapshot.log.digest
        return Housekept(*self._current_of(found), ())

    def _remove_stale_temps(self) -> None:
        """Remove temporary snapshot and checkpoint files a process killed mid-replace left behind.

        Only writers holding the log's lock (as the caller does) create snapshot temporaries, so
        any that exist now belong to a writer that died."""
        prefixes = tuple(f".{name}." for name in (SNAPSHOT_NAME, INJECTION_NAME, RECALL_NAME))
        try:
            with directory(self.claude_dir, self.root) as dir_fd:
                for name in os.listdir(dir_fd):
                    if name.startswith(prefixes) and name.endswith(".tmp"):
                        remove(dir_fd, name)
        except FileNotFoundError:
            pass
        checkpoints.remove_leftovers(self.claude_dir / CHECKPOINT_DIR, self.root)


def _same_dir(a: Path, b: Path) -> bool:
    try:
        return os.path.realpath(a) == os.path.realpath(b)
    except (OSError, ValueError):
        return False

