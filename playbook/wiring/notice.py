"""The one line SessionStart shows the user when learning cannot run, at most once a day.

Python code that knows (the learning hooks, the learner, `playbook enable` / `disable`,
the SessionStart slow path) writes the reason to `notice` in the project's local directory
(`projections.quickroads.local_dir`: under the user-level directory, keyed by the project's
real path), as a JSON string, or removes the file when learning can run. The SessionStart
script (`playbook/quick/inject.py`, standard library only) shows it as the hook's
`systemMessage` and notes the day in `notice.shown` beside it; with no notice it costs one
failed `open`.

The notice is never kept in the repository: a clone's `.claude/` can hold any file, and a
message shown as ours (`run curl ... | sh`) must come from this machine alone.
"""

from __future__ import annotations

import json
from pathlib import Path

from eventlog.domain import PlaybookState
from eventlog.safefiles import remove_file, write_file
from projections.quickroads import ALL_OFF, NO_BACKEND, notice_path, read_small, user_dir

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

    Kept in this machine's own directory for the project (`quickroads.local_dir`), never in the repository;
    follows no link below the user-level directory (`eventlog.safefiles`)."""
    reason = learning_blocker(project, state)
    path = Path(notice_path(project))
    try:
        if reason is None:
            remove_file(path, Path(user_dir()))
        else:
            data = (json.dumps(f"playbook: {reason}") + "\n").encode()
            if read_small(str(path)) == data:
                return reason
            write_file(path, data, Path(user_dir()), durable_name=False)
    except OSError:
        pass  # a notice is a courtesy: a read-only user directory still lets the project work
    return reason
