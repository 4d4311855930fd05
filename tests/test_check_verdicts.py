"""`verify` and `stats` read the log on the store's fast path: on damaged logs their verdicts are the strict reader's.

Each damaged log is checked both ways, and in chunks of the default size and of a few lines (so a
chunk boundary falls inside transactions, and the fast path resumes after the damage it handed over).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest

import eventlog.store
import eventlog.wholecheck
from tests.test_wholecheck import keep_checkpoint
from eventlog.errors import CorruptLogError
from eventlog.logformat import COMMIT, stamp
from eventlog.store import split_hash
from playbook.commands.audit import stats
from projections.repository import PlaybookRepository
from projections.verify import verify

ROOT = Path(__file__).parent
LOGS = {"sha256": ROOT / "golden" / "replay" / "playbook.events.jsonl",
        "crc32": ROOT / "fixtures" / "crc32" / "playbook.events.jsonl"}


def _lines(raw: bytes) -> list[bytes]:
    return raw.splitlines(keepends=True)


def _transactions(raw: bytes) -> list[list[bytes]]:
    """The log's lines grouped by transaction (the last group may be unfinished)."""
    groups: list[list[bytes]] = [[]]
    for line in _lines(raw):
        groups[-1].append(line)
        if line.startswith(COMMIT):
            groups.append([])
    return [group for group in groups if group]


def _middle_event(raw: bytes) -> int:
    """The index of an event line (not a commit) in the middle of the log."""
    lines = _lines(raw)
    return next(i for i in range(len(lines) // 2, len(lines)) if not lines[i].startswith(COMMIT))


def _resealed(raw: bytes) -> bytes:
    """Every line's `h` written again in order, as a writer would: the chain holds whatever the content."""
    out, running = b"", 0
    for line in _lines(raw):
        hashed = split_hash(line)
        assert hashed is not None
        new, running = stamp(hashed[0], running)  # type: ignore[assignment]
        out += new
    return out


def torn_tail(raw: bytes) -> bytes:
    last = _transactions(raw)[-1]
    return raw + b"".join(last)[: len(b"".join(last)) // 2]


def damaged_last_commit(raw: bytes) -> bytes:
    lines = _lines(raw)
    lines[-1] = lines[-1].replace(b'"seq":', b'"seq": ', 1)
    return b"".join(lines)


def flipped_byte(raw: bytes) -> bytes:
    lines = _lines(raw)
    index = _middle_event(raw)
    at = lines[index].index(b'"tx":"') + 7
    lines[index] = lines[index][:at] + bytes([lines[index][at] ^ 1]) + lines[index][at + 1:]
    return b"".join(lines)


def unreadable_line(raw: bytes) -> bytes:
    lines = _lines(raw)
    index = _middle_event(raw)
    lines[index] = lines[index].replace(b'"seq":', b'"seq"', 1)
    return b"".join(lines)


def missing_line(raw: bytes) -> bytes:
    lines = _lines(raw)
    del lines[_middle_event(raw)]
    return b"".join(lines)


def bad_hash(raw: bytes) -> bytes:
    lines = _lines(raw)
    index = _middle_event(raw)
    line = lines[index]
    digit = line[-4:-3]
    lines[index] = line[:-4] + (b"0" if digit != b"0" else b"1") + line[-3:]
    return b"".join(lines)


def reordered_transaction(raw: bytes) -> bytes:
    groups = _transactions(raw)
    middle = len(groups) // 2
    groups[middle], groups[middle + 1] = groups[middle + 1], groups[middle]
    return b"".join(line for group in groups for line in group)


def reordered_and_resealed(raw: bytes) -> bytes:
    return _resealed(reordered_transaction(raw))


def missing_line_resealed(raw: bytes) -> bytes:
    return _resealed(missing_line(raw))


def whole(raw: bytes) -> bytes:
    return raw


DAMAGES: dict[str, Callable[[bytes], bytes]] = {f.__name__: f for f in (
    whole, torn_tail, damaged_last_commit, flipped_byte, unreadable_line, missing_line, bad_hash,
    reordered_transaction, reordered_and_resealed, missing_line_resealed)}
RESEALED = {"reordered_and_resealed", "missing_line_resealed"}


def _outcome(call: Callable[[], object]) -> object:
    """What a check gives: its result as plain data, or the damage it stopped at."""
    try:
        return msgspec.to_builtins(call())
    except CorruptLogError as exc:
        return ("CorruptLogError", exc.line, exc.offset, exc.reason)


@pytest.mark.parametrize("cores", [1, 2], ids=["one-core", "two-cores"])
@pytest.mark.parametrize("chunk", [None, 2048], ids=["chunk-default", "chunk-2k"])
@pytest.mark.parametrize("damage", DAMAGES)
@pytest.mark.parametrize("base", LOGS)
def test_fast_and_strict_verdicts_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, base: str, damage: str,
                                        chunk: int | None, cores: int) -> None:
    """`cores=2`: a large log's roads, each half folded by one core, or the chain checked by a forked child."""
    if base == "crc32" and damage in RESEALED:
        pytest.skip("resealing writes SHA-256 lines")
    if chunk is not None:
        monkeypatch.setattr(eventlog.store, "CHUNK_SIZE", chunk)
    if cores == 2:  # the log is split at a checkpoint of its undamaged middle
        monkeypatch.setattr(eventlog.wholecheck, "PARALLEL_FROM", 0)
        keep_checkpoint(tmp_path / ".claude", LOGS[base].read_bytes())
    claude = tmp_path / ".claude"
    claude.mkdir(exist_ok=True)
    log = claude / "playbook.events.jsonl"
    raw = LOGS[base].read_bytes()
    log.write_bytes(DAMAGES[damage](raw))
    before = log.read_bytes()
    repo = PlaybookRepository(claude)

    fast, strict = verify(repo), verify(repo, strict=True)
    assert msgspec.to_builtins(fast) == msgspec.to_builtins(strict)
    assert fast.ok is False  # no snapshot, at the least
    if damage == "whole":
        assert [p.what for p in fast.problems] == ["missing (playbook rebuild writes it)"]
    elif damage != "torn_tail":
        assert any(p.file == str(log) and p.line for p in fast.problems), fast.problems

    assert _outcome(lambda: stats(repo)) == _outcome(lambda: stats(repo, strict=True))
    assert log.read_bytes() == before  # checks never write the log
