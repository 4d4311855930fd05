"""The one line SessionStart shows the user when learning cannot run, at most once a day.

Python code that knows (the learning hooks, the learner, `playbook enable` / `disable`,
the SessionStart slow path) writes the reason to `.claude/playbook.notice`, as a JSON
string, or removes the file when learning can run. The SessionStart script
(`playbook/quick/inject.py`, standard library only) shows it as the hook's `systemMessage`
and notes the day in `.claude/playbook.notice.shown`; with no notice it costs one
failed `open`.
"""

from __future__ import annotations

import json
from pathlib import Path

from eventlog.domain import PlaybookState
from eventlog.safefiles import directory, remove_file, write_atomically
from projections.quickroads import ALL_OFF, NO_BACKEND, NOTICE_NAME, read_small

from playbook.learner.backend import model_config
from .settings import load_settings


def learning_blocker(project: Path, state: PlaybookState) -> str | None:
    """Why learning cannot run in `project`, in one line, or None when it can."""
    if state.disabled:
        return "the playbook is disabled in this project: nothing is injected or learned (`playbook enable` turns it on)"
    settings = load_settings(project)
    if not any(getattr(settings, key) for key in settings.__struct_fields__ if key.startswith("playbook_update_on_")):
        return ALL_OFF
    if model_config() is None:
        return f"learning cannot run: {NO_BACKEND}"
    return None


def update_notice(project: Path, state: PlaybookState) -> str | None:
    """Write (or remove) the project's notice; returns the reason, if any. Never raises on I/O.

    Follows no link below the project (`eventlog.safefiles`)."""
    reason = learning_blocker(project, state)
    path = project / ".claude" / NOTICE_NAME
    try:
        if reason is None:
            remove_file(path, project)
        else:
            data = (json.dumps(f"playbook: {reason}") + "\n").encode()
            if read_small(str(path)) == data:
                return reason
            with directory(path.parent, project) as dir_fd:  # a project with no `.claude` gets none for a notice
                write_atomically(dir_fd, NOTICE_NAME, data, durable_name=False)
    except OSError:
        pass  # a notice is a courtesy: a read-only project still works
    return reason
