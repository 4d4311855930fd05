"""Sharing a project's playbook through git: what is committed, what stays on each machine, and the merge driver.

The log is shared: `.gitattributes` names this project's merge driver for it, and for the
anchors file (`playbook anchor`), which is committed with it and merged as the union of both
sides' anchors, never left with conflict markers. Everything
else under `.claude/` that the playbook writes is derived or belongs to one machine (the
snapshot playbook.json and the hook's projection, locks, checkpoints, the learners'
output, kept torn tails) and is ignored. playbook.json is derived, not shared: it changes
with every transaction, so sharing it would conflict on every merge, and its right
content after a merge is a pure function of the merged log. Git hooks (post-merge,
post-checkout, post-rewrite, post-commit) rebuild it whenever git changed the log.

Everything written here sits between marker lines, so `unshare` removes exactly that.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from eventlog.errors import PlaybookError
from eventlog.safefiles import remove_file, write_file

DRIVER = "playbook"
LOG_PATH = ".claude/playbook.events.jsonl"
BEGIN = "# >>> playbook share >>>"
END = "# <<< playbook share <<<"
ANCHORS_PATH = ".claude/playbook.anchors"
ATTRIBUTES = [f"{LOG_PATH} merge={DRIVER} eol=lf", f"{ANCHORS_PATH} merge={DRIVER} eol=lf"]
IGNORED = [
    ".claude/playbook.json",
    ".claude/playbook.hook.json",
    ".claude/playbook.recall.json",
    ".claude/playbook.show.txt",
    ".claude/playbook.events.jsonl.lock",
    ".claude/playbook.learn.lock",
    ".claude/playbook.learn.log",
    ".claude/playbook.events.jsonl.torn-*",
    ".claude/playbook.json.unreadable-*",
    ".claude/playbook.json.legacy-*",
    ".claude/playbook.checkpoints/",
    ".claude/.playbook.*.tmp",
]
GIT_HOOKS = ("post-merge", "post-checkout", "post-rewrite", "post-commit")
_SHELLS = ("sh", "bash", "dash", "zsh", "ksh")


class GitError(PlaybookError):
    """git is missing, or the project is not inside a git repository."""


def _quote(path: str) -> str:
    return "'" + path.replace("'", "'\\''") + "'"


def python_command() -> str:
    """This interpreter by absolute path, with -P so nothing is imported from the repository it runs in."""
    return f"{_quote(os.path.abspath(sys.executable))} -P -m playbook"


def driver_command() -> str:
    return f"{python_command()} merge-driver %O %A %B %P"


def _git(project: Path, *args: str, check: bool = True) -> str:
    try:
        done = subprocess.run(["git", *args], cwd=project, capture_output=True, text=True, timeout=30)
    except FileNotFoundError as exc:
        raise GitError("git is not installed") from exc
    except subprocess.TimeoutExpired as exc:
        raise GitError(f"git {args[0]} did not answer in 30 s") from exc
    if check and done.returncode != 0:
        detail = (done.stderr.strip().splitlines() or ["failed"])[-1]
        raise GitError(f"git {' '.join(args[:2])}: {detail}")
    return done.stdout if done.returncode == 0 else ""


def _hooks_dir(project: Path) -> Path | None:
    """Where git looks for this repository's hooks, or None when that is outside the repository and its
    git directory (a `core.hooksPath` elsewhere): nothing is written there."""
    found = _git(project, "rev-parse", "--git-path", "hooks").strip()
    common = _git(project, "rev-parse", "--git-common-dir").strip()
    if not found or not common:
        raise GitError(f"{project} is not inside a git repository")
    hooks, git_dir, top = (project / found).resolve(), (project / common).resolve(), project.resolve()
    if hooks.is_relative_to(git_dir) or hooks.is_relative_to(top):
        return hooks
    return None


# --- marked blocks in text files -------------------------------------------------------------------------


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def _without_block(text: str) -> str:
    lines = text.splitlines(keepends=True)
    kept: list[str] = []
    inside = False
    for line in lines:
        stripped = line.strip()
        if stripped == BEGIN:
            inside = True
        elif stripped == END and inside:
            inside = False
        elif not inside:
            kept.append(line)
    return "".join(kept)


def _with_block(text: str, lines: list[str]) -> str:
    base = _without_block(text)
    present = {line.strip() for line in base.splitlines()}
    wanted = [line for line in lines if line.strip() not in present]
    if not wanted:
        return base
    if base and not base.endswith("\n"):
        base += "\n"
    return base + "\n".join([BEGIN, *wanted, END]) + "\n"


def _write(path: Path, text: str, created: bool) -> str:
    """Write `text` to `path`, a file at the project's top; remove a file left empty that this module created.
    Returns what happened. Follows no link (`eventlog.safefiles`): a link under the name is replaced."""
    if not text.strip() and created:
        remove_file(path, path.parent)
        return "removed"
    write_file(path, text.encode("utf-8"), path.parent)
    return "written"


# --- git hooks ---------------------------------------------------------------------------------------------


def _hook_lines(name: str) -> list[str]:
    return [f"{python_command()} git-hook {name} || true"]


def _is_shell(text: str) -> bool:
    first = text.splitlines()[0] if text else ""
    if not first.startswith("#!"):
        return False
    words = first[2:].split()
    if not words:
        return False
    program = os.path.basename(words[0])
    if program == "env" and len(words) > 1:
        program = os.path.basename(words[1])
    return program in _SHELLS


def _within(project: Path) -> tuple[Path, ...]:
    """Where a git hook of the repository at `project` may be written: its work tree and its git directory."""
    return project.resolve(), (project / _git(project, "rev-parse", "--git-common-dir").strip()).resolve()


def _place(path: Path, within: tuple[Path, ...]) -> tuple[Path, Path] | None:
    """The file `path` names (a link inside `within` followed) and the place of `within` it lies in; None when
    it leads out of them."""
    target = path.resolve()
    return next(((target, place) for place in within if target.is_relative_to(place)), None)


def _write_hook(target: Path, place: Path, text: str) -> None:
    """Write the hook script `target`, executable, reached from `place` without following a link
    (`eventlog.safefiles`): a script the user had keeps its mode, with execute added."""
    try:
        mode: int | None = stat.S_IMODE(os.lstat(target).st_mode) | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH
    except FileNotFoundError:
        mode = None
    write_file(target, text.encode("utf-8"), place, mode=0o777, exact_mode=mode)


def _install_hook(path: Path, name: str, within: tuple[Path, ...]) -> str:
    found = _place(path, within)
    if found is None:
        # A directory that is no clone of ours brings its own .git: its hook may be a link to a script of the user's.
        return f"left {path} as it is (a link out of the repository): run `playbook rebuild` after git changes the log"
    text = _read(path)
    if text is None:
        text = "#!/bin/sh\n"
    elif BEGIN not in text and not _is_shell(text):
        return f"left {path} as it is (not a shell script): run `playbook rebuild` after git changes the log"
    _write_hook(*found, _with_block(text, _hook_lines(name)))
    return ""


def _remove_hook(path: Path, within: tuple[Path, ...]) -> bool:
    found = _place(path, within)
    text = _read(path) if found is not None else None
    if found is None or text is None or BEGIN not in text:
        return False
    rest = _without_block(text)
    if not [line for line in rest.splitlines() if line.strip() and not line.startswith("#!")]:
        # the hook's own name goes (a link inside the repository too), never the script it may link to
        remove_file(path, next(place for place in within if path.parent.resolve().is_relative_to(place)))
    else:
        _write_hook(*found, rest)
    return True


# --- share / unshare ----------------------------------------------------------------------------------------


def register(project: Path) -> list[str]:
    """Register the merge driver in the repository's git config and install the git hooks; idempotent.

    Returns notes about hooks that were left alone."""
    _git(project, "config", f"merge.{DRIVER}.name", "playbook event log (playbook merge-driver)")
    _git(project, "config", f"merge.{DRIVER}.driver", driver_command())
    hooks = _hooks_dir(project)
    if hooks is None:
        return ["git hooks not installed: core.hooksPath points outside the repository; run `playbook rebuild` "
                "after git changes the log"]
    notes = []
    within = _within(project)
    for name in GIT_HOOKS:
        if note := _install_hook(hooks / name, name, within):
            notes.append(note)
    return notes


def is_registered(project: Path) -> bool:
    return _git(project, "config", "--get", f"merge.{DRIVER}.driver", check=False).strip() == driver_command()


MAX_ATTRIBUTES_BYTES = 1 << 20


def names_our_driver(project: Path) -> bool:
    """True when the project's .gitattributes names the merge driver. Read as git reads it (never through a
    link), non-blocking and at most MAX_ATTRIBUTES_BYTES: every learning hook asks, and a repository can carry
    the file as a link to /dev/zero or a FIFO."""
    try:
        fd = os.open(project / ".gitattributes", os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return False
        text = handle.read(MAX_ATTRIBUTES_BYTES)
    return f"merge={DRIVER}".encode() in text


def ensure_registered(project: Path) -> None:
    """When the project's .gitattributes names our driver and this clone has not registered it, register it.

    What a teammate's fresh clone needs before its first merge; quiet, and never fails the caller."""
    try:
        if names_our_driver(project) and not is_registered(project):
            register(project)
    except (PlaybookError, OSError):
        pass


def share(project: Path) -> list[str]:
    """Make the playbook part of the repository at `project`. Idempotent; keeps what is there. Returns what it did."""
    _hooks_dir(project)  # fails early outside a git repository
    done = []
    for name, lines in ((".gitattributes", ATTRIBUTES), (".gitignore", IGNORED)):
        path = project / name
        before = _read(path)
        after = _with_block(before or "", lines)
        if after != (before or ""):
            _write(path, after, created=before is None)
            done.append(f"{name}: {', '.join(lines) if name == '.gitattributes' else 'per-machine files ignored'}")
    done.append(f"git config merge.{DRIVER}.driver = {driver_command()}")
    done.extend(register(project))
    done.append(f"git hooks {', '.join(GIT_HOOKS)}: rebuild playbook.json when git changes the log")
    return done


def unshare(project: Path) -> list[str]:
    """Undo `share`: its lines in .gitattributes and .gitignore, the driver's git config, its git hooks."""
    done = []
    for name in (".gitattributes", ".gitignore"):
        path = project / name
        before = _read(path)
        if before is None or BEGIN not in before:
            continue
        after = _without_block(before)
        done.append(f"{name}: {_write(path, after, created=not after.strip())}")
    if _git(project, "config", "--get-regexp", rf"^merge\.{DRIVER}\.", check=False).strip():
        _git(project, "config", "--remove-section", f"merge.{DRIVER}")
        done.append(f"git config: merge.{DRIVER} removed")
    hooks = _hooks_dir(project)
    within = _within(project)
    removed = [name for name in GIT_HOOKS if hooks is not None and _remove_hook(hooks / name, within)]
    if removed:
        done.append(f"git hooks: {', '.join(removed)} removed")
    return done
