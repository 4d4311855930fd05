"""Learning settings: `<Claude Code's directory>/playbook.settings.json`, then the project's, then the environment.

Keys: playbook_update_on_exit, playbook_update_on_clear, playbook_update_on_precompact and
playbook_update_on_subagent_stop (all true by default: once installed, every session
teaches; learn when a session ends by exiting, by /clear, before a compaction, and from
each subagent); playbook_never_learn (transcript paths or globs never learned from);
playbook_review (false: learning records proposals to review instead of changing the
playbook) and playbook_review_expiry_days (30); playbook_daily_token_budget (tokens learning
may spend per UTC day; 0: no limit); playbook_preferences_per_project (false: the USER
PREFERENCES learned in any project go to the user-level playbook); playbook_sync_minutes (10: the
user-level playbook's background sync after learning runs at most that often; 0: only `playbook sync`). The environment variable
of the same name in upper case (`PLAYBOOK_UPDATE_ON_EXIT=0`; a list separated by `:`)
overrides both files. A project's file may only tighten the protective settings
(`projections.protective`: learning off, review on, a lower budget, preferences kept in the project,
more never_learn patterns, and the lean context's lower collapse shares); for the others its value wins. Claude Code's directory is
`$CLAUDE_CONFIG_DIR`, else `~/.claude`.
"""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path

import msgspec

from eventlog.collapse import DEFAULT_MAX_REMOVED_SHARE, DEFAULT_MAX_SHRINK_SHARE
from projections.config import number_in_force, read_settings, setting_number, settings_paths
from projections.protective import COMBINE


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
    # minutes at least between two background syncs of the user-level playbook after learning; 0: on demand only
    playbook_sync_minutes: float = 10.0


LEAN_PROTECTIVE = {"playbook_collapse_max_removed_share": DEFAULT_MAX_REMOVED_SHARE,
                   "playbook_collapse_max_shrink_share": DEFAULT_MAX_SHRINK_SHARE}
"""The protective settings of the lean context, read through `projections.config.number_in_force`
(`lean_settings`), and their defaults."""
_DEFAULTS = Settings()
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


class Override(msgspec.Struct, frozen=True):
    """A protective setting whose value in the project's file gave way to the user's (`projections.protective`)."""

    key: str
    project: object
    in_force: object


def _file_values(path: Path) -> dict[str, object]:
    """The settings a file holds that are of their setting's type; the rest is ignored."""
    return {key: read for key, value in read_settings(path).items()
            if key in Settings.__struct_fields__ and (read := _from_file(key, value)) is not None}


def resolve_settings(project: Path) -> tuple[Settings, list[Override]]:
    """The settings in force for `project`, and the project's values that gave way to the user's.

    The user's file, then the project's: a protective setting (`protective.COMBINE`) combines the
    two, the user's default standing for a value the user never set, so a repository can only
    tighten it; any other setting is the project's when it gives one. The environment wins over both."""
    user_path, project_path = settings_paths(project)
    values = _file_values(user_path)
    overrides = []
    for key, read in _file_values(project_path).items():
        combine = COMBINE.get(key)
        if combine is not None:
            in_force = combine(values.get(key, getattr(_DEFAULTS, key)), read)
            if in_force != read and not isinstance(read, tuple):  # a list only ever adds: nothing gave way
                overrides.append(Override(key, read, in_force))
            read = in_force
        values[key] = read
    for key in Settings.__struct_fields__:
        raw = os.environ.get(key.upper())
        if raw is not None and (read := _from_env(key, raw)) is not None:
            values[key] = read
            overrides = [o for o in overrides if o.key != key]
    for key, default in LEAN_PROTECTIVE.items():
        in_force, gave_way = number_in_force(project, key, default)
        if gave_way is not None:
            overrides.append(Override(key, gave_way, in_force))
    return Settings(**values), overrides  # type: ignore[arg-type]


def load_settings(project: Path) -> Settings:
    """The settings in force for `project` (`resolve_settings`)."""
    return resolve_settings(project)[0]


def override_line(overrides: list[Override]) -> str | None:
    """One line naming the project's settings that gave way to the user's, or None when none did."""
    if not overrides:
        return None
    shown = ", ".join(f"{o.key} {_shown(o.in_force)} (project: {_shown(o.project)})" for o in overrides)
    return f"settings: yours kept over the project's, which may only tighten them: {shown}"


def _shown(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return f"{value:g}" if isinstance(value, float) else str(value)


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


class LeanSettings(msgspec.Struct, frozen=True):
    """The learner's side of the lean context (each a setting of the same name, see README)."""

    stale_after: int = 20
    retire_after: int = 60
    max_removed_share: float = DEFAULT_MAX_REMOVED_SHARE
    max_shrink_share: float = DEFAULT_MAX_SHRINK_SHARE
    dedup_threshold: float | None = None


def lean_settings(project: Path) -> LeanSettings:
    defaults = LeanSettings()
    threshold = setting_number(project, "playbook_dedup_threshold", -1.0)
    return LeanSettings(
        stale_after=int(setting_number(project, "playbook_stale_after_sessions", defaults.stale_after)),
        retire_after=int(setting_number(project, "playbook_retire_after_sessions", defaults.retire_after)),
        max_removed_share=setting_number(project, "playbook_collapse_max_removed_share", defaults.max_removed_share),
        max_shrink_share=setting_number(project, "playbook_collapse_max_shrink_share", defaults.max_shrink_share),
        dedup_threshold=threshold if 0 < threshold <= 1 else None,
    )
