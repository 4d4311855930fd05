"""playbook.json: the spec's playbook format plus a `log` block saying which log position it reflects.

The file is a pure function of the state at that position, so deleting it and
rebuilding gives the same bytes. Its `digest` covers everything else in the file:
a snapshot whose digest no longer matches was edited by hand.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import msgspec

from eventlog.domain import SECTION_SLUGS, KeyPoint, PendingLearning, PendingProposal, PlaybookState, Usage
from eventlog.events import encodable_json
from eventlog.safefiles import write_file
from eventlog.store import Position


class Entry(msgspec.Struct, forbid_unknown_fields=True):
    name: str
    text: str
    helpful: int
    harmful: int


class SnapshotLog(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    offset: int
    seq: int
    hash: str
    line: int
    high_water: dict[str, int]
    pending: dict[str, PendingLearning] = {}
    progress: dict[str, int] = {}
    sessions: int = 0
    usage: dict[str, Usage] = {}
    disabled: bool = False
    # UNSET (left out of the file) while no proposal waits: a playbook without review reads as before
    proposals: dict[str, PendingProposal] | msgspec.UnsetType = msgspec.UNSET
    digest: str = ""


class SnapshotFile(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    version: str
    last_updated: str | None
    sections: dict[str, list[Entry]]
    log: SnapshotLog | None = None


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(SnapshotFile)


def _digest(snapshot: SnapshotFile) -> str:
    assert snapshot.log is not None
    unsigned = msgspec.structs.replace(snapshot, log=msgspec.structs.replace(snapshot.log, digest=""))
    return hashlib.blake2b(_encoder.encode(unsigned), digest_size=12).hexdigest()


def snapshot_of(state: PlaybookState, position: Position) -> SnapshotFile:
    snapshot = SnapshotFile(
        version=state.version,
        last_updated=state.last_updated,
        sections={
            section: [Entry(kp.name, kp.text, kp.helpful, kp.harmful) for kp in state.sections[section].values()]
            for section in SECTION_SLUGS
        },
        log=SnapshotLog(offset=position.offset, seq=position.seq, hash=position.hash, line=position.line,
                        high_water=dict(state.high_water), pending=dict(state.pending),
                        progress=dict(state.progress), sessions=state.sessions,
                        usage={name: state.usage[name] for name in sorted(state.usage)}, disabled=state.disabled,
                        proposals=dict(state.proposals) or msgspec.UNSET),
    )
    assert snapshot.log is not None
    snapshot.log.digest = _digest(snapshot)
    return snapshot


def playbook_dict(state: PlaybookState) -> dict[str, Any]:
    """The spec's dict shape for `state`: version, last_updated and all five sections, in order."""
    return {
        "version": state.version,
        "last_updated": state.last_updated,
        "sections": {
            section: [{"name": kp.name, "text": kp.text, "helpful": kp.helpful, "harmful": kp.harmful}
                      for kp in state.sections[section].values()]
            for section in SECTION_SLUGS
        },
    }


def render(state: PlaybookState, position: Position) -> bytes:
    """The exact bytes of playbook.json for `state` at `position`."""
    return msgspec.json.format(_encoder.encode(snapshot_of(state, position)), indent=2) + b"\n"


def write_snapshot(path: Path, state: PlaybookState, position: Position, force: bool = False, *,
                   root: Path) -> str:
    """Replace the snapshot at `path` with the one of `state` at `position`, unless it holds those bytes already;
    returns its digest.

    Follows no link below `root` (`replace_if_changed`); a rename lost in a crash leaves the previous
    snapshot, whole and at a position the log still holds, which readers fold forward."""
    snapshot = snapshot_of(state, position)
    data = msgspec.json.format(_encoder.encode(snapshot), indent=2) + b"\n"
    replace_if_changed(path, data, force, root=root)
    _remember(path, data, snapshot)
    assert snapshot.log is not None
    return snapshot.log.digest


def replace_if_changed(path: Path, data: bytes, force: bool = False, *, root: Path) -> None:
    """Replace the derived file at `path` with `data` unless it holds those bytes already (or `force`).

    Follows no link below `root` (`safefiles.write_file`), without the directory's fsync: a rename lost
    in a crash leaves the previous file whole, which its readers find stale and bring up to date."""
    if not force:
        try:
            # the size first: a file a repository carries in its place may be of any size (or a FIFO)
            if path.stat().st_size == len(data) and path.read_bytes() == data:
                return
        except OSError:
            pass
    write_file(path, data, root, durable_name=False)


def _remember(path: Path, raw: bytes, snapshot: SnapshotFile) -> None:
    _last_read.pop(path, None)
    while len(_last_read) >= MEMO_FILES:
        del _last_read[next(iter(_last_read))]  # the one read or written longest ago
    _last_read[path] = (raw, snapshot)


class ReadSnapshot(msgspec.Struct):
    """What a playbook.json holds. `snapshot` is set when the file is ours and untouched;
    `data` is the parsed JSON otherwise (hand-written or hand-edited); `error` when unreadable."""

    snapshot: SnapshotFile | None = None
    data: Any = None
    error: str | None = None
    size: int = 0
    """The file's length in bytes."""


LAG_FROM_BYTES = 256 << 10
"""Below this size playbook.json is rewritten at every append: it costs less than the fsync it needs anyway."""
LAG_SHARE = 32
"""A larger playbook.json is rewritten once the log after the position it reflects reaches this share of its
size (1/32): a rewrite's cost is spread over appends of as many bytes, and a reader folds at most that tail."""


def may_lag(snapshot_size: int, reflects: int, log_end: int) -> bool:
    """True when a snapshot of `snapshot_size` bytes that reflects the log up to byte `reflects` need not be
    rewritten for a log ending at `log_end`: a reader folds the short tail after it (see LAG_SHARE)."""
    return snapshot_size >= LAG_FROM_BYTES and (log_end - reflects) * LAG_SHARE < snapshot_size


def _int_or_infinity(digits: str) -> int | float:
    """An integer of the file; one too long for Python to read (over 4,300 digits) is read as infinite,
    which the import records as a counter it could not take, instead of losing the whole file."""
    return int(digits) if len(digits) <= 4000 else float(digits)


MEMO_FILES = 4
"""How many snapshots `_last_read` holds: a project's and the user-level playbook's, read by every append of a
project, and a few more for a process that writes to several (neither then decodes the other's again)."""

_last_read: dict[Path, tuple[bytes, SnapshotFile]] = {}
"""Per path, the bytes of the last untouched snapshot read or written here and what they decode to: the
writer reads the file again at every append (a hand edit can come at any time), and bytes equal to
these are neither decoded nor hashed again. A pure function's memo: equal bytes decode to equal files."""


def read_snapshot(path: Path) -> ReadSnapshot | None:
    """The snapshot at `path`, or None when there is no file."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        return ReadSnapshot(error=f"cannot read {path}: {exc.strerror or exc}")
    known = _last_read.get(path)
    if known is not None and known[0] == raw:
        return ReadSnapshot(snapshot=known[1], size=len(raw))
    try:
        snapshot = _decoder.decode(raw)
        if snapshot.log is not None and snapshot.log.digest == _digest(snapshot):
            _remember(path, raw, snapshot)
            return ReadSnapshot(snapshot=snapshot, size=len(raw))
    except (msgspec.ValidationError, msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        pass
    try:
        return ReadSnapshot(data=msgspec.json.decode(raw), size=len(raw))
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError) as exc:
        error = exc
    try:
        # What Python's json reads and msgspec does not (a byte-order mark, NaN), if it can be written back.
        # A "\\ud800" escape is valid JSON but no UTF-8 can hold it: it is replaced, not the whole file lost.
        data = encodable_json(json.loads(raw.decode("utf-8-sig"), parse_int=_int_or_infinity))
        msgspec.json.encode(data)
        return ReadSnapshot(data=data, size=len(raw))
    except (ValueError, RecursionError, TypeError):
        return ReadSnapshot(error=f"{path} is not JSON: {str(error).splitlines()[0][:200]}")


def claimed_position(data: object) -> Position | None:
    """The log position a playbook.json (parsed, perhaps edited by hand) says it reflects, if it says one."""
    log: Any = data.get("log") if isinstance(data, dict) else None
    try:
        return Position(offset=int(log["offset"]), seq=int(log["seq"]), hash=str(log["hash"]), line=int(log["line"]))
    except (TypeError, KeyError, ValueError):
        return None


def state_of(snapshot: SnapshotFile) -> tuple[PlaybookState, Position]:
    """The state and log position an untouched snapshot records."""
    assert snapshot.log is not None
    state = PlaybookState(version=snapshot.version, last_updated=snapshot.last_updated,
                          high_water=dict(snapshot.log.high_water), seq=snapshot.log.seq,
                          pending=dict(snapshot.log.pending), progress=dict(snapshot.log.progress),
                          sessions=snapshot.log.sessions,
                          usage={name: Usage(u.injected, u.cited, u.last_used, u.stale)
                                 for name, u in snapshot.log.usage.items()},
                          disabled=snapshot.log.disabled, proposals=dict(snapshot.log.proposals or {}))
    where = state.where
    for section in SECTION_SLUGS:
        entries = state.sections[section]
        found = snapshot.sections.get(section)
        if not found:
            continue
        entries.update({entry.name: KeyPoint(entry.name, entry.text, entry.helpful, entry.harmful) for entry in found})
        where.update(dict.fromkeys(entries, section))
    log = snapshot.log
    return state, Position(offset=log.offset, seq=log.seq, hash=log.hash, line=log.line)

