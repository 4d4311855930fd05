"""Building log bytes by hand for tests: a whole transaction, as a writer that died mid-write began it."""

from __future__ import annotations

import zlib
from pathlib import Path

from eventlog.domain import SECTION_SLUGS, PlaybookState, next_name
from eventlog.events import KeyPointAdded, TransactionCommitted, encoder
from eventlog.logformat import COMMIT, Running, check_line, start
from eventlog.store import encode_line, fold_log, split_hash


def transaction_after(log: Path, tx: str, events: int, text: str) -> bytes:
    """The exact bytes of a valid transaction of `events` ADDs that would follow the log's last commit."""
    state, position, _torn = fold_log(log, PlaybookState())
    at = "2030-01-01T00:00:00.000000+00:00"
    sections = list(SECTION_SLUGS)
    records: list = []
    for index in range(events):
        section = sections[index % len(sections)]
        records.append(KeyPointAdded(seq=position.seq + index + 1, tx=tx, at=at, section=section,
                                     name=next_name(state, section), text=f"{text} {index}", helpful=0, harmful=0,
                                     origin="operation"))
    records.append(TransactionCommitted(seq=position.seq + events + 1, tx=tx, at=at, events=events,
                                        source="crashed"))
    payload, running = b"", start(position.hash)
    for record in records:
        line, running = encode_line(record, running)
        payload += line
    return payload


def encode_crc_line(record, running: int) -> tuple[bytes, int]:
    """A line in the format logs were written in before the SHA-256 chain: an 8-digit CRC-32 of the file up
    to its `h` field. Returns the line and the file's CRC-32 after it."""
    prefix = encoder.encode(record)[:-1]
    h = zlib.crc32(prefix, running)
    line = prefix + b',"h":"' + b"%08x" % h + b'"}\n'
    return line, zlib.crc32(line[-17:], h)


def walk_chain(raw: bytes) -> Running:
    """Check every line of a log's bytes against the chain, as the strict reader does; the running value after them."""
    running: Running = 0
    opens = True
    for number, line in enumerate(raw.splitlines(), 1):
        after = check_line(line, running, opens)
        assert after is not None, f"hash chain broken at line {number}"
        running, opens = after, line.startswith(COMMIT)
    return running


def is_sha_line(line: bytes) -> bool:
    """True when a line carries the SHA-256 chain's 32-digit `h`."""
    hashed = split_hash(line)
    return hashed is not None and len(hashed[1]) == 32
