"""Learning settings: `<Claude Code's directory>/playbook.settings.json`, then the project's, then the environment.

Keys: playbook_update_on_exit, playbook_update_on_clear, playbook_update_on_precompact and
playbook_update_on_subagent_stop (all true by default: once installed, every session
teaches; learn when a session ends by exiting, by /clear, before a compaction, and from
each subagent); playbook_never_learn (transcript paths or globs never learned from);
playbook_review (false: learning records proposals to review instead of changing the
playbook) and playbook_review_expiry_days (30); playbook_daily_token_budget (tokens learning
may spend per UTC day; 0: no limit); playbook_preferences_per_project (false: the USER
PREFERENCES learned in any project go to the user-level playbook). The environment variable
of the same name in upper case (`PLAYBOOK_UPDATE_ON_EXIT=0`; a list separated by `:`)
overrides both files; a list in the project's file adds to the user's. Claude Code's
directory is `$CLAUDE_CONFIG_DIR`, else `~/.claude`.
"""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path

import msgspec

from projections.injection import read_settings, settings_paths


class Settings(msgspec.Struct, frozen=True):
    playbook_update_on_exit: bool = True
    playbook_update_on_clear: bool = True
    playbook_update_on_subagent_stop: bool = True
    playbook_update_on_precompact: bool = True
    # transcript paths or globs (`~` expanded; `**` spans directories) never learned from
    playbook_never_learn: tuple[str, ...] = ()
    playbook_review: bool = False
    playbook_review_expiry_days: float = 30.0
    # tokens learning may spend per UTC day (input, output and cache); 0: no budget. See README for the figure.
    playbook_daily_token_budget: float = 500_000.0
    # USER PREFERENCES the curator adds stay in the project's playbook instead of the user-level one
    playbook_preferences_per_project: bool = False


SETTINGS_NAME = "playbook.settings.json"
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _from_file(key: str, value: object) -> object | None:
    """`value` as the setting `key` holds it, or None when it is not of the setting's type."""
    default = getattr(Settings(), key)
    if isinstance(default, bool):
        return value if isinstance(value, bool) else None
    if isinstance(default, float):
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0 else None
    if isinstance(value, str):
        value = [value]
    return tuple(value) if isinstance(value, list) and all(isinstance(v, str) for v in value) else None


def _from_env(key: str, raw: str) -> object | None:
    default = getattr(Settings(), key)
    if isinstance(default, bool):
        return raw.strip().lower() in _TRUE if raw.strip().lower() in _TRUE | _FALSE else None
    if isinstance(default, float):
        try:
            return _from_file(key, float(raw))
        except ValueError:
            return None
    return tuple(part for part in raw.split(os.pathsep) if part)


def load_settings(project: Path) -> Settings:
    values: dict[str, object] = {}
    for path in settings_paths(project):
        for key, value in read_settings(path).items():
            if key in Settings.__struct_fields__ and (read := _from_file(key, value)) is not None:
                earlier = values.get(key)
                if isinstance(read, tuple) and isinstance(earlier, tuple):
                    # A list adds to the user's: a repository's settings never clear playbook_never_learn.
                    read = tuple(dict.fromkeys((*earlier, *read)))
                values[key] = read
    for key in Settings.__struct_fields__:
        raw = os.environ.get(key.upper())
        if raw is not None and (read := _from_env(key, raw)) is not None:
            values[key] = read
    return Settings(**values)  # type: ignore[arg-type]


def never_learn_match(transcript: str, settings: Settings) -> str | None:
    """The `playbook_never_learn` pattern that excludes `transcript`, or None when it may be learned from.

    A pattern is a glob over the whole path (`*` crosses `/`), or a directory that holds the
    transcript; both are compared with the path as given and as resolved (symlinks followed).
    """
    paths = {transcript, os.path.realpath(transcript)}
    for pattern in settings.playbook_never_learn:
        expanded = os.path.expanduser(pattern)
        directory = os.path.join(os.path.realpath(expanded), "")
        for path in paths:
            if fnmatch.fnmatchcase(path, expanded) or path.startswith(directory):
                return pattern
    return None
