"""The notice's contract: why a hook cannot do its job, told in one line a session start, each cause once a day.

Its causes, how the notice file (`quickroads.notice_path`) is read, and the line each cause is told with. Standard
library only, like `projections.quickroads`: the SessionStart hook script tells a due notice before anything else
is imported, and the full code (`playbook.wiring.notice`, `playbook.quick.notices`) writes it.
"""

from __future__ import annotations

import os
import sys

from .quickroads import notice_path, read_small
from .quickjson import json_string

NO_BACKEND = ("no API key (AGENTIC_CONTEXT_API_KEY, ANTHROPIC_AUTH_TOKEN or ANTHROPIC_API_KEY) "
              "and no Claude Code CLI (claude) found")
"""Why learning cannot reach a model, as the notice says it."""
ALL_OFF = "learning is off: every playbook_update_on_* setting is false"
"""Why learning does not run when every switch is off, as the notice says it."""
DOCTOR = "`playbook doctor` checks every part"
"""How every notice ends: the one command that tells what is wrong and how to fix it."""
DISABLED = "the playbook is disabled in this project: nothing is injected or learned (`playbook enable` turns it on)"
LEARNING_LINES = {
    "disabled": f"playbook: {DISABLED}",
    "all-off": f"playbook: {ALL_OFF} (to learn, set one to true in playbook.settings.json or unset its "
               f"PLAYBOOK_UPDATE_ON_* variable; {DOCTOR})",
    "no-backend": f"playbook: learning cannot run: {NO_BACKEND}; fix: set ANTHROPIC_API_KEY, or install Claude "
                  f"Code's CLI and log in ({DOCTOR})",
}
"""The notice's line for each cause that keeps learning from running at all (`playbook.wiring.notice.learning_cause`
decides which holds; the quiet learning hook checks the notice against the same lines)."""

NOTICE_CAUSES = ("environment", "python", "storage", "hook", "notice", "disabled", "all-off", "no-backend", "failing",
                 "budget")
"""Every cause a notice names, in the order session starts tell them: the hooks' Python cannot load the playbook,
PLAYBOOK_PYTHON names no Python that runs, a file cannot be written (disk full, permissions), a hook failed otherwise,
a notice of an older version (one line, no cause), learning switched off or without a model, learning failing again
and again, the day's token budget spent."""
HOOK_CAUSES = ("environment", "python", "hook", "notice")
"""What a hook that ran in full settles: its Python loads the playbook, it is the one asked for, and it did not fail."""
MISSING_PYTHON = "PLAYBOOK_PYTHON_MISSING"
"""Set by the plugin's hook script when PLAYBOOK_PYTHON names nothing it can run (it runs the hook without it)."""
MAX_NOTICE_LINE = 600
"""The longest line a notice keeps of a cause (an error's text can be long): the notice stays one small file."""


def cause_order(cause: str) -> int:
    return NOTICE_CAUSES.index(cause) if cause in NOTICE_CAUSES else len(NOTICE_CAUSES)


def read_notice(project: str | os.PathLike[str]) -> dict[str, tuple[str, str]]:
    """The causes the notice of `project` holds, in the order they are told: each with the last UTC day it holds
    (`-`: until it is settled) and its line.

    A line of the notice is `CAUSE UNTIL "JSON string"`; a lone JSON string is an older version's notice (cause
    `notice`). Anything else is no notice at all: a file shaped to add members to the hook's output is never one."""
    data = read_small(notice_path(project))
    found: dict[str, tuple[str, str]] = {}
    for raw in (data or b"").decode("utf-8", "replace").splitlines():
        raw = raw.strip()
        try:
            if raw.startswith('"'):
                cause, until, line = "notice", "-", json_string(raw)
            else:
                cause, until, quoted = raw.split(" ", 2)
                line = json_string(quoted)
        except ValueError:
            continue
        if cause.replace("-", "").isalpha() and cause.islower() and cause not in found and line:
            found[cause] = (until, line)
    return dict(sorted(found.items(), key=lambda item: cause_order(item[0])))


def due_notice(project: str | os.PathLike[str], today: str) -> tuple[str, str] | None:
    """The first cause of the notice that holds `today` (a UTC day, `YYYY-MM-DD`) and was not shown on it, with its
    line; None when there is none. With no notice this is one failed open."""
    causes = read_notice(project)
    if not causes:
        return None
    shown = (read_small(notice_path(project) + ".shown") or b"").decode("utf-8", "replace").split("\n")
    told = {line.partition(" ")[2].strip() for line in shown if line.startswith(today)}
    if "" in told:  # an older version's mark: its one notice was shown that day
        return None
    for cause, (until, line) in causes.items():
        if (until == "-" or until >= today) and cause not in told:
            return cause, line
    return None


def environment_line(error: str) -> str:
    """The notice's line when this interpreter, a hook's, cannot load the playbook's package or a dependency: with
    the fix for how it was chosen (PLAYBOOK_PYTHON, the plugin's own environment, or installed hooks)."""
    python = sys.executable or "python3"
    venv = os.path.dirname(os.path.dirname(python))
    chosen = os.environ.get("PLAYBOOK_PYTHON")
    data = os.environ.get("CLAUDE_PLUGIN_DATA")
    if chosen:
        fix = f"install the playbook into PLAYBOOK_PYTHON ({chosen}), or unset PLAYBOOK_PYTHON"
    elif data and venv == os.path.join(data, "venv"):
        fix = f"remove {venv} and start a new session: the plugin sets its environment up again"
    else:
        fix = ("reinstall the playbook for it (uv tool install --reinstall, pipx reinstall, or pip install in its "
               "environment), then `playbook install` again")
    return (f"playbook: the hooks' Python ({python}) cannot load the playbook ({error}): nothing is learned or "
            f"brought up to date; fix: {fix} ({DOCTOR})")


def missing_python_line(python: str) -> str:
    """The notice's line when PLAYBOOK_PYTHON names no Python the plugin's hooks can run."""
    return (f"playbook: PLAYBOOK_PYTHON ({python}) cannot be run, so the plugin's hooks use its own environment; fix: "
            f"point PLAYBOOK_PYTHON at a Python with the playbook installed, or unset it ({DOCTOR})")


def storage_line(message: str, number: int | None) -> str:
    """The notice's line when a hook or the learner cannot write the playbook's files: `message` says which and
    why, `number` is the system's error number when known."""
    import errno  # here, not at the top: the session start's fast path never needs it

    if number in (errno.ENOSPC, errno.EDQUOT) or "No space left" in message or "quota" in message.lower():
        fix = "free some disk space"
    elif number in (errno.EACCES, errno.EPERM, errno.EROFS) or "ermission denied" in message \
            or "Read-only file system" in message:
        fix = "make .claude and the playbook's files in it yours and writable (ls -l .claude)"
    else:
        fix = "see what the system said above"
    return (f"playbook: {message}: the playbook is not updated and sessions are not learned from; fix: {fix} "
            f"({DOCTOR})")


def hook_line(event: str, error: str) -> str:
    """The notice's line when a hook failed for another reason than the ones above."""
    return f"playbook: the {event} hook failed: {error} ({DOCTOR})"

