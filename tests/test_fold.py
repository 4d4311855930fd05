"""The fold's fast road (`fold_log`: chunks, light views, one SHA-256 per transaction) against the strict reader.

Whatever the chunk size, the cut, the stop offset or the record types, `fold_log` must give
the state, position and torn tail that the strict line-by-line reader gives with the full
records, and that `fold` gives over the events themselves.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import msgspec
import pytest

import eventlog.events as ev
import eventlog.jsonl
import eventlog.store
from benchmarks.fold import write_log
from eventlog.unit_of_work import append_locked
from eventlog.domain import PRUNE_RULE, PlaybookState
from eventlog.errors import CorruptLogError
from eventlog.events import CountersSet, CurationHeld, Event, KeyPointAdded, KeyPointDeleted, KeyPointEvaluated
from eventlog.events import KeyPointImported, KeyPointMarkedStale, KeyPointMoved, KeyPointPruned, KeyPointsMerged
from eventlog.events import KeyPointUpdated, LearningCompleted, LearningFailed, LearningRequested, LearningSkipped
from eventlog.events import HistoryRewritten, OperationSkipped, PlaybookImported, SectionReordered, SnapshotSetAside
from eventlog.events import TailRepaired
from eventlog.events import TransactionCommitted, VersionSet
from eventlog.events import LearningGivenUp, PlaybookDisabled, PlaybookEnabled
from eventlog.events import ProposalAccepted, ProposalExpired, ProposalRecorded, ProposalRejected
from eventlog.evolve import _READS, apply_transaction, fold
from eventlog.registry import EVENT_TYPES
from eventlog.store import LogReader, Position, encode_line, fold_log

AT = "2026-03-0{}T10:00:00.000000+00:00"

# One transaction per list; together they hold every event type at least once.
EVERY_TYPE: list[list[Event | dict[str, Any]]] = [
    [PlaybookImported(path="playbook.json", file_format="flat", version="1.0",
                      last_updated="2025-01-01T00:00:00+00:00", entries=1),
     KeyPointImported(section="OTHERS", name="kpt_007", text="legacy", helpful=2, harmful=0,
                      source_format="dict_with_score", score=2.0)],
    [KeyPointAdded(section="PATTERNS & APPROACHES", name="pat-001", text="a", helpful=0, harmful=0,
                   origin="operation"),
     KeyPointAdded(section="PATTERNS & APPROACHES", name="pat-002", text="b", helpful=0, harmful=0, origin="save"),
     KeyPointAdded(section="A SECTION OF A NEWER VERSION", name="oth-005", text="c", helpful=1, harmful=0,
                   origin="manual_edit")],
    [KeyPointEvaluated(name="pat-001", rating="helpful", helpful=1, harmful=0, rationale="it helped"),
     KeyPointEvaluated(name="gone-001", rating="harmful", helpful=0, harmful=1),
     CountersSet(name="pat-002", helpful=3, harmful=4, previous_helpful=0, previous_harmful=0)],
    [PlaybookImported(path="playbook.json", file_format="sections", version="1.0", genesis=False),
     SnapshotSetAside(moved_to="playbook.json.unreadable-1", error="not JSON"),
     TailRepaired(offset=10, bytes_cut=5, kept_at="playbook.events.jsonl.torn-1"),
     HistoryRewritten(seqs=[3, 7], reason="secrets", redactions=2, head_before="ab" * 16, head_after="cd" * 16)],
    [KeyPointUpdated(name="pat-001", text="a, better", previous_text="a"),
     KeyPointMoved(name="pat-002", from_section="PATTERNS & APPROACHES", to_section="MISTAKES TO AVOID"),
     SectionReordered(section="OTHERS", names=["oth-005", "kpt_007"]),
     VersionSet(version="1.1", previous="1.0")],
    [KeyPointsMerged(section="USER PREFERENCES", name="pref-001", text="merged", sources=["pat-001", "kpt_007"],
                     helpful=3, harmful=0, missing_sources=["pat-099"], similarity=0.91, method="content-word overlap"),
     ev.KeyPointAbsorbed(name="pref-001", text="merged", absorbed="merged, said again", similarity=0.9,
                         method="content-word overlap"),
     KeyPointDeleted(section="OTHERS", name="oth-005", text="c", reason="outdated"),
     KeyPointPruned(section="MISTAKES TO AVOID", name="pat-002", text="b", helpful=3, harmful=4, rule=PRUNE_RULE),
     OperationSkipped(kind="operation", reason="empty_text", index=0, operation={"type": "ADD", "text": ""})],
    [LearningRequested(request="r1", hook="SessionEnd", transcript="/t/1.jsonl", session="s1"),
     LearningRequested(request="r2", hook="PreCompact", transcript="/t/2.jsonl"),
     LearningRequested(request="r3", hook="SessionEnd", transcript="/t/3.jsonl", reason="again"),
     ev.LearningDeferred(request="r2", reason="daily token budget reached", transcript="/t/2.jsonl",
                         used_tokens=500_100, budget_tokens=500_000)],
    [ev.ModelCallRecorded(role="reflector", model="claude-sonnet-5-5", backend="api", attempt=1, outcome="ok",
                          input_tokens=900, output_tokens=80, cache_read_input_tokens=20, latency_ms=1200),
     LearningCompleted(request="r1", transcript="/t/1.jsonl", from_line=0, through_line=40, cited=["pref-001"],
                       injected=["pref-001", "gone-002"]),
     LearningFailed(request="r2", error="model unreachable", transcript="/t/2.jsonl"),
     LearningSkipped(request="r3", reason="no API key", transcript="/t/3.jsonl", through_line=12)],
    [KeyPointMarkedStale(name="pref-001", idle_sessions=20),
     CurationHeld(reason="it would delete 8 of 10 key points", operations=[{"type": "DELETE", "target_id": "x"}],
                  entries=10, removed=8, chars_before=900, chars_after=100)],
    [ev.BranchesMerged(heads=["0000000000000006", "00000000000000ff"], ancestor="0000000000000005", shared_seq=20,
                       appended=2, reverted=["0000000000000004"]),
     ev.MergeConflictResolved(name="pref-001", conflict="update/update", rule="later wins",
                              kept_tx="0000000000000006", lost_tx="00000000000000ff", lost_text="as the other side had it")],
    [LearningRequested(request="r4", hook="SessionEnd", transcript="/t/4.jsonl"),
     LearningFailed(request="r4", error="HTTP 529", transcript="/t/4.jsonl", attempt=1),
     PlaybookDisabled(reason="trying without"),
     LearningRequested(request="r5", hook="SubagentStop", transcript="/t/5.jsonl"),
     LearningFailed(request="r5", error="HTTP 529", transcript="/t/5.jsonl", attempt=5),
     LearningGivenUp(request="r5", attempts=5, error="HTTP 529", transcript="/t/5.jsonl")],
    [PlaybookEnabled(), PlaybookDisabled()],
    [ProposalRecorded(proposal="c1-1", operation={"type": "UPDATE", "target_id": "pref-001", "text": "x"},
                      base={"pref-001": "merged"}, request="r1", held="too much at once"),
     ProposalRecorded(proposal="c1-2", operation={"type": "ADD", "text": "y"}),
     ProposalRecorded(proposal="c1-3", operation={"type": "DELETE", "target_id": "pref-001"}),
     ProposalRecorded(proposal="c1-4", operation={"type": "ADD", "text": "z"})],
    [ProposalAccepted(proposal="c1-1", edited={"type": "UPDATE", "target_id": "pref-001", "text": "x2"}),
     ProposalRejected(proposal="c1-2", reason="no", by="user"),
     ProposalExpired(proposal="c1-3", age_days=31.5, max_age_days=30.0)],
    [ev.ValueMeasured(cases=15, runs=1, with_score=0.8, without_score=0.5, cost_usd=2.5, claude_version="2.1.328",
                      sections=[ev.SectionValue(section="PROJECT CONTEXT", cases=4, with_score=1.0, without_score=0.25)],
                      lessons=24, lessons_captured=24, false_lessons=0, duplicates=0, id_changes=0)],
    [],  # a transaction of no events (a commit alone)
]


def write_transactions(path: Path, transactions: list[list[Event | dict[str, Any]]]) -> list[Event | dict]:
    """Write `transactions` as a writer would (stamped, chained, each closed by its commit); returns the records."""
    seq, running, written = 0, 0, []
    with open(path, "wb") as out:
        for number, events in enumerate(transactions):
            tx, at = f"{number:016x}", AT.format(number % 9 + 1)
            records: list[Any] = []
            for event in events:
                seq += 1
                if isinstance(event, dict):  # a record of a type this version does not know
                    records.append({"type": event["type"], "seq": seq, "tx": tx, "at": at,
                                    **{k: v for k, v in event.items() if k != "type"}})
                else:
                    records.append(msgspec.structs.replace(event, seq=seq, tx=tx, at=at))
            seq += 1
            records.append(TransactionCommitted(seq=seq, tx=tx, at=at, events=len(events), source="test",
                                                analysis="why " * (number % 3)))
            for record in records:
                line, running = encode_line(record, running)
                out.write(line)
            written.extend(records)
    return written


def strict_fold(path: Path, until: int | None = None) -> tuple[PlaybookState, Position, Any]:
    """The strict reader over full records, applied one transaction at a time."""
    reader = LogReader(path, strict=True)
    state, position = PlaybookState(), Position()
    for transaction in reader:
        if until is not None and transaction.end.offset > until:
            return state, position, None
        apply_transaction(state, transaction.events, transaction.commit.seq, transaction.commit.at)
        position = transaction.end
    torn = reader.torn
    if torn is not None and until is not None and until < torn.offset + torn.length:
        torn = None  # asked for the log up to `until` only
    return state, reader.position, torn


def _refuse_strict_scan(self, handle):
    raise AssertionError("the fold fell back to the strict scan")
    yield  # pragma: no cover


@pytest.fixture
def no_strict_scan(monkeypatch):
    """Fail the test if the fold falls back to the strict scan: the fast road must carry it alone."""
    monkeypatch.setattr(LogReader, "_strict", _refuse_strict_scan)


def test_every_record_type_has_a_fold_view():
    assert set(_READS) == {*EVENT_TYPES, TransactionCommitted}


def test_every_event_type_folds_the_same_through_views_and_through_records(tmp_path):
    assert {type(e) for events in EVERY_TYPE for e in events} == set(EVENT_TYPES)
    path = tmp_path / "log.jsonl"
    records = write_transactions(path, EVERY_TYPE)
    expected = strict_fold(path)
    by_events = fold([r for r in records if not isinstance(r, TransactionCommitted)])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(LogReader, "_strict", _refuse_strict_scan)
        folded = fold_log(path, PlaybookState())
    assert folded == expected
    assert folded[0] == msgspec.structs.replace(by_events, seq=records[-1].seq)  # fold sees no commits
    state = folded[0]
    assert list(state.where) == ["pref-001"] and state.get("pref-001").helpful == 3
    assert state.version == "1.1" and state.high_water["pat"] == 2 and state.high_water["kpt"] == 7
    assert state.progress == {"/t/1.jsonl": 40, "/t/3.jsonl": 12}
    # r2 failed before retries existed (no attempt): closed; r4 failed once: pending for a retry; r5 given up
    assert list(state.pending) == ["r4"] and state.pending["r4"].attempts == 1
    assert state.pending["r4"].failed_at == next(r.at for r in records
                                                 if isinstance(r, LearningFailed) and r.request == "r4")
    assert state.disabled is True
    assert state.last_updated == AT.format(6)  # the learning and housekeeping transactions after it change nothing
    assert state.sessions == 1 and list(state.usage) == ["pref-001"]
    assert (state.usage["pref-001"].injected, state.usage["pref-001"].cited, state.usage["pref-001"].stale) == (1, 1, True)


@pytest.mark.slow
@pytest.mark.parametrize("chunk_size", [64, 300, 4096, 1 << 20])
def test_any_chunk_size_and_any_stop_offset_folds_like_the_strict_reader(tmp_path, monkeypatch, chunk_size):
    path = tmp_path / "log.jsonl"
    write_log(path, 600, seed=chunk_size)
    monkeypatch.setattr(eventlog.store, "CHUNK_SIZE", chunk_size)
    assert fold_log(path, PlaybookState()) == strict_fold(path)
    data = path.read_bytes()
    line_ends = [i + 1 for i, byte in enumerate(data) if byte == 10]
    rng = random.Random(chunk_size)
    for until in [0, 1, *rng.sample(line_ends, 25), *rng.sample(range(len(data)), 25), len(data), len(data) + 9]:
        assert fold_log(path, PlaybookState(), until=until) == strict_fold(path, until), until


@pytest.mark.parametrize("chunk_size", [64, 1 << 20])
def test_folding_in_steps_from_positions_gives_the_whole_fold(tmp_path, monkeypatch, chunk_size):
    path = tmp_path / "log.jsonl"
    write_log(path, 400, seed=3)
    monkeypatch.setattr(eventlog.store, "CHUNK_SIZE", chunk_size)
    whole = fold_log(path, PlaybookState())
    ends = [t.end.offset for t in LogReader(path)]
    state, position = PlaybookState(), Position()
    for until in ends[5::17] + [None]:
        state, position, torn = fold_log(path, state, position, until=until)
    assert (state, position, torn) == whole


@pytest.mark.slow
@pytest.mark.parametrize("chunk_size", [48, 1 << 20])
def test_a_cut_at_every_byte_offset_folds_the_whole_transactions_before_it(tmp_path, monkeypatch, chunk_size):
    path = tmp_path / "log.jsonl"
    write_transactions(path, EVERY_TYPE[:4])
    full = path.read_bytes()
    monkeypatch.setattr(eventlog.store, "CHUNK_SIZE", chunk_size)
    for cut in range(len(full) + 1):
        path.write_bytes(full[:cut])
        assert fold_log(path, PlaybookState()) == strict_fold(path), cut


def test_a_line_longer_than_a_chunk_is_read_whole(tmp_path, monkeypatch, no_strict_scan):
    path = tmp_path / "log.jsonl"
    long = "x" * 5000
    write_transactions(path, [[KeyPointAdded(section="OTHERS", name="oth-001", text=long, helpful=0, harmful=0,
                                             origin="operation")]] * 1 + EVERY_TYPE[1:3])
    monkeypatch.setattr(eventlog.store, "CHUNK_SIZE", 256)
    state, position, torn = fold_log(path, PlaybookState())
    assert state.get("oth-001").text == long and torn is None and position.offset == path.stat().st_size


def test_a_record_of_a_newer_version_is_kept_out_and_the_fast_road_resumes_after_its_chunk(tmp_path, monkeypatch):
    path = tmp_path / "log.jsonl"
    future = {"type": "KeyPointRenamed", "name": "pat-001", "to": "pat-900"}
    write_transactions(path, [EVERY_TYPE[1], [future, EVERY_TYPE[2][0]], *[EVERY_TYPE[2]] * 40])
    monkeypatch.setattr(eventlog.store, "CHUNK_SIZE", 512)
    strict_calls, fast_chunks = [], []
    real_strict, real_apply = LogReader._strict, LogReader._apply

    def counting_strict(self, handle):
        strict_calls.append(self.position.offset)
        yield from real_strict(self, handle)

    monkeypatch.setattr(LogReader, "_strict", counting_strict)
    monkeypatch.setattr(LogReader, "_apply", staticmethod(lambda state, records: (fast_chunks.append(len(records)),
                                                                                    real_apply(state, records))))
    folded = fold_log(path, PlaybookState())
    assert len(strict_calls) == 1  # only the chunk holding the unknown record was scanned strictly
    assert len(fast_chunks) > 5  # and the rest went the fast road
    assert folded == strict_fold(path)


def test_damage_in_the_middle_stops_the_fold_with_the_line_that_is_damaged(tmp_path, monkeypatch):
    path = tmp_path / "log.jsonl"
    write_log(path, 300, seed=1)
    lines = path.read_bytes().splitlines(keepends=True)
    target = len(lines) // 2
    lines[target] = lines[target].replace(b'"seq":', b'"seq": ', 1)  # valid JSON; the hash no longer matches
    path.write_bytes(b"".join(lines))
    for chunk_size in (64, 1 << 20):
        monkeypatch.setattr(eventlog.store, "CHUNK_SIZE", chunk_size)
        with pytest.raises(CorruptLogError) as raised:
            fold_log(path, PlaybookState())
        assert raised.value.line == target + 1
        assert raised.value.offset == sum(len(line) for line in lines[:target])


def test_a_line_the_writer_never_wrote_is_found_even_when_it_decodes(tmp_path):
    path = tmp_path / "log.jsonl"
    write_transactions(path, EVERY_TYPE[1:3])
    lines = path.read_bytes().splitlines(keepends=True)
    lines.insert(2, b"\n")  # a blank line: the decoder alone would skip it
    path.write_bytes(b"".join(lines))
    with pytest.raises(CorruptLogError) as raised:
        fold_log(path, PlaybookState())
    assert raised.value.line == 3


@pytest.mark.parametrize("damage", [b" ", b"\t", b"\r"])
def test_a_damaged_last_commit_line_is_corruption_not_a_torn_tail_and_is_never_cut(tmp_path, damage):
    path = tmp_path / "log.jsonl"
    write_log(path, 30, seed=0)
    data = path.read_bytes()
    at = data.rindex(b'\n{"type":"TransactionCommitted"') + 2  # just after the last commit line's "{"
    path.write_bytes(data[:at] + damage + data[at:])  # still JSON, still a commit; its hash no longer matches
    line = data[:at].count(b"\n") + 1
    with pytest.raises(CorruptLogError) as folded:
        fold_log(path, PlaybookState())
    with pytest.raises(CorruptLogError) as iterated:
        list(LogReader(path))
    assert folded.value.line == iterated.value.line == line
    store = eventlog.jsonl.JsonlEventStore(path)
    before = path.read_bytes()
    with pytest.raises(CorruptLogError), store.locked():
        append_locked(store, PlaybookState(), Position(), lambda state: [], None)  # type: ignore[arg-type]
    assert path.read_bytes() == before and not list(tmp_path.glob("log.jsonl.torn-*"))


def test_a_stop_offset_inside_a_torn_tail_folds_like_the_strict_reader(tmp_path, monkeypatch):
    path = tmp_path / "log.jsonl"
    write_log(path, 60, seed=2)
    data = path.read_bytes()
    last_commit = data.rindex(b'\n{"type":"TransactionCommitted"') + 1
    path.write_bytes(data[:last_commit])  # the writer died before the last commit line
    previous_end = data.index(b"\n", data.rindex(b'\n{"type":"TransactionCommitted"', 0, last_commit - 1) + 1) + 1
    for chunk_size in (64, 1 << 20):
        monkeypatch.setattr(eventlog.store, "CHUNK_SIZE", chunk_size)
        for until in (previous_end, previous_end + 1, last_commit - 1, last_commit, None):
            folded = fold_log(path, PlaybookState(), until=until)
            assert folded == strict_fold(path, until), (chunk_size, until)
            assert folded[1].offset == previous_end and (folded[2] is None) == (until is not None and until < last_commit)
