"""The settings files that shape the projections: where they are, how they are read, and their stamp.

A repository's settings file is untrusted input: it is read non-blocking, as a regular file of bounded
size, and anything that is not a JSON object reads as no settings.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from . import quickroads
from .protective import COMBINE
from .quickroads import MAX_SETTINGS_BYTES


def settings_paths(project: Path) -> tuple[Path, Path]:
    """The user's and the project's settings files, in the order they apply (`quickroads.settings_paths`)."""
    user, project_file = quickroads.settings_paths(project)
    return Path(user), Path(project_file)


def read_settings(path: Path) -> dict[str, object]:
    """The JSON object a settings file holds; {} when there is none, or it cannot be read as one.

    Non-blocking, a regular file of at most MAX_SETTINGS_BYTES only: a repository can carry its
    settings file as a link to /dev/zero (read without end) or to a FIFO (an open that never returns),
    or nest it deeper than the decoder goes."""
    try:
        with os.fdopen(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return {}
            raw = handle.read(MAX_SETTINGS_BYTES + 1)
        if len(raw) > MAX_SETTINGS_BYTES:
            return {}
        data = json.loads(raw.decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def user_config_dir() -> Path:
    """Claude Code's configuration directory: `$CLAUDE_CONFIG_DIR`, else `~/.claude`."""
    return Path(quickroads.config_dir())


def settings_stamp(project: Path) -> str:
    """A token that changes whenever a setting that shapes the injection may have (`quickroads.settings_stamp`,
    which the hook scripts compute too)."""
    return quickroads.settings_stamp(project)


def setting_number(project: Path, key: str, default: float) -> float:
    """A numeric setting of the lean context (`number_in_force`)."""
    return number_in_force(project, key, default)[0]


def number_in_force(project: Path, key: str, default: float) -> tuple[float, float | None]:
    """A numeric setting of the lean context, and the project's value when it gave way to the user's.

    The environment variable `KEY`, else the project's settings file, else the user's, else `default`;
    but for a protective setting (`projections.protective.COMBINE`) the project's value may only tighten
    the user's (the user's default standing for a value the user never set). Negative or unreadable
    values are ignored."""
    raw = os.environ.get(key.upper())
    if raw is not None:
        try:
            value = float(raw.strip())
        except ValueError:
            value = -1.0
        if value >= 0:
            return value, None
    user_path, project_path = settings_paths(project)
    user, mine = _number(read_settings(user_path).get(key)), _number(read_settings(project_path).get(key))
    found = default if user is None else user
    if mine is None:
        return found, None
    combine = COMBINE.get(key)
    if combine is None:
        return mine, None
    in_force = combine(float(found), mine)
    assert isinstance(in_force, float)
    return in_force, (None if in_force == mine else mine)


def setting_switch(project: Path, key: str, default: bool) -> bool:
    """A switch that shapes a projection: the environment variable `KEY` (1/0, true/false, yes/no, on/off),
    else the project's settings file, else the user's, else `default`."""
    raw = os.environ.get(key.upper(), "").strip().lower()
    if raw in _TRUE | _FALSE:
        return raw in _TRUE
    found = default
    for path in settings_paths(project):
        value = read_settings(path).get(key)
        if isinstance(value, bool):
            found = value
    return found


_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def _number(given: object) -> float | None:
    if isinstance(given, (int, float)) and not isinstance(given, bool) and given >= 0:
        return float(given)
    return None
