"""Where a project's playbook lives."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from eventlog.errors import PlaybookError
from projections.repository import PlaybookRepository

from .inject import claude_outside


class OutsideProject(PlaybookError):
    """The project's `.claude` is a link that leads out of the project."""


def get_project_dir() -> Path:
    """The project Claude Code runs in: `CLAUDE_PROJECT_DIR`, else the current directory."""
    configured = os.environ.get("CLAUDE_PROJECT_DIR")
    return Path(configured) if configured else Path.cwd()


def claude_dir(project: Path | None = None) -> Path:
    """`<project>/.claude`; refused (`OutsideProject`) when it is a link leading out of the project, so
    nothing of the playbook is ever read or written in a directory a repository points it to."""
    root = project or get_project_dir()
    outside = claude_outside(str(root))
    if outside is not None:
        raise OutsideProject(f"{root / '.claude'} is a link to {outside}, outside the project: the playbook is "
                             "not read or written there")
    return root / ".claude"


_collecting: list[list[PlaybookRepository]] = []


def repository(project: Path | None = None) -> PlaybookRepository:
    """The playbook of `project`; inside `collecting()`, remembered so the command can say what it found."""
    repo = PlaybookRepository(claude_dir(project))
    if _collecting:
        _collecting[-1].append(repo)
    return repo


@contextmanager
def collecting() -> Iterator[list[PlaybookRepository]]:
    """The repositories `repository` makes inside this block, oldest first."""
    repos: list[PlaybookRepository] = []
    _collecting.append(repos)
    try:
        yield repos
    finally:
        _collecting.pop()
