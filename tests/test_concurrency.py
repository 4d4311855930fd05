"""Many real processes writing to one playbook at the same time.

Each child is a separate interpreter (multiprocessing "spawn": nothing is inherited
but the arguments), like the hooks of several Claude Code sessions of one project.
All children wait on a barrier and then write as fast as they can, so the log's
lock is contended for the whole run; in the first test a reader process reads the
playbook without the lock all along.

What must hold afterwards:
- every write landed exactly once (no lost update, no duplicate),
- the log is whole: sequence numbers 1..N without gaps over all lines, every
  transaction closed by its commit, the hash chain intact,
- playbook.json is exactly the projection of the whole log,
- a reader never sees part of a transaction, nor a half-written playbook.json.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import traceback
from pathlib import Path


from eventlog.domain import SECTION_SLUGS, PlaybookState
from eventlog.events import KeyPointAdded, TransactionCommitted
from eventlog.logformat import text
from eventlog.store import LogReader, fold_log, split_hash
from tests.logtools import walk_chain
from projections.repository import LOG_NAME, SNAPSHOT_NAME, PlaybookRepository
from projections.snapshot import render
import pytest

pytestmark = pytest.mark.slow  # starts processes, a browser or Claude Code, or runs a campaign

WRITERS = 8
ROUNDS = 50
SECTIONS = list(SECTION_SLUGS)
CTX = multiprocessing.get_context("spawn")
JOIN_TIMEOUT = 120.0


# --- children (module level, so "spawn" can import them) -----------------------------------------


def _report_failure(result_dir: str, worker: int) -> None:
    Path(result_dir, f"failed-{worker}.txt").write_text(traceback.format_exc())


def _repository_writer(claude_dir: str, result_dir: str, worker: int, barrier) -> None:
    try:
        from eventlog.decide import ApplyOperations
        from eventlog.events import Cause

        repo = PlaybookRepository(Path(claude_dir))
        barrier.wait(timeout=60)
        commits = []
        for j in range(ROUNDS):
            # A fresh repository object now and then, as a new hook process would have.
            if j % 10 == 0:
                repo = PlaybookRepository(Path(claude_dir))
            section = SECTIONS[(worker + j) % len(SECTIONS)]
            committed = repo.append(
                [ApplyOperations([{"type": "ADD", "text": f"w{worker}-t{j}", "section": section}])],
                Cause(source="test", session=f"worker-{worker}"),
            )
            assert committed is not None, f"w{worker}-t{j}: append wrote nothing"
            [event] = committed.events
            assert isinstance(event, KeyPointAdded) and event.text == f"w{worker}-t{j}", committed.events
            assert committed.state.get(event.name).text == event.text
            commits.append([committed.commit.seq, committed.commit.tx, event.name])
        Path(result_dir, f"commits-{worker}.json").write_text(json.dumps(commits))
    except BaseException:
        _report_failure(result_dir, worker)
        raise


def _reader(claude_dir: str, result_dir: str, stop) -> None:
    """Reads without the lock while the writers run: it must only ever see whole transactions."""
    try:
        from projections.snapshot import read_snapshot

        def prefixes(texts: list[str]) -> dict[int, int]:
            rounds: dict[int, list[int]] = {}
            for text in texts:
                worker, round_ = text[1:].split("-t")
                rounds.setdefault(int(worker), []).append(int(round_))
            for worker, seen in rounds.items():
                # Each writer appends its rounds one after the other: a reader sees a prefix of them.
                assert sorted(seen) == list(range(len(seen))), (worker, sorted(seen))
            return {worker: len(seen) for worker, seen in rounds.items()}

        repo = PlaybookRepository(Path(claude_dir))
        observations, last_seq, last_counts = 0, 0, {}
        while True:
            done = stop.is_set()
            state, position = repo.current()
            assert state.seq == position.seq >= last_seq
            counts = prefixes([kp.text for _section, kp in state.entries()])
            assert all(counts.get(w, 0) >= n for w, n in last_counts.items()), (last_counts, counts)
            assert position.seq == 2 * sum(counts.values())  # one ADD + one commit per transaction
            last_seq, last_counts = position.seq, counts
            found = read_snapshot(Path(claude_dir) / SNAPSHOT_NAME)
            if found is not None:  # replaced atomically: always a whole snapshot of ours
                assert found.snapshot is not None, found
                prefixes([e.text for entries in found.snapshot.sections.values() for e in entries])
            observations += 1
            if done:
                break
        Path(result_dir, "reader.json").write_text(json.dumps({"observations": observations, "seq": last_seq}))
    except BaseException:
        _report_failure(result_dir, -1)
        raise


def _helpful_ratings(worker: int, round_: int) -> int:
    return 1 + (worker * 7 + round_) % 3  # 1, 2 or 3 helpful ratings per round


def _harmful_ratings(worker: int, round_: int) -> int:
    return 1 if (worker + round_) % 5 == 0 else 0  # never enough to outweigh the helpful ones


def _facade_writer(project_dir: str, result_dir: str, worker: int, shared: str, barrier) -> None:
    try:
        os.environ["CLAUDE_PROJECT_DIR"] = project_dir
        import playbook

        barrier.wait(timeout=60)
        for j in range(ROUNDS):
            evaluations = [{"name": shared, "rating": "helpful", "rationale": f"w{worker} r{j}"}] * _helpful_ratings(
                worker, j
            )
            evaluations += [{"name": shared, "rating": "harmful"}] * _harmful_ratings(worker, j)
            evaluations.append({"name": shared, "rating": "neutral"})
            pb = playbook.load_playbook()
            pb = playbook.update_playbook_data(
                pb,
                {
                    "operations": [{"type": "ADD", "text": f"f{worker}-r{j}", "section": "OTHERS"}],
                    "evaluations": evaluations,
                },
            )
            playbook.save_playbook(pb)
    except BaseException:
        _report_failure(result_dir, worker)
        raise


def _run_all(processes: list) -> None:
    for process in processes:
        process.start()
    try:
        for process in processes:
            process.join(JOIN_TIMEOUT)
    finally:
        for process in processes:
            if process.is_alive():  # only the children this test started
                process.terminate()
                process.join(5)


def _failures(result_dir: Path) -> str:
    return "\n".join(path.read_text() for path in sorted(result_dir.glob("failed-*.txt")))


# --- whole-log checks ---------------------------------------------------------------------------------


def _check_log_is_whole(log: Path) -> list:
    """Gap-free seq over every line, an intact hash chain, whole transactions; returns the transactions."""
    raw = log.read_bytes()
    assert raw.endswith(b"\n")
    lines = raw.splitlines(keepends=True)
    seqs = [json.loads(line)["seq"] for line in lines]
    assert seqs == list(range(1, len(lines) + 1))
    for number, line in enumerate(lines, 1):
        assert split_hash(line) is not None, f"line {number} has no hash"
    previous = text(walk_chain(raw))

    reader = LogReader(log)
    transactions = list(reader)  # raises CorruptLogError on any damage
    assert reader.torn is None
    assert reader.position.offset == len(raw) and reader.position.seq == len(lines)
    assert reader.position.hash == previous
    assert sum(len(t.events) + 1 for t in transactions) == len(lines)
    for transaction in transactions:
        assert isinstance(transaction.commit, TransactionCommitted)
        assert transaction.commit.events == len(transaction.events)
        assert {e.tx for e in transaction.events} <= {transaction.commit.tx}
        seqs = [e.seq for e in transaction.events] + [transaction.commit.seq]
        assert seqs == list(range(transaction.start.seq + 1, transaction.end.seq + 1))
    assert len({t.commit.tx for t in transactions}) == len(transactions)
    return transactions


def _check_snapshot_is_the_projection(claude_dir: Path) -> PlaybookState:
    state, position, torn = fold_log(claude_dir / LOG_NAME, PlaybookState())
    assert torn is None
    assert (claude_dir / SNAPSHOT_NAME).read_bytes() == render(state, position)
    return state


def _snapshot_entries(claude_dir: Path) -> list[dict]:
    data = json.loads((claude_dir / SNAPSHOT_NAME).read_bytes())
    assert list(data["sections"]) == SECTIONS
    assert "key_points" not in data
    return [dict(entry, section=section) for section, entries in data["sections"].items() for entry in entries]


# --- tests --------------------------------------------------------------------------------------------


def test_concurrent_repository_appends_all_land_once_in_a_whole_log(tmp_path):
    claude_dir = tmp_path / "project" / ".claude"
    result_dir = tmp_path / "results"
    result_dir.mkdir()
    barrier = CTX.Barrier(WRITERS)
    stop = CTX.Event()
    reader = CTX.Process(target=_reader, args=(str(claude_dir), str(result_dir), stop))
    processes = [
        CTX.Process(target=_repository_writer, args=(str(claude_dir), str(result_dir), i, barrier))
        for i in range(WRITERS)
    ]
    reader.start()
    try:
        _run_all(processes)
    finally:
        stop.set()
        reader.join(JOIN_TIMEOUT)
        if reader.is_alive():
            reader.terminate()
            reader.join(5)
    assert not _failures(result_dir), _failures(result_dir)
    assert [p.exitcode for p in processes] == [0] * WRITERS and reader.exitcode == 0
    read = json.loads((result_dir / "reader.json").read_text())
    assert read["observations"] > 1 and read["seq"] == 2 * WRITERS * ROUNDS

    transactions = _check_log_is_whole(claude_dir / LOG_NAME)
    expected = {f"w{i}-t{j}": SECTIONS[(i + j) % len(SECTIONS)] for i in range(WRITERS) for j in range(ROUNDS)}

    # One transaction per append, each holding exactly its one ADD.
    assert len(transactions) == WRITERS * ROUNDS
    added = [e for t in transactions for e in t.events]
    assert all(isinstance(e, KeyPointAdded) for e in added)
    assert sorted(e.text for e in added) == sorted(expected)
    assert all(t.commit.source == "test" for t in transactions)
    # The writers really ran at the same time: their transactions interleave in the log
    # (a serial run would switch writers only WRITERS - 1 times).
    sessions = [t.commit.session for t in transactions]
    assert sum(1 for a, b in zip(sessions, sessions[1:]) if a != b) > 2 * WRITERS

    # What each child saw returned matches the log: its commits are there, in the order it made them.
    by_tx = {t.commit.tx: t for t in transactions}
    seen = []
    for i in range(WRITERS):
        commits = json.loads((result_dir / f"commits-{i}.json").read_text())
        assert len(commits) == ROUNDS
        assert [seq for seq, _tx, _name in commits] == sorted(seq for seq, _tx, _name in commits)
        for j, (seq, tx, name) in enumerate(commits):
            transaction = by_tx[tx]
            assert transaction.commit.seq == seq and transaction.commit.session == f"worker-{i}"
            assert [(e.name, e.text) for e in transaction.events] == [(name, f"w{i}-t{j}")]
            seen.append(tx)
    assert sorted(seen) == sorted(by_tx)

    # The folded state and playbook.json hold every ADD exactly once, in its section.
    state = _check_snapshot_is_the_projection(claude_dir)
    folded = {kp.text: section for section, kp in state.entries()}
    assert folded == expected and len(state.entries()) == len(expected)
    entries = _snapshot_entries(claude_dir)
    assert sorted(e["text"] for e in entries) == sorted(expected)
    assert {e["text"]: e["section"] for e in entries} == expected
    names = [e["name"] for e in entries]
    assert len(set(names)) == len(names)
    # IDs are issued gap-free per section: 400 ADDs, never a collision or a reuse.
    for section, slug in SECTION_SLUGS.items():
        count = sum(1 for s in expected.values() if s == section)
        assert sorted(state.sections[section]) == [f"{slug}-{n:03d}" for n in range(1, count + 1)]

    # A reader that opens the repository now sees the same thing, and it is fresh.
    repo = PlaybookRepository(claude_dir)
    assert repo.is_fresh()
    assert repo.current()[0] == state


def test_concurrent_load_update_save_through_the_facade_loses_nothing(tmp_path, monkeypatch):
    import playbook

    project = tmp_path / "project"
    project.mkdir()
    claude_dir = project / ".claude"
    result_dir = tmp_path / "results"
    result_dir.mkdir()

    # The shared entry exists before the workers start.
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))
    pb = playbook.load_playbook()
    pb = playbook.update_playbook_data(
        pb, {"operations": [{"type": "ADD", "text": "shared tip", "section": "PATTERNS & APPROACHES"}]}
    )
    playbook.save_playbook(pb)
    [shared] = [e["name"] for e in playbook.load_playbook()["sections"]["PATTERNS & APPROACHES"]]

    barrier = CTX.Barrier(WRITERS)
    processes = [
        CTX.Process(target=_facade_writer, args=(str(project), str(result_dir), i, shared, barrier))
        for i in range(WRITERS)
    ]
    _run_all(processes)
    assert not _failures(result_dir), _failures(result_dir)
    assert [p.exitcode for p in processes] == [0] * WRITERS

    _check_log_is_whole(claude_dir / LOG_NAME)
    state = _check_snapshot_is_the_projection(claude_dir)

    expected_texts = {f"f{i}-r{j}" for i in range(WRITERS) for j in range(ROUNDS)}
    helpful = sum(_helpful_ratings(i, j) for i in range(WRITERS) for j in range(ROUNDS))
    harmful = sum(_harmful_ratings(i, j) for i in range(WRITERS) for j in range(ROUNDS))

    final = playbook.load_playbook()
    entries = [e for section in final["sections"].values() for e in section]
    texts = [e["text"] for e in entries]
    assert sorted(texts) == sorted(expected_texts | {"shared tip"})  # all 400 present, each once
    names = [e["name"] for e in entries]
    assert len(set(names)) == len(names)
    assert sorted(e["text"] for e in final["sections"]["OTHERS"]) == sorted(expected_texts)
    [shared_entry] = final["sections"]["PATTERNS & APPROACHES"]
    assert shared_entry["name"] == shared
    assert (shared_entry["helpful"], shared_entry["harmful"]) == (helpful, harmful)  # no lost counter update
    assert {e["text"]: (e["helpful"], e["harmful"]) for e in final["sections"]["OTHERS"]} == dict.fromkeys(
        expected_texts, (0, 0)
    )

    # playbook.json and the fold of the log agree with what load_playbook returned.
    snapshot_entries = _snapshot_entries(claude_dir)
    assert sorted((e["name"], e["text"]) for e in snapshot_entries) == sorted(zip(names, texts))
    assert state.get(shared).helpful == helpful and state.get(shared).harmful == harmful

    # One transaction per save: nothing was imported or repaired on the way.
    transactions = list(LogReader(claude_dir / LOG_NAME))
    assert [t.commit.source for t in transactions] == ["save_playbook"] * (WRITERS * ROUNDS + 1)
