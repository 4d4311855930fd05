"""Where a project's playbook lives, and the user-level one."""

from __future__ import annotations

import argparse
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from eventlog.errors import PlaybookError
from projections.quickroads import PLAYBOOK_FILES, claude_outside
from projections.quickroads import user_dir as _user_dir
from projections.repository import PlaybookRepository


class OutsideProject(PlaybookError):
    """The project's `.claude` is a link that leads out of the project."""


def get_project_dir() -> Path:
    """The project Claude Code runs in: `CLAUDE_PROJECT_DIR`, else the current directory."""
    configured = os.environ.get("CLAUDE_PROJECT_DIR")
    return Path(configured) if configured else Path.cwd()


PLAYBOOK_PATHS = PLAYBOOK_FILES
"""What the hooks and the learner read and write in `.claude`, each with the kind of file it must be."""


def claude_dir(project: Path | None = None) -> Path:
    """`<project>/.claude`; refused (`OutsideProject`) when it, or one of the playbook's files in it, is a link
    leading out of the project, or when such a file is a FIFO, a device or a directory: nothing of the
    playbook is ever read or written where a repository points it, and no read waits or runs without end."""
    root = project or get_project_dir()
    outside = claude_outside(str(root))
    if outside is not None:
        raise OutsideProject(f"{root / '.claude'} is a link to {outside}, outside the project: the playbook is "
                             "not read or written there")
    directory = root / ".claude"
    base = os.path.join(os.path.realpath(root), "")
    for name, kind in PLAYBOOK_PATHS:
        path = directory / name
        try:
            mode = os.stat(path).st_mode
        except (FileNotFoundError, NotADirectoryError):
            # Absent, a link to nothing (which no write follows), or `.claude` is no directory: the store
            # then says in one line that it cannot write there, and readers see an empty playbook.
            continue
        except OSError as exc:
            raise OutsideProject(f"{path} cannot be used: {exc.strerror or exc}: the playbook is not read or "
                                 "written there") from exc
        if os.path.islink(path) and not os.path.realpath(path).startswith(base):
            raise OutsideProject(f"{path} is a link to {os.path.realpath(path)}, outside the project: the "
                                 "playbook is not read or written there")
        if not kind(mode):
            what = "a directory" if kind is stat.S_ISDIR else "a regular file"
            raise OutsideProject(f"{path} is not {what}: the playbook is not read or written there")
    return directory


class Opened(list[PlaybookRepository]):
    """The repositories a command opened, oldest first, and the `.claude` directories whose playbook.json
    holding what the log does not the command reported itself (`told_divergence`): said once, not again."""

    def __init__(self) -> None:
        super().__init__()
        self.told: set[Path] = set()


_collecting: list[Opened] = []


def user_dir() -> Path:
    """Where the user-level playbook lives: `PLAYBOOK_USER_DIR`, else `$CLAUDE_CONFIG_DIR/playbook`, else
    `~/.claude/playbook` (`quickroads.user_dir`, which the hook scripts read too)."""
    return Path(_user_dir())


def repository(project: Path | None = None) -> PlaybookRepository:
    """The project's playbook, whose injection puts the user-level playbook ahead of it; inside
    `collecting()`, remembered so the command can say what it found."""
    return _collected(PlaybookRepository(claude_dir(project), user_dir=user_dir()))


def user_repository() -> PlaybookRepository:
    """The user-level playbook: the same log and guarantees as a project's, in `user_dir()`, which is the user's
    own: its files are reached from it (no link below it followed), wherever it is."""
    return _collected(PlaybookRepository(user_dir(), user_level=True, root=user_dir()))


def project_dir(args: argparse.Namespace) -> Path:
    """The project a command works on; one given with `--project` must be an existing directory."""
    project = getattr(args, "project", None)
    if not project:
        return get_project_dir()
    path = Path(project)
    if not path.is_dir():
        # Reading on would show an empty playbook of a project that is not there, with exit 0.
        what = "is not a directory" if path.exists() else "does not exist"
        raise PlaybookError(f"project {project} {what}")
    return path


def playbook_of(args: argparse.Namespace) -> PlaybookRepository:
    """The playbook a command acts on: the user-level one with `--user`, else the project's."""
    if getattr(args, "user", False):
        return user_repository()
    return repository(project_dir(args))


def _collected(repo: PlaybookRepository) -> PlaybookRepository:
    if _collecting:
        _collecting[-1].append(repo)
    return repo


def told_divergence(repo: PlaybookRepository) -> None:
    """The command itself reported that `repo`'s playbook.json holds what its log does not."""
    if _collecting:
        _collecting[-1].told.add(repo.claude_dir)


@contextmanager
def collecting() -> Iterator[Opened]:
    """The repositories `repository` and `user_repository` make inside this block, oldest first."""
    repos = Opened()
    _collecting.append(repos)
    try:
        yield repos
    finally:
        _collecting.pop()
