"""Checkpoints: folded states kept beside the log so time travel folds only a short stretch.

Derived data, rebuilt at will and never trusted blindly: a checkpoint is used only
when the log still carries its position's hash. Written every CHECKPOINT_EVERY
events, by appends as they pass the mark and by folds that pass it.
"""

from __future__ import annotations

import os
from pathlib import Path

import msgspec

from eventlog.domain import PlaybookState
from eventlog.store import Position, hash_at

from .snapshot import write_atomically

CHECKPOINT_EVERY = 50_000
CHECKPOINT_DIR = "playbook.checkpoints"


class Checkpoint(msgspec.Struct):
    state: PlaybookState
    position: Position


_decoder = msgspec.msgpack.Decoder(Checkpoint)


def crosses(before: int, after: int, every: int | None = None) -> bool:
    """True when going from seq `before` to `after` passes a checkpoint mark."""
    every = every or CHECKPOINT_EVERY
    return after // every > before // every


def save(directory: Path, state: PlaybookState, position: Position) -> None:
    """Keep `state` at `position`; failures are ignored (a checkpoint only saves time)."""
    try:
        directory.mkdir(exist_ok=True)
        path = directory / f"{position.seq}.msgpack"
        if not path.exists():
            write_atomically(path, msgspec.msgpack.encode(Checkpoint(state=state.copy(), position=position)))
    except OSError:
        pass


def nearest(directory: Path, log: Path, seq: int, after: int = 0) -> Checkpoint | None:
    """The latest checkpoint at or before `seq` (and past `after`) that still matches the log."""
    try:
        names = sorted((n for n in os.listdir(directory) if n.split(".")[0].isdigit() and n.endswith(".msgpack")),
                       key=lambda n: int(n.split(".")[0]), reverse=True)
    except OSError:
        return None
    for name in names:
        if not after < int(name.split(".")[0]) <= seq:
            continue
        try:
            saved = _decoder.decode((directory / name).read_bytes())
        except (OSError, msgspec.DecodeError, msgspec.ValidationError):
            continue
        if hash_at(log, saved.position):
            return saved
    return None


def clear(directory: Path) -> int:
    removed = 0
    for path in directory.glob("*.msgpack") if directory.exists() else []:
        path.unlink(missing_ok=True)
        removed += 1
    return removed
