"""The store's contract, run against every implementation, and the JSONL log's crash behaviour."""

from __future__ import annotations

from pathlib import Path

import pytest

from eventlog.unit_of_work import append_locked
from eventlog.decide import ApplyOperations, Evaluate, decide_all
from eventlog.domain import PlaybookState
from eventlog.errors import CorruptLogError
from eventlog.events import Cause, KeyPointAdded, TailRepaired, UnknownRecord
from eventlog.evolve import fold
from eventlog.errors import PositionMismatch
from eventlog.memory import InMemoryEventStore
from eventlog.jsonl import JsonlEventStore
from eventlog.logformat import Link, start, text
from eventlog.store import LogReader, Position, fold_log, split_hash
from tests.logtools import walk_chain

CAUSE = Cause(source="test", session="s-1", model="m", analysis="why", reasoning="because")


def add(text: str, section: str = "OTHERS"):
    return lambda state: decide_all(state, [ApplyOperations([{"type": "ADD", "text": text, "section": section}])])


class StoreContract:
    """What every store promises. Subclasses provide `store`."""

    def make(self, tmp_path: Path):
        raise NotImplementedError

    def append(self, store, decider, state=None, position=None):
        with store.locked():
            return append_locked(store, state or PlaybookState(), position or Position(), decider, CAUSE)

    def test_append_returns_stamped_events_and_state(self, tmp_path):
        store = self.make(tmp_path)
        committed = self.append(store, add("use types"))
        assert [type(e) for e in committed.events] == [KeyPointAdded]
        event = committed.events[0]
        assert (event.seq, event.name) == (1, "oth-001")
        assert committed.commit.seq == 2 and committed.commit.events == 1
        assert committed.commit.source == "test" and committed.commit.analysis == "why"
        assert committed.state.get("oth-001").text == "use types"

    def test_nothing_decided_appends_nothing(self, tmp_path):
        store = self.make(tmp_path)
        assert self.append(store, lambda state: []) is None
        assert list(store.read()) == []

    def test_transactions_read_back_in_order_with_gap_free_sequence(self, tmp_path):
        store = self.make(tmp_path)
        for index in range(5):
            self.append(store, add(f"tip {index}"))
        transactions = list(store.read())
        assert len(transactions) == 5
        seqs = [r.seq for t in transactions for r in (*t.events, t.commit)]
        assert seqs == list(range(1, 11))
        assert len({t.commit.tx for t in transactions}) == 5

    def test_each_append_decides_against_the_state_left_by_the_previous(self, tmp_path):
        store = self.make(tmp_path)
        self.append(store, add("same text"))
        committed = self.append(store, add("same text"))  # stale caller state: the store folds forward
        assert [e.reason for e in committed.events] == ["duplicate_text"]

    def test_fold_of_everything_equals_the_state_returned_by_append(self, tmp_path):
        store = self.make(tmp_path)
        last = None
        for index in range(3):
            last = self.append(store, add(f"tip {index}"))
        last = self.append(store, lambda s: decide_all(s, [Evaluate([{"name": "oth-002", "rating": "harmful"}])]))
        events = [e for t in store.read() for e in t.events]
        assert fold(events).sections == last.state.sections


    # --- what the write side (eventlog.unit_of_work.commit) relies on ------------------------------------

    def tear(self, store) -> None:
        """Leave a write that never finished at the end of the log."""
        raise NotImplementedError

    def test_a_write_at_a_position_that_is_not_the_end_writes_nothing(self, tmp_path):
        store = self.make(tmp_path)
        first = self.append(store, add("one"))
        self.append(store, add("two"))
        before = list(store.read())
        with store.locked(), pytest.raises(PositionMismatch) as raised:
            store.write(first.position, [KeyPointAdded(section="OTHERS", name="oth-009", text="late", helpful=0,
                                                       harmful=0, origin="operation")], CAUSE)
        assert raised.value.expected == first.position.offset and raised.value.found == store.size()
        assert list(store.read()) == before

    def test_a_batch_is_one_transaction_read_back_as_written(self, tmp_path):
        store = self.make(tmp_path)
        events = [KeyPointAdded(section="OTHERS", name=f"oth-00{i}", text=f"t{i}", helpful=0, harmful=0,
                                origin="operation") for i in range(1, 4)]
        with store.locked():
            written = store.write(Position(), events, CAUSE)
        [transaction] = list(store.read())
        assert transaction.events == written.events and transaction.commit == written.commit
        assert transaction.end == written.position and store.size() == written.position.offset
        assert [e.seq for e in written.events] == [1, 2, 3] and written.commit.events == 3
        assert len({e.tx for e in written.events} | {written.commit.tx}) == 1
        assert store.holds(written.position) and store.holds(Position())

    def test_a_torn_tail_is_invisible_and_the_next_write_cuts_it_and_says_so(self, tmp_path):
        store = self.make(tmp_path)
        first = self.append(store, add("one"))
        self.tear(store)
        assert [t.commit.tx for t in store.read()] == [first.commit.tx]
        state, position, torn = store.fold(PlaybookState())
        assert position == first.position and torn is not None and torn.offset == first.position.offset
        committed = self.append(store, add("two"))
        assert isinstance(committed.events[0], TailRepaired)
        assert [type(e) for t in store.read() for e in t.events] == [KeyPointAdded, TailRepaired, KeyPointAdded]
        assert store.fold(PlaybookState())[2] is None

    def test_fold_up_to_a_position_and_on_from_it_equals_the_whole_fold(self, tmp_path):
        store = self.make(tmp_path)
        ends = [self.append(store, add(f"tip {i}")).position for i in range(4)]
        whole = store.fold(PlaybookState())
        partial, middle, _ = store.fold(PlaybookState(), Position(), ends[1].offset)
        assert middle == ends[1]
        assert store.fold(partial, middle)[:2] == whole[:2]

    def test_a_position_the_log_does_not_hold_is_not_trusted(self, tmp_path):
        store = self.make(tmp_path)
        committed = self.append(store, add("one"))
        assert not store.holds(Position(offset=committed.position.offset, seq=committed.position.seq, hash="x"))
        stale = PlaybookState()
        again = self.append(store, add("one"), state=stale, position=Position(offset=1, seq=9, hash="0"))
        assert [e.reason for e in again.events] == ["duplicate_text"]  # folded from the start instead


class TestInMemoryStore(StoreContract):
    def make(self, tmp_path):
        return InMemoryEventStore()

    def tear(self, store):
        store.unfinished.append(KeyPointAdded(section="OTHERS", name="oth-099", text="cut", helpful=0, harmful=0,
                                              origin="operation"))


class TestJsonlStore(StoreContract):
    def make(self, tmp_path):
        return JsonlEventStore(tmp_path / "log.jsonl")

    def tear(self, store):
        with open(store.path, "ab") as log:
            log.write(b'{"type":"KeyPointAdded","seq":3,"tx":"unfin')

    def test_every_line_is_json_with_a_hash_chained_to_the_previous(self, tmp_path):
        store = self.make(tmp_path)
        self.append(store, add("a"))
        self.append(store, add("b"))
        raw = store.path.read_bytes()
        _state, position, _torn = fold_log(store.path, PlaybookState())
        for line in raw.splitlines():
            prefix, digits = split_hash(line)
            assert len(digits) == 32
        running = walk_chain(raw)
        assert isinstance(running, Link) and text(running) == position.hash
        assert position.hash == split_hash(raw.splitlines()[-1])[1].decode()

    def test_unknown_record_type_is_read_kept_and_not_applied(self, tmp_path):
        store = self.make(tmp_path)
        self.append(store, add("a"))
        raw = store.path.read_bytes()
        _state, position, _torn = fold_log(store.path, PlaybookState())
        running = start(position.hash)
        body = b'{"type":"FromTheFuture","seq":3,"tx":"zz","at":"2030-01-01T00:00:00+00:00","x":1}'
        commit = b'{"type":"TransactionCommitted","seq":4,"tx":"zz","at":"2030-01-01T00:00:00+00:00","events":1,"source":"v9"}'
        lines = []
        for record in (body, commit):
            state = running.state.copy()
            state.update(record[:-1])
            digits = state.hexdigest()[:32].encode()
            lines.append(record[:-1] + b',"h":"' + digits + b'"}\n')
            running = running.fed(lines[-1])
        store.path.write_bytes(raw + b"".join(lines))
        transactions = list(store.read())
        assert isinstance(transactions[1].events[0], UnknownRecord)
        assert transactions[1].events[0].type == "FromTheFuture"
        committed = self.append(store, add("b"))
        assert committed.events[0].seq == 5
        assert lines[0] in store.path.read_bytes()


def _three_transactions(tmp_path: Path) -> tuple[JsonlEventStore, list[int]]:
    store = JsonlEventStore(tmp_path / "log.jsonl")
    ends = []
    for text in ("one", "two", "three"):
        with store.locked():
            committed = append_locked(store, PlaybookState(), Position(), add(text), CAUSE)
        ends.append(committed.position.offset)
    return store, ends


@pytest.mark.slow
def test_a_cut_at_every_byte_offset_shows_whole_transactions_and_the_next_append_repairs(tmp_path):
    store, ends = _three_transactions(tmp_path)
    full = store.path.read_bytes()
    for cut in range(0, len(full) + 1):
        store.path.write_bytes(full[:cut])
        for leftover in store.path.parent.glob("log.jsonl.torn-*"):
            leftover.unlink()
        reader = LogReader(store.path)
        texts = [e.text for t in reader for e in t.events]
        whole = [t for t, end in zip(("one", "two", "three"), ends) if end <= cut]
        assert texts == whole, cut
        assert (reader.torn is None) == (cut in ends or cut == 0), cut
        with store.locked():
            committed = append_locked(store, PlaybookState(), Position(), add("four"), CAUSE)
        after = [e for t in store.read() for e in t.events]
        assert [e.text for e in after if isinstance(e, KeyPointAdded)] == whole + ["four"], cut
        last_end = max([0] + [end for end in ends if end <= cut])
        repaired = [e for e in committed.events if isinstance(e, TailRepaired)]
        if cut == last_end:
            assert not repaired, cut
        else:
            assert repaired and repaired[0].bytes_cut == cut - last_end, cut
            kept = store.path.parent / repaired[0].kept_at
            assert kept.read_bytes() == full[last_end:cut]


@pytest.mark.parametrize("junk", [b"\x00" * 300, b"garbage without newline", b"{\"type\": \"Key\n\x00\x00\n"])
def test_a_tail_of_junk_is_invisible_and_cut_by_the_next_writer(tmp_path, junk):
    store, ends = _three_transactions(tmp_path)
    store.path.write_bytes(store.path.read_bytes() + junk)
    assert len(list(store.read())) == 3
    with store.locked():
        committed = append_locked(store, PlaybookState(), Position(), add("four"), CAUSE)
    assert isinstance(committed.events[0], TailRepaired)
    assert len(list(store.read())) == 4


@pytest.mark.parametrize("junk", [b'{"type":"TransactionCommitted","seq":00,"h":"0badf00d"}\n',
                                  b'{"type":"KeyPointAdded"}\n{"type":"TransactionCommitted",,"h":"0badf00d"}\n{"x"'])
def test_a_tail_with_a_whole_commit_line_that_does_not_read_back_is_invisible_and_never_written_after(tmp_path, junk):
    # A write cut short never completes its commit line: one that is whole and does not read back was
    # damaged later, and the writer refuses instead of cutting a transaction that was acknowledged.
    store, ends = _three_transactions(tmp_path)
    before = store.path.read_bytes() + junk
    store.path.write_bytes(before)
    assert len(list(store.read())) == 3
    with pytest.raises(CorruptLogError) as raised, store.locked():
        append_locked(store, PlaybookState(), Position(), add("four"), CAUSE)
    assert (raised.value.line, raised.value.offset) == (before.count(b"\n", 0, ends[-1]) + 1, ends[-1])
    assert store.path.read_bytes() == before and not list(tmp_path.glob("*.torn-*"))


def test_a_damaged_line_in_the_middle_stops_reading_and_writing_with_its_line_number(tmp_path):
    store, ends = _three_transactions(tmp_path)
    lines = store.path.read_bytes().splitlines(keepends=True)
    lines[2] = lines[2].replace(b'"type":"KeyPointAdded"', b'"type":"KeyPointAdde\xff"')
    store.path.write_bytes(b"".join(lines))
    with pytest.raises(CorruptLogError) as raised:
        list(store.read())
    assert raised.value.line == 3 and raised.value.path == store.path
    assert raised.value.offset == len(lines[0]) + len(lines[1])
    before = store.path.read_bytes()
    with pytest.raises(CorruptLogError):
        with store.locked():
            append_locked(store, PlaybookState(), Position(), add("four"), CAUSE)
    assert store.path.read_bytes() == before


def test_a_byte_changed_inside_a_text_in_the_middle_is_reported(tmp_path):
    store, ends = _three_transactions(tmp_path)
    data = store.path.read_bytes()
    flipped = data.replace(b'"text":"two"', b'"text":"twx"')
    store.path.write_bytes(flipped)
    with pytest.raises(CorruptLogError) as raised:
        list(store.read())
    assert raised.value.line == 3 and "hash" in raised.value.reason


def test_a_deleted_line_in_the_middle_is_reported(tmp_path):
    store, ends = _three_transactions(tmp_path)
    lines = store.path.read_bytes().splitlines(keepends=True)
    del lines[2]
    store.path.write_bytes(b"".join(lines))
    with pytest.raises(CorruptLogError) as raised:
        list(store.read())
    assert raised.value.line == 3


def test_fold_from_a_checkpoint_reads_only_the_tail(tmp_path):
    store, ends = _three_transactions(tmp_path)
    state, position, torn = fold_log(store.path, PlaybookState())
    assert position.offset == ends[-1] and torn is None
    partial, middle, _ = fold_log(store.path, PlaybookState(), until=ends[1])
    assert middle.offset == ends[1]
    rest, end, _ = fold_log(store.path, partial, middle)
    assert rest.sections == state.sections and end == position


@pytest.mark.parametrize("backend", ["jsonl", "memory"])
def test_the_repository_writes_and_reads_through_either_store(tmp_path, backend):
    from projections.repository import PlaybookRepository

    store = InMemoryEventStore() if backend == "memory" else None
    (tmp_path / ".claude").mkdir()  # the projections' directory (the JSONL store creates it for its log)
    repo = PlaybookRepository(tmp_path / ".claude", store=store)
    for text in ("one", "two"):
        repo.append([ApplyOperations([{"type": "ADD", "text": text}])], CAUSE)
    repo.append([Evaluate([{"name": "oth-002", "rating": "helpful"}])], CAUSE)
    state = repo.state()
    assert [(kp.name, kp.text, kp.helpful) for _, kp in state.entries()] == [("oth-001", "one", 0), ("oth-002", "two", 1)]
    assert repo.is_fresh() and repo.current()[0] == state
    assert len(list(repo.store.read())) == 3
