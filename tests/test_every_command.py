"""Every subcommand of `playbook`, generated from the parser, in the projects a user meets on a first day and a
hostile repository can make: no `.claude`, `.claude` a file, read-only, or a link out of the project, and an
empty HOME. Each ends in a clean exit or one line of error, never a traceback. A new subcommand is covered
without editing this file: its arguments are made from the names the parser gives them."""

from __future__ import annotations

import argparse
import io
import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from playbook.commands.cli import build_parser, main

PLACEHOLDERS: dict[str, Callable[[Path], str]] = {
    "when": lambda tmp: "1",
    "entry": lambda tmp: "pat-001",
    "a": lambda tmp: "1",
    "b": lambda tmp: "2",
    "target": lambda tmp: "pat-001",
    "text": lambda tmp: "Run the tests before committing",
    "id": lambda tmp: "pat-001",
    "file": lambda tmp: str(tmp / "missing.json"),
    "event": lambda tmp: "SessionEnd",
    "other": lambda tmp: str(tmp / "other.jsonl"),
    "ancestor": lambda tmp: str(tmp / "ancestor.jsonl"),
    "ours": lambda tmp: str(tmp / "ours.jsonl"),
    "theirs": lambda tmp: str(tmp / "theirs.jsonl"),
    "path": lambda tmp: ".claude/playbook.events.jsonl",
    "name": lambda tmp: "post-merge",
    "hook_args": lambda tmp: "0",
    "org_command": lambda tmp: "list",
}
"""A value for each positional argument, by its name; a new one fails the test below until it is given one."""
OPTIONS: dict[str, Callable[[Path], list[str]]] = {
    "--claude-md": lambda tmp: ["--claude-md", str(tmp / "CLAUDE.md")],
    "--html": lambda tmp: ["--html", str(tmp / "page.html")],
}
LONG_RUNNING = {"serve"}
"""Commands that run until stopped: they are checked to start or refuse in a process of their own."""


def subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    found = [action for action in parser._actions if isinstance(action, argparse._SubParsersAction)]
    return dict(found[0].choices)


def arguments(name: str, tmp: Path) -> list[str]:
    """Minimal valid arguments for subcommand `name`, made from its parser."""
    parser = subcommands()[name]
    args = [name]
    for action in parser._actions:
        if action.option_strings:
            if action.required:
                args += OPTIONS[action.option_strings[0]](tmp)
            continue
        if action.nargs in ("?", "*"):
            continue
        args.append(PLACEHOLDERS[action.dest](tmp))
    return args


def project_of(kind: str, tmp: Path) -> Path:
    project = tmp / "project"
    project.mkdir()
    if kind == "claude is a file":
        (project / ".claude").write_text("not a directory\n")
    elif kind == "claude is read-only":
        (project / ".claude").mkdir()
        (project / ".claude").chmod(stat.S_IRUSR | stat.S_IXUSR)
    elif kind == "claude links out":
        (tmp / "elsewhere").mkdir()
        (project / ".claude").symlink_to(tmp / "elsewhere")
    return project


KINDS = ["no claude", "claude is a file", "claude is read-only", "claude links out", "empty home"]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in list(os.environ):
        if name.startswith(("CLAUDE_", "PLAYBOOK_", "ANTHROPIC_", "AGENTIC_CONTEXT_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no Claude Code: learning has no backend here
    return home


def test_every_positional_argument_has_a_placeholder(tmp_path: Path) -> None:
    for name in subcommands():
        arguments(name, tmp_path)  # a KeyError names the argument a new subcommand needs a value for


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", sorted(set(subcommands()) - LONG_RUNNING))
def test_a_command_ends_cleanly_or_in_one_line(name: str, kind: str, home: Path, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    project = project_of(kind, tmp_path)
    if kind == "empty home":
        monkeypatch.setenv("HOME", str(tmp_path / "empty"))
        (tmp_path / "empty").mkdir()
    monkeypatch.chdir(project)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"{}")))
    try:
        code = main(["--project", str(project), *arguments(name, tmp_path)])
    except SystemExit as exc:  # argparse's own usage error
        code = exc.code if isinstance(exc.code, int) else 1
    finally:
        if kind == "claude is read-only":
            (project / ".claude").chmod(stat.S_IRWXU)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert isinstance(code, int)
    if code != 0:  # a report on stdout (verify's problems), or one line on stderr (and at most a hint after it)
        lines = [line for line in err.splitlines() if line.strip() and not line.startswith("usage:")]
        assert len(lines) <= 2 and (lines or out.strip()), err
    assert not (tmp_path / "elsewhere").exists() or not any((tmp_path / "elsewhere").iterdir())


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", sorted(LONG_RUNNING))
def test_a_long_running_command_starts_or_refuses_in_one_line(name: str, kind: str, home: Path,
                                                              tmp_path: Path) -> None:
    import select
    import signal
    import subprocess

    project = project_of(kind, tmp_path)
    env = {**os.environ, "HOME": str(home)}
    process = subprocess.Popen([sys.executable, "-m", "playbook", "--project", str(project),
                                *arguments(name, tmp_path), "--port", "0"], cwd=project, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert select.select([process.stdout], [], [], 60)[0], "neither started nor refused within a minute"
        first = process.stdout.readline()  # its address once it serves; nothing when it refused and ended
        if first:
            process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
        if kind == "claude is read-only":
            (project / ".claude").chmod(stat.S_IRWXU)
    assert "Traceback" not in first + out + err
    if first:
        assert "http://127.0.0.1:" in first, first
    else:
        assert process.returncode != 0 and len(err.strip().splitlines()) == 1, (process.returncode, err)
