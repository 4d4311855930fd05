"""Merging two copies of a log: the shared bytes kept, both sides replayed on the fold, conflicts resolved by rule."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from eventlog.commands import Absorb
from eventlog.decide import ApplyOperations, Evaluate
from eventlog.domain import PlaybookState
from eventlog.events import BranchesMerged, Cause, KeyPointAbsorbed, KeyPointAdded, MergeConflictResolved
from eventlog.events import OperationSkipped
from eventlog.similarity import THRESHOLDS, method
from eventlog.store import LogReader, fold_log
from playbook.commands.merging import merge_driver
from projections.merge import MergeRefused, merge_logs, write_merged
from projections.repository import PlaybookRepository
from projections.snapshot import render
from projections.timeline import Timeline
from projections.verify import verify

PAT = "PATTERNS & APPROACHES"


def learn(repo: PlaybookRepository, *operations: dict, ratings: list[dict] | None = None) -> str:
    commands = [ApplyOperations(list(operations))] if operations else []
    if ratings:
        commands.append(Evaluate(ratings))
    committed = repo.append(commands, Cause(source="test"))
    assert committed is not None
    return committed.commit.tx


def add(text: str, section: str = PAT) -> dict:
    return {"type": "ADD", "text": text, "section": section}


def rate(name: str, rating: str = "helpful") -> dict:
    return {"name": name, "rating": rating}


class Branches:
    """A shared history, then two copies that learn on their own: `ours`, `theirs`, and their `ancestor`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.base = PlaybookRepository(root / "base" / ".claude")

    def fork(self) -> None:
        self.ancestor = self.root / "ancestor.jsonl"
        shutil.copyfile(self.base.store.path, self.ancestor)
        self.ours = self._copy("ours")
        self.theirs = self._copy("theirs")

    def _copy(self, name: str) -> PlaybookRepository:
        claude = self.root / name / ".claude"
        claude.mkdir(parents=True)
        shutil.copyfile(self.base.store.path, claude / "playbook.events.jsonl")
        return PlaybookRepository(claude)

    def merge(self, ours: Path | None = None, theirs: Path | None = None, name: str = "merged") -> Path:
        ours, theirs = ours or self.ours.store.path, theirs or self.theirs.store.path
        target = self.root / f"{name}.jsonl"
        outcome = merge_logs(ours, theirs, self.ancestor)
        write_merged(outcome, ours, theirs, target)
        return target


@pytest.fixture
def branches(tmp_path) -> Branches:
    b = Branches(tmp_path)
    learn(b.base, add("Run the tests before committing"), add("Use pathlib"))
    b.fork()
    return b


def folded(path: Path) -> PlaybookState:
    return fold_log(path, PlaybookState())[0]


def entries(path: Path) -> dict[str, tuple[str, int, int]]:
    state = folded(path)
    return {kp.name: (kp.text, kp.helpful, kp.harmful) for _section, kp in state.entries()}


def transactions(path: Path) -> list:
    reader = LogReader(path, strict=True)
    found = list(reader)
    assert reader.torn is None
    return found


def checked_repo(path: Path, where: Path) -> PlaybookRepository:
    """A project holding the log at `path`, rebuilt, whose verify must come out clean."""
    claude = where / ".claude"
    claude.mkdir(parents=True)
    shutil.copyfile(path, claude / "playbook.events.jsonl")
    repo = PlaybookRepository(claude)
    repo.rebuild()
    report = verify(repo)
    assert report.ok, report.problems
    return repo


def test_shared_bytes_stay_and_both_sides_follow_in_time_order_closed_by_branches_merged(branches):
    ours_tx = learn(branches.ours, add("Prefer small commits"))
    theirs_tx = learn(branches.theirs, add("Mock the network in unit tests"))
    ours_tx2 = learn(branches.ours, ratings=[rate("pat-001")])
    merged = branches.merge()

    shared = branches.ancestor.read_bytes()
    assert merged.read_bytes().startswith(shared)
    found = transactions(merged)
    assert [t.commit.tx for t in found[1:-1]] == [ours_tx, theirs_tx, ours_tx2]  # the times they were learned
    record = found[-1].events[0]
    assert isinstance(record, BranchesMerged)
    assert record.heads == sorted([ours_tx2, theirs_tx])
    assert record.ancestor == found[0].commit.tx and record.shared_seq == found[0].commit.seq
    assert [r.commit.seq for r in found] == sorted(r.commit.seq for r in found)
    checked_repo(merged, branches.root / "check")


def test_either_side_merging_writes_the_same_log_and_merging_again_changes_nothing(branches):
    learn(branches.ours, add("Prefer small commits"), ratings=[rate("pat-001")])
    learn(branches.theirs, add("Mock the network"), ratings=[rate("pat-001", "harmful")])
    learn(branches.ours, {"type": "UPDATE", "target_id": "pat-002", "text": "Use pathlib, never os.path"})
    ab = branches.merge(name="ab")
    ba = branches.merge(branches.theirs.store.path, branches.ours.store.path, name="ba")
    assert ab.read_bytes() == ba.read_bytes()
    for side in (branches.ours.store.path, branches.theirs.store.path):
        assert merge_logs(ab, side, branches.ancestor).unchanged
        assert merge_logs(ab, side, None).unchanged
    # the side that had nothing new takes the merged log as it is
    outcome = merge_logs(branches.ours.store.path, ab, branches.ours.store.path)
    assert outcome.base == "theirs" and outcome.keep == ab.stat().st_size


def test_ratings_from_both_sides_all_count(branches):
    learn(branches.ours, ratings=[rate("pat-001"), rate("pat-002", "harmful")])
    learn(branches.theirs, ratings=[rate("pat-001"), rate("pat-001")])
    learn(branches.ours, ratings=[rate("pat-001")])
    merged = entries(branches.merge())
    assert merged["pat-001"][1:] == (4, 0)
    assert merged["pat-002"][1:] == (0, 1)


def test_a_name_taken_on_both_sides_is_renamed_on_the_later_one_and_its_ratings_follow(branches):
    learn(branches.ours, add("Prefer small commits"))  # pat-003 on our side
    learn(branches.theirs, add("Mock the network"))  # pat-003 on theirs, later
    learn(branches.theirs, ratings=[rate("pat-003")], )
    learn(branches.ours, ratings=[rate("pat-003", "harmful")])
    merged = branches.merge()
    found = entries(merged)
    assert found["pat-003"] == ("Prefer small commits", 0, 1)
    assert found["pat-004"] == ("Mock the network", 1, 0)
    added = [e for t in transactions(merged) for e in t.events if isinstance(e, KeyPointAdded)]
    assert [(e.name, e.proposed_name) for e in added][-2:] == [("pat-003", None), ("pat-004", "pat-003")]


def test_the_same_lesson_learned_on_both_sides_is_one_entry_with_both_sides_ratings(branches):
    learn(branches.ours, add("Read the error message first"))
    learn(branches.theirs, add("Read the error message first"))
    learn(branches.theirs, ratings=[rate("pat-003")])
    found = entries(branches.merge())
    assert [v for v in found.values() if v[0] == "Read the error message first"] == [("Read the error message first", 1, 0)]


def _conflicts(path: Path) -> list[MergeConflictResolved]:
    return [e for t in transactions(path) for e in t.events if isinstance(e, MergeConflictResolved)]


def test_update_update_the_later_stands_and_the_loser_is_kept_in_the_event(branches):
    first = learn(branches.theirs, {"type": "UPDATE", "target_id": "pat-001", "text": "Run the fast tests first"})
    second = learn(branches.ours, {"type": "UPDATE", "target_id": "pat-001", "text": "Run all the tests"})
    merged = branches.merge()
    assert entries(merged)["pat-001"][0] == "Run all the tests"
    [conflict] = _conflicts(merged)
    assert (conflict.conflict, conflict.kept_tx, conflict.lost_tx, conflict.lost_text) == (
        "update/update", second, first, "Run the fast tests first")
    history = Timeline(checked_repo(merged, branches.root / "check")).history("pat-001")
    assert any(isinstance(item.event, MergeConflictResolved) for item in history)


@pytest.mark.parametrize("update_first", [True, False])
def test_update_delete_the_delete_stands_in_either_order_and_the_update_is_kept(branches, update_first):
    update = {"type": "UPDATE", "target_id": "pat-002", "text": "Use pathlib everywhere"}
    delete = {"type": "DELETE", "target_id": "pat-002", "reason": "obvious"}
    if update_first:
        learn(branches.ours, update)
        learn(branches.theirs, delete)
    else:
        learn(branches.theirs, delete)
        learn(branches.ours, update)
    merged = branches.merge()
    assert "pat-002" not in entries(merged)
    [conflict] = _conflicts(merged)
    assert conflict.conflict == "update/delete"
    assert conflict.lost_text == "Use pathlib everywhere"


def test_a_merge_that_involves_an_entry_deleted_on_the_other_side_stands_with_its_counters(branches):
    learn(branches.base, ratings=[rate("pat-001"), rate("pat-002"), rate("pat-002")])
    branches.fork_again = None
    shutil.rmtree(branches.root / "ours")
    shutil.rmtree(branches.root / "theirs")
    branches.fork()
    learn(branches.theirs, {"type": "DELETE", "target_id": "pat-002", "reason": "too obvious"})
    learn(branches.ours, {"type": "MERGE", "source_ids": ["pat-001", "pat-002"], "merged_text": "Test, then pathlib",
                          "section": PAT})
    merged = branches.merge()
    found = entries(merged)
    assert found == {"pat-003": ("Test, then pathlib", 3, 0)}
    assert [c.conflict for c in _conflicts(merged)] == ["delete/merge"]


def test_a_delete_of_an_entry_merged_on_the_other_side_gives_way_to_the_merge(branches):
    learn(branches.ours, {"type": "MERGE", "source_ids": ["pat-001", "pat-002"], "merged_text": "Both", "section": PAT})
    learn(branches.theirs, {"type": "DELETE", "target_id": "pat-001"}, ratings=[rate("pat-002")])
    merged = branches.merge()
    assert entries(merged) == {"pat-003": ("Both", 1, 0)}
    assert [c.conflict for c in _conflicts(merged)] == ["delete/merge"]


ABSORB = Absorb(threshold=THRESHOLDS[method()], method=method())


def test_an_absorption_follows_its_entry_into_a_merge_on_the_other_side(branches):
    learn(branches.ours, {"type": "MERGE", "source_ids": ["pat-001", "pat-002"], "merged_text": "Test, then pathlib",
                          "section": PAT})
    again = branches.theirs.append([ApplyOperations([add("Always run the tests before you commit")], absorb=ABSORB)],
                                   Cause(source="test"))
    assert again is not None and [(type(e), e.name) for e in again.events] == [(KeyPointAbsorbed, "pat-001")]
    merged = branches.merge()
    absorbed = [e for t in transactions(merged) for e in t.events if isinstance(e, KeyPointAbsorbed)]
    assert [(e.name, e.text) for e in absorbed] == [("pat-003", "Test, then pathlib")]
    assert entries(merged) == {"pat-003": ("Test, then pathlib", 0, 0)}


def test_an_absorption_into_an_entry_deleted_on_the_other_side_is_a_recorded_skip(branches):
    learn(branches.theirs, {"type": "DELETE", "target_id": "pat-001", "reason": "CI runs them"})
    branches.ours.append([ApplyOperations([add("Always run the tests before you commit")], absorb=ABSORB)],
                         Cause(source="test"))
    merged = branches.merge()
    assert entries(merged) == {"pat-002": ("Use pathlib", 0, 0)}
    skipped = [e for t in transactions(merged) for e in t.events if isinstance(e, OperationSkipped)]
    assert [(e.reason, e.operation["type"]) for e in skipped] == [("unknown_id", "KeyPointAbsorbed")]


def _flip(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x01
    path.write_bytes(bytes(data))


def test_a_damaged_log_is_refused_and_the_driver_leaves_ours_untouched_with_one_line(branches, capsys):
    learn(branches.ours, add("Prefer small commits"))
    learn(branches.theirs, add("Mock the network"))
    theirs = branches.theirs.store.path
    _flip(theirs, branches.ancestor.stat().st_size + 60)  # in their new transaction's first line
    with pytest.raises(MergeRefused, match="theirs is not a clean log"):
        merge_logs(branches.ours.store.path, theirs, branches.ancestor)
    work = branches.root / "A"
    shutil.copyfile(branches.ours.store.path, work)
    assert merge_driver(str(branches.ancestor), str(work), str(theirs), ".claude/playbook.events.jsonl") == 1
    assert work.read_bytes() == branches.ours.store.path.read_bytes()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("playbook: cannot merge .claude/playbook.events.jsonl: theirs")


def test_a_union_of_both_sides_lines_is_refused(branches):
    learn(branches.ours, add("Prefer small commits"))
    learn(branches.theirs, add("Mock the network"))
    shared = branches.ancestor.read_bytes()
    union = branches.root / "union.jsonl"
    union.write_bytes(branches.ours.store.path.read_bytes()
                      + branches.theirs.store.path.read_bytes()[len(shared):])
    with pytest.raises(MergeRefused, match="hash does not match|sequence"):
        merge_logs(union, branches.theirs.store.path, branches.ancestor)


def test_a_log_ending_in_an_unfinished_write_is_refused(branches):
    learn(branches.ours, add("Prefer small commits"))
    with open(branches.theirs.store.path, "ab") as handle:
        handle.write(b'{"type":"KeyPointAdded","seq":4')
    with pytest.raises(MergeRefused, match="unfinished transaction"):
        merge_logs(branches.ours.store.path, branches.theirs.store.path, branches.ancestor)


def test_a_transaction_the_other_side_dropped_is_undone_or_refused(branches):
    dropped = learn(branches.ours, add("Prefer small commits"))
    branches.ancestor.write_bytes(branches.ours.store.path.read_bytes())  # theirs = the ancestor without it
    learn(branches.ours, ratings=[rate("pat-001")])
    merged = branches.merge()
    assert "Prefer small commits" not in [v[0] for v in entries(merged).values()]
    last = transactions(merged)[-1]
    assert last.commit.source == "revert" and dropped in (last.commit.note or "")
    learn(branches.ours, ratings=[rate("pat-003")])  # a later change to what the revert would remove
    with pytest.raises(MergeRefused, match="later transactions changed the same entries"):
        merge_logs(branches.ours.store.path, branches.theirs.store.path, branches.ancestor)


@pytest.mark.slow
def test_playbook_merge_takes_in_another_machines_log(branches):
    learn(branches.ours, add("Prefer small commits"), ratings=[rate("pat-001")])
    learn(branches.theirs, add("Mock the network"), ratings=[rate("pat-001")])
    project = branches.root / "ours"
    run = [sys.executable, "-m", "playbook", "--project", str(project), "merge", str(branches.theirs.store.path)]
    done = subprocess.run(run, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "1 transaction(s) brought in" in done.stdout and "renamed pat-003 -> pat-004" in done.stdout
    repo = PlaybookRepository(project / ".claude")
    assert verify(repo).ok
    state, position, _ = fold_log(repo.store.path, PlaybookState())
    assert repo.snapshot_path.read_bytes() == render(state, position)
    assert entries(repo.store.path)["pat-001"][1] == 2
    again = subprocess.run(run, capture_output=True, text=True)
    assert again.returncode == 0 and "nothing to merge" in again.stdout
    missing = subprocess.run(run[:-1] + [str(branches.root / "nope.jsonl")], capture_output=True, text=True)
    assert missing.returncode == 1 and missing.stderr.count("\n") == 1


def test_skipped_replays_are_recorded_not_dropped(branches):
    learn(branches.ours, {"type": "DELETE", "target_id": "pat-001"})
    learn(branches.theirs, ratings=[rate("pat-001")])
    merged = branches.merge()
    skips = [e for t in transactions(merged) for e in t.events if isinstance(e, OperationSkipped)]
    assert [(s.kind, s.reason) for s in skips] == [("merge", "unknown_id")]
    assert "deleted on the other branch" in skips[0].detail


def test_two_logs_begun_apart_merge_with_every_entry_and_renames(tmp_path):
    left = PlaybookRepository(tmp_path / "left" / ".claude")
    right = PlaybookRepository(tmp_path / "right" / ".claude")
    learn(left, add("Prefer small commits"), ratings=None)
    learn(right, add("Mock the network"), add("Keep functions short"))
    learn(left, ratings=[rate("pat-001")])
    target = tmp_path / "merged.jsonl"
    outcome = merge_logs(left.store.path, right.store.path, None)
    write_merged(outcome, left.store.path, right.store.path, target)
    assert sorted(v[0] for v in entries(target).values()) == ["Keep functions short", "Mock the network",
                                                              "Prefer small commits"]
    assert entries(target)["pat-001"] == ("Prefer small commits", 1, 0)
    assert len({name for name in entries(target)}) == 3
    checked_repo(target, tmp_path / "check")
