"""The commit index: where each committed transaction ends, as fixed-width records searched in place.

One record per transaction, in log order: the position after it (offset, seq, line, chain
hash), where its commit line begins, its time in microseconds, its transaction and session
ids. The file is memory-mapped and read where it is needed (a binary search by seq touches
a few pages; a prefix search is a byte search over it), so a query's memory does not grow
with the number of transactions; the commit record itself is read from the log only for
the transactions a query shows.

Derived data kept beside the checkpoints: trusted only when the log still carries its last
record's position (`hash_at`), extended from there as the log grows, and replaced whole
(a copy, then `os.replace`), so a reader sees an old index or a new one.
"""

from __future__ import annotations

import bisect
import mmap
import os
import shutil
import struct
from collections.abc import Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, overload

import msgspec

from eventlog import logformat
from eventlog.events import TransactionCommitted
from eventlog.checks import hash_at
from eventlog.safefiles import create_new, directory as opened_dir, remove, replace
from eventlog.store import Position

INDEX_FILE = "commits.index"
_MAGIC = b"PBCOMMIT"
_VERSION = 1
_HEADER = struct.Struct("<8sHHI")  # magic, version, hash width, record size
_FIXED = struct.Struct("<QQQQq")  # end offset, end seq, end line, commit line start, time in microseconds
_TX_WIDTH, _SESSION_WIDTH = 16, 40
_OVERFLOW = 0xFF
"""A text field starting with this byte (never in UTF-8) holds a value too long for it: read the commit line."""
_NO_TIME = -(1 << 63)
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


_CHUNK = 1 << 20
_WINDOW = 1 << 22


class _CommitFields(msgspec.Struct, frozen=True):
    """What the index keeps of a commit line (the line's other fields are skipped, not decoded)."""

    seq: int
    tx: str
    at: str
    events: int
    session: str | None = None


_commit_fields = msgspec.json.Decoder(_CommitFields)


def _next_commit(data: bytes, begin: int, end: int) -> int:
    """Where the first commit line after byte `begin` of `data[:end]` (whole lines) starts, or -1."""
    found = data.find(logformat.NEWLINE_COMMIT, begin, end)
    return found + 1 if found >= 0 else -1


class _Wider(Exception):
    """A chain hash wider than the index's column: the index is written again with a wider one."""

    def __init__(self, width: int) -> None:
        super().__init__(width)
        self.width = width


def _header(width: int) -> bytes:
    return _HEADER.pack(_MAGIC, _VERSION, width, _FIXED.size + width + _TX_WIDTH + _SESSION_WIDTH)


class CommitRef(msgspec.Struct, frozen=True):
    """Where one committed transaction ends in the log, and what its commit record says."""

    commit: TransactionCommitted
    start: Position
    end: Position


def _field(value: str | None, width: int) -> bytes:
    data = (value or "").encode("utf-8", "surrogatepass")
    if len(data) > width or b"\0" in data:
        return bytes([_OVERFLOW]) * width
    return data.ljust(width, b"\0")


def _micros(at: str) -> int:
    try:
        moment = datetime.fromisoformat(at)
    except ValueError:
        return _NO_TIME
    moment = moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


class CommitIndex(Sequence[CommitRef]):
    """The commit index of one log, as a read-only sequence of CommitRef (each built when asked for)."""

    def __init__(self, log: Path, data: Any, hash_width: int) -> None:
        self.log = log
        self._data = data  # a mmap, or bytes when the index could not be kept on disk
        self._width = hash_width
        self._size = _FIXED.size + hash_width + _TX_WIDTH + _SESSION_WIDTH
        self._count = (len(data) - _HEADER.size) // self._size if len(data) >= _HEADER.size else 0
        self._handle: Any = None

    # --- loading -------------------------------------------------------------------------------------

    @classmethod
    def load(cls, log: Path, directory: Path, root: Path | None = None) -> CommitIndex:
        """The index of `log` kept in `directory`, checked against the log and extended to its end.

        Follows no link below `root` (by default the directory above the `.claude` that holds `directory`)
        when it writes the index. Records are written as the log's commit lines are found, so building the
        index of a long log holds one record at a time, not the list of its transactions."""
        path = directory / INDEX_FILE
        root = root if root is not None else directory.parent.parent
        index = cls._open(log, path)
        if index is not None and index._count and not hash_at(log, index.end(index._count - 1)):
            index.close()
            index = None
        width = index._width if index is not None else 8
        while True:
            base = index if index is not None else cls(log, _header(width), width)
            try:
                return base._extended(path, root)
            except _Wider as wider:  # a longer chain hash than the index holds: every record written again
                base.close()
                index, width = None, max(wider.width, 64)

    @classmethod
    def _open(cls, log: Path, path: Path) -> CommitIndex | None:
        try:
            with open(path, "rb") as handle:
                if os.fstat(handle.fileno()).st_size < _HEADER.size:
                    return None
                data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):
            return None
        magic, version, width, size = _HEADER.unpack_from(data, 0)
        if magic != _MAGIC or version != _VERSION or size != _FIXED.size + width + _TX_WIDTH + _SESSION_WIDTH:
            data.close()
            return None
        return cls(log, data, width)

    def _records_after_own(self) -> Iterator[bytes]:
        """The records of the transactions committed after this index's last one, packed, a chunk of the log's
        at a time.

        The log is read forward in chunks of whole lines; only its commit lines are decoded, and only the
        fields the index keeps."""
        previous = self.end(self._count - 1) if self._count else Position()
        try:
            handle = open(self.log, "rb", buffering=0)
        except (FileNotFoundError, NotADirectoryError):
            return
        with handle:
            offset, size, line = previous.offset, _CHUNK, previous.line
            while True:
                handle.seek(offset)
                data = handle.read(size)
                cut = data.rfind(b"\n") + 1
                if not cut:
                    if len(data) < size:
                        return  # the end of the file: an unfinished line at most
                    size *= 2  # one line longer than the chunk
                    continue
                size = _CHUNK
                records = []
                with memoryview(data) as view:
                    at = 0 if data.startswith(logformat.COMMIT) else _next_commit(data, 0, cut)
                    while at >= 0:
                        end = data.index(b"\n", at) + 1
                        try:
                            commit = _commit_fields.decode(view[at:end])
                        except (msgspec.DecodeError, msgspec.ValidationError):
                            commit = None  # a damaged line: not a commit readers would accept
                        if commit is not None:
                            line += commit.events + 1
                            digits = logformat.digest_at(data, end) or logformat.hash_after(data[at:end]).encode()
                            records.append(self._pack(offset + end, line, offset + at, digits, commit))
                        at = _next_commit(data, end - 1, cut)
                if records:
                    yield b"".join(records)
                offset += cut

    def _pack(self, end: int, line: int, begin: int, digits: bytes, commit: _CommitFields) -> bytes:
        """One record: the position after the transaction (byte, seq, line, chain hash), where its commit line
        begins, its time, its transaction and session ids."""
        if len(digits) > self._width:
            raise _Wider(len(digits))
        return (_FIXED.pack(end, commit.seq, line, begin, _micros(commit.at)) + digits.ljust(self._width, b"\0")
                + _field(commit.tx, _TX_WIDTH) + _field(commit.session, _SESSION_WIDTH))

    def _extended(self, path: Path, root: Path) -> CommitIndex:
        """This index with the records of the log's newer transactions after its own, kept at `path` when the
        directory allows (else in memory, this once: it is only a cache).

        Follows no link below `root`: the new index is written to a temporary name in the directory reached
        without one, then renamed over the old."""
        records = self._records_after_own()
        first = next(records, None)
        if first is None:
            return self
        kept = _HEADER.size + self._count * self._size
        temp = f".{path.name}.{os.getpid()}.tmp"
        try:
            with opened_dir(path.parent, root, create=True) as dir_fd:
                fd = create_new(dir_fd, temp)
                try:
                    with os.fdopen(fd, "wb") as out:
                        if isinstance(self._data, mmap.mmap):
                            with open(path, "rb") as old:  # copied in pieces: the old records never all in memory
                                shutil.copyfileobj(old, out, 1 << 20)
                            out.seek(kept)
                            out.truncate()
                        else:
                            out.write(self._data[:kept])
                        out.write(first)
                        for record in records:
                            out.write(record)
                    replace(dir_fd, temp, path.name)
                except BaseException:
                    remove(dir_fd, temp)
                    raise
        except OSError:
            return self._in_memory(kept)
        # A rebuild may clear the directory between the rename and this open: the index is then the one just
        # written, made again in memory, never an empty one (a timeline without its transactions).
        found = CommitIndex._open(self.log, path)
        if found is None:
            return self._in_memory(kept)
        self.close()
        return found

    def _in_memory(self, kept: int) -> CommitIndex:
        """This index's first `kept` bytes and the records of the log's newer transactions, held in memory."""
        data = bytearray(self._data[:kept])
        for record in self._records_after_own():
            data += record
        self.close()
        return CommitIndex(self.log, bytes(data), self._width)

    def close(self) -> None:
        if isinstance(self._data, mmap.mmap):
            self._data.close()
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    # --- reading one record ----------------------------------------------------------------------------

    def _at(self, index: int) -> int:
        if not -self._count <= index < self._count:
            raise IndexError(index)
        return _HEADER.size + (index % self._count) * self._size

    def end(self, index: int) -> Position:
        """The position after transaction `index`."""
        at = self._at(index)
        offset, seq, line, _begin, _time = _FIXED.unpack_from(self._data, at)
        digits = bytes(self._data[at + _FIXED.size : at + _FIXED.size + self._width]).rstrip(b"\0").decode()
        return Position(offset=offset, seq=seq, hash=digits, line=line)

    def start(self, index: int) -> Position:
        """The position before transaction `index` (after the one before it)."""
        index = index % self._count if self._count else index
        return self.end(index - 1) if index > 0 else Position()

    def seq(self, index: int) -> int:
        return int(_FIXED.unpack_from(self._data, self._at(index))[1])

    def commit(self, index: int) -> TransactionCommitted:
        """The commit record of transaction `index`, read from the log."""
        at = self._at(index)
        end, begin = _FIXED.unpack_from(self._data, at)[0], _FIXED.unpack_from(self._data, at)[3]
        if self._handle is None:
            self._handle = open(self.log, "rb")
        raw = os.pread(self._handle.fileno(), end - begin, begin)
        return logformat.commit_decoder.decode(raw)

    def _text(self, index: int, offset: int, width: int) -> bytes | None:
        at = self._at(index) + _FIXED.size + self._width + offset
        field = bytes(self._data[at : at + width])
        return None if field[0] == _OVERFLOW else field.rstrip(b"\0")

    def tx(self, index: int) -> str:
        field = self._text(index, 0, _TX_WIDTH)
        return self.commit(index).tx if field is None else field.decode("utf-8", "surrogatepass")

    def session(self, index: int) -> str | None:
        field = self._text(index, _TX_WIDTH, _SESSION_WIDTH)
        if field is None:
            return self.commit(index).session
        return field.decode("utf-8", "surrogatepass") or None

    def micros(self, index: int) -> int | None:
        """The commit's time as microseconds since 1970 (None when it is not an ISO time)."""
        value = int(_FIXED.unpack_from(self._data, self._at(index))[4])
        return None if value == _NO_TIME else value

    # --- searching ---------------------------------------------------------------------------------------

    def last_ending_by(self, seq: int) -> int:
        """The index of the last transaction whose end seq is at most `seq` (-1 when none)."""
        return bisect.bisect_right(_Seqs(self), seq) - 1

    def beginning(self, prefix: str, session: bool = False) -> list[int]:
        """Indexes of the transactions whose id (or session id) begins with `prefix`, in log order.

        A byte search over the index's column; records whose field overflowed are read from the log."""
        offset, width = (_TX_WIDTH, _SESSION_WIDTH) if session else (0, _TX_WIDTH)
        base = _FIXED.size + self._width + offset
        needle = prefix.encode("utf-8", "surrogatepass")
        found: set[int] = set()
        overflow = bytes([_OVERFLOW]) * width
        for probe in ([needle] if needle and len(needle) <= width and b"\0" not in needle else []) + [overflow]:
            for at in self._occurrences(probe):
                index, rest = divmod(at - _HEADER.size - base, self._size)
                if rest == 0 and 0 <= index < self._count:
                    if probe[0] != _OVERFLOW:
                        found.add(index)
                    else:
                        value = self.session(index) if session else self.tx(index)
                        if value is not None and value.startswith(prefix):
                            found.add(index)
        return sorted(found)

    def _occurrences(self, probe: bytes) -> Iterator[int]:
        """Offsets of `probe` in the index, found a window at a time; the pages of a mapped index are let go
        behind the search, so a search of a long index does not keep it all in memory."""
        data, total, low = self._data, len(self._data), _HEADER.size
        while low < total:
            high = min(low + _WINDOW, total)
            limit = min(high + len(probe) - 1, total)  # whole matches that begin before `high`
            at = data.find(probe, low, limit)
            while at >= 0:
                yield at
                at = data.find(probe, at + 1, limit)
            if isinstance(data, mmap.mmap):
                begin, end = low // mmap.PAGESIZE * mmap.PAGESIZE, high // mmap.PAGESIZE * mmap.PAGESIZE
                if end > begin:
                    data.madvise(mmap.MADV_DONTNEED, begin, end - begin)
            low = high

    # --- the sequence -------------------------------------------------------------------------------------

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> CommitRef: ...

    @overload
    def __getitem__(self, index: slice) -> list[CommitRef]: ...

    def __getitem__(self, index: int | slice) -> CommitRef | list[CommitRef]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._count))]
        index = index % self._count if self._count and index < 0 else index
        return CommitRef(commit=self.commit(index), start=self.start(index), end=self.end(index))

    def __iter__(self) -> Iterator[CommitRef]:
        for index in range(self._count):
            yield self[index]

    def __reversed__(self) -> Iterator[CommitRef]:
        for index in range(self._count - 1, -1, -1):
            yield self[index]


class _Seqs(Sequence[int]):
    """The end seqs of an index, for bisect."""

    def __init__(self, of: CommitIndex) -> None:
        self.of = of

    def __len__(self) -> int:
        return len(self.of)

    def __getitem__(self, i: Any) -> Any:
        return self.of.seq(i)
