"""The log and its playbook.json projection: imports, hand edits, rebuilds and bad input."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import playbook
from eventlog.decide import ApplyOperations, Evaluate, Prune
from eventlog.domain import KeyPoint, PlaybookState
from eventlog.errors import CorruptLogError, StorageError
from eventlog.events import Cause, KeyPointAdded, KeyPointDeleted, KeyPointImported, KeyPointUpdated, CountersSet
from eventlog.events import OperationSkipped, PlaybookImported, SnapshotSetAside
from eventlog.store import fold_log
from projections.repository import PlaybookRepository
from projections.snapshot import render, state_of

CAUSE = Cause(source="test")


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(tmp_path))
    return tmp_path


@pytest.fixture
def repo(project) -> PlaybookRepository:
    return PlaybookRepository(project / ".claude")


def events_of(repo: PlaybookRepository) -> list:
    return [e for t in repo.store.read() for e in t.events]


def write_legacy(project: Path, data) -> Path:
    path = project / ".claude" / "playbook.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return path


def ops(*items):
    return [ApplyOperations(list(items))]


def test_legacy_flat_file_becomes_genesis_events_with_source_formats(project, repo):
    write_legacy(project, {"version": "1.0", "last_updated": "2026-01-15T10:00:00", "key_points": [
        "bare string entry",
        {"name": "kpt_002", "text": "no score"},
        {"name": "kpt_003", "text": "scored", "score": -2},
        {"name": "kpt_004", "text": "counted", "helpful": 2, "harmful": 1, "score": 9},
    ]})
    pb = playbook.load_playbook()
    assert pb["last_updated"] == "2026-01-15T10:00:00"
    events = events_of(repo)
    assert isinstance(events[0], PlaybookImported) and events[0].file_format == "flat"
    imported = [e for e in events if isinstance(e, KeyPointImported)]
    assert [(e.name, e.source_format) for e in imported] == [
        ("kpt_001", "bare_string"), ("kpt_002", "dict_without_score"),
        ("kpt_003", "dict_with_score"), ("kpt_004", "dict_with_counters"),
    ]
    assert imported[2].score == -2 and (imported[2].helpful, imported[2].harmful) == (0, 2)
    assert [e["name"] for e in pb["sections"]["OTHERS"]] == ["kpt_001", "kpt_002", "kpt_003", "kpt_004"]
    # The legacy file is now the log's projection: it has the log block and no key_points.
    on_disk = json.loads((project / ".claude" / "playbook.json").read_text())
    assert "key_points" not in on_disk and "log" in on_disk


def test_legacy_sections_with_unknown_and_missing_sections_keep_every_entry(project, repo):
    write_legacy(project, {"sections": {
        "PATTERNS & APPROACHES": [{"name": "pat-001", "text": "a", "helpful": 1, "harmful": 0}],
        "Random Stuff": [{"name": "x-1", "text": "b", "helpful": 0, "harmful": 0}],
        "mistakes to avoid": [{"name": "mis-004", "text": "c", "helpful": 0, "harmful": 0}],
    }})
    pb = playbook.load_playbook()
    assert pb["version"] == "1.0" and pb["last_updated"] is None
    assert [e["name"] for e in pb["sections"]["OTHERS"]] == ["x-1"]
    assert [e["name"] for e in pb["sections"]["MISTAKES TO AVOID"]] == ["mis-004"]
    moved = {e.name: e.original_section for e in events_of(repo) if isinstance(e, KeyPointImported)}
    assert moved == {"pat-001": None, "x-1": "Random Stuff", "mis-004": "mistakes to avoid"}
    # IDs continue past the imported ones.
    pb = playbook.update_playbook_data(pb, {"new_key_points": [{"text": "d", "section": "MISTAKES TO AVOID"}]})
    assert pb["sections"]["MISTAKES TO AVOID"][-1]["name"] == "mis-005"


def test_bare_strings_get_names_that_collide_with_nothing_in_the_file(project):
    write_legacy(project, {"key_points": ["first", {"name": "kpt_001", "text": "taken"}, "second",
                                          {"name": "kpt_003", "text": "also taken"}]})
    names = [e["name"] for e in playbook.load_playbook()["sections"]["OTHERS"]]
    assert names == ["kpt_002", "kpt_001", "kpt_004", "kpt_003"]
    assert len(set(names)) == 4


@pytest.mark.parametrize("content", ["{not json", "", "\x00\x01garbage"])
def test_unreadable_playbook_json_is_moved_aside_kept_and_recorded(project, repo, content):
    path = write_legacy(project, content)
    pb = playbook.load_playbook()
    assert pb == {"version": "1.0", "last_updated": None, "sections": {name: [] for name in playbook.SECTION_SLUGS}}
    kept = list(path.parent.glob("playbook.json.unreadable-*"))
    assert len(kept) == 1 and kept[0].read_text() == content
    first = events_of(repo)[0]
    assert isinstance(first, PlaybookImported) and first.file_format == "unreadable"
    assert first.moved_aside == kept[0].name


def test_unreadable_snapshot_beside_a_log_is_set_aside_and_rebuilt(project, repo):
    repo.append(ops({"type": "ADD", "text": "keep me"}), CAUSE)
    repo.snapshot_path.write_text("{broken")
    assert [e["text"] for e in playbook.load_playbook()["sections"]["OTHERS"]] == ["keep me"]
    assert any(isinstance(e, SnapshotSetAside) for e in events_of(repo))
    assert list(repo.claude_dir.glob("playbook.json.unreadable-*"))


def test_rebuild_reproduces_the_snapshot_byte_for_byte(project, repo):
    repo.append(ops({"type": "ADD", "text": "a", "section": "USER PREFERENCES"}, {"type": "ADD", "text": "b"}), CAUSE)
    repo.append([Evaluate([{"name": "pref-001", "rating": "helpful"}]), Prune()], CAUSE)
    written = repo.snapshot_path.read_bytes()
    repo.snapshot_path.unlink()
    repo.rebuild()
    assert repo.snapshot_path.read_bytes() == written
    state, position, _ = fold_log(repo.store.path, PlaybookState())
    assert render(state, position) == written
    assert json.loads(written)["last_updated"] == events_of(repo)[-1].at


def test_a_snapshot_left_stale_by_a_crash_is_folded_forward(project, repo):
    repo.append(ops({"type": "ADD", "text": "a"}), CAUSE)
    stale = repo.snapshot_path.read_bytes()
    repo.append(ops({"type": "ADD", "text": "b"}), CAUSE)
    repo.snapshot_path.write_bytes(stale)  # as if the process died before replacing the snapshot
    assert not repo.is_fresh()
    assert [e["text"] for e in playbook.load_playbook()["sections"]["OTHERS"]] == ["a", "b"]
    assert repo.is_fresh()


def test_a_hand_edited_snapshot_is_imported_as_manual_edit_events(project, repo):
    repo.append(ops({"type": "ADD", "text": "original", "section": "OTHERS"}, {"type": "ADD", "text": "gone"}), CAUSE)
    data = json.loads(repo.snapshot_path.read_text())
    data["sections"]["OTHERS"][0]["text"] = "edited by hand"
    data["sections"]["OTHERS"][0]["helpful"] = 4
    del data["sections"]["OTHERS"][1]
    data["sections"]["USER PREFERENCES"].append({"name": "pref-001", "text": "typed in", "helpful": 0, "harmful": 0})
    repo.snapshot_path.write_text(json.dumps(data, indent=2))
    pb = playbook.load_playbook()
    assert pb["sections"]["OTHERS"] == [{"name": "oth-001", "text": "edited by hand", "helpful": 4, "harmful": 0}]
    assert pb["sections"]["USER PREFERENCES"][0]["text"] == "typed in"
    last = list(repo.store.read())[-1]
    assert last.commit.source == "manual_edit"
    kinds = {type(e) for e in last.events}
    assert {KeyPointUpdated, CountersSet, KeyPointDeleted, KeyPointAdded} <= kinds
    # A second load finds nothing new to import.
    playbook.load_playbook()
    assert list(repo.store.read())[-1].commit.tx == last.commit.tx


def test_a_hand_edit_made_before_later_appends_keeps_both(project, repo):
    repo.append(ops({"type": "ADD", "text": "a"}), CAUSE)
    data = json.loads(repo.snapshot_path.read_text())
    data["sections"]["OTHERS"][0]["text"] = "a, edited"
    repo.snapshot_path.write_text(json.dumps(data))
    repo.append(ops({"type": "ADD", "text": "b"}), CAUSE)  # the writer notices the edit first
    texts = [e["text"] for e in playbook.load_playbook()["sections"]["OTHERS"]]
    assert texts == ["a, edited", "b"]


def test_save_of_a_loaded_dict_appends_only_its_changes(project, repo):
    repo.append(ops({"type": "ADD", "text": "a"}, {"type": "ADD", "text": "b"}), CAUSE)
    mine = playbook.load_playbook()
    repo.append(ops({"type": "ADD", "text": "concurrent"}), CAUSE)  # another process, meanwhile
    mine["sections"]["OTHERS"][0]["text"] = "a2"
    playbook.save_playbook(mine)
    texts = [e["text"] for e in playbook.load_playbook()["sections"]["OTHERS"]]
    assert texts == ["a2", "b", "concurrent"]


def test_concurrent_new_names_are_renamed_not_overwritten(project, repo):
    first, second = playbook.load_playbook(), playbook.load_playbook()
    first = playbook.update_playbook_data(first, {"operations": [{"type": "ADD", "text": "from first"}]})
    second = playbook.update_playbook_data(second, {"operations": [{"type": "ADD", "text": "from second"}]})
    playbook.save_playbook(first)
    playbook.save_playbook(second)
    loaded = playbook.load_playbook()["sections"]["OTHERS"]
    assert [(e["name"], e["text"]) for e in loaded] == [("oth-001", "from first"), ("oth-002", "from second")]
    # The caller's dict follows the log, the other writer's entry included.
    assert [(e["name"], e["text"]) for e in second["sections"]["OTHERS"]] == [(e["name"], e["text"]) for e in loaded]


def test_a_save_records_what_the_facade_did_with_its_meaning(project, repo):
    repo.append(ops({"type": "ADD", "text": "a"}), CAUSE)
    pb = playbook.load_playbook()
    pb = playbook.update_playbook_data(pb, {
        "operations": [{"type": "ADD", "text": "b", "section": "nowhere"}],
        "evaluations": [{"name": "oth-001", "rating": "helpful", "rationale": "it helped"}]})
    pb["sections"]["OTHERS"][0]["text"] = "a, by hand"
    playbook.save_playbook(pb)
    last = list(repo.store.read())[-1]
    kinds = [type(e).__name__ for e in last.events]
    assert kinds == ["KeyPointAdded", "KeyPointEvaluated", "KeyPointUpdated"]
    added, evaluated, updated = last.events
    assert (added.origin, added.requested_section) == ("operation", "nowhere")
    assert (evaluated.rating, evaluated.rationale, evaluated.helpful) == ("helpful", "it helped", 1)
    assert updated.text == "a, by hand"
    assert playbook.load_playbook() == pb


def test_save_that_changes_nothing_appends_nothing(project, repo):
    repo.append(ops({"type": "ADD", "text": "a"}), CAUSE)
    pb = playbook.load_playbook()
    size = repo.store.size()
    before = dict(pb)
    playbook.save_playbook(pb)
    assert repo.store.size() == size and pb == before


def test_ids_are_never_reissued_after_delete(project, repo):
    repo.append(ops({"type": "ADD", "text": "a"}, {"type": "ADD", "text": "b"}), CAUSE)
    repo.append(ops({"type": "DELETE", "target_id": "oth-002"}), CAUSE)
    committed = repo.append(ops({"type": "ADD", "text": "c"}), CAUSE)
    assert committed.events[0].name == "oth-003"


def test_a_damaged_log_line_gives_one_clear_error_and_nothing_is_written(project, repo):
    for text in ("a", "b", "c"):
        repo.append(ops({"type": "ADD", "text": text}), CAUSE)
    lines = repo.store.path.read_bytes().splitlines(keepends=True)
    lines[2] = lines[2].replace(b'"text":"b"', b'"text":"B"')
    repo.store.path.write_bytes(b"".join(lines))
    repo.snapshot_path.unlink()
    before = repo.store.path.read_bytes()
    with pytest.raises(CorruptLogError) as raised:
        playbook.load_playbook()
    message = str(raised.value)
    assert "\n" not in message and str(repo.store.path) in message and ":3:" in message
    with pytest.raises(CorruptLogError):
        repo.append(ops({"type": "ADD", "text": "d"}), CAUSE)
    assert repo.store.path.read_bytes() == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_unwritable_claude_dir(project, repo, capsys):
    repo.append(ops({"type": "ADD", "text": "a"}), CAUSE)
    repo.claude_dir.chmod(0o500)
    try:
        assert playbook.load_playbook()["sections"]["OTHERS"][0]["text"] == "a"
        with pytest.raises(StorageError):
            repo.append(ops({"type": "ADD", "text": "b"}), CAUSE)
    finally:
        repo.claude_dir.chmod(0o700)


def test_an_unwritable_claude_path_gives_a_storage_error_and_load_still_reads(project, capsys):
    (project / ".claude").write_text("a file where the directory should be")
    pb = playbook.load_playbook()
    assert pb["sections"]["OTHERS"] == []
    assert "playbook:" in capsys.readouterr().err
    with pytest.raises(StorageError):
        playbook.save_playbook({"version": "1.0", "last_updated": None, "sections": {"OTHERS": [{"name": "x", "text": "y", "helpful": 0, "harmful": 0}]}})


JUNK = [None, "ADD", 42, 3.5, True, {"type": "ADD"}, [[["deep"]]], {"nested": {"junk": [1, {"x": None}]}}]


@pytest.mark.parametrize("operations", JUNK + [[junk] for junk in JUNK] + [[{"type": "DELETE", "target_id": 7},
                         {"type": "MERGE", "source_ids": [1, None, {"a": 1}], "merged_text": "m"},
                         {"type": "UPDATE", "target_id": ["oth-001"], "text": {"t": 1}},
                         {"type": "ADD", "text": ["not", "text"]}, {"type": ["ADD"]}]])
def test_operations_of_the_wrong_types_are_skipped_and_recorded(project, repo, operations):
    repo.append(ops({"type": "ADD", "text": "keep"}), CAUSE)
    committed = repo.append([ApplyOperations(operations)], CAUSE)
    state = repo.current()[0]
    assert [kp.text for _, kp in state.entries()] == ["keep"]
    assert committed is not None and all(isinstance(e, OperationSkipped) for e in committed.events)
    pb = playbook.load_playbook()
    result = playbook.update_playbook_data(pb, {"operations": operations, "evaluations": JUNK})
    assert result["sections"] == pb["sections"]
    assert playbook.apply_structured_operations(pb, operations)["sections"] == pb["sections"]


@pytest.mark.parametrize("evaluations", JUNK + [JUNK, [{"name": 5, "rating": "helpful"},
                         {"name": "oth-001", "rating": ["helpful"]}, {"name": None}]])
def test_evaluations_of_the_wrong_types_change_nothing(project, repo, evaluations):
    repo.append(ops({"type": "ADD", "text": "keep"}), CAUSE)
    pb = playbook.load_playbook()
    result = playbook.update_playbook_data(pb, {"new_key_points": JUNK[1:3], "evaluations": evaluations})
    assert result["sections"]["OTHERS"][0] == {"name": "oth-001", "text": "keep", "helpful": 0, "harmful": 0}


def test_temporary_files_of_a_writer_killed_mid_replace_are_removed_by_the_next(project, repo):
    repo.append(ops({"type": "ADD", "text": "a"}), CAUSE)
    left = [repo.claude_dir / ".playbook.json.4242.tmp", repo.claude_dir / ".playbook.hook.json.4242.tmp"]
    for path in left:
        path.write_text("half a snapshot")
    keep = repo.claude_dir / ".settings.json.4242.tmp"  # not ours: never written under the log's lock
    keep.write_text("x")
    repo.append(ops({"type": "ADD", "text": "b"}), CAUSE)
    assert not any(path.exists() for path in left) and keep.exists()


def test_rebuild_takes_in_a_hand_edit_instead_of_overwriting_it(project, repo):
    repo.append(ops({"type": "ADD", "text": "original"}), CAUSE)
    data = json.loads(repo.snapshot_path.read_text())
    data["sections"]["OTHERS"][0]["text"] = "edited by hand"
    repo.snapshot_path.write_text(json.dumps(data))
    repo.rebuild()
    assert json.loads(repo.snapshot_path.read_text())["sections"]["OTHERS"][0]["text"] == "edited by hand"
    assert list(repo.store.read())[-1].commit.source == "manual_edit"
    repo.snapshot_path.write_text("{not json")
    repo.rebuild()
    assert list(repo.claude_dir.glob("playbook.json.unreadable-*"))


def _large(repo: PlaybookRepository, monkeypatch: pytest.MonkeyPatch) -> None:
    """A playbook whose snapshot is past the size from which it may lag behind the log (made smaller here)."""
    from projections import snapshot

    monkeypatch.setattr(snapshot, "LAG_FROM_BYTES", 32 << 10)
    count = 0
    while not repo.snapshot_path.exists() or repo.snapshot_path.stat().st_size < snapshot.LAG_FROM_BYTES:
        repo.append(ops(*({"type": "ADD", "text": f"key point {count + i} " + "x" * 200} for i in range(40))), CAUSE)
        count += 40


def test_a_large_snapshot_lags_a_short_tail_that_every_reader_folds(project, repo, monkeypatch):
    from projections.verify import verify

    _large(repo, monkeypatch)
    before = repo.snapshot_path.read_bytes()
    committed = repo.append(ops({"type": "ADD", "text": "after the snapshot"}), CAUSE)
    assert committed is not None
    assert repo.snapshot_path.read_bytes() == before  # not rewritten for one short transaction
    assert not repo.is_fresh() and not repo.needs_housekeeping()
    state, position = PlaybookRepository(repo.claude_dir).current()
    assert position == committed.position and "after the snapshot" in state.texts()
    assert any(e["text"] == "after the snapshot" for e in playbook.load_playbook()["sections"]["OTHERS"])
    assert repo.snapshot_path.read_bytes() == before  # a reader folds the tail; it writes nothing
    assert verify(repo).ok
    # The SessionStart projection follows the log at every append.
    assert repo.injection_path.read_bytes().startswith(b"%d " % committed.position.offset)


def test_a_large_snapshot_is_rewritten_once_the_tail_after_it_is_long(project, repo, monkeypatch):
    _large(repo, monkeypatch)
    size = repo.snapshot_path.stat().st_size
    before = repo.snapshot_path.read_bytes()
    appended = 0
    while repo.snapshot_path.read_bytes() == before:
        committed = repo.append(ops({"type": "ADD", "text": f"tail {appended} " + "y" * 300}), CAUSE)
        assert committed is not None
        appended += 1
        assert appended * 100 < size  # rewritten long before the tail is the snapshot's size
    state, position = fold_log(repo.log_path, PlaybookState())[:2]
    assert repo.snapshot_path.read_bytes() == render(state, position) and repo.is_fresh()


def test_a_hand_edit_of_a_lagging_snapshot_keeps_the_tail_after_it(project, repo, monkeypatch):
    _large(repo, monkeypatch)
    repo.append(ops({"type": "ADD", "text": "in the tail only"}), CAUSE)
    data = json.loads(repo.snapshot_path.read_text())
    assert data["log"]["offset"] < repo.store.size()
    data["sections"]["OTHERS"][0]["text"] = "edited by hand"
    repo.snapshot_path.write_text(json.dumps(data, indent=2))
    texts = [e["text"] for e in playbook.load_playbook()["sections"]["OTHERS"]]
    assert texts[0] == "edited by hand" and "in the tail only" in texts
    assert repo.is_fresh()


def _whole_fold(repo: PlaybookRepository) -> bytes:
    state, position = fold_log(repo.log_path, PlaybookState())[:2]
    return render(state, position)


def test_two_writers_on_one_project_take_in_each_others_appends(project):
    first, second = PlaybookRepository(project / ".claude"), PlaybookRepository(project / ".claude")
    first.append(ops({"type": "ADD", "text": "one"}), CAUSE)
    for round_ in range(3):
        for writer, other in ((first, second), (second, first)):
            committed = writer.append(ops({"type": "ADD", "text": f"round {round_} by {id(writer)}"},
                                          {"type": "UPDATE", "target_id": "oth-001", "text": f"one, {round_}"}), CAUSE)
            assert committed is not None
            writer.append([Evaluate([{"name": "oth-001", "rating": "helpful"}])], CAUSE)
            assert render(*writer.current()) == _whole_fold(writer)
    state = PlaybookRepository(project / ".claude").current()[0]
    assert state.get("oth-001").text == "one, 2" and state.get("oth-001").helpful == 6
    assert len(state.where) == 7  # no writer's new name overwrote the other's


def test_a_hand_edit_of_the_same_size_between_two_appends_is_taken_in(project, repo):
    repo.append(ops({"type": "ADD", "text": "alpha"}), CAUSE)
    repo.append(ops({"type": "ADD", "text": "beta"}), CAUSE)
    raw = repo.snapshot_path.read_bytes()
    edited = raw.replace(b'"alpha"', b'"ALPHA"')
    assert len(edited) == len(raw) and edited != raw
    stat = repo.snapshot_path.stat()
    repo.snapshot_path.write_bytes(edited)
    os.utime(repo.snapshot_path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # an edit the clock cannot tell apart
    repo.append(ops({"type": "ADD", "text": "gamma"}), CAUSE)
    assert [kp.text for _s, kp in repo.current()[0].entries()] == ["ALPHA", "beta", "gamma"]
    assert list(repo.store.read())[-2].commit.source == "manual_edit"


def test_a_writer_resumes_from_its_last_append_and_leaves_the_state_it_returned(project, repo, monkeypatch):
    import projections.repository as repository

    first = repo.append(ops({"type": "ADD", "text": "rated later"}), CAUSE)
    assert first is not None
    rebuilt = []
    monkeypatch.setattr(repository, "state_of", lambda snapshot: rebuilt.append(1) or state_of(snapshot))
    second = repo.append([Evaluate([{"name": "oth-001", "rating": "harmful"}])], CAUSE)
    third = repo.append(ops({"type": "UPDATE", "target_id": "oth-001", "text": "changed"}), CAUSE)
    assert second is not None and third is not None and not rebuilt  # nothing else wrote: no state rebuilt
    assert first.state.get("oth-001") == KeyPoint("oth-001", "rated later", 0, 0)
    assert second.state.get("oth-001") == KeyPoint("oth-001", "rated later", 0, 1)
    assert render(third.state, third.position) == _whole_fold(repo) == repo.snapshot_path.read_bytes()
    PlaybookRepository(repo.claude_dir).append(ops({"type": "ADD", "text": "by another writer"}), CAUSE)
    fourth = repo.append(ops({"type": "ADD", "text": "after it"}), CAUSE)
    assert rebuilt and fourth is not None and "by another writer" in fourth.state.texts()


def test_a_writer_s_duplicate_check_follows_its_own_and_others_changes(project, repo):
    def added(committed) -> list[str]:
        assert committed is not None
        return [e.text for e in committed.events if isinstance(e, KeyPointAdded)]

    assert added(repo.append(ops({"type": "ADD", "text": "x"}, {"type": "ADD", "text": "z"}), CAUSE)) == ["x", "z"]
    assert added(repo.append(ops({"type": "ADD", "text": "x"}, {"type": "ADD", "text": "w"}), CAUSE)) == ["w"]
    PlaybookRepository(repo.claude_dir).append(ops({"type": "ADD", "text": "y"}), CAUSE)
    assert added(repo.append(ops({"type": "ADD", "text": "y"}, {"type": "ADD", "text": "v"}), CAUSE)) == ["v"]
    repo.append(ops({"type": "DELETE", "target_id": "oth-001"}), CAUSE)
    assert added(repo.append(ops({"type": "ADD", "text": "x"}, {"type": "ADD", "text": "w"}), CAUSE)) == ["x"]
    repo.append(ops({"type": "UPDATE", "target_id": "oth-002", "text": "z2"}), CAUSE)
    assert added(repo.append(ops({"type": "ADD", "text": "z"}), CAUSE)) == ["z"]
