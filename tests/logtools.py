"""Building log bytes by hand for tests: a whole transaction, as a writer that died mid-write began it."""

from __future__ import annotations

from pathlib import Path

from eventlog.domain import SECTION_SLUGS, PlaybookState, next_name
from eventlog.events import KeyPointAdded, TransactionCommitted
from eventlog.store import encode_line, fold_log


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
    payload, running = b"", int(position.hash, 16) if position.hash else 0
    for record in records:
        line, running = encode_line(record, running)
        payload += line
    return payload
