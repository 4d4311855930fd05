"""Learning requests: a hook records one in the log and starts the detached learner, which runs one at a time
under the project's learning lock."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from eventlog.decide import RequestLearning
from eventlog.errors import StorageError
from eventlog.events import Cause
from eventlog.safefiles import create, directory
from projections.quickroads import LEARN_LOG_NAME

from playbook.wiring.project import claude_dir, repository

from .made_here import note

LEARN_LOCK = "playbook.learn.lock"
LEARN_LOG = LEARN_LOG_NAME


def request_learning(project: Path, hook: str, transcript: str, session: str | None, reason: str | None = None) -> str:
    """Record a learning request in the log, noted first as made on this machine; durable when it returns.
    Returns its id."""
    request = uuid.uuid4().hex[:16]
    note(project, request, transcript)
    repository(project).append(
        [RequestLearning(request=request, hook=hook, transcript=transcript, session=session, reason=reason)],
        Cause(source=f"hook:{hook}", session=session),
    )
    return request


def spawn_learner(project: Path) -> None:
    """Start `playbook learn --pending` for `project`, detached: it outlives the hook and Claude Code.

    Its output goes to `.claude/playbook.learn.log`, appended to without following a link (`eventlog.safefiles`)."""
    with directory(claude_dir(project), project, create=True) as dir_fd:
        fd = create(dir_fd, LEARN_LOG, append=True)
    with os.fdopen(fd, "ab") as log:
        subprocess.Popen(
            # -I: the learner runs in the project's directory, whose own `playbook/` must not be imported.
            [sys.executable, "-I", "-m", "playbook", "--project", str(project), "learn", "--pending"],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, close_fds=True,
            cwd=str(project),
        )


@contextmanager
def learning_lock(project: Path) -> Iterator[None]:
    """Hold the project's learner lock (`.claude/playbook.learn.lock`, blocking): one learner at a time.

    Follows no link (`eventlog.safefiles`): a lock a repository carries as a link is a `StorageError`, one line."""
    path = claude_dir(project) / LEARN_LOCK
    try:
        with directory(path.parent, project, create=True) as dir_fd:
            fd = create(dir_fd, LEARN_LOCK, read=True)
    except OSError as exc:
        raise StorageError.failed("lock", path, exc) from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
