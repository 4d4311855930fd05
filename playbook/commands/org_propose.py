"""`playbook org propose ID`: a key point of this playbook offered to an org, for it to review as code.

The proposal is a commit on the org's newest head that appends one transaction to the org's log: an ADD of the
key point's text (scrubbed) to its section, chained and sealed as every writer's. It is pushed to a branch of the
org repository (`playbook/propose/<id>-<hash>`); where the user may not push, `git format-patch` of it is written
to the current directory instead. Merging the branch is the org's choice: the merge driver takes it in.
"""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path

from eventlog.decide import ApplyOperations
from eventlog.errors import PlaybookError
from eventlog.events import Cause
from eventlog.safefiles import remove_tree, write_file
from projections.orgs import org_dir
from projections.quickroads import LOG_NAME, user_dir
from projections.repository import PlaybookRepository
from projections.scrub import scrub

from . import org_git
from .org_git import FETCHED, GitFailed, git
from .org_layer import GIT_DIR, find, settings
from playbook.wiring.project import playbook_of

WORK = "proposal"
IDENTITY = {"GIT_AUTHOR_NAME": "playbook", "GIT_AUTHOR_EMAIL": "playbook@localhost",
            "GIT_COMMITTER_NAME": "playbook", "GIT_COMMITTER_EMAIL": "playbook@localhost"}


def propose(args: argparse.Namespace, name: str, org_name: str | None) -> str:
    """Propose the key point `name` of the playbook `args` name; the line that says where the proposal is."""
    state = playbook_of(args).current()[0]
    kp = state.get(name)
    if kp is None:
        raise PlaybookError(f"no key point {name} in the playbook (playbook show lists them)")
    section = state.where[name]
    found = settings()
    if org_name is None:
        if len(found.orgs) != 1:
            raise PlaybookError("name the org with --org NAME" if found.orgs else
                                "no org configured (`playbook org add URL`)")
        org_name = found.orgs[0].name
    entry = find(found, org_name)
    git_dir = org_dir(entry.name) / GIT_DIR
    try:
        org_git.fetch(git_dir, entry.url, quiet=False)
    except GitFailed:
        pass  # offline: the proposal is made on the copy fetched last
    try:
        head = git(git_dir, "rev-parse", "--verify", "--quiet", f"{FETCHED}^{{commit}}").decode().strip()
    except GitFailed as exc:
        raise PlaybookError(f"org {entry.name} was never fetched (`playbook org fetch {entry.name}`)") from exc
    path, log = _org_log(git_dir, head)
    text = scrub(kp.text)
    appended = _appended(entry.name, log, section, text, name)
    blob = git(git_dir, "hash-object", "-w", "--stdin", data=appended).decode().strip()
    commit = _commit(git_dir, head, path, blob, f"Propose to the playbook: {text[:60]}\n\n"
                     f"Adds one key point to {section}: {text}\n")
    branch = f"playbook/propose/{name}-{hashlib.sha256(text.encode()).hexdigest()[:8]}"
    try:
        git(git_dir, "push", "--quiet", "--", entry.url, f"{commit}:refs/heads/{branch}")
    except GitFailed as exc:
        patch = git(git_dir, "format-patch", "-1", "--stdout", commit)
        target = Path.cwd() / f"playbook-{entry.name}-{name}.patch"
        write_file(target, patch, Path.cwd())
        return (f"cannot push to {entry.name} ({exc}): the proposal is the patch {target} "
                "(`git am` applies it in the org repository)")
    return f"proposed to {entry.name} on branch {branch}: review and merge it there"


def _org_log(git_dir: Path, head: str) -> tuple[str, bytes]:
    for path in org_git.LOG_PATHS:
        blob = org_git.entry(git_dir, head, path)
        if blob is not None:
            return path, org_git.read_blob(git_dir, blob, org_git.MAX_LOG_BYTES)
    raise PlaybookError("the org repository holds no playbook log")


def _appended(org: str, log: bytes, section: str, text: str, name: str) -> bytes:
    """The org's log with one transaction appended: the ADD of `text` to `section`."""
    root = Path(user_dir())
    work = org_dir(org) / WORK
    remove_tree(work, root)
    write_file(work / ".claude" / LOG_NAME, log, root)
    try:
        repo = PlaybookRepository(work / ".claude", root=work)
        committed = repo.append([ApplyOperations([{"type": "ADD", "section": section, "text": text}],
                                                 origin="user")],
                                Cause(source="manual:propose", note=f"proposed from a project's {name}"))
        if committed is None or not any(type(e).__name__ == "KeyPointAdded" for e in committed.events):
            raise PlaybookError(f"the org's playbook holds {name}'s text already (or refuses it): nothing to propose")
        with open(repo.log_path, "rb") as handle:
            return handle.read()
    finally:
        remove_tree(work, root)


def _commit(git_dir: Path, head: str, path: str, blob: str, message: str) -> str:
    """A commit on `head` whose tree has `blob` at `path`, made in a private index."""
    index = {"GIT_INDEX_FILE": str(git_dir / "playbook-proposal.index")}
    git(git_dir, "read-tree", head, env=index)
    git(git_dir, "update-index", "--add", "--cacheinfo", f"100644,{blob},{path}", env=index)
    tree = git(git_dir, "write-tree", env=index).decode().strip()
    try:
        return git(git_dir, "commit-tree", tree, "-p", head, "-m", message).decode().strip()
    except GitFailed:  # no identity configured: the commit names the tool
        return git(git_dir, "commit-tree", tree, "-p", head, "-m", message, env=IDENTITY).decode().strip()
