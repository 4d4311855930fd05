"""A whole-log check's fold on two cores: each half of the log folded by one (`halves_fold`), or the chain
checked on the other (`parallel_fold`).

The chain needs nothing but the log's bytes: each transaction's hash is seeded by the `h`
of the commit line before it as written. So a forked child checks the chain of the file
as it was when the check began while the parent decodes, applies and checks every line's
seq, taking each position's hash from its commit line as written. The parent's result
stands only when the child vouched for the chain up to exactly where the parent stopped
(the parent checks the chain of what was appended after the child's end itself); a chunk
the child does not vouch for, a child that died, an error of any kind in the parent: the
result is thrown away and the caller folds again on the single-process road, which names
the first damaged line. So the verdicts are that road's.

Split at a checkpoint, each half is folded with every check by one core, the child proving that the
checkpoint is its half's fold. Only the whole-log checks (`verify`, `stats`) take these roads; no
reader mode exposes them.
A log under `PARALLEL_FROM` bytes, or a platform without `fork`, keeps the single-process
road: a fork costs more than it saves there.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from operator import countOf
from pathlib import Path
from typing import Any

import msgspec

from .domain import PlaybookState
from .logformat import COMMIT, NEWLINE_COMMIT, Link, Running, digest_at, feed, run_hash, start, upgraded, written_hash
from .positions import Position
from .store import LogReader, Observer
from .wholelines import WholeLines

PARALLEL_FROM = 8 << 20
"""Logs of at least this many bytes are checked on two cores."""


class _ChainElsewhere(LogReader):
    """A reader whose fast road takes a run's position hash from its last commit line as written and checks
    nothing of the chain: only for a fold whose chain a child checks."""

    def _chained(self, buffer: bytearray, chunk: memoryview, end: int, running: Running) -> str | None:
        return written_hash(buffer, end)


class _CountOnly(_ChainElsewhere):
    """`_ChainElsewhere` whose fast road applies nothing: its caller only counts what it is shown."""

    @staticmethod
    def _apply(state: PlaybookState, records: list[Any]) -> None:
        pass


def chain_reach(path: Path, offset: int, hash_text: str, end: int) -> tuple[int, str] | None:
    """(offset after the last commit line that ends by byte `end`, the position hash there) when the chain holds
    over every transaction from `offset` (a transaction's start whose position hash is `hash_text`) to it;
    None when it does not, or the file cannot be read.

    One SHA-256 over each transaction (`check_run`), as the fast road checks a chunk."""
    reached = (offset, hash_text)
    running: Running = start(hash_text)
    try:
        handle = open(path, "rb", buffering=0)
    except OSError:
        return None
    with handle:
        handle.seek(offset)
        at = offset
        for buffer, size in WholeLines(handle):
            if at + size > end:
                size = buffer.rfind(b"\n", 0, max(end - at, 0)) + 1
            with memoryview(buffer) as view:
                chunk = view[:size]
                if reached[0] == at and not isinstance(running, Link) and digest_at(buffer, buffer.find(b"\n") + 1):
                    running = upgraded(running)  # the chain's SHA-256 part begins at this transaction
                last = buffer.rfind(NEWLINE_COMMIT, 0, size) + 1
                if last or (size and buffer.startswith(COMMIT)):
                    last = buffer.index(b"\n", last) + 1
                    after = run_hash(buffer, chunk, last, running)
                    if after is None:
                        return None
                    reached = (at + last, after)
                    running = feed(start(after), chunk[last:])
                else:
                    running = feed(running, chunk)
                del chunk
            at += size
            if at >= end or not size:
                break
    return reached


def parallel_fold(path: Path, state: PlaybookState, observe: Observer | None = None,
                  whole: tuple[type, ...] = (), apply: bool = True) -> LogReader | None:
    """Fold the whole log into `state` as `LogReader.fold(..., seqs=True)` does, the chain checked by a forked
    child: the reader (its `position` and `torn` set) when every check held, else None, and then `state` and
    what `observe` saw are to be thrown away and the log folded again with a `LogReader`.

    `apply=False`: every check, and `observe` shown every record, but nothing applied (`state` is not the
    log's). None at once, nothing folded, for a log under `PARALLEL_FROM` bytes or where `fork` is
    unavailable."""
    size = _size(path)
    if size is None or size < PARALLEL_FROM:
        return None

    def check_chain() -> bytes:
        reached = chain_reach(path, 0, "", size)
        return b"-" if reached is None else b"%d %s" % (reached[0], reached[1].encode())

    child = _forked(check_chain)
    if child is None:
        return None
    reader = _ChainElsewhere(path) if apply else _CountOnly(path)
    reply = _alongside(child, lambda: reader.fold(state, observe=observe, whole=whole, seqs=True))
    return reader if reply is not None and _vouched(path, reply, reader) else None


def _vouched(path: Path, reply: bytes, reader: LogReader) -> bool:
    """Whether the child's `reply` (where its check of the chain reached) covers exactly what `reader` folded,
    the bytes appended after the child's end checked here."""
    try:
        offset_text, hash_bytes = reply.split(b" ")
        offset, hash_text = int(offset_text), hash_bytes.decode()
    except ValueError:  # "-": a chunk the child does not vouch for; or anything unexpected
        return False
    position = reader.position
    if offset < position.offset:
        reached = chain_reach(path, offset, hash_text, position.offset)
        if reached is None:
            return False
        offset, hash_text = reached
    return (offset, hash_text) == (position.offset, position.hash)


def _read_all(fd: int) -> bytes:
    parts = []
    while part := os.read(fd, 4096):
        parts.append(part)
    return b"".join(parts)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def halves_fold(path: Path, middle_state: PlaybookState, middle: Position, observe: Observer | None = None,
                whole: tuple[type, ...] = ()) -> tuple[LogReader, PlaybookState, int] | None:
    """Fold the whole log on two cores, split at `middle`, a position whose state is said to be `middle_state`
    (a checkpoint): (the reader of the second half, the state at the log's end, the transactions before
    `middle`) when every check held, else None, and then what `observe` saw is to be thrown away and the log
    folded again with a `LogReader`.

    A forked child folds the log up to `middle` from its start as `LogReader.fold(..., seqs=True)` does and
    vouches only when it reaches exactly `middle` (its hash, seq and line) with a state that encodes to the
    same bytes as `middle_state`, dict order included; the parent meanwhile folds, with every check, from
    `middle` to the end, shown to `observe` (the types in `whole` decoded as records, not views). Every byte is
    checked by one of the two, from a start the other
    proved. None at once, nothing folded, for a log under `PARALLEL_FROM` bytes or where `fork` is
    unavailable."""
    size = _size(path)
    if size is None or size < PARALLEL_FROM or not 0 < middle.offset <= size:
        return None
    expected = msgspec.msgpack.encode(middle_state)
    child = _forked(lambda: _first_half(path, middle, expected))
    if child is None:
        return None
    state = msgspec.msgpack.decode(expected, type=PlaybookState)
    reader = LogReader(path, middle)
    reply = _alongside(child, lambda: reader.fold(state, observe=observe, whole=whole, seqs=True))
    if reply is None or not reply.isdigit():
        return None
    return reader, state, int(reply)


def _size(path: Path) -> int | None:
    """The log's size in bytes; None when it cannot be read or this platform has no `fork`."""
    try:
        size = os.stat(path).st_size
    except OSError:
        return None
    return size if hasattr(os, "fork") else None


def _forked(job: Callable[[], bytes]) -> tuple[int, int] | None:
    """A forked child that writes what `job` returns to a pipe and exits: (its pid, the pipe's reading end);
    None when it cannot be forked."""
    receive, send = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(receive)
        os.close(send)
        return None
    if pid == 0:  # the child: never returns into the caller's code
        code = 1
        try:
            os.close(receive)
            os.write(send, job())
            code = 0
        finally:
            os._exit(code)
    os.close(send)
    return pid, receive


def _alongside(child: tuple[int, int], fold: Callable[[], object]) -> bytes | None:
    """Run `fold` while the `child` (its pid, its pipe) works: the child's reply when `fold` returned and the
    child exited cleanly, else None (a child that has not replied is killed; it is always waited for)."""
    pid, receive = child
    reply, status = b"", -1
    try:
        fold()
        reply = _read_all(receive)
    except Exception:
        return None  # whatever the unchecked bytes did, the single-process road gives the verdict
    finally:
        os.close(receive)
        if not reply:
            _kill(pid)
        status = os.waitpid(pid, 0)[1]
    return reply if status == 0 else None


def _first_half(path: Path, middle: Position, expected: bytes) -> bytes:
    """The child's reply: the number of transactions before `middle`, when the log's fold reaches it with the
    state `expected` encodes; "-" otherwise."""
    state, commits = PlaybookState(), [0]

    def count(records: list[Any]) -> None:
        commits[0] += countOf(map(type, records), type(records[-1]))  # a run ends with a commit

    reader = LogReader(path)
    try:
        reader.fold(state, until=middle.offset, observe=count, seqs=True)
    except Exception:
        return b"-"
    if reader.position != middle or msgspec.msgpack.encode(state) != expected:
        return b"-"
    return b"%d" % commits[0]
