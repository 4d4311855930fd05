"""Where a project's playbook lives."""

from __future__ import annotations

import os
from pathlib import Path

from projections.repository import PlaybookRepository


def get_project_dir() -> Path:
    """The project Claude Code runs in: `CLAUDE_PROJECT_DIR`, else the current directory."""
    configured = os.environ.get("CLAUDE_PROJECT_DIR")
    return Path(configured) if configured else Path.cwd()


def claude_dir(project: Path | None = None) -> Path:
    return (project or get_project_dir()) / ".claude"


def repository(project: Path | None = None) -> PlaybookRepository:
    return PlaybookRepository(claude_dir(project))
