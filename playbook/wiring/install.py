"""Installing the hooks into Claude Code's settings.json, and removing exactly them again.

Every hook command names this environment's interpreter by its absolute path and runs it
isolated (`-I`): nothing is imported from the project Claude Code runs the hook in, from
`PYTHONPATH` or from the user's site-packages, so a repository with its own `playbook/`
package cannot make a hook run its code.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

from eventlog.errors import PlaybookError
from eventlog.safefiles import create, directory, remove_file, write_file
from projections.config import user_config_dir

import playbook.quick

HOOK_EVENTS = ("SessionStart", "SessionEnd", "PreCompact", "SubagentStop", "UserPromptSubmit")
_MARKERS = ("playbook/quick/inject.py", "-m playbook hook ", "playbook/quick/recall.py", "playbook/quick/launch.py",
            # where the scripts were before the package had rooms: hooks installed then are ours too
            "playbook/inject.py", "playbook/recall.py", "playbook/launch.py")
_TIMEOUTS = {"SessionStart": 10, "SessionEnd": 10, "PreCompact": 30, "SubagentStop": 30, "UserPromptSubmit": 5}


class SettingsFileError(PlaybookError):
    """settings.json exists but is not a JSON object: it is left untouched."""


def _quote(path: str) -> str:
    # Claude Code runs the command through a shell: only single quotes keep `$`, backticks and `\` as they are.
    return shlex.quote(path)


def hook_command(event: str, python: str | None = None) -> str:
    """The command Claude Code runs for `event`: this interpreter, named directly (no shim, no PATH),
    isolated from the current directory and the environment's Python variables, without `site` (a script
    of the package's own, which finds the package beside itself: see `playbook.quick.launch`)."""
    python = python or sys.executable
    scripts = os.path.dirname(os.path.abspath(playbook.quick.__file__))  # run by path: never imported here
    if event == "SessionStart":
        return f"{_quote(python)} -I -S {_quote(os.path.join(scripts, 'inject.py'))}"
    if event == "UserPromptSubmit":
        return f"{_quote(python)} -I -S {_quote(os.path.join(scripts, 'recall.py'))}"
    return f"{_quote(python)} -I -S {_quote(os.path.join(scripts, 'launch.py'))} hook {event}"


def is_ours(hook: Any) -> bool:
    command = hook.get("command") if isinstance(hook, dict) else None
    return isinstance(command, str) and any(marker in command for marker in _MARKERS)


def settings_root(user: bool, project: Path) -> Path:
    """Where the settings file of `settings_path` is reached from without following a link: Claude Code's
    directory, the user's own wherever it is, or the project."""
    return user_config_dir() if user else project


def settings_path(user: bool, project: Path) -> Path:
    """Claude Code's settings file, the user's or the project's (never through a `.claude` leading out of it)."""
    if user:
        return user_config_dir() / "settings.json"
    from .project import claude_dir

    return claude_dir(project) / "settings.json"


def _created_marker(path: Path) -> Path:
    """Where install notes that it created `path`, so uninstall removes the file rather than leave `{}`."""
    return path.with_name(path.name + ".playbook-created")


def _load(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    try:
        data = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        raise SettingsFileError(f"{path} is not valid JSON ({exc}); fix it first, it was left untouched") from None
    if not isinstance(data, dict) or not isinstance(data.get("hooks", {}), dict):
        raise SettingsFileError(f"{path} does not hold a settings object with a 'hooks' object; left untouched")
    return data


def _without_ours(groups: Any) -> list[Any]:
    kept = []
    for group in groups if isinstance(groups, list) else []:
        if isinstance(group, dict) and isinstance(group.get("hooks"), list):
            hooks = [hook for hook in group["hooks"] if not is_ours(hook)]
            if hooks:
                kept.append({**group, "hooks": hooks})
        else:
            kept.append(group)
    return kept


def _save(path: Path, data: dict[str, Any], root: Path) -> None:
    write_file(path, (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode(), root)


def install(path: Path, python: str | None = None, root: Path | None = None) -> list[str]:
    """Merge our hooks into the settings file at `path`; idempotent. Returns the events installed.

    Follows no link below `root` (`settings_root`; by default the directory above the one holding `path`):
    the file is replaced in its directory, never written through a link (`eventlog.safefiles`)."""
    root = root if root is not None else path.parent.parent
    data = _load(path)
    if not path.exists():
        with directory(path.parent, root, create=True) as dir_fd:
            os.close(create(dir_fd, _created_marker(path).name))
    hooks = data.setdefault("hooks", {})
    for event in HOOK_EVENTS:
        groups = _without_ours(hooks.get(event, []))
        groups.append({"hooks": [{"type": "command", "command": hook_command(event, python),
                                  "timeout": _TIMEOUTS[event]}]})
        hooks[event] = groups
    _save(path, data, root)
    return list(HOOK_EVENTS)


def uninstall(path: Path, root: Path | None = None) -> int:
    """Remove our hooks, and only ours, from the settings file at `path`. Returns how many were removed.

    A settings file that install created and that holds nothing else afterwards is removed; one the
    user had is kept, even when empty. Follows no link below `root` (as `install`)."""
    root = root if root is not None else path.parent.parent
    if not path.exists():
        return 0
    data = _load(path)
    hooks = data.get("hooks", {})
    removed = 0
    for event in list(hooks):
        before = sum(len(g.get("hooks", [])) for g in hooks[event] if isinstance(g, dict)) if isinstance(hooks[event], list) else 0
        hooks[event] = _without_ours(hooks[event])
        after = sum(len(g.get("hooks", [])) for g in hooks[event] if isinstance(g, dict))
        removed += before - after
        if not hooks[event]:
            del hooks[event]
    if not hooks:
        data.pop("hooks", None)
    marker = _created_marker(path)
    if not data and marker.exists():
        remove_file(path, root)
    else:
        _save(path, data, root)
    remove_file(marker, root)
    return removed
