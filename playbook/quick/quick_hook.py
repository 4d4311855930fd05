"""A learning hook (SessionEnd, PreCompact, SubagentStop) with its learning switched off, decided with the
standard library alone.

Such a hook records nothing; the full one (`playbook.wiring.hooks`) still reads the playbook, keeps the
learning notice current and registers the merge driver a shared log names. `nothing_to_do` answers
True only when all of that would change nothing: the switch for this event is off in the settings
files and the environment (read as `playbook.wiring.settings.load_settings` reads them), `.claude` and the
playbook's files in it are ours (no link, the right kind of file), the hook's projection is current
and injects something (so the project is not disabled), `.gitattributes` does not name the merge
driver, and the project's notice (kept in its local directory, `projections.quickroads.notice_path`) already
says what `playbook.wiring.notice.update_notice` would write. Then
the launcher exits without importing the log's machinery; in every other case the full hook runs
on the same input.
"""

from __future__ import annotations

import os
import stat

from projections.protective import COMBINE
from projections.quickroads import (INJECTION_NAME, MAX_SETTINGS_BYTES, MAX_STDIN, PLAYBOOK_FILES, SETTINGS_NAME,
                                    SWITCHES, claude_outside, read_small)
from projections.quickjson import top_level_strings
from projections.quicknotice import HOOK_CAUSES, LEARNING_LINES, read_notice

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def switch_of(event: str, members: dict[str, str]) -> str | None:
    """The setting that turns learning on `event` off (`playbook.wiring.hooks.learning_transcript`), or None."""
    if event == "SessionEnd":
        return "playbook_update_on_clear" if (members.get("reason") or "other") == "clear" else "playbook_update_on_exit"
    return {"PreCompact": "playbook_update_on_precompact", "SubagentStop": "playbook_update_on_subagent_stop"}.get(event)


def _settings_file(path: str) -> dict[str, object] | None:
    """The JSON object a settings file holds, {} when there is none or it is no object (as
    `projections.config.read_settings`), None when it cannot be told without the full reader."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError):
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return {}
        raw = handle.read(MAX_SETTINGS_BYTES + 1)
    if len(raw) > MAX_SETTINGS_BYTES:
        return {}
    import json  # only when there is a settings file to read

    try:
        data = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def switches(project: str) -> dict[str, bool] | None:
    """The learning switches in force for `project`: the user's settings file, the project's (which can turn
    a switch off, never on), then the environment (`PLAYBOOK_UPDATE_ON_EXIT=0`); None when a settings file
    cannot be read here."""
    values: dict[str, bool] = dict.fromkeys(SWITCHES, True)
    user = os.path.expanduser(os.environ.get("CLAUDE_CONFIG_DIR") or "~/.claude")
    files = ((os.path.join(user, SETTINGS_NAME), False), (os.path.join(project, ".claude", SETTINGS_NAME), True))
    for path, mine in files:
        found = _settings_file(path)
        if found is None:
            return None
        for key in SWITCHES:
            if isinstance(value := found.get(key), bool):
                # the project's file may only tighten the user's choice (`projections.protective`)
                values[key] = bool(COMBINE[key](values[key], value)) if mine else value
    for key in SWITCHES:
        raw = os.environ.get(key.upper())
        if raw is not None and raw.strip().lower() in _TRUE | _FALSE:
            values[key] = raw.strip().lower() in _TRUE
    return values


def _which(name: str, path: str) -> str | None:
    """`shutil.which(name, path=path)` on POSIX, without importing `shutil` (which brings in `re`)."""
    if not path:
        return None
    seen = set()
    for directory in path.split(os.pathsep):
        if directory in seen:
            continue
        seen.add(directory)
        candidate = os.path.join(directory, name)
        if os.path.exists(candidate) and os.access(candidate, os.F_OK | os.X_OK) and not os.path.isdir(candidate):
            return candidate
    return None


def can_reach_model() -> bool:
    """True when `playbook.learner.backend.model_config()` finds a way to the model: a key, a token or the CLI."""
    env = os.environ
    if env.get("AGENTIC_CONTEXT_API_KEY") or env.get("ANTHROPIC_AUTH_TOKEN") or env.get("ANTHROPIC_API_KEY"):
        return True
    if "PLAYBOOK_CLAUDE" in env:
        chosen = env["PLAYBOOK_CLAUDE"]
        return bool(chosen) and os.path.isfile(chosen) and os.access(chosen, os.X_OK)
    if _which("claude", env.get("PATH", os.defpath)):
        return True
    home = env.get("HOME") or os.path.expanduser("~")
    return any(os.path.isfile(candidate) and os.access(candidate, os.X_OK)
               for candidate in (os.path.join(home, ".local", "bin", "claude"),
                                 os.path.join(home, ".claude", "local", "claude")))


def _ours(claude_dir: str) -> bool:
    """`.claude`'s playbook files are each absent, or a file of the right kind that is no link
    (`playbook.wiring.project.claude_dir` refuses links out and wrong kinds; any link is left to it)."""
    for name, kind in PLAYBOOK_FILES:
        try:
            mode = os.lstat(os.path.join(claude_dir, name)).st_mode
        except FileNotFoundError:
            continue
        except (OSError, ValueError):
            return False
        if stat.S_ISLNK(mode) or not kind(mode):
            return False
    return True


def _current_and_enabled(claude_dir: str) -> bool:
    """The hook's projection was written at the log's present size and playbook.json's present
    modification time (nothing waits to be taken in), and it injects something: the project is not
    disabled (a disabled project's projection is empty)."""
    try:
        with os.fdopen(os.open(os.path.join(claude_dir, INJECTION_NAME), os.O_RDONLY | os.O_NONBLOCK), "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return False
            header = handle.readline(512)
            injects = bool(handle.read(1))
        size, mtime = header.split()[:2]
        return (injects and os.stat(os.path.join(claude_dir, "playbook.events.jsonl")).st_size == int(size)
                and os.stat(os.path.join(claude_dir, "playbook.json")).st_mtime_ns == int(mtime))
    except (OSError, ValueError):
        return False


def _notice_current(project: str, values: dict[str, bool]) -> bool:
    """The notice holds what `playbook.wiring.notice.update_notice` would leave there for an enabled project, from a
    hook that ran in full: the same cause why learning cannot run (or none), and none of what such a hook settles."""
    if not any(values.values()):
        cause: str | None = "all-off"
    else:
        cause = None if can_reach_model() else "no-backend"
    held = read_notice(project)
    if any(name in held for name in HOOK_CAUSES):
        return False
    learning = {name: held[name] for name in LEARNING_LINES if name in held}
    return learning == ({} if cause is None else {cause: ("-", LEARNING_LINES[cause])})


def _driver_named(project: str) -> bool:
    """`.gitattributes` names the merge driver (or cannot be read here): `playbook.commands.share.ensure_registered`'s concern."""
    path = os.path.join(project, ".gitattributes")
    if not os.path.lexists(path):
        return False
    text = read_small(path)
    return text is None or len(text) >= 4096 or b"merge=playbook" in text


def nothing_to_do(event: str, raw: bytes) -> bool:
    """True when the hook `event`, given `raw` on stdin, would do nothing at all (see the module's note)."""
    if not raw or len(raw) > MAX_STDIN:
        return False
    try:
        members = top_level_strings(raw.decode("utf-8"))
    except (ValueError, IndexError, SystemError, RecursionError):
        return False
    setting = switch_of(event, members)
    project = os.environ.get("CLAUDE_PROJECT_DIR") or members.get("cwd") or os.getcwd()
    if setting is None or claude_outside(project) is not None:
        return False
    values = switches(project)
    if values is None or values[setting]:
        return False
    claude_dir = os.path.join(project, ".claude")
    return (_ours(claude_dir) and _current_and_enabled(claude_dir) and not _driver_named(project)
            and _notice_current(project, values))
