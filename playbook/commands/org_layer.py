"""The org layer's work: add an org repository, fetch it (verify, accept or keep aside), remove it, and write the
org projection every project's injection reads (`projections.orgs`).

A fetch never replaces the copy injected now unless what it brought passes every check
(`projections.org_check.verified`): a repository that cannot be reached, or brings a damaged, forged or hostile
log, leaves the last good copy injected, and the fetch says why in one line (kept in `orgs.json` for `doctor`).
"""

from __future__ import annotations

import fcntl
import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

import msgspec

from eventlog.errors import PlaybookError
from eventlog.safefiles import create, directory, remove_tree, replace, write_file
from projections.anchor_proof import record
from projections.org_check import OrgRefused, verified
from projections.orgs import (MAX_ORG_ENTRIES, MAX_ORG_PROJECTION, NAME, REFUSED_DIR, FORMAT, OrgEntries, OrgEntry,
                              OrgProjection, OrgSettings, entries_of, org_dir, org_root, read_settings,
                              write_projection, write_settings)
from projections.quickroads import LOG_NAME, ORG_FETCH_EVERY, SNAPSHOT_NAME, user_dir
from projections.snapshot import read_snapshot, state_of, write_snapshot

from . import org_git
from .org_git import GitFailed

ANCHORS = "playbook.anchors"
INCOMING = "incoming"
GIT_DIR = "git"
DAY = ORG_FETCH_EVERY


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def name_of(url: str) -> str:
    """The name an org gets from its URL: the repository's last path part, without `.git`, in lower case."""
    tail = re.split(r"[/:]", url.rstrip("/"))[-1].removesuffix(".git").lower()
    cleaned = re.sub(r"[^a-z0-9_-]+", "-", tail).strip("-_")
    return cleaned[:40] or "org"


def settings() -> OrgSettings:
    from projections.orgs import SettingsBroken

    try:
        return read_settings()
    except SettingsBroken as exc:
        raise PlaybookError(f"{exc}; remove it and add the orgs again (`playbook org add URL`)") from exc


def find(found: OrgSettings, name: str) -> OrgEntry:
    for org in found.orgs:
        if org.name == name:
            return org
    names = ", ".join(org.name for org in found.orgs) or "none"
    raise PlaybookError(f"no org {name} (configured: {names}; `playbook org list`)")


LOCK = "org.lock"


@contextmanager
def _locked() -> Iterator[None]:
    """Hold the org layer's lock (blocking): one add, fetch or remove at a time (a background fetch and one
    typed may start together)."""
    with directory(org_root(), Path(user_dir()), create=True) as dir_fd:
        fd = create(dir_fd, LOCK, read=True)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def add(url: str, name: str | None, quiet: bool = False) -> str:
    """Configure the org repository at `url` and fetch it; refused whole (nothing kept) when the first fetch
    fails. The line to print."""
    with _locked():
        return _add(url, name, quiet)


def _add(url: str, name: str | None, quiet: bool) -> str:
    org_git.check_url(url)
    if _shown_url(url) != url:
        raise PlaybookError("the URL holds a password, which would be stored in plain text: give the URL without "
                            "it, and let git's credential helper or the ssh agent hold it")
    if "://" not in url and os.path.exists(url):
        url = os.path.abspath(url)  # a path: git runs in the org's private repository, not here
    name = name if name is not None else name_of(url)
    if not NAME.fullmatch(name):
        raise PlaybookError(f"{name!r} is not an org name: lower-case letters, digits, - and _, at most 40")
    found = settings()
    if any(org.name == name for org in found.orgs):
        raise PlaybookError(f"org {name} is configured already (`playbook org remove {name}` first, or --name)")
    entry = OrgEntry(name=name, url=url, added=_now())
    accepted, line = fetch_one(entry, quiet)
    if not accepted:
        remove_tree(org_dir(name), user_dir())
        raise PlaybookError(f"org {name} not added: {line}")
    found.orgs.append(entry)
    write_settings(found)
    project(found)
    return f"org {name} added from {_shown_url(url)}: {line}"


def remove(name: str) -> str:
    with _locked():
        return _remove(name)


def _remove(name: str) -> str:
    found = settings()
    entry = find(found, name)
    found.orgs.remove(entry)
    write_settings(found)
    project(found)
    remove_tree(org_dir(name), user_dir())
    return f"org {name} removed: its key points are no longer injected"


def fetch(names: list[str] | None = None, quiet: bool = False, due_only: bool = False) -> list[tuple[bool, str]]:
    """Fetch the orgs named (all by default; with `due_only` those not tried for a day): (accepted, line) each."""
    with _locked():
        return _fetch(names, quiet, due_only)


def _fetch(names: list[str] | None, quiet: bool, due_only: bool) -> list[tuple[bool, str]]:
    found = settings()
    chosen = [find(found, name) for name in names] if names else list(found.orgs)
    if due_only:
        chosen = [org for org in chosen if not _tried_today(org)]
    results = []
    for entry in chosen:
        accepted, line = fetch_one(entry, quiet)
        results.append((accepted, f"org {entry.name}: {line}"))
    if chosen:
        write_settings(found)
        project(found)
    return results


def fetch_due() -> list[str]:
    """Fetch, without asking for credentials, the orgs not tried in the last day; the line of each refused or
    failed fetch. Never raises: a background fetch only reports (orgs.json keeps the reason for `doctor`)."""
    try:
        return [line for accepted, line in fetch(quiet=True, due_only=True) if not accepted]
    except (PlaybookError, OSError) as exc:
        return [f"org fetch: {exc}"]


def _tried_today(entry: OrgEntry) -> bool:
    if entry.attempted is None:
        return False
    try:
        then = datetime.fromisoformat(entry.attempted).timestamp()
    except ValueError:
        return False
    return time.time() - then < DAY


def fetch_one(entry: OrgEntry, quiet: bool) -> tuple[bool, str]:
    """Fetch, verify and accept `entry`'s repository (updating `entry`); (accepted, what happened)."""
    here = org_dir(entry.name)
    root = Path(user_dir())
    with directory(here, root, create=True):
        pass
    entry.attempted = _now()
    kept = "the last good copy stays injected" if entry.fetched else "nothing of it is injected"
    try:
        org_git.init(here / GIT_DIR)
        commit = org_git.fetch(here / GIT_DIR, org_git.check_url(entry.url), quiet)
    except PlaybookError as exc:  # git failed, or a URL edited into orgs.json that git must not be given
        entry.error = f"cannot fetch {_shown_url(entry.url)}: {exc}"
        return False, f"{entry.error}; {kept}"
    try:
        incoming = _take_out(here, commit)
        state, position = verified(incoming / LOG_NAME, here / ANCHORS,
                                   incoming / ANCHORS if (incoming / ANCHORS).exists() else None)
        if (size := len(msgspec.json.encode(entries_of(entry.name, state, scrub=False)))) > MAX_ORG_ENTRIES:
            raise OrgRefused(f"its key points hold {size >> 20} MiB of text, over the {MAX_ORG_ENTRIES >> 20} MiB "
                             "an org's injection takes")
    except (GitFailed, OrgRefused) as exc:
        entry.error = f"refused: {exc}"
        _keep_aside(here, root)
        return False, f"{entry.error}; {kept}"
    with directory(here, root) as here_fd, directory(incoming, root) as incoming_fd:
        replace(incoming_fd, LOG_NAME, LOG_NAME, here_fd)
    record(here / LOG_NAME, here / ANCHORS, root=root)
    write_snapshot(here / SNAPSHOT_NAME, state, position, root=root)
    remove_tree(incoming, root)
    entry.fetched, entry.error, entry.seq, entry.head = _now(), None, position.seq, position.hash
    count = len(state.where)
    return True, f"{count} key point{'s' if count != 1 else ''} (seq {position.seq}), verified"


def _take_out(here: Path, commit: str) -> Path:
    """The fetched log (and anchors file beside it, if any) written to `incoming/`; GitFailed when the tree
    holds no log, or holds one that is a link, no regular file, or too large."""
    git_dir = here / GIT_DIR
    root = Path(user_dir())
    remove_tree(here / INCOMING, root)
    for path in org_git.LOG_PATHS:
        blob = org_git.entry(git_dir, commit, path)
        if blob is None:
            continue
        write_file(here / INCOMING / LOG_NAME, org_git.read_blob(git_dir, blob, org_git.MAX_LOG_BYTES), root)
        anchors = org_git.entry(git_dir, commit, path.replace(LOG_NAME, ANCHORS))
        if anchors is not None:
            write_file(here / INCOMING / ANCHORS, org_git.read_blob(git_dir, anchors, org_git.MAX_ANCHORS_BYTES), root)
        return here / INCOMING
    raise GitFailed(f"the repository holds no playbook log ({' or '.join(org_git.LOG_PATHS)})")


def _keep_aside(here: Path, root: Path) -> None:
    """What a refused fetch brought, kept in `refused/` (the one before it dropped) for the user to look at."""
    remove_tree(here / REFUSED_DIR, root)
    if (here / INCOMING).is_dir():
        with directory(here, root) as here_fd:
            replace(here_fd, INCOMING, REFUSED_DIR)


def project(found: OrgSettings) -> None:
    """Write the org projection from every org's accepted copy, in the order they were added."""
    orgs: list[OrgEntries] = []
    size = 0
    for org in found.orgs:
        snapshot = read_snapshot(org_dir(org.name) / SNAPSHOT_NAME)
        if snapshot is None or snapshot.snapshot is None or snapshot.snapshot.log is None:
            continue
        entries = entries_of(org.name, state_of(snapshot.snapshot)[0])
        grown = size + len(msgspec.json.encode(entries))
        if grown <= MAX_ORG_PROJECTION - 4096:  # else the projection would not be read: the first orgs are injected
            orgs.append(entries)
            size = grown
    if orgs or org_root().exists():
        write_projection(OrgProjection(FORMAT, orgs))


def _shown_url(url: str) -> str:
    """`url` without a password it may carry (`https://user:token@host/...`)."""
    return re.sub(r"(://[^/@:]+):[^/@]*@", r"\1:***@", url)
