"""The log's chain: SHA-256 from a boundary, old CRC-32 logs read as they are, damage found by both readers."""

from __future__ import annotations

import shutil
import zlib
from pathlib import Path

import pytest

from eventlog.checks import hash_at
from eventlog.decide import ApplyOperations, decide_all
from eventlog.domain import PlaybookState
from eventlog.errors import CorruptLogError
from eventlog.events import Cause, KeyPointAdded, TransactionCommitted
from eventlog.logformat import Link, boundary_seed, encode_line, split_hash
from eventlog.store import LogReader, Position, fold_log
from projections.repository import LOG_NAME, PlaybookRepository
from projections.verify import verify
from tests.logtools import encode_crc_line, is_sha_line, walk_chain

OLD_LOG = Path(__file__).parent / "fixtures" / "crc32" / LOG_NAME
"""A log written before the SHA-256 chain (every line's `h` a CRC-32)."""


def add(text: str):
    return lambda state: decide_all(state, [ApplyOperations([{"type": "ADD", "text": text, "section": "OTHERS"}])])


def folds(path: Path, start: Position = Position()) -> tuple[PlaybookState, Position]:
    """The fold's fast road and the strict reader over the same bytes: they must agree."""
    fast, position, torn = fold_log(path, PlaybookState(), start)
    assert torn is None
    reader = LogReader(path, start, strict=True)
    transactions = list(reader)
    assert reader.position == position and reader.torn is None
    assert [t.end for t in LogReader(path, start)] == [t.end for t in transactions]
    return fast, position


def old_project(tmp_path: Path) -> PlaybookRepository:
    claude = tmp_path / ".claude"
    claude.mkdir()
    shutil.copy(OLD_LOG, claude / LOG_NAME)
    return PlaybookRepository(claude)


def test_an_old_crc32_log_verifies_as_it_is(tmp_path):
    repo = old_project(tmp_path)
    assert all(not is_sha_line(line) for line in OLD_LOG.read_bytes().splitlines())
    _state, position = folds(repo.log_path)
    assert len(position.hash) == 8 and hash_at(repo.log_path, position)
    walk_chain(repo.log_path.read_bytes())


def test_writes_after_an_old_log_begin_the_sha256_part_at_a_transaction_and_leave_the_old_lines_alone(tmp_path):
    repo = old_project(tmp_path)
    _old_state, old_end = folds(repo.log_path)
    repo.append(add("Prefer small commits"), Cause(source="test"))
    repo.append(add("Run the linter first"), Cause(source="test"))
    raw = repo.log_path.read_bytes()
    assert raw.startswith(OLD_LOG.read_bytes())
    new_lines = raw[old_end.offset:].splitlines()
    assert new_lines and all(is_sha_line(line) for line in new_lines)
    state, end = folds(repo.log_path)
    assert len(end.hash) == 32 and hash_at(repo.log_path, end)
    assert {kp.text for _s, kp in state.entries()} >= {"Prefer small commits", "Run the linter first"}
    # A reader resuming at the boundary (a checkpoint taken on the old log) and one from the start agree.
    resumed, resumed_end = folds(repo.log_path, old_end)
    assert resumed_end == end
    assert verify(repo).ok, verify(repo).problems
    walk_chain(raw)


def test_a_new_log_is_sha256_from_its_first_line(tmp_path):
    repo = PlaybookRepository(tmp_path / ".claude")
    repo.append(add("Pin the lock file"), Cause(source="test"))
    raw = repo.log_path.read_bytes()
    assert all(is_sha_line(line) for line in raw.splitlines())
    _state, end = folds(repo.log_path)
    assert end.hash == split_hash(raw.splitlines()[-1])[1].decode()


def _sha_log(tmp_path: Path, count: int = 3) -> PlaybookRepository:
    repo = PlaybookRepository(tmp_path / ".claude")
    for number in range(count):
        repo.append(add(f"Key point number {number}"), Cause(source="test"))
    return repo


def test_a_crc32_line_after_the_boundary_is_damage_even_with_a_right_crc(tmp_path):
    repo = _sha_log(tmp_path)
    _state, end = folds(repo.log_path)
    # A whole transaction in the old format, its CRC-32 right for the bytes before it: a downgrade.
    running = zlib.crc32(repo.log_path.read_bytes())
    tx, at = "d0d0d0d0d0d0d0d0", "2030-01-01T00:00:00.000000+00:00"
    payload = b""
    for record in (KeyPointAdded(seq=end.seq + 1, tx=tx, at=at, section="OTHERS", name="oth-099", text="forged",
                                 helpful=0, harmful=0, origin="operation"),
                   TransactionCommitted(seq=end.seq + 2, tx=tx, at=at, events=1, source="forger")):
        line, running = encode_crc_line(record, running)
        payload += line
    with open(repo.log_path, "ab") as handle:
        handle.write(payload)
    with pytest.raises(CorruptLogError) as caught:
        list(LogReader(repo.log_path))
    assert caught.value.line == end.line + 1 and "never downgraded" in caught.value.reason
    with pytest.raises(CorruptLogError):
        fold_log(repo.log_path, PlaybookState())
    report = verify(repo)
    assert not report.ok and "never downgraded" in report.problems[0].what


def test_the_sha256_part_cannot_begin_inside_a_transaction(tmp_path):
    claude = tmp_path / ".claude"
    claude.mkdir()
    log = claude / LOG_NAME
    _state, end, _torn = fold_log(OLD_LOG, PlaybookState())
    tx, at = "e1e1e1e1e1e1e1e1", "2030-01-01T00:00:00.000000+00:00"
    raw = OLD_LOG.read_bytes()
    event, running = encode_crc_line(KeyPointAdded(seq=end.seq + 1, tx=tx, at=at, section="OTHERS", name="oth-099",
                                                   text="half and half", helpful=0, harmful=0, origin="operation"),
                                     zlib.crc32(raw))
    commit, _after = encode_line(TransactionCommitted(seq=end.seq + 2, tx=tx, at=at, events=1, source="x"),
                                 Link(boundary_seed(running)))
    log.write_bytes(raw + event + commit)
    with pytest.raises(CorruptLogError) as caught:
        list(LogReader(log, strict=True))
    assert caught.value.line == end.line + 2 and "inside a transaction" in caught.value.reason


@pytest.mark.parametrize("which", ["event", "commit", "first"])
def test_a_changed_byte_in_the_sha256_part_is_found_by_both_readers_at_its_line(tmp_path, which):
    repo = _sha_log(tmp_path, 4)
    raw = repo.log_path.read_bytes()
    lines = raw.splitlines(keepends=True)
    index = {"event": len(lines) - 4, "commit": len(lines) - 3, "first": 0}[which]
    target = lines[index]
    at = target.index(b'"at":"') + 8  # a digit of the year: the line still decodes
    lines[index] = target[:at] + (b"9" if target[at:at + 1] != b"9" else b"8") + target[at + 1:]
    repo.log_path.write_bytes(b"".join(lines))
    for strict in (False, True):
        with pytest.raises(CorruptLogError) as caught:
            list(LogReader(repo.log_path, strict=strict))
        assert caught.value.line == index + 1
    with pytest.raises(CorruptLogError) as caught:
        fold_log(repo.log_path, PlaybookState())
    assert caught.value.line == index + 1


def test_an_append_point_is_held_only_by_the_log_it_was_taken_from(tmp_path):
    repo = _sha_log(tmp_path, 3)
    _state, end = folds(repo.log_path)
    assert hash_at(repo.log_path, end)
    raw = bytearray(repo.log_path.read_bytes())
    lines = bytes(raw).splitlines(keepends=True)
    last_tx_first_line = sum(len(line) for line in lines[:-2])
    raw[last_tx_first_line + 20] ^= 1  # inside the last transaction's event line
    repo.log_path.write_bytes(bytes(raw))
    assert not hash_at(repo.log_path, end)
