"""The git side of merging: the merge driver git runs, `playbook merge OTHER_LOG`, and the git hooks.

The driver is registered by `playbook share` as `merge-driver %O %A %B %P`: it writes the
merged log over %A and exits 0, or leaves %A as it was and exits 1 with one line on stderr,
so git reports a conflict instead of writing a log that does not read.
"""

from __future__ import annotations

import sys
from pathlib import Path

from eventlog.errors import PlaybookError
from eventlog.checks import hash_at
from eventlog.safefiles import remove_file
from projections.checkpoints import CHECKPOINT_DIR, clear
from projections.merge import MergeOutcome, merge_logs, write_merged
from projections.repository import PlaybookRepository
from projections.snapshot import read_snapshot, state_of

from playbook.wiring.project import claude_dir
from playbook.rendering.safe_text import clean
from .share import ensure_registered


def merge_driver(ancestor: str, ours: str, theirs: str, path: str = "") -> int:
    """Run as git's merge driver. Exit status 0: %A holds the merged log; 1: a conflict, %A untouched."""
    shown = path or ours
    try:
        outcome = merge_logs(Path(ours), Path(theirs), Path(ancestor), note=f"git merge of {path or 'the log'}",
                             labels=(f"ours ({shown})", f"theirs ({shown})", f"the merge base of {shown}"))
        if not outcome.unchanged:
            write_merged(outcome, Path(ours), Path(theirs), Path(ours))  # %A: git made it, in a directory git named
    except PlaybookError as exc:
        print(f"playbook: cannot merge {clean(shown)}: {clean(str(exc))}", file=sys.stderr)
        return 1
    except Exception as exc:  # git shows this line and reports a conflict; never a traceback
        print(f"playbook: cannot merge {clean(shown)}: {type(exc).__name__}: {clean(str(exc))}", file=sys.stderr)
        return 1
    if outcome.conflicts or outcome.reverted:
        print(f"playbook: {clean(shown)}: {summary(outcome)}", file=sys.stderr)
    return 0


def merge_file(repo: PlaybookRepository, other: Path) -> MergeOutcome:
    """Merge a copy of a log that did not come through git (another machine's) into the project's log."""
    if not other.is_file():
        raise PlaybookError(f"cannot read {other}: no such file")

    def build(log: Path) -> MergeOutcome:
        outcome = merge_logs(log, other, None, note=f"merge of {other.name}",
                             labels=(str(log), str(other), "the ancestor"))
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
