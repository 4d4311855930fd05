"""Limits that protect the user: text length, file permissions."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest

from eventlog.decide import AddNewKeyPoints, ApplyOperations, decide
from eventlog.domain import MAX_TEXT_LENGTH, PlaybookState
from eventlog.events import KeyPointAdded, KeyPointsMerged, KeyPointUpdated
from eventlog.evolve import fold

pytestmark = pytest.mark.slow  # starts processes, a browser or Claude Code, or runs a campaign


def test_a_text_longer_than_the_limit_is_cut_and_the_cut_is_recorded():
    huge = "x" * (MAX_TEXT_LENGTH * 3)
    events = decide(PlaybookState(), ApplyOperations([{"type": "ADD", "text": huge}, {"type": "ADD", "text": "b"},
                                                      {"type": "UPDATE", "target_id": "oth-002", "text": "y" * 5000},
                                                      {"type": "MERGE", "source_ids": ["oth-001", "oth-002"],
                                                       "merged_text": "z" * 4000}]))
    added, _, updated, merged = events
    assert isinstance(added, KeyPointAdded) and len(added.text) == MAX_TEXT_LENGTH and added.cut_from == len(huge)
    assert isinstance(updated, KeyPointUpdated) and updated.cut_from == 5000
    assert isinstance(merged, KeyPointsMerged) and merged.cut_from == 4000 and len(merged.text) == MAX_TEXT_LENGTH
    assert all(len(kp.text) <= MAX_TEXT_LENGTH for _, kp in fold(events).entries())
    assert decide(PlaybookState(), AddNewKeyPoints(["short"]))[0].cut_from is None


WRITE_UNDER_UMASK = r"""
import os, sys
from eventlog.decide import ApplyOperations
from eventlog.events import Cause
from projections import checkpoints
from projections.repository import PlaybookRepository
os.umask(int(sys.argv[2], 8))
checkpoints.CHECKPOINT_EVERY = 2  # the checkpoint directory is created too
repo = PlaybookRepository(sys.argv[1])
repo.append([ApplyOperations([{"type": "ADD", "text": "a"}])], Cause(source="t"))
repo.store.path.write_bytes(repo.store.path.read_bytes() + b"torn")
repo.append([ApplyOperations([{"type": "ADD", "text": "b"}])], Cause(source="t"))  # cuts and keeps the tail
"""


@pytest.mark.parametrize("umask, shared, file_mode, dir_mode", [
    (0o000, False, 0o600, 0o700), (0o022, False, 0o600, 0o700), (0o077, False, 0o600, 0o700),
    (0o000, True, 0o664, 0o775), (0o022, True, 0o644, 0o755), (0o077, True, 0o600, 0o700)])
def test_files_are_private_unless_shared_and_no_directory_is_ever_world_writable(tmp_path, umask, shared, file_mode,
                                                                                 dir_mode):
    claude = tmp_path / "a" / "b" / ".claude"  # missing parents are created too
    env = {k: v for k, v in os.environ.items() if k != "PLAYBOOK_SHARED_FILES"}
    if shared:
        env["PLAYBOOK_SHARED_FILES"] = "1"
    subprocess.run([sys.executable, "-c", WRITE_UNDER_UMASK, str(claude), oct(umask)[2:]], env=env, check=True,
                   timeout=60)
    files = [p for p in claude.rglob("*") if p.is_file()]
    assert {p.name.split(".torn-")[0] for p in files} >= {"playbook.events.jsonl", "playbook.json",
                                                            "playbook.events.jsonl.lock", "playbook.hook.json",
                                                            "2.msgpack"}
    for path in files:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode == file_mode, (path.name, oct(mode))
    for directory in (tmp_path / "a", tmp_path / "a" / "b", claude, claude / "playbook.checkpoints"):
        mode = stat.S_IMODE(directory.stat().st_mode)
        assert mode == dir_mode and not mode & stat.S_IWOTH, (directory, oct(mode))
