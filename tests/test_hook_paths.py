"""Hooks meet a project's `.claude/` files that are symlinks a repository carries: they read no device
or FIFO, and write nothing through a link to a file outside the project."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from eventlog.errors import StorageError
from playbook.learn import LEARN_LOCK, LEARN_LOG, learning_lock, request_learning, spawn_learner

ROOT = Path(__file__).resolve().parent.parent


def _script(name: str, project: Path, stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "CLAUDE_PROJECT_DIR": str(project)}
    return subprocess.run([sys.executable, "-I", "-S", str(ROOT / "playbook" / name)], input=stdin,
                          capture_output=True, env=env, timeout=20)


@pytest.mark.parametrize("script,name", [("inject.py", "playbook.hook.json"), ("recall.py", "playbook.recall.json")])
@pytest.mark.parametrize("target", ["/dev/zero", "fifo"])
def test_hook_reads_no_device_or_fifo_behind_a_link(tmp_path: Path, script: str, name: str, target: str) -> None:
    (tmp_path / ".claude").mkdir()
    if target == "fifo":
        os.mkfifo(tmp_path / "fifo")
        target = "../fifo"
    (tmp_path / ".claude" / name).symlink_to(target)
    done = _script(script, tmp_path, b'{"prompt": "how do we deploy the service"}')
    assert (done.returncode, done.stdout) == (0, b"")
    assert b"Traceback" not in done.stderr


def _dangling(tmp_path: Path, name: str) -> Path:
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    outside = tmp_path / "home" / ".bash_login"
    outside.parent.mkdir()
    (project / ".claude" / name).symlink_to(os.path.relpath(outside, project / ".claude"))
    return project


def test_log_append_does_not_write_through_a_link(tmp_path: Path) -> None:
    project = _dangling(tmp_path, "playbook.events.jsonl")
    with pytest.raises(StorageError):
        request_learning(project, "SessionEnd", "/t", "s1")
    assert not (tmp_path / "home" / ".bash_login").exists()


def test_log_lock_does_not_create_through_a_link(tmp_path: Path) -> None:
    project = _dangling(tmp_path, "playbook.events.jsonl.lock")
    with pytest.raises(StorageError):
        request_learning(project, "SessionEnd", "/t", "s1")
    assert not (tmp_path / "home" / ".bash_login").exists()


@pytest.mark.parametrize("name", [LEARN_LOG, LEARN_LOCK])
def test_learner_files_are_not_created_through_a_link(tmp_path: Path, name: str) -> None:
    project = _dangling(tmp_path, name)
    with pytest.raises(OSError):
        if name == LEARN_LOG:
            spawn_learner(project)
        else:
            with learning_lock(project):
                pass
    assert not (tmp_path / "home" / ".bash_login").exists()
