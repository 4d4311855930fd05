"""The git side of merging: the merge driver git runs, `playbook merge OTHER_LOG`, and the git hooks.

The driver is registered by `playbook share` as `merge-driver %O %A %B %P`: it writes the
merged log over %A and exits 0, or leaves %A as it was and exits 1 with one line on stderr,
so git reports a conflict instead of writing a log that does not read. The merged log is written in
git's own directory and moved over %A, so a driver killed meanwhile leaves nothing in the work tree;
what an earlier version left there is removed by the next merge. git runs it for the anchors file too
(`.gitattributes` names both): that merge is the union of both sides' anchors, and never a conflict; the
merged log's `BranchesMerged` record carries each side's anchors past the history both shared
(`projections.anchors`).
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from eventlog.errors import PlaybookError
from eventlog.checks import hash_at
from eventlog.domain import PlaybookState
from eventlog.safefiles import remove_file, write_file
from eventlog.store import fold_log
from projections.anchors import ANCHORS_NAME, anchors_path, merge_files
from projections.checkpoints import clear
from projections.merge import MERGE_TEMP_SUFFIX, MergeOutcome, SharedHistoryRewritten, merge_logs, write_merged
from projections.purge_carry import carried_or_refused
from projections.quickroads import CHECKPOINT_DIR, LOG_NAME
from projections.repository import PlaybookRepository
from projections.snapshot import read_snapshot, render, state_of

from playbook.wiring.project import claude_dir
from playbook.rendering.safe_text import clean
from .share import ensure_registered


def scratch_dir(ours: Path) -> Path:
    """Where the driver writes the merged log before moving it over %A: git's own directory when %A sits beside it
    (the top of the work tree: git shows nothing in it, and it is on the same file system), else beside %A."""
    git_dir = ours.parent / ".git"
    return git_dir if git_dir.is_dir() and not git_dir.is_symlink() else ours.parent


def sweep_merge_temps(directory: Path) -> None:
    """Remove what a driver killed while writing left in `directory`: `..merge_file_*.<pid>.merge.tmp` of a process
    that is gone (a regular file, never a link). Left in the work tree, git lists it as untracked for ever."""
    try:
        found = list(directory.glob(f"..merge_file_*{MERGE_TEMP_SUFFIX}"))
    except OSError:
        return
    for path in found:
        pid = path.name[: -len(MERGE_TEMP_SUFFIX)].rpartition(".")[2]
        if not pid.isdigit() or _alive(int(pid)):
            continue
        try:
            if stat.S_ISREG(path.lstat().st_mode):
                remove_file(path, directory)
        except OSError:
            pass  # another driver took it first, or the directory is read-only: the next merge tries again


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # another user's process, or no pid at all: not ours to judge
    return True


def merge_driver(ancestor: str, ours: str, theirs: str, path: str = "") -> int:
    """Run as git's merge driver. Exit status 0: %A holds the merged log; 1: a conflict, %A untouched."""
    shown = path or ours
    if Path(path).name == ANCHORS_NAME:
        return _merge_anchors(Path(ancestor), Path(ours), Path(theirs), shown)
    try:
        scratch = scratch_dir(Path(ours))
        for directory in {scratch, Path(ours).parent}:
            sweep_merge_temps(directory)
        labels = (f"ours ({shown})", f"theirs ({shown})", f"the merge base of {shown}")
        note = f"git merge of {path or 'the log'}"
        carried_files: list[Path] = []
        try:
            try:
                outcome = merge_logs(Path(ours), Path(theirs), Path(ancestor), note=note, labels=labels)
            except SharedHistoryRewritten as exc:
                # Ours purged history theirs still holds: the purge carried into theirs, or the same refusal.
                carried_files = _carried(Path(ours), Path(ancestor), Path(theirs), scratch, exc)
                theirs = str(carried_files[1])
                outcome = merge_logs(Path(ours), carried_files[1], carried_files[0], note=note, labels=labels)
            if not outcome.unchanged:
                superseded = _projection_of(Path(ours), path)
                write_merged(outcome, Path(ours), Path(theirs), Path(ours), scratch=scratch)
                if superseded is not None:
                    _project_merged(superseded, Path(ours))
        finally:
            for carried_file in carried_files:
                remove_file(carried_file, scratch)
    except PlaybookError as exc:
        print(f"playbook: cannot merge {clean(shown)}: {clean(str(exc))}", file=sys.stderr)
        return 1
    except Exception as exc:  # git shows this line and reports a conflict; never a traceback
        print(f"playbook: cannot merge {clean(shown)}: {type(exc).__name__}: {clean(str(exc))}", file=sys.stderr)
        return 1
    if outcome.conflicts or outcome.reverted:
        print(f"playbook: {clean(shown)}: {summary(outcome)}", file=sys.stderr)
    return 0


def _carried(ours: Path, ancestor: Path, theirs: Path, scratch: Path, refused: SharedHistoryRewritten) -> list[Path]:
    """The merge base and theirs with ours' purge carried into them (`projections.purge_carry`), written in
    `scratch` under names the next driver's sweep knows; raises `refused` when that does not apply."""
    written = []
    for label, data in zip(("base", "theirs"), carried_or_refused(ours, ancestor, theirs, refused)):
        target = scratch / f".{ours.name}.purged-{label}.{os.getpid()}{MERGE_TEMP_SUFFIX}"
        write_file(target, data, scratch)
        written.append(target)
    return written


def _merge_anchors(ancestor: Path, ours: Path, theirs: Path, shown: str) -> int:
    """The anchors files' merge written over %A: never a conflict, so git never leaves markers in the file."""
    try:
        merged = merge_files(*(path.read_bytes() if path.exists() else b"" for path in (ancestor, ours, theirs)))
        write_file(ours, merged, ours.parent)
    except OSError as exc:
        print(f"playbook: cannot merge {clean(shown)}: {clean(exc.strerror or str(exc))}", file=sys.stderr)
        return 1
    return 0


def _projection_of(ours: Path, path: str) -> PlaybookRepository | None:
    """The repository whose playbook.json projects `ours` as it stands (untouched, its position held there):
    once the merged log replaces ours, it holds nothing the log lacks. None for anything else (a hand edit, a
    file ahead of ours), which readers then take in or keep as they do for any other playbook.json.

    git runs the driver at the top of the working tree, and `path` is the log's path there."""
    if not path.endswith(LOG_NAME):
        return None
    try:
        repo = PlaybookRepository(claude_dir(Path.cwd() / Path(path).parent.parent))
        found = read_snapshot(repo.snapshot_path)
    except (PlaybookError, OSError):
        return None
    if found is None or found.snapshot is None or found.snapshot.log is None:
        return None
    return repo if hash_at(ours, state_of(found.snapshot)[1]) else None


def _project_merged(repo: PlaybookRepository, merged: Path) -> None:
    """playbook.json projected from the merged log git is about to put in the working tree, as the post-merge
    hook would rebuild it (`after_git`), whether or not git runs the hook; the other derived files go, and
    the first reader rebuilds them. A failure leaves them as they were: the merge stands either way."""
    try:
        state, position, _torn = fold_log(merged, PlaybookState())
        write_file(repo.snapshot_path, render(state, position), repo.root)
        remove_file(repo.injection_path, repo.root)
        clear(repo.claude_dir / CHECKPOINT_DIR, repo.root)
    except (PlaybookError, OSError):
        pass


def merge_file(repo: PlaybookRepository, other: Path) -> MergeOutcome:
    """Merge a copy of a log that did not come through git (another machine's) into the project's log."""
    if not other.is_file():
        raise PlaybookError(f"cannot read {other}: no such file")

    def build(log: Path) -> MergeOutcome:
        try:
            outcome = merge_logs(log, other, None, note=f"merge of {other.name}",
                                 labels=(str(log), str(other), "the ancestor"), anchors=anchors_path(repo.claude_dir))
        except SharedHistoryRewritten as exc:  # its sides are ours and theirs: say which file theirs is
            raise exc.about(str(other)) from exc
        if not outcome.unchanged:
            write_merged(outcome, log, other, log, repo.root)
        return outcome

    return repo.replace_log(build)


def summary(outcome: MergeOutcome) -> str:
    if outcome.unchanged:
        return "nothing to merge: ours already holds every transaction"
    parts = [f"{outcome.brought} transaction(s) brought in"]
    if outcome.base == "theirs":
        parts.append("ours had nothing theirs lacked (fast-forward)")
    if outcome.renamed:
        shown = ", ".join(f"{asked} -> {given}" for asked, given in outcome.renamed[:3])
        more = f" and {len(outcome.renamed) - 3} more" if len(outcome.renamed) > 3 else ""
        parts.append(f"renamed {shown}{more} (the name was taken on the other side)")
    if outcome.conflicts:
        parts.append(f"{len(outcome.conflicts)} conflict(s) resolved (playbook log --type conflict)")
    if outcome.reverted:
        parts.append(f"undid {', '.join(outcome.reverted)}, which the other side dropped")
    if outcome.left_out:
        parts.append(f"left out {len(outcome.left_out)} transaction(s) ours does not have")
    return "; ".join(parts)


def after_git(project: Path) -> str | None:
    """After git changed the working tree: bring playbook.json up to date with the log git left there.

    A playbook.json whose log position is no longer in the log projects a log git replaced
    (another branch, a merge, a rebase): it is derived, so it is removed and rebuilt, never
    taken for a hand edit or a legacy file. Returns a line to show, or None."""
    ensure_registered(project)
    repo = PlaybookRepository(claude_dir(project))
    found = read_snapshot(repo.snapshot_path)
    has_log = repo.store.exists()
    if found is not None and found.snapshot is not None and found.snapshot.log is not None:
        _state, position = state_of(found.snapshot)
        if position.offset > repo.store.size() or not hash_at(repo.log_path, position):
            remove_file(repo.snapshot_path, repo.root)
            remove_file(repo.injection_path, repo.root)
            clear(repo.claude_dir / CHECKPOINT_DIR, repo.root)
            found = None
    if not has_log:
        return None
    if found is None or not repo.is_fresh():
        repo.refresh()
    return None
