"""The log's line format: how a record becomes a line, the chain that links the lines, commit lines.

A line is the record as msgspec encodes it with `,"h":"<32 hex digits>"` spliced in last.
A transaction's last line is its `TransactionCommitted`, which always begins
`{"type":"TransactionCommitted"`: commit lines are found by byte search, because a
newline or a quote inside a JSON string is escaped (`eventlog.commitlines` finds them; its
helpers stay reachable from here).

The chain: a line's `h` is the SHA-256, truncated to 128 bits, of the seed followed by
every byte of its transaction before its own `,"h":` field (the lines before it whole,
their `h` included). The seed is the `h` of the commit line before the transaction, so a
commit line's `h` stands for the whole log up to it: a transaction is checked with one
hash over its bytes, and a position's `hash` is its commit line's `h`.

Logs written before this chain end their lines with an 8-digit CRC-32 of the whole file
up to the field. They are read as they are: the SHA-256 part begins at the first line
with a 32-digit `h` (always a transaction's first line), seeded from the CRC-32 part's
running value there (`boundary_seed`), and no CRC-32 line may follow it. A new log's
SHA-256 part begins at its first line. Everything that knows the chain's arithmetic is
in this module.
"""

from __future__ import annotations

import zlib
from hashlib import sha256
from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

from .commitlines import COMMIT as COMMIT, NEWLINE_COMMIT as NEWLINE_COMMIT
from .commitlines import commit_starts as commit_starts, commits_from_end as commits_from_end
from .commitlines import find_all as find_all, is_commit_start as is_commit_start, line_at as line_at
from .commitlines import next_commit_end as next_commit_end, previous_commit_end as previous_commit_end
from .events import RecordType, TransactionCommitted, encodable_record, encoder
from .positions import Position
from . import registry
from .registry import RECORD_TAGS

HASH_KEY = b',"h":"'
HASH_DIGITS = 32
"""Hex digits of a line's `h`: SHA-256 truncated to 128 bits."""
CRC_DIGITS = 8
"""Hex digits of a line's `h` before the boundary: the CRC-32 of the old format."""
SUFFIX = len(HASH_KEY) + HASH_DIGITS + 2
"""`,"h":"<32 hex>"}`: what follows a line's hashed prefix."""
TAIL = SUFFIX + 1
"""The suffix with its newline."""
CRC_SUFFIX = len(HASH_KEY) + CRC_DIGITS + 2
CRC_TAIL = CRC_SUFFIX + 1
SEQ_AT = len(COMMIT) + len(b',"seq":')
"""Where a commit line's seq digits begin."""
DECODE_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError)
_DIGEST_BYTES = HASH_DIGITS // 2


# --- the chain --------------------------------------------------------------------------------------------


class Link:
    """The chain's running value in its SHA-256 part: the last commit line's `h` (the seed), and the hash
    state over the seed and the bytes of the transaction written since."""

    __slots__ = ("seed", "state")

    def __init__(self, seed: bytes, state: Any = None) -> None:
        self.seed = seed
        self.state = state if state is not None else sha256(seed)

    def fed(self, data: bytes | bytearray | memoryview) -> Link:
        """The running value after `data`, more bytes of the open transaction."""
        state = self.state.copy()
        state.update(data)
        return Link(self.seed, state)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Link) and self.seed == other.seed and self.state.digest() == other.state.digest()

    __hash__ = None  # type: ignore[assignment]

    def __copy__(self) -> Link:
        return self  # never changed once made: `fed` makes a new one

    def __deepcopy__(self, memo: dict[int, Any]) -> Link:
        return self


Running = int | Link
"""A running value: an int in the CRC-32 part of an old log (0 at the start of every log), a `Link` after."""


def boundary_seed(crc: int) -> bytes:
    """The seed of the SHA-256 part: it binds the first hashed transaction to the CRC-32 part before it.

    A new log has no CRC-32 part: its running value at the start is 0 like an old log's, so
    every log begins its SHA-256 part the same way, from wherever its CRC-32 lines end."""
    return sha256(b"playbook chain after crc32 %08x" % crc).digest()[:_DIGEST_BYTES]


def upgraded(running: Running) -> Link:
    """`running` as a SHA-256 running value: a CRC-32 value (at a transaction's start) becomes the boundary."""
    return running if isinstance(running, Link) else Link(boundary_seed(running))


def start(text_value: str) -> Running:
    """The running value a position's `hash` text stands for ("" is the start of the file)."""
    if not text_value:
        return 0
    if len(text_value) == HASH_DIGITS:
        return Link(bytes.fromhex(text_value))
    return int(text_value, 16)


def text(running: Running) -> str:
    """A running value at a transaction's end as a position's `hash` text."""
    return running.seed.hex() if isinstance(running, Link) else "%08x" % running


def feed(running: Running, data: bytes | bytearray | memoryview) -> Running:
    """The running value after `data`, bytes of whole lines of the open transaction."""
    return running.fed(data) if isinstance(running, Link) else zlib.crc32(data, running)


extend = zlib.crc32
"""`extend(data, running)`: the CRC-32 part's running value after `data`."""


def h_at(buffer: Any, end: int) -> int | None:
    """The CRC-32 `h` of the line ending (after its newline) at `end` of `buffer`, or None when it has none."""
    if buffer[end - CRC_TAIL : end - 11] != HASH_KEY:
        return None
    try:
        return int(buffer[end - 11 : end - 3], 16)
    except ValueError:
        return None


def digest_at(buffer: Any, end: int) -> bytes | None:
    """The SHA-256 `h` (hex digits) of the line ending (after its newline) at `end` of `buffer`, or None."""
    if end < TAIL or buffer[end - TAIL : end - TAIL + len(HASH_KEY)] != HASH_KEY:
        return None
    return bytes(buffer[end - HASH_DIGITS - 3 : end - 3])


def digest_of(state: Any) -> bytes:
    """A hash state's `h` as a line holds it: the first 128 bits of its SHA-256, in lower-case hex."""
    digits: str = state.hexdigest()
    return digits[:HASH_DIGITS].encode()


def check_run(buffer: Any, chunk: memoryview, end: int, running: Link) -> Link | None:
    """The running value after `chunk[:end]`, whole lines that end with a commit line, when the `h` of every
    commit line in them is that of the chain; else None.

    One SHA-256 over each transaction: a commit line's `h` covers every byte of its transaction
    before it, the `h` of its other lines included, and the commit line before it through the seed.
    `buffer` is the bytes under `chunk`, for searching."""
    find = buffer.find
    if buffer.startswith(COMMIT):
        at = 0
    else:
        at = find(NEWLINE_COMMIT, 0, end) + 1
        if not at:
            return None
    state, begin = running.state.copy(), 0
    # One pass per transaction, as few calls as it takes: the fold runs it for every transaction it reads.
    # The `h` field's key and digits are compared in one go; a line without them never matches.
    while True:
        line_end = find(b"\n", at, end) + 1
        cut = line_end - TAIL
        state.update(chunk[begin:cut])
        digest = state.digest()[:_DIGEST_BYTES]
        if not line_end or buffer[cut : line_end - 3] != HASH_KEY + digest.hex().encode():
            return None
        if line_end == end:
            return Link(digest)
        state, begin = sha256(digest), line_end
        at = find(NEWLINE_COMMIT, line_end - 1, end) + 1
        if not at:
            return None


def run_hash(buffer: Any, chunk: memoryview, end: int, running: Running) -> str | None:
    """The position hash after `chunk[:end]`, whole lines that end with a commit line, when the chain holds over
    them from `running` (one SHA-256 over each transaction, or one CRC-32 over the run in an old log's CRC-32
    part); else None. `buffer` is the bytes under `chunk`, for searching."""
    if isinstance(running, Link):
        after = check_run(buffer, chunk, end, running)
        return None if after is None else text(after)
    h = h_at(buffer, end)
    if h is None or h != extend(chunk[: end - CRC_TAIL], running):
        return None
    return text(extend(chunk[end - CRC_TAIL : end], h))


def written_hash(buffer: Any, end: int) -> str | None:
    """The position hash after the commit line ending (after its newline) at `end` of `buffer`, read from its `h`
    as written and checked against nothing; None when it has no well-formed `h`."""
    found = digest_at(buffer, end)
    if found is not None:
        return None if found.strip(b"0123456789abcdef") else found.decode()
    h = h_at(buffer, end)
    return None if h is None else text(extend(buffer[end - CRC_TAIL : end], h))


def check_line(raw: bytes, running: Running, opens: bool = True) -> Running | None:
    """The running value after line `raw` (without its newline) when its `h` is right, else None.

    `opens`: the line begins a transaction, the only place where the SHA-256 part may begin.
    A CRC-32 line after the boundary is wrong whatever its `h`: the chain is never downgraded."""
    hashed = split_hash(raw)
    if hashed is None:
        return None
    prefix, digits = hashed
    if len(digits) == CRC_DIGITS:
        if isinstance(running, Link):
            return None
        h = int(digits, 16)
        if zlib.crc32(prefix, running) != h:
            return None
        return zlib.crc32(raw[-CRC_SUFFIX:] + b"\n", h)
    if not isinstance(running, Link):
        if not opens:
            return None
        running = upgraded(running)
    state = running.state.copy()
    state.update(prefix)
    if digest_of(state) != digits:
        return None
    if raw.startswith(COMMIT):
        return Link(bytes.fromhex(digits.decode()))
    state.update(raw[len(prefix) :])
    state.update(b"\n")
    return Link(running.seed, state)


def mismatch(raw: bytes, running: Running, opens: bool) -> str:
    """Why `check_line` refused line `raw`, in a few words for a damage report."""
    hashed = split_hash(raw)
    if hashed is not None and len(hashed[1]) == CRC_DIGITS and isinstance(running, Link):
        return "a CRC-32 line after the chain's SHA-256 boundary (the chain is never downgraded)"
    if hashed is not None and len(hashed[1]) == HASH_DIGITS and not isinstance(running, Link) and not opens:
        return "the chain's SHA-256 part begins inside a transaction"
    return "hash does not match the line and the bytes before it"


def hash_after(line: bytes) -> str:
    """The position hash just after commit line `line`, read from its own `h` ("" when it has none)."""
    hashed = split_hash(line)
    if hashed is None:
        return ""
    if len(hashed[1]) == HASH_DIGITS:
        return hashed[1].decode()
    whole = line if line.endswith(b"\n") else line + b"\n"
    return text(zlib.crc32(whole[-CRC_TAIL:], int(hashed[1], 16)))


def commit_hash_after(buffer: Any, end: int) -> str:
    """The position hash after the commit line ending (after its newline) at `end` of a checked `buffer`."""
    found = digest_at(buffer, end)
    if found is not None:
        return found.decode()
    h = h_at(buffer, end)
    assert h is not None  # a checked run
    return text(zlib.crc32(buffer[end - CRC_TAIL : end], h))


# --- lines ------------------------------------------------------------------------------------------------


def encode_line(record: msgspec.Struct, running: Running) -> tuple[bytes, Running]:
    """The line for `record` after a file whose running value is `running`, and the running value after it.

    Always a SHA-256 line: a writer after CRC-32 lines begins the SHA-256 part there (at a
    transaction's start, where every write begins)."""
    return stamp(encoder.encode(record)[:-1], running)


def stamp(prefix: bytes, running: Running, crc: bool = False) -> tuple[bytes, Running]:
    """The line whose hashed part is `prefix` (a record's JSON without its closing brace) after `running`,
    and the running value after it. `crc`: a line of an old log's CRC-32 part rewritten in place keeps
    its format, so the SHA-256 part still begins where it began."""
    if crc and not isinstance(running, Link):
        h = zlib.crc32(prefix, running)
        line = prefix + HASH_KEY + b"%08x" % h + b'"}\n'
        return line, zlib.crc32(line[-CRC_TAIL:], h)
    link = upgraded(running)
    state = link.state.copy()
    state.update(prefix)
    digits = digest_of(state)
    line = prefix + HASH_KEY + digits + b'"}\n'
    if prefix.startswith(COMMIT):
        return line, Link(bytes.fromhex(digits.decode()))
    state.update(line[len(prefix) :])
    return line, Link(link.seed, state)


def encoded(record: RecordType, running: Running) -> tuple[RecordType, bytes, Running]:
    """(record as written, its line, running value after it). What JSON cannot hold (a lone surrogate, a
    number of thousands of digits inside a recorded request) is repaired, not fatal."""
    try:
        return (record, *encode_line(record, running))
    except ValueError:  # UnicodeEncodeError, or an integer too long to write
        record = encodable_record(record)
        return (record, *encode_line(record, running))


def restamp(transactions: Iterable[tuple[Sequence[Any], TransactionCommitted]], after: Position) -> tuple[bytes, Position]:
    """The lines of whole transactions written again after position `after` of a log (a merge).

    Each transaction keeps its id, its time and its records' content; only the sequence
    numbers and the chain are new, made by the same encoding every append uses. A record
    without its transaction's id or time is given them. Returns the bytes and the position
    after them.
    """
    seq, line_count = after.seq, after.line
    running = start(after.hash)
    lines: list[bytes] = []
    replace = msgspec.structs.replace
    for events, commit in transactions:
        tx, at = commit.tx, commit.at
        for event in events:
            seq += 1
            _record, line, running = encoded(replace(event, seq=seq, tx=tx, at=event.at or at), running)
            lines.append(line)
        seq += 1
        _record, line, running = encoded(replace(commit, seq=seq, events=len(events)), running)
        lines.append(line)
    data = b"".join(lines)
    return data, Position(after.offset + len(data), seq, text(running), line_count + len(lines))


def split_hash(line: bytes) -> tuple[bytes, bytes] | None:
    """(prefix, `h` hex digits) of a line as `encode_line` wrote it (`h` is last and fixed-width), or None.

    32 digits is the SHA-256 chain; 8, the CRC-32 of the lines before the boundary."""
    line = line if line.endswith(b"\n") else line + b"\n"
    if line[-3:] != b'"}\n':
        return None
    for digits in (HASH_DIGITS, CRC_DIGITS):
        tail = len(HASH_KEY) + digits + 3
        if len(line) >= tail and line[-tail : -digits - 3] == HASH_KEY:
            found = line[-digits - 3 : -3]
            if found.strip(b"0123456789abcdef"):
                return None
            return line[:-tail], found
    return None


def decode_line(line: bytes) -> Any:
    """Decode one line; a well-formed record of a type this version does not know is an UnknownRecord."""
    try:
        return registry.record_decoder().decode(line)
    except msgspec.ValidationError:
        unknown = registry.unknown_decoder().decode(line)  # raises when it is not even a record
        if unknown.type in RECORD_TAGS:
            raise
        return unknown


def decode_records(data: bytes) -> list[Any]:
    """The records of whole lines; a type this version does not know (a newer one's) is an UnknownRecord."""
    try:
        return registry.record_decoder().decode_lines(data)
    except DECODE_ERRORS:
        return [decode_line(line) for line in data.splitlines()]


commit_decoder = msgspec.json.Decoder(TransactionCommitted)
