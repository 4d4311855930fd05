"""Hooks meet a project's `.claude/` files that are symlinks a repository carries: they read no device
or FIFO, and write nothing through a link to a file outside the project."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from eventlog.errors import StorageError
from playbook.learner.bootstrap import transcripts_dir
from playbook.learner.requests import LEARN_LOCK, LEARN_LOG, learning_lock, request_learning, spawn_learner

ROOT = Path(__file__).resolve().parent.parent


def _script(name: str, project: Path, stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "CLAUDE_PROJECT_DIR": str(project)}
    return subprocess.run([sys.executable, "-I", "-S", str(ROOT / "playbook" / "quick" / name)], input=stdin,
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
    with pytest.raises((OSError, StorageError)):  # the lock's refusal is one line from the command: a StorageError
        if name == LEARN_LOG:
            spawn_learner(project)
        else:
            with learning_lock(project):
                pass
    assert not (tmp_path / "home" / ".bash_login").exists()


# --- a `.claude` that is itself a link -------------------------------------------------------------------


def _linked_out(tmp_path: Path) -> tuple[Path, Path, dict[str, bytes]]:
    """A project whose `.claude` links to another project's, which holds a playbook: what it holds, byte for byte."""
    from eventlog.decide import ApplyOperations
    from eventlog.events import Cause
    from projections.repository import PlaybookRepository

    other = tmp_path / "other" / ".claude"
    PlaybookRepository(other).append([ApplyOperations([{"type": "ADD", "text": "the other project's secret"}])],
                                     Cause(source="test"))
    project = tmp_path / "project"
    project.mkdir()
    (project / ".claude").symlink_to(other, target_is_directory=True)
    return project, other, _files(other)


def _files(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def _hook(project: Path, *command: str, stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "CLAUDE_PROJECT_DIR": str(project), "HOME": str(project.parent / "home"),
           "PLAYBOOK_UPDATE_ON_EXIT": "1"}
    return subprocess.run(list(command), input=stdin, capture_output=True, env=env, cwd=project, timeout=60)


@pytest.mark.slow
def test_a_claude_directory_linked_out_of_the_project_is_neither_read_nor_written(tmp_path: Path) -> None:
    project, other, before = _linked_out(tmp_path)
    config = project.parent / "home" / ".claude" / "projects"
    config.mkdir(parents=True)
    (config / "t.jsonl").write_text('{"type": "user", "message": {"content": "hi"}}\n')
    session = b'{"session_id": "s1", "transcript_path": "%s", "reason": "exit"}' % str(config / "t.jsonl").encode()
    runs = {
        "inject.py": _hook(project, sys.executable, "-I", "-S", str(ROOT / "playbook" / "quick" / "inject.py"), stdin=b"{}"),
        "recall.py": _hook(project, sys.executable, "-I", "-S", str(ROOT / "playbook" / "quick" / "recall.py"),
                           stdin=b'{"prompt": "the other project secret"}'),
        "SessionStart": _hook(project, sys.executable, "-I", "-m", "playbook", "hook", "SessionStart", stdin=b"{}"),
        "SessionEnd": _hook(project, sys.executable, "-I", "-m", "playbook", "hook", "SessionEnd", stdin=session),
    }
    for name, done in runs.items():
        assert (done.returncode, done.stdout) == (0, b""), (name, done)
        if name != "recall.py":  # recall is an extra: SessionStart says why there is nothing
            assert done.stderr.count(b"\n") == 1 and b"outside the project" in done.stderr, (name, done.stderr)
    for command in (["show"], ["import", str(tmp_path / "none.json")], ["install"]):
        done = _hook(project, sys.executable, "-I", "-m", "playbook", *command, stdin=b"")
        assert done.returncode == 1 and done.stdout == b"", (command, done)
        assert done.stderr.count(b"\n") == 1 and b"outside the project" in done.stderr, (command, done.stderr)
    assert _files(other) == before  # nothing written, created or moved there
    assert not (project.parent / "home" / ".claude" / "settings.json").exists()


def test_a_claude_directory_linked_inside_the_project_is_used(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "config" / "claude").mkdir(parents=True)
    (project / ".claude").symlink_to("config/claude", target_is_directory=True)
    request_learning(project, "SessionEnd", "/t", "s1")
    assert (project / "config" / "claude" / "playbook.events.jsonl").exists()
    done = _hook(project, sys.executable, "-I", "-S", str(ROOT / "playbook" / "quick" / "inject.py"), stdin=b"{}")
    assert done.returncode == 0 and done.stderr == b"", done


# --- a settings file a repository carries as a link ------------------------------------------------------

PLUGIN_HOOK = ROOT / "hooks" / "playbook-hook"


def _limited() -> None:
    """A child held to 1.5 GiB of address space: a hook that reads without end fails fast, not the machine."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (3 << 29, 3 << 29))


@pytest.mark.slow
@pytest.mark.parametrize("event", ["SessionStart", "UserPromptSubmit", "SessionEnd"])
@pytest.mark.parametrize("target", ["/dev/zero", "fifo", "deep"])
def test_a_settings_file_that_is_a_device_a_fifo_or_too_deep_is_ignored(tmp_path: Path, event: str,
                                                                         target: str) -> None:
    from eventlog.decide import ApplyOperations
    from eventlog.events import Cause
    from projections.repository import PlaybookRepository

    project, home = tmp_path / "project", tmp_path / "home"
    transcript = transcripts_dir(project, home / ".claude") / "t.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_text('{"type": "user", "message": {"content": "hi"}}\n')
    PlaybookRepository(project / ".claude").append(
        [ApplyOperations([{"type": "ADD", "text": "use pathlib for file paths"}])], Cause(source="test"))
    settings = project / ".claude" / "playbook.settings.json"
    if target == "fifo":
        os.mkfifo(tmp_path / "fifo")
        settings.symlink_to(tmp_path / "fifo")
    elif target == "deep":
        settings.write_text("[" * 100_000)
    else:
        settings.symlink_to(target)
    stdin = {"SessionStart": b'{"source": "startup"}',
             "UserPromptSubmit": b'{"prompt": "pathlib for file paths"}',
             "SessionEnd": b'{"session_id": "s1", "reason": "exit", "transcript_path": "%s"}' % str(transcript).encode()}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "PLAYBOOK_", "ANTHROPIC_"))}
    env |= {"HOME": str(home), "CLAUDE_PROJECT_DIR": str(project), "PLAYBOOK_PYTHON": sys.executable,
            "PLAYBOOK_CLAUDE": "", "PLAYBOOK_RECALL_MAX_CHARS": "2000", "PLAYBOOK_INJECTION_BUDGET": "1"}
    done = subprocess.run(["sh", str(PLUGIN_HOOK), event], input=stdin[event], capture_output=True, env=env,
                          cwd=project, timeout=20, preexec_fn=_limited)
    assert done.returncode == 0 and b"Error" not in done.stderr and b"failed" not in done.stderr, done.stderr
    if event == "SessionStart":
        assert b"left out" in done.stdout or b"use pathlib" in done.stdout, done
    if event == "SessionEnd":
        log = (project / ".claude" / "playbook.events.jsonl").read_text()
        assert "LearningRequested" in log or "learning_requested" in log, log[-500:]


# --- a playbook file a repository carries as a link out of the project, or to a device -------------------


def _seeded(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """(project with a playbook, the user's home, the env its hooks run with)."""
    from eventlog.decide import ApplyOperations
    from eventlog.events import Cause
    from projections.repository import PlaybookRepository

    project, home = tmp_path / "project", tmp_path / "home"
    home.mkdir()
    PlaybookRepository(project / ".claude").append(
        [ApplyOperations([{"type": "ADD", "text": "use pathlib for file paths"}])], Cause(source="test"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "PLAYBOOK_", "ANTHROPIC_"))}
    env |= {"HOME": str(home), "CLAUDE_PROJECT_DIR": str(project), "PLAYBOOK_PYTHON": sys.executable,
            "PLAYBOOK_CLAUDE": ""}
    return project, home, env


def _run_hook(event: str, project: Path, env: dict[str, str], stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["sh", str(PLUGIN_HOOK), event], input=stdin, capture_output=True, env=env, cwd=project,
                          timeout=20, preexec_fn=_limited)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["playbook.json", "playbook.events.jsonl"])
@pytest.mark.parametrize("event", ["SessionStart", "SessionEnd"])
def test_a_users_file_behind_a_playbook_link_is_never_copied_into_the_project(tmp_path: Path, name: str,
                                                                               event: str) -> None:
    project, home, env = _seeded(tmp_path)
    secret = home / ".docker" / "config.json"
    secret.parent.mkdir()
    secret.write_text('{"auths": {"registry.example": {"auth": "dXNlcjpodW50ZXIy"}}}\n')
    if name == "playbook.events.jsonl":
        (project / ".claude" / "playbook.json").unlink()
    (project / ".claude" / name).unlink()
    (project / ".claude" / name).symlink_to(secret)
    transcript = transcripts_dir(project, home / ".claude") / "t.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_text('{"type": "user", "message": {"content": "hi"}}\n')
    stdin = b'{"session_id": "s1", "reason": "exit", "transcript_path": "%s"}' % str(transcript).encode()
    done = _run_hook(event, project, env, stdin)
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done
    assert done.stderr.count(b"\n") <= 2 and b"is a link" in done.stderr, done.stderr
    copies = [p for p in (project / ".claude").iterdir() if not p.is_symlink() and b"dXNlcjpodW50ZXIy" in p.read_bytes()]
    assert copies == []
    assert secret.read_text() == '{"auths": {"registry.example": {"auth": "dXNlcjpodW50ZXIy"}}}\n'


@pytest.mark.slow
@pytest.mark.parametrize("name", ["playbook.hook.json", "playbook.recall.json"])
@pytest.mark.parametrize("target", ["/dev/zero", "fifo"])
@pytest.mark.parametrize("event", ["SessionStart", "UserPromptSubmit"])
def test_a_projection_linked_to_a_device_or_fifo_beside_a_log_neither_hangs_nor_fills_memory(
        tmp_path: Path, name: str, target: str, event: str) -> None:
    project, _, env = _seeded(tmp_path)
    if target == "fifo":
        os.mkfifo(tmp_path / "fifo")
        target = str(tmp_path / "fifo")
    (project / ".claude" / name).unlink(missing_ok=True)
    (project / ".claude" / name).symlink_to(target)
    done = _run_hook(event, project, env, b'{"prompt": "pathlib for file paths"}')
    assert done.returncode == 0 and b"Error" not in done.stderr, done.stderr
    assert done.stderr.count(b"\n") <= 1, done.stderr
    if name == "playbook.hook.json" or event == "UserPromptSubmit":  # the other is current: its fast path injects
        assert done.stdout == b"", done


@pytest.mark.slow
def test_a_projection_grown_far_past_what_a_session_takes_is_not_read_whole(tmp_path: Path) -> None:
    """A current header over gigabytes (here sparse): the fast path leaves it to the full hook, which
    writes the projection again and injects what the log holds."""
    project, _, env = _seeded(tmp_path)
    first = _run_hook("SessionStart", project, env, b'{"source": "startup"}')
    assert first.returncode == 0 and b"use pathlib" in first.stdout and first.stderr == b"", first
    projection = project / ".claude" / "playbook.hook.json"
    written = projection.read_bytes()
    with projection.open("r+b") as handle:
        handle.truncate(8 << 30)  # the header still names the log's size and playbook.json's time
    done = _run_hook("SessionStart", project, env, b'{"source": "startup"}')
    assert (done.returncode, done.stderr) == (0, b""), done.stderr[-2000:]
    # the full hook also says, once, that learning has no model to reach here
    assert json.loads(done.stdout)["hookSpecificOutput"] == json.loads(first.stdout)["hookSpecificOutput"]
    assert projection.read_bytes() == written


def test_a_checkpoint_directory_linked_out_of_the_project_is_refused(tmp_path: Path) -> None:
    from playbook.wiring.project import OutsideProject, repository

    project, home, _ = _seeded(tmp_path)
    (home / "work").mkdir()
    (project / ".claude" / "playbook.checkpoints").symlink_to(home / "work", target_is_directory=True)
    with pytest.raises(OutsideProject, match="is a link"):
        repository(project)
    assert list((home / "work").iterdir()) == []


@pytest.mark.slow
@pytest.mark.parametrize("target", ["/dev/zero", "fifo"])
def test_a_gitattributes_linked_to_a_device_or_fifo_neither_hangs_nor_fills_a_learning_hook(tmp_path: Path,
                                                                                             target: str) -> None:
    project, home, env = _seeded(tmp_path)
    if target == "fifo":
        os.mkfifo(tmp_path / "fifo")
        target = str(tmp_path / "fifo")
    (project / ".gitattributes").symlink_to(target)
    transcript = transcripts_dir(project, home / ".claude") / "t.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_text('{"type": "user", "message": {"content": "hi"}}\n')
    stdin = b'{"session_id": "s1", "reason": "exit", "transcript_path": "%s"}' % str(transcript).encode()
    done = _run_hook("SessionEnd", project, env | {"PLAYBOOK_UPDATE_ON_EXIT": "1"}, stdin)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b""), done
    requested = (project / ".claude" / "playbook.events.jsonl").read_text()
    assert '"LearningRequested"' in requested


@pytest.mark.slow
def test_a_learning_hook_writes_no_git_hook_through_a_link_out_of_the_repository(tmp_path: Path) -> None:
    """A directory that is not a clone (an archive, a shared folder) brings its own `.git`: a git hook there
    that links to a script of the user's is left as it is when a learning hook registers the merge driver."""
    project, home, env = _seeded(tmp_path)
    subprocess.run(["git", "init", "-q", str(project)], check=True, capture_output=True)
    (project / ".gitattributes").write_text(".claude/playbook.events.jsonl merge=playbook eol=lf\n")
    script = home / "bin" / "deploy"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\necho deploying\n")
    hooks = project / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    for name in ("post-merge", "post-checkout", "post-rewrite", "post-commit"):
        (hooks / name).symlink_to(script)
    transcript = transcripts_dir(project, home / ".claude") / "t.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_text('{"type": "user", "message": {"content": "hi"}}\n')
    stdin = b'{"session_id": "s1", "reason": "exit", "transcript_path": "%s"}' % str(transcript).encode()
    done = _run_hook("SessionEnd", project, env | {"PLAYBOOK_UPDATE_ON_EXIT": "1"}, stdin)
    assert (done.returncode, done.stdout) == (0, b""), done
    assert script.read_text() == "#!/bin/sh\necho deploying\n"
    config = subprocess.run(["git", "config", "--get", "merge.playbook.driver"], cwd=project, capture_output=True)
    assert b"merge-driver" in config.stdout  # the driver itself is registered


@pytest.mark.slow
def test_a_projection_log_and_playbook_linked_to_another_projects_are_never_injected(tmp_path: Path) -> None:
    """A repository can carry `.claude` as a directory whose playbook files link to another project's: the
    fast path refuses them as the full hook does, and nothing of that playbook reaches the session."""
    other, _, env = _seeded(tmp_path)
    first = _run_hook("SessionStart", other, env, b'{"source": "startup"}')
    assert b"use pathlib" in first.stdout, first
    project = tmp_path / "repository"
    (project / ".claude").mkdir(parents=True)
    for name in ("playbook.events.jsonl", "playbook.json", "playbook.hook.json"):
        (project / ".claude" / name).symlink_to(other / ".claude" / name)
    done = _run_hook("SessionStart", project, {**env, "CLAUDE_PROJECT_DIR": str(project)}, b'{"source": "startup"}')
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done
    assert b"use pathlib" not in done.stdout and b"is a link" in done.stderr, done
