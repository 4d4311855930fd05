"""One damage never turns into a second one: what a kill, a shortened log or a bad file leaves is kept and said.

Kills are real: a child process dies by SIGKILL at a fault point (`eventlog.store.fault`).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from eventlog.decide import ApplyOperations
from eventlog.events import Cause, SnapshotSetAside
from projections.repository import PlaybookRepository
from projections.verify import verify
from tests.test_crash import child_env

CAUSE = Cause(source="test")


def ops(*operations: dict) -> list[ApplyOperations]:
    return [ApplyOperations(list(operations))]


def run_cli(project: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess:
    """`python -m playbook ARGS --project PROJECT` as a user runs it."""
    return subprocess.run([sys.executable, "-m", "playbook", *args, "--project", str(project)], input=stdin,
                          env=child_env(), capture_output=True, text=True, timeout=120)


# --- leftovers of a kill ------------------------------------------------------------------------------

CHECKPOINTER = r'''
import sys
from eventlog.decide import ApplyOperations
from eventlog.events import Cause
from projections import checkpoints
from projections.repository import PlaybookRepository
checkpoints.CHECKPOINT_EVERY = 4  # the second append passes a mark and writes a checkpoint first
repo = PlaybookRepository(sys.argv[1])
for i in range(3):
    repo.append([ApplyOperations([{"type": "ADD", "text": f"kill {i}"}])], Cause(source="crash-test"))
'''


def _killed_while_writing_a_checkpoint(claude: Path) -> list[Path]:
    child = subprocess.run([sys.executable, "-c", CHECKPOINTER, str(claude)], env=child_env("before-replace"),
                           capture_output=True, timeout=60)
    assert child.returncode == -signal.SIGKILL, child.stderr.decode()
    left = sorted((claude / "playbook.checkpoints").glob(".*.msgpack.*.tmp"))
    assert left, sorted(p.name for p in (claude / "playbook.checkpoints").iterdir())
    return left


def test_checkpoint_temporaries_of_a_killed_writer_are_removed_by_the_next_writer_and_by_rebuild(tmp_path):
    claude = tmp_path / ".claude"
    repo = PlaybookRepository(claude)
    repo.append(ops({"type": "ADD", "text": "before"}), CAUSE)
    left = _killed_while_writing_a_checkpoint(claude)
    repo.append(ops({"type": "ADD", "text": "next writer"}), CAUSE)
    assert not any(path.exists() for path in left)

    left = _killed_while_writing_a_checkpoint(claude)
    rebuilt = subprocess.run([sys.executable, "-m", "playbook", "rebuild", "--project", str(tmp_path)],
                             env=child_env(), capture_output=True, timeout=60)
    assert rebuilt.returncode == 0, rebuilt.stderr.decode()
    assert not any(path.exists() for path in left)
    assert not list((claude / "playbook.checkpoints").glob(".*.tmp"))


# --- a playbook.json that is JSON but no playbook ------------------------------------------------------


@pytest.mark.parametrize("content", [b"null\n", b"[1, 2]\n", b'"a string"\n', b"42\n"])
def test_a_non_object_snapshot_with_a_log_is_moved_aside_and_the_playbook_stays_as_the_log_says(tmp_path, content):
    claude = tmp_path / ".claude"
    repo = PlaybookRepository(claude)
    repo.append(ops({"type": "ADD", "text": "keep me"}, {"type": "ADD", "text": "and me"}), CAUSE)
    repo.snapshot_path.write_bytes(content)
    assert any("not a JSON object" in p.what for p in verify(repo).problems)

    shown = run_cli(tmp_path, "show", "--json")
    assert shown.returncode == 0, shown.stderr
    assert [e["text"] for e in json.loads(shown.stdout)["sections"]["OTHERS"]] == ["keep me", "and me"]
    assert shown.stderr.count("\n") == 1 and "kept as playbook.json.unreadable-" in shown.stderr
    kept = list(claude.glob("playbook.json.unreadable-*"))
    assert [path.read_bytes() for path in kept] == [content]
    assert [t.events[0].moved_to for t in repo.store.read() if isinstance(t.events[0], SnapshotSetAside)] == \
        [kept[0].name]
    assert [e.text for _, e in repo.current()[0].entries()] == ["keep me", "and me"]
    assert verify(repo).ok
