"""The commit index: fixed-width records on disk that say what a read of the log would, kept current and checked."""

from __future__ import annotations

import os

from eventlog.decide import ApplyOperations
from eventlog.events import Cause
from eventlog.store import LogReader, Position
from projections.commitindex import INDEX_FILE, CommitIndex
from projections.repository import PlaybookRepository
from projections.timeline import Timeline
import pytest


def add(repo: PlaybookRepository, text: str, session: str | None = None) -> None:
    repo.append([ApplyOperations([{"type": "ADD", "text": text}])], Cause(source="t", session=session))


def expected(repo: PlaybookRepository) -> list[tuple]:
    return [(t.commit, t.start, t.end) for t in LogReader(repo.store.path)]


def as_tuples(index: CommitIndex) -> list[tuple]:
    return [(r.commit, r.start, r.end) for r in index]


def test_the_index_matches_a_read_of_the_log_and_grows_with_it(tmp_path):
    repo = PlaybookRepository(tmp_path / ".claude")
    for number in range(5):
        add(repo, f"tip {number}", session=f"s{number % 2}")
    timeline = Timeline(repo)
    assert as_tuples(timeline.refs) == expected(repo)
    kept = (timeline.checkpoint_dir / INDEX_FILE).stat().st_size
    add(repo, "one more")
    again = Timeline(repo).refs
    assert as_tuples(again) == expected(repo)
    assert (timeline.checkpoint_dir / INDEX_FILE).stat().st_size > kept
    assert again.last_ending_by(again.end(2).seq) == 2 and again.last_ending_by(again.end(2).seq - 1) == 1
    assert again.last_ending_by(0) == -1 and again.start(0) == Position()
    assert Timeline(repo).match("s1") == [1, 3]


def test_an_index_of_another_log_is_not_trusted(tmp_path):
    repo = PlaybookRepository(tmp_path / ".claude")
    for number in range(3):
        add(repo, f"tip {number}")
    assert len(Timeline(repo).refs) == 3
    other = PlaybookRepository(tmp_path / "other" / ".claude")
    for number in range(2):
        add(other, f"other {number}")
    repo.store.path.write_bytes(other.store.path.read_bytes())  # a log replaced under a kept index
    assert as_tuples(Timeline(repo).refs) == expected(repo)


def test_ids_too_long_for_their_column_are_read_from_the_log(tmp_path):
    repo = PlaybookRepository(tmp_path / ".claude")
    long_session = "session-" + "x" * 80
    add(repo, "a", session=long_session)
    add(repo, "b", session="short")
    timeline = Timeline(repo)
    assert timeline.refs.session(0) == long_session
    assert timeline.match(long_session) == [0]
    assert timeline.match(long_session[:30]) == [0]
    assert timeline.match("short") == [1]
    tx = timeline.refs.tx(1)
    assert timeline.match_tx(tx[:7]) == [1] and timeline.txs_beginning(tx[:7]) == [tx]


def test_a_chain_hash_wider_than_the_index_s_column_has_the_index_written_again_wider(tmp_path):
    from projections import commitindex

    repo = PlaybookRepository(tmp_path / ".claude")
    for number in range(3):
        add(repo, f"tip {number}")
    kept = Timeline(repo).checkpoint_dir / INDEX_FILE
    kept.parent.mkdir(parents=True, exist_ok=True)
    kept.write_bytes(commitindex._header(4))  # a column narrower than this log's hashes
    index = Timeline(repo).refs
    assert as_tuples(index) == expected(repo)
    assert commitindex._HEADER.unpack_from(kept.read_bytes(), 0)[2] == 64


@pytest.mark.slow
def test_a_search_by_prefix_finds_every_match_whatever_the_search_window(tmp_path, monkeypatch):
    from projections import commitindex

    repo = PlaybookRepository(tmp_path / ".claude")
    for number in range(40):
        add(repo, f"tip {number}", session=f"s{number % 7}")
    index = Timeline(repo).refs
    ids = [index.tx(i) for i in range(len(index))]
    # windows of a few bytes, not a multiple of a record: matches straddle every window's edge
    for window in (7, 100, 1 << 22):
        monkeypatch.setattr(commitindex, "_WINDOW", window)
        for tx in ids[::5]:
            assert index.beginning(tx[:6]) == [i for i, other in enumerate(ids) if other.startswith(tx[:6])]
        assert index.beginning("s3", session=True) == [i for i in range(40) if i % 7 == 3]


def test_an_index_cleared_by_a_rebuild_just_after_it_was_written_still_reads_every_transaction(tmp_path,
                                                                                              monkeypatch):
    """A rebuild clears the checkpoint directory while a reader writes the index: the reader still sees the log's
    transactions (an empty index made `playbook log` and the time travellers see no history)."""
    import projections.commitindex as commitindex

    repo = PlaybookRepository(tmp_path / ".claude")
    for number in range(4):
        add(repo, f"tip {number}")
    replaced = commitindex.replace

    def replace_then_cleared(dir_fd: int, name: str, target: str, target_dir_fd: int | None = None) -> None:
        replaced(dir_fd, name, target, target_dir_fd)
        os.unlink(target, dir_fd=dir_fd)  # what the rebuild's clear of the directory does meanwhile

    monkeypatch.setattr(commitindex, "replace", replace_then_cleared)
    timeline = Timeline(repo)
    assert as_tuples(timeline.refs) == expected(repo)
