"""Learning settings: `~/.claude/playbook.settings.json`, then the project's, then the environment.

Keys (all booleans): playbook_update_on_exit and playbook_update_on_clear (false by
default: learn when a session ends by exiting, or by /clear), and
playbook_update_on_subagent_stop (true by default). The environment variable of
the same name in upper case (`PLAYBOOK_UPDATE_ON_EXIT=1`) overrides both files.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import msgspec


class Settings(msgspec.Struct, frozen=True):
    playbook_update_on_exit: bool = False
    playbook_update_on_clear: bool = False
    playbook_update_on_subagent_stop: bool = True


SETTINGS_NAME = "playbook.settings.json"
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _read(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def load_settings(project: Path) -> Settings:
    values: dict[str, bool] = {}
    for path in (Path.home() / ".claude" / SETTINGS_NAME, project / ".claude" / SETTINGS_NAME):
        for key, value in _read(path).items():
            if key in Settings.__struct_fields__ and isinstance(value, bool):
                values[key] = value
    for key in Settings.__struct_fields__:
        raw = os.environ.get(key.upper())
        if raw is not None and raw.strip().lower() in _TRUE | _FALSE:
            values[key] = raw.strip().lower() in _TRUE
    return Settings(**values)
