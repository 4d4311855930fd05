"""A hook never folds a large log: a repository can ship (or a pull bring) a log of any size with no current
projection, and a session must start and a prompt go through all the same. The hook uses a current projection,
or injects nothing and says in one line which command projects the log. Texts entering from a file are cut."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from eventlog.decide import ApplyOperations, ImportLegacy
from eventlog.domain import MAX_TEXT_LENGTH
from eventlog.events import Cause, KeyPointImported
from eventlog.store import LogReader
from projections import quickroads
from projections import recall as index
from projections.repository import PlaybookRepository

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 200_000
"""The fold limit the hooks are run with here: the logs below are a few times larger."""

pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")]


MEASURED = ("import resource, subprocess, sys; done = subprocess.run(sys.argv[1:]); "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); sys.exit(done.returncode)")
"""Runs the hook as its only child and prints the most memory (KiB) it held, as the last line on stderr."""


def run_hook(script: str, project: Path, stdin: dict[str, str]) -> tuple[subprocess.CompletedProcess[bytes], int]:
    """The hook as Claude Code runs it, and the most memory (KiB) it held."""
    env = {**os.environ, "CLAUDE_PROJECT_DIR": str(project), "PLAYBOOK_HOOK_FOLD_LIMIT": str(LIMIT)}
    done = subprocess.run([sys.executable, "-c", MEASURED, sys.executable, "-I", "-S",
                           str(ROOT / "playbook" / "quick" / script)],
                          input=json.dumps(stdin).encode(), capture_output=True, env=env, cwd=project, timeout=30)
    lines = done.stderr.rstrip(b"\n").split(b"\n")
    done.stderr = b"\n".join(lines[:-1])
    return done, int(lines[-1])


def large_log(claude: Path, transactions: int = 60) -> PlaybookRepository:
    repo = PlaybookRepository(claude)
    for t in range(transactions):
        operations = [{"type": "ADD", "section": "PATTERNS & APPROACHES",
                       "text": f"deploy step {t}-{i}: " + "check the staging service first " * 40} for i in range(6)]
        repo.append([ApplyOperations(operations)], Cause(source="test"))
    return repo


def shipped(tmp_path: Path) -> Path:
    """A clone of a repository that commits a large log and playbook.json, and none of what git ignores."""
    origin = tmp_path / "origin"
    large_log(origin / ".claude")
    assert (origin / ".claude" / quickroads.LOG_NAME).stat().st_size > 2 * LIMIT
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q", str(origin)], check=True)
    subprocess.run([*git, "-C", str(origin), "add", ".claude/playbook.events.jsonl", ".claude/playbook.json"], check=True)
    subprocess.run([*git, "-C", str(origin), "commit", "-qm", "ship"], check=True)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(origin), str(clone)], check=True)
    assert not (clone / ".claude" / quickroads.INJECTION_NAME).exists()
    return clone


def test_a_cloned_large_log_is_not_folded_by_session_start_which_says_how_to_project_it(tmp_path: Path) -> None:
    clone = shipped(tmp_path)
    (clone / ".claude" / quickroads.SNAPSHOT_NAME).unlink()  # no position to start from: a whole fold
    before = sorted(p.name for p in (clone / ".claude").iterdir())
    done, _ = run_hook("inject.py", clone, {"hook_event_name": "SessionStart"})
    assert done.returncode == 0 and b"Traceback" not in done.stderr
    message = json.loads(done.stdout)["systemMessage"]
    assert "not injected" in message and f"playbook --project {clone} rebuild" in message
    assert "hookSpecificOutput" not in json.loads(done.stdout)
    assert sorted(p.name for p in (clone / ".claude").iterdir()) == before  # nothing folded, nothing written


def test_a_prompt_never_folds_a_large_log_to_refresh_its_index(tmp_path: Path) -> None:
    clone = shipped(tmp_path)
    (clone / ".claude" / quickroads.SNAPSHOT_NAME).unlink()
    done, _ = run_hook("recall.py", clone, {"hook_event_name": "UserPromptSubmit", "prompt": "deploy staging"})
    assert (done.returncode, done.stdout) == (0, b"") and b"Traceback" not in done.stderr
    assert not (clone / ".claude" / quickroads.RECALL_NAME).exists()


def test_a_playbook_json_claiming_the_logs_end_is_checked_not_believed(tmp_path: Path) -> None:
    clone = shipped(tmp_path)
    snapshot = clone / ".claude" / quickroads.SNAPSHOT_NAME
    text = snapshot.read_text()
    hash_at = text.index('"hash": "') + len('"hash": "')
    snapshot.write_text(text[:hash_at] + "0" * 32 + text[hash_at + 32:])  # the end's position, another hash
    done, _ = run_hook("inject.py", clone, {"hook_event_name": "SessionStart"})
    assert done.returncode == 0 and "not injected" in json.loads(done.stdout)["systemMessage"]


def test_the_shipped_playbook_json_at_the_logs_end_spares_the_fold_and_the_session_is_injected(tmp_path: Path) -> None:
    clone = shipped(tmp_path)
    done, peak = run_hook("inject.py", clone, {"hook_event_name": "SessionStart"})
    assert done.returncode == 0, done.stderr
    assert "deploy step" in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert peak < 200 * 1024


def test_after_rebuild_the_session_is_injected(tmp_path: Path) -> None:
    clone = shipped(tmp_path)
    (clone / ".claude" / quickroads.SNAPSHOT_NAME).unlink()
    rebuilt = subprocess.run([sys.executable, "-m", "playbook", "--project", str(clone), "rebuild"],
                             capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert rebuilt.returncode == 0, rebuilt.stderr
    done, _ = run_hook("inject.py", clone, {"hook_event_name": "SessionStart"})
    assert "deploy step" in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]


def test_this_machines_own_large_log_is_still_injected_after_a_settings_change(tmp_path: Path) -> None:
    project = tmp_path / "project"
    large_log(project / ".claude")
    (project / ".claude" / quickroads.SETTINGS_NAME).write_text('{"playbook_injection_budget": 2500}')
    done, _ = run_hook("inject.py", project, {"hook_event_name": "SessionStart"})
    assert done.returncode == 0, done.stderr
    assert "deploy step" in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]


def test_a_text_from_a_file_is_cut_and_the_cut_is_recorded(tmp_path: Path) -> None:
    repo = PlaybookRepository(tmp_path / ".claude")
    long = "x" * (MAX_TEXT_LENGTH + 500)
    repo.append([ImportLegacy(data={"version": "1.0", "sections": {"OTHERS": [
        {"name": "oth-001", "text": long, "helpful": 0, "harmful": 0}]}}, path="test", genesis=False)],
        Cause(source="test"))
    imported = [e for t in LogReader(repo.log_path) for e in t.events if isinstance(e, KeyPointImported)]
    assert [(len(e.text), e.cut_from) for e in imported] == [(MAX_TEXT_LENGTH, MAX_TEXT_LENGTH + 500)]
    snapshot = json.loads(repo.snapshot_path.read_text())
    edited = dict(snapshot, sections={**snapshot["sections"], "OTHERS": [
        {"name": "oth-001", "text": "y" * (MAX_TEXT_LENGTH * 3), "helpful": 0, "harmful": 0}]})
    repo.snapshot_path.write_text(json.dumps(edited))  # a hand edit, taken in by the next writer
    repo.append([ApplyOperations([{"type": "ADD", "text": "another"}])], Cause(source="test"))
    state = repo.current()[0]
    assert state.get("oth-001") is not None and len(state.get("oth-001").text) == MAX_TEXT_LENGTH


def test_the_recall_index_leaves_out_what_could_never_be_recalled_and_stays_bounded(monkeypatch) -> None:
    from eventlog.domain import PlaybookState
    from eventlog.evolve import apply
    from eventlog.events import KeyPointAdded

    state = PlaybookState()
    for i in range(50):
        text = ("long " * 400) if i % 2 else f"short point {i}"
        apply(state, KeyPointAdded(section="OTHERS", name=f"oth-{i + 1:03d}", text=text, helpful=0, harmful=0, origin="operation"))
    names = [f"oth-{i + 1:03d}" for i in range(50)]
    body = index.build(state, names, max_chars=800)
    assert b"long long" not in body and b"short point 48" in body
    monkeypatch.setattr(index, "MAX_DOC_BYTES", 400)
    small = index.build(state, names, max_chars=800)
    assert b"short point 0" in small and b"short point 48" not in small
