"""Real git repositories for the sharing tests: a bare origin and clones that learn through the facade and CLI."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

from eventlog.domain import PlaybookState
from eventlog.store import LogReader, fold_log
from projections.snapshot import render

LOG = ".claude/playbook.events.jsonl"
HAS_GIT = shutil.which("git") is not None


def git_env(home: Path) -> dict[str, str]:
    return {**os.environ, "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
            "GIT_TERMINAL_PROMPT": "0"}


class Git:
    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        self.cwd, self.env = cwd, env

    def __call__(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        done = subprocess.run(["git", *args], cwd=self.cwd, env=self.env, capture_output=True, text=True,
                              timeout=120)
        if check and done.returncode != 0:
            raise AssertionError(f"git {' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
        return done


def playbook(project: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "playbook", "--project", str(project), *args], cwd=project,
                          env=env, capture_output=True, text=True, timeout=120)


@contextmanager
def project_env(project: Path):
    """The facade (`playbook.api`) works on CLAUDE_PROJECT_DIR: point it at `project` for a while."""
    before = os.environ.get("CLAUDE_PROJECT_DIR")
    os.environ["CLAUDE_PROJECT_DIR"] = str(project)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("CLAUDE_PROJECT_DIR", None)
        else:
            os.environ["CLAUDE_PROJECT_DIR"] = before


def learn(project: Path, result: dict) -> None:
    """One learning cycle through the spec's facade: load, update with the model's result, save."""
    from playbook.api import load_playbook, save_playbook, update_playbook_data

    with project_env(project):
        playbook_dict = load_playbook()
        save_playbook(update_playbook_data(playbook_dict, result))


def commits(project: Path) -> list:
    """The commit records of the project's log, in order (the log must read whole)."""
    reader = LogReader(project / LOG, strict=True)
    found = [t.commit for t in reader]
    assert reader.torn is None
    return found


def learned(project: Path) -> Counter:
    """How often each learning transaction (not a merge or a revert record) appears in the log."""
    return Counter(c.tx for c in commits(project) if c.source not in ("merge", "revert"))


def snapshot_is_a_rebuild(project: Path) -> bool:
    log = project / LOG
    state, position, _torn = fold_log(log, PlaybookState())
    try:
        return (project / ".claude" / "playbook.json").read_bytes() == render(state, position)
    except FileNotFoundError:
        return position.offset == 0


def assert_clean(project: Path) -> None:
    """`playbook verify` passes and playbook.json is what a rebuild writes."""
    done = playbook(project, "verify")
    assert done.returncode == 0, done.stdout + done.stderr
    assert snapshot_is_a_rebuild(project)
