"""Sync after learning, in the background: a detached `playbook sync --background`, at most every N minutes.

The learner (itself detached from the session) calls `after_learning` once its cycles are
done; nothing here runs on a hook's path. The pace is the setting `playbook_sync_minutes`
(10; 0: only on demand), judged on when the last sync started. The process's output goes to
`<user-level dir>/sync/sync.log`, appended to without following a link.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from eventlog.safefiles import create, directory

from playbook.wiring.project import user_dir
from playbook.wiring.settings import load_settings
from .place import SyncPlace

SYNC_LOG = "sync.log"


def due(project: Path) -> bool:
    """Whether a sync should start now: a remote is named and the last sync started long enough ago."""
    minutes = load_settings(project).playbook_sync_minutes
    if minutes <= 0:
        return False
    place = SyncPlace(user_dir())
    if not (place.git_dir / "HEAD").is_file() or place.git_dir.is_symlink():
        return False
    since = place.since_last()
    return since is None or since >= minutes * 60


def spawn_sync() -> None:
    """Start `playbook sync --background`, detached: it outlives the learner, and waits for no terminal."""
    place = SyncPlace(user_dir())
    with directory(place.dir, place.root, create=True) as dir_fd:
        fd = create(dir_fd, SYNC_LOG, append=True)
    with os.fdopen(fd, "ab") as log:
        subprocess.Popen([sys.executable, "-I", "-m", "playbook", "sync", "--background"],
                         stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, close_fds=True,
                         cwd=str(place.root))


def after_learning(project: Path) -> None:
    """Start a background sync when one is due; never an error of the learner's."""
    try:
        if due(project):
            spawn_sync()
    except Exception as exc:  # the learner's run is done: a sync that cannot start is said, and waits for the next
        print(f"playbook: the background sync did not start: {exc}", flush=True)


__all__ = ["after_learning", "due", "spawn_sync"]
