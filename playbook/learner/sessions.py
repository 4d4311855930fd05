"""Where Claude Code keeps a project's sessions, and whether a transcript's path lies there."""

from __future__ import annotations

import os

from projections.quickroads import project_slug


def claude_config_dir() -> str:
    """Claude Code's configuration directory, resolved: `$CLAUDE_CONFIG_DIR` if set, else `~/.claude`."""
    configured = os.environ.get("CLAUDE_CONFIG_DIR")
    return os.path.realpath(configured or os.path.join(os.path.expanduser("~"), ".claude"))


def project_slugs(absolute: str) -> list[str]:
    """The names Claude Code gives the directory of the project at `absolute`: `project_slug`, then the name
    older versions gave (only `/` written as `-`)."""
    return list(dict.fromkeys([project_slug(absolute), absolute.replace(os.sep, "-")]))


def project_sessions(project: str | os.PathLike[str], directory: str) -> list[str]:
    """The directories, resolved, where Claude Code (configured in `directory`, already resolved) keeps the
    sessions of `project`: `projects/<slug>` of its real path and of its path as given."""
    found: dict[str, None] = {}
    for path in (os.path.realpath(project), os.path.abspath(project)):
        for slug in project_slugs(path):
            found[os.path.realpath(os.path.join(directory, "projects", slug))] = None
    return list(found)


def inside_project_sessions(path: str, project: str | os.PathLike[str], directory: str) -> str | None:
    """`path` resolved when it lies inside one of `project_sessions(project, directory)`, else None; ValueError for
    a path no file can have.

    A log a repository ships can name any transcript in Claude Code's directory, another project's
    included: only this project's own sessions are learned from."""
    resolved = os.path.realpath(path)
    for sessions in project_sessions(project, directory):
        if resolved.startswith(os.path.join(sessions, "")):
            return resolved
    return None
