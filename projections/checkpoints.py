"""Checkpoints: folded states kept beside the log so time travel folds only a short stretch.

Derived data, rebuilt at will and never trusted blindly: a checkpoint is used only
when the log still carries its position's hash. Written every CHECKPOINT_EVERY
events, by appends as they pass the mark and by folds that pass it; each one also
brings the commit index up to the log's end, so a query finds it current and reads
only the transactions written since the last mark.
"""

from __future__ import annotations

import os
from pathlib import Path

import msgspec

from eventlog.domain import PlaybookState
from eventlog.checks import hash_at
from eventlog.safefiles import directory as opened_dir, remove, write_atomically
from eventlog.store import Position

from .quickroads import LOG_NAME

CHECKPOINT_EVERY = 50_000


class Checkpoint(msgspec.Struct):
    state: PlaybookState
    position: Position


_decoder = msgspec.msgpack.Decoder(Checkpoint)


def crosses(before: int, after: int, every: int | None = None) -> bool:
    """True when going from seq `before` to `after` passes a checkpoint mark."""
    every = every or CHECKPOINT_EVERY
    return after // every > before // every


def save(directory: Path, state: PlaybookState, position: Position, log: Path | None = None,
         root: Path | None = None) -> None:
    """Keep `state` at `position`, and extend the commit index of `log` (by default the log beside
    `directory`) to its end; failures are ignored (both only save time).

    Follows no link below `root` (by default the directory above the `.claude` that holds `directory`): a
    checkpoint directory a repository carries as a link out is refused, not written through. The index is
    extended here, a mark at a time, rather than by the first query that needs it: building it for a long
    log reads the whole file, which no query should wait for."""
    root = _root(directory, root)
    try:
        with opened_dir(directory, root, create=True) as dir_fd:
            name = f"{position.seq}.msgpack"
            try:
                os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                write_atomically(dir_fd, name, msgspec.msgpack.encode(Checkpoint(state=state.copy(), position=position)))
    except OSError:
        return
    from .commitindex import CommitIndex

    try:
        CommitIndex.load(log or directory.parent / LOG_NAME, directory, root).close()
    except OSError:
        pass


def nearest(directory: Path, log: Path, seq: int, after: int = 0) -> Checkpoint | None:
    """The latest checkpoint at or before `seq` (and past `after`) that still matches the log."""
    try:
        found = [(at, name) for name in os.listdir(directory) if (at := seq_of(name)) is not None]
    except OSError:
        return None
    for at, name in sorted(found, reverse=True):
        if not after < at <= seq:
            continue
        try:
            saved = _decoder.decode((directory / name).read_bytes())
        except (OSError, msgspec.DecodeError, msgspec.ValidationError):
            continue
        # a file whose content is not the checkpoint its name says could be past `seq`
        if after < saved.position.seq <= seq and hash_at(log, saved.position):
            return saved
    return None


def seq_of(name: str) -> int | None:
    """The seq of a checkpoint file's name (`50000.msgpack`, as `save` writes it), or None for any other
    file in the directory (the commit index, a stray `².msgpack`): those are not checkpoints."""
    stem, _, extension = name.partition(".")
    if extension != "msgpack" or not stem.isdecimal():  # isdecimal, not isdigit: int() rejects "²"
        return None
    return int(stem)


def clear(directory: Path, root: Path | None = None) -> int:
    """Remove every checkpoint, the commit index and what killed writers left; returns how many files went.

    Follows no link below `root` (as `save`): nothing is removed where a link leads."""
    removed = remove_leftovers(directory, root)
    try:
        with opened_dir(directory, _root(directory, root)) as dir_fd:
            for name in os.listdir(dir_fd):
                if not name.startswith(".") and name.endswith((".msgpack", ".index")):
                    removed += remove(dir_fd, name)
    except FileNotFoundError:
        pass
    return removed


def remove_leftovers(directory: Path, root: Path | None = None) -> int:
    """Remove the temporary files (`.N.msgpack.PID.tmp`) of processes that died while writing one.

    Follows no link below `root` (as `save`). Readers write checkpoints too, without the log's lock, so a
    temporary file is removed only when the process its name records no longer runs (a live one would lose
    its write, no more). Only tidying: a directory it cannot reach is left as it is."""
    removed = 0
    try:
        with opened_dir(directory, _root(directory, root)) as dir_fd:
            for name in os.listdir(dir_fd):
                if name.startswith(".") and name.endswith(".tmp") and not _alive(name.split(".")[-2]):
                    removed += remove(dir_fd, name)
    except OSError:
        pass
    return removed


def _root(directory: Path, root: Path | None) -> Path:
    """The root the checkpoints of `directory` are reached from: by default the directory above its `.claude`."""
    return root if root is not None else directory.parent.parent


def _alive(pid: str) -> bool:
    if not pid.isdecimal() or not 0 < int(pid) < 1 << 22:
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # it exists, as another user's process
    return True
