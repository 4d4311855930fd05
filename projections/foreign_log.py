"""A log written on another machine, checked before any of it is used: read whole, and no secret in what it brings.

A copy of a log that came from elsewhere (a synced remote, an organisation's repository) is
used only when every line of it reads as its writer wrote it: the chain, the sequence and
each transaction checked as any reader does, nothing unfinished at its end, no record of a
newer version, no transaction committed twice, and not larger than `MAX_FOREIGN_BYTES`; and it holds every transaction of
the copy it grew from, when one is known (`missing_from`). What
it brings beyond the bytes it shares with ours passes the secret scrubber: a text the scrubber
would redact means its writer stored a secret, and the copy is refused rather than merged,
since a line cannot be redacted without rewriting the history it belongs to. The history it
shares with ours, and the anchors, are the merge's to judge (`projections.merge`,
`projections.shared_history`, `projections.anchors`).
"""

from __future__ import annotations

import os
from pathlib import Path

import msgspec

from eventlog.errors import CorruptLogError, PlaybookError
from eventlog.events import UnknownRecord
from eventlog.store import LogReader

from .scrub import find_secrets

MAX_FOREIGN_BYTES = 512 << 20
"""The largest foreign log read: far above any playbook's, so a huge file is a hostile one."""
ENVELOPE = frozenset({"type", "seq", "tx", "at", "h"})
"""A record's fields that every writer fills alike (ids, times, hashes): not texts, not scanned for secrets."""
_CHUNK = 1 << 20


class ForeignLogRefused(PlaybookError):
    """A foreign log that is not used: `why`, in words that name its line."""

    def __init__(self, why: str) -> None:
        self.why = why
        super().__init__(why)


def check_foreign(path: Path, shared: int = 0) -> frozenset[str]:
    """Raise `ForeignLogRefused` unless the log at `path` reads whole and what it holds from byte `shared` on (the
    bytes before are ours too) holds no secret. Returns the ids of its transactions."""
    try:
        size = os.stat(path).st_size
    except OSError as exc:
        raise ForeignLogRefused(f"it cannot be read: {exc.strerror or exc}") from exc
    if size > MAX_FOREIGN_BYTES:
        raise ForeignLogRefused(f"it is {size >> 20} MiB, over the {MAX_FOREIGN_BYTES >> 20} MiB a playbook's log "
                                "can reach")
    reader = LogReader(path)
    seen: set[str] = set()
    try:
        for transaction in reader:
            if transaction.commit.tx in seen:
                raise ForeignLogRefused(f"line {transaction.end.line}: transaction {transaction.commit.tx} is "
                                        "committed twice")
            seen.add(transaction.commit.tx)
            for event in transaction.events:
                if isinstance(event, UnknownRecord):
                    raise ForeignLogRefused(f"seq {event.seq}: a {event.type} record of a newer version of playbook; "
                                            "sync with that version")
    except CorruptLogError as exc:
        raise ForeignLogRefused(f"line {exc.line}: {exc.reason}") from exc
    if reader.torn is not None:
        raise ForeignLogRefused(f"it ends in an unfinished transaction after line {reader.torn.line - 1}")
    _no_secret(path, shared)
    return frozenset(seen)


def missing_from(earlier: Path, ids: frozenset[str]) -> list[str]:
    """The transactions of the log `earlier` (a copy the foreign one grew from) that are not among `ids`, in order:
    what the foreign log dropped. An honest copy never drops one: a merge writes each again under its own id."""
    try:
        return [t.commit.tx for t in LogReader(earlier) if t.commit.tx not in ids]
    except CorruptLogError as exc:
        raise ForeignLogRefused(f"the copy it grew from does not read: line {exc.line}: {exc.reason}") from exc


def _no_secret(path: Path, shared: int) -> None:
    """Raise `ForeignLogRefused` at the first line from the line holding byte `shared` on whose texts hold a secret."""
    with open(path, "rb") as handle:
        start = 0
        if shared > 0:
            low = max(shared - _CHUNK, 0)
            handle.seek(low)
            cut = handle.read(shared - low).rfind(b"\n")
            start = low + cut + 1 if cut >= 0 else 0  # a line longer than a chunk: every line is scanned
        line = _line_number(path, start)
        handle.seek(start)
        for raw in handle:
            line += 1
            try:
                record = msgspec.json.decode(raw)
            except msgspec.DecodeError:
                continue  # the reader above vouched for every committed line; a torn tail was refused there
            if not isinstance(record, dict):
                continue
            for key, value in record.items():
                if key in ENVELOPE:
                    continue
                kind = _secret_in(value)
                if kind is not None:
                    raise ForeignLogRefused(
                        f"line {line}: its {key} holds what looks like a secret ({kind}); on the machine that wrote "
                        "it, `playbook purge --secrets` takes it out of the log's history")


def _secret_in(value: object) -> str | None:
    if isinstance(value, str):
        found = find_secrets(value)
        return found[0].kind if found else None
    if isinstance(value, list):
        for item in value:
            if (kind := _secret_in(item)) is not None:
                return kind
    if isinstance(value, dict):
        for item in value.values():
            if (kind := _secret_in(item)) is not None:
                return kind
    return None


def _line_number(path: Path, offset: int) -> int:
    """How many lines end before byte `offset`."""
    count = 0
    with open(path, "rb") as handle:
        remaining = offset
        while remaining > 0:
            block = handle.read(min(remaining, _CHUNK))
            if not block:
                break
            count += block.count(b"\n")
            remaining -= len(block)
    return count


__all__ = ["MAX_FOREIGN_BYTES", "ForeignLogRefused", "check_foreign", "missing_from"]
