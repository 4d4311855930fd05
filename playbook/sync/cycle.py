"""One sync of the user-level playbook with its git remote: fetch, check, merge into ours, commit, push.

The remote's log is read from the fetched commit as a blob, checked whole
(`projections.foreign_log`: chain, an end that is not torn, no secret in what it brings) and
merged into this machine's log under its lock by the library's merge
(`projections.merge`): not a textual merge, but each side's transactions replayed after the
bytes both share, the same bytes whichever side merges. git's merge base of our last sync
and the remote tells a side that rewrote the history both share, and the merge refuses it;
the merged log must still hold or carry every anchor of ours (`projections.anchors`) before it
replaces ours. A refused remote log is kept aside, with one line saying why and where it is,
and ours is neither changed nor pushed.

Ours is then committed on `main` with the remote's commit as a parent and pushed; a push the
remote refuses because it moved meanwhile sends the sync back to fetch (`MAX_TRIES`). A remote
that cannot be reached is one line: learning goes on, and the next sync merges.
"""

from __future__ import annotations

import re
from pathlib import Path

import msgspec

from eventlog.errors import PlaybookError
from eventlog.faults import point as fault
from eventlog.safefiles import directory, remove_file, replace, write_all
from projections.anchor_proof import check
from projections.anchors import AnchorFileError, anchors_path
from projections.foreign_log import MAX_FOREIGN_BYTES, ForeignLogRefused, check_foreign, missing_from
from projections.merge import MergeOutcome, MergeRefused, SharedHistoryRewritten, merge_logs, write_merged
from projections.merge_reading import common_prefix
from projections.purge_carry import carried_or_refused
from projections.checkpoints import clear
from projections.quickroads import CHECKPOINT_DIR, LOG_NAME
from projections.repository import PlaybookRepository

from playbook.wiring.project import user_dir, user_repository
from .gitrepo import LOCAL_REF, REMOTE_REF, GitFailed, Offline, Rejected, SyncGit
from .place import BASE, CARRIED, MERGED, THEIRS, SyncPlace

MAX_TRIES = 5
OURS = "ours (this machine's)"
"""Pushes refused because the remote moved meanwhile, before a sync gives up until the next one."""


class NotSetUp(PlaybookError):
    """No remote was named for the user-level playbook."""


class SyncRefused(PlaybookError):
    """The remote's log is not used: why, and where the copy is kept."""


class SyncResult(msgspec.Struct):
    remote: str
    brought: int = 0
    pushed: bool = False
    offline: str = ""
    refused: str = ""
    kept: str = ""
    line: str = ""

    @property
    def ok(self) -> bool:
        return not self.offline and not self.refused


def shown(url: str) -> str:
    """A remote's URL as printed: no user part."""
    return re.sub(r"^([a-z][a-z0-9+.-]*://)[^/@]*@", r"\1", url)


def set_remote(url: str) -> str:
    """Name the git remote the user-level playbook syncs with; returns the line to show."""
    if not url or url.startswith("-") or any(ch in url for ch in "\n\r\0"):
        raise PlaybookError(f"{url!r} is not a git remote: name a path, an ssh or https URL")
    transport = url.split("::", 1)[0] if "::" in url else ""
    if transport.lower() in ("ext", "fd"):
        raise PlaybookError(f"{url!r}: the {transport} transport runs a command or reads a descriptor, not a "
                            "remote: name a path, an ssh or https URL")
    if re.match(r"^[a-z][a-z0-9+.-]*://[^/@]*:[^/@]*@", url):
        raise PlaybookError("the URL holds a password, which would be stored in plain text: give the URL without "
                            "it, and let git's credential helper or the ssh agent hold it")
    place = SyncPlace(user_dir())
    place.made()
    git = SyncGit(place.git_dir)
    git.init(url)
    git.forget()  # a remote named again starts over: what an earlier one held says nothing of it
    return (f"the user-level playbook syncs with {shown(url)}: `playbook sync` now, then after learning in the "
            "background")


def remote() -> str | None:
    place = SyncPlace(user_dir())
    if not place.git_dir.is_dir() or place.git_dir.is_symlink():
        return None
    return SyncGit(place.git_dir).url()


def sync(background: bool = False) -> SyncResult:
    """Run one sync (waiting for one already running unless `background`, which then raises `place.Busy`)."""
    place = SyncPlace(user_dir())
    url = remote()
    if url is None:
        raise NotSetUp("the user-level playbook syncs with no remote: `playbook sync --user --remote URL` names one "
                       "(a private git repository, a path, an ssh URL)")
    place.made()
    git = SyncGit(place.git_dir, quiet=background)
    with place.locked(wait=not background):
        place.started()
        result = _cycle(place, git, shown(url))
        place.said(result.line)
    return result


def _cycle(place: SyncPlace, git: SyncGit, url: str) -> SyncResult:
    user = user_repository()
    result = SyncResult(remote=url)
    for _try in range(MAX_TRIES):
        try:
            git.fetch()
        except Offline as exc:
            return _offline(result, exc)
        fault("sync-after-fetch")
        theirs, ours = git.rev(REMOTE_REF), git.rev(LOCAL_REF)
        if theirs is not None:
            try:
                result.brought += _take_in(place, git, user, theirs, ours)
            except SyncRefused as exc:
                result.refused, result.line = str(exc), f"sync with {url}: {exc}"
                return result
        data = _committed(user)
        if not data and theirs is None:
            result.line = f"sync with {url}: nothing to sync yet (the user-level playbook is empty)"
            return result
        head = _commit(git, data, ours, theirs)
        git.set_local(head)
        fault("sync-after-commit")
        if head == theirs:
            break
        try:
            git.push()
        except Rejected:
            continue
        except Offline as exc:
            return _offline(result, exc)
        fault("sync-after-push")
        result.pushed = True
        break
    else:
        result.offline = "the remote kept moving"
        result.line = (f"sync with {url}: the remote moved during each of {MAX_TRIES} tries; "
                       "what was merged stays here, and the next sync tries again")
        return result
    pushed = "pushed" if result.pushed else "nothing to push"
    result.line = f"synced with {url}: {result.brought} transaction(s) brought in, {pushed}"
    return result


def _offline(result: SyncResult, exc: GitFailed) -> SyncResult:
    result.offline = str(exc)
    result.line = (f"sync with {result.remote}: cannot reach it ({exc}); learning goes on here and the next sync "
                   "merges")
    return result


def _commit(git: SyncGit, data: bytes, ours: str | None, theirs: str | None) -> str:
    """The commit `main` moves to: ours' log over the remote's commit, merging our last sync's when it is not in it."""
    if ours is not None and theirs is not None:
        if git.is_ancestor(ours, theirs):
            parents = [theirs]
        elif git.is_ancestor(theirs, ours):
            parents = [ours]
        else:
            parents = [ours, theirs]
    else:
        parents = [p for p in (ours, theirs) if p is not None]
    tree = git.tree_with_log(data, theirs or ours)
    if len(parents) == 1 and git.tree_of(parents[0]) == tree:
        return parents[0]
    return git.commit(tree, parents, "playbook sync")


def _committed(user: PlaybookRepository) -> bytes:
    """The user-level log's committed transactions, read under its lock (never a transaction being written)."""
    if not user.store.exists():
        return b""
    with user.store.locked():
        _state, position = user.current()
        with open(user.log_path, "rb") as reading:
            return reading.read(position.offset)


def _fetched(place: SyncPlace, git: SyncGit, commit: str, name: str) -> Path | None:
    """The log of `commit` written to `name` in the sync's directory; None when the commit holds none. Raises
    `ForeignLogRefused` for one that is not a regular file or is too large to be a playbook's."""
    entry = git.log_entry(commit)
    if entry is None:
        return None
    mode, blob = entry
    if mode not in ("100644", "100755"):
        raise ForeignLogRefused(f"its {LOG_NAME} is not a regular file (git mode {mode})")
    size = git.blob_size(blob)
    if size > MAX_FOREIGN_BYTES:
        raise ForeignLogRefused(f"it is {size >> 20} MiB, over the {MAX_FOREIGN_BYTES >> 20} MiB a playbook's log "
                                "can reach")
    with place.writing(name) as fd:
        git.write_blob_to(blob, fd)
    return place.path(name)


def _take_in(place: SyncPlace, git: SyncGit, user: PlaybookRepository, theirs: str, ours: str | None) -> int:
    """Merge the remote's log at commit `theirs` into ours; returns how many transactions it brought. Raises
    `SyncRefused` (the copy kept aside) for a log that fails a check."""
    kept: Path | None = None
    try:
        fetched = _fetched(place, git, theirs, THEIRS)
        if fetched is None:
            return 0
        kept = fetched
        ids = check_foreign(fetched, common_prefix(user.log_path, fetched))
        base = _last_synced(place, git, ours, theirs, ids)
        try:
            outcome = _merge(place, user, fetched, base)
        except SharedHistoryRewritten as exc:
            if base is None:
                raise
            outcome = _merge_purged(place, user, fetched, base, exc)
    except MergeRefused as exc:
        _remove_ours(place)  # our own last sync, which a purge may have taken text out of
        if isinstance(exc, SharedHistoryRewritten):
            exc = exc.run_as("playbook purge --user")
        if str(exc).startswith(OURS):  # our own log does not read: nothing of the remote's is at fault
            raise PlaybookError(f"this machine's user-level log cannot be merged: {exc}; `playbook verify --user` "
                                "shows where") from exc
        raise _refused(place, theirs, kept is not None, exc) from exc
    except ForeignLogRefused as exc:
        _remove_ours(place)
        raise _refused(place, theirs, kept is not None, exc) from exc
    remove_file(place.path(THEIRS), place.root)
    _remove_ours(place)
    return outcome.brought


def _remove_ours(place: SyncPlace) -> None:
    """The last sync's log and the remote's with a purge of ours carried in: what this sync made of ours."""
    for name in (BASE, CARRIED):
        remove_file(place.path(name), place.root)


def _merge_purged(place: SyncPlace, user: PlaybookRepository, theirs: Path, base: Path,
                  refused: SharedHistoryRewritten) -> MergeOutcome:
    """Merge a remote that grew from the history a purge of ours has since rewritten: the purge carried into the
    last sync's log and the remote's (`projections.purge_carry`), so the remote's own transactions come in and
    ours, purged, goes out. Raises `refused` again when the remote is not that history plus its own."""
    for name, data in zip((BASE, CARRIED), carried_or_refused(user.log_path, base, theirs, refused)):
        with place.writing(name) as fd:
            write_all(fd, data)
    return _merge(place, user, place.path(CARRIED), base)


def _last_synced(place: SyncPlace, git: SyncGit, ours: str | None, theirs: str, ids: frozenset[str]) -> Path | None:
    """The log both this machine's last sync and the remote grew from (git's merge base), which the remote's log
    must hold whole: a remote that dropped a transaction of it would have the merge undo it here. Raises
    `ForeignLogRefused` for a remote whose history no longer holds our last sync, or dropped a transaction."""
    if ours is None:
        return None
    found = git.merge_base(ours, theirs)
    if found is None:
        raise ForeignLogRefused(f"its git history no longer holds this machine's last sync (commit {ours[:12]}): it "
                                "was replaced; `playbook sync --remote URL` starts over with it")
    base = _fetched(place, git, found, BASE)
    if base is not None and (dropped := missing_from(base, ids)):
        raise ForeignLogRefused(f"it dropped {len(dropped)} transaction(s) of the history this machine synced "
                                f"before (first {dropped[0]}): its history was rewritten")
    return base


def _refused(place: SyncPlace, theirs: str, fetched: bool, exc: PlaybookError) -> SyncRefused:
    """The refusal's one line, the fetched copy kept aside first."""
    where = ""
    if fetched:
        where = f"; its copy is kept in {place.keep_aside(theirs)} to look at"
    return SyncRefused(f"the remote's log (commit {theirs[:12]}) is refused: {exc}; ours is kept, not pushed, "
                       f"and learning goes on{where}")


def _merge(place: SyncPlace, user: PlaybookRepository, theirs: Path, base: Path | None) -> MergeOutcome:
    """Merge `theirs` into the user-level log under its lock; the merged log replaces ours only once it holds or
    carries every anchor of ours."""
    anchors = anchors_path(user.claude_dir)
    has_anchors = anchors.is_file()

    def build(log: Path) -> MergeOutcome:
        outcome = merge_logs(log, theirs, base, note="sync", anchors=anchors if has_anchors else None,
                             labels=(OURS, "theirs (the remote's)", "the last sync"))
        if outcome.unchanged:
            return outcome
        merged = place.path(MERGED)
        write_merged(outcome, log, theirs, merged, place.root)
        if has_anchors:
            try:
                report = check(merged, anchors)
            except AnchorFileError:
                report = None  # ours cannot say: `verify --anchor` tells the user about their own file
            if report is not None and report.problem is not None:
                raise ForeignLogRefused(f"merged, it would not hold this machine's anchor at line "
                                        f"{report.problem.anchor_line} ({report.problem.what})")
        fault("sync-before-replace")
        _drop_projections(user)
        with directory(place.dir, place.root) as from_fd, directory(log.parent, place.root) as to_fd:
            replace(from_fd, MERGED, log.name, to_fd)
        fault("sync-after-replace")
        return outcome

    return user.replace_log(build)


def _drop_projections(user: PlaybookRepository) -> None:
    """Remove playbook.json, the hook's projection and the checkpoints before the merged log replaces ours: they
    project ours (`replace_log` took in what waited outside the log first), and once the merged log is in place
    they would stand beside it, a playbook.json that seems to hold what the log does not. `replace_log` writes
    them again from the merged log; a sync killed before it leaves none, and the next reader projects the log."""
    remove_file(user.snapshot_path, user.root)
    remove_file(user.injection_path, user.root)
    clear(user.claude_dir / CHECKPOINT_DIR, user.root)


__all__ = ["MAX_TRIES", "NotSetUp", "SyncRefused", "SyncResult", "remote", "set_remote", "shown", "sync"]
