"""Limits that protect the user: text length, file permissions."""

from __future__ import annotations

import os
import stat

import pytest

from eventlog.decide import AddNewKeyPoints, ApplyOperations, decide
from eventlog.domain import MAX_TEXT_LENGTH, PlaybookState
from eventlog.events import Cause, KeyPointAdded, KeyPointsMerged, KeyPointUpdated
from eventlog.evolve import fold
from projections.repository import PlaybookRepository


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


@pytest.mark.parametrize("umask, expected", [(0o000, 0o664), (0o022, 0o644), (0o077, 0o600)])
def test_files_follow_the_umask_and_are_never_world_writable(tmp_path, umask, expected):
    old = os.umask(umask)
    try:
        repo = PlaybookRepository(tmp_path / ".claude")
        repo.append([ApplyOperations([{"type": "ADD", "text": "a"}])], Cause(source="t"))
        repo.store.path.write_bytes(repo.store.path.read_bytes() + b"torn")
        repo.append([ApplyOperations([{"type": "ADD", "text": "b"}])], Cause(source="t"))  # cuts and keeps the tail
    finally:
        os.umask(old)
    files = [p for p in (tmp_path / ".claude").iterdir() if p.is_file()]
    assert {p.name.split(".torn-")[0] for p in files} >= {"playbook.events.jsonl", "playbook.json",
                                                            "playbook.events.jsonl.lock", "playbook.hook.json"}
    for path in files:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode == expected, (path.name, oct(mode))
        assert not mode & stat.S_IWOTH
