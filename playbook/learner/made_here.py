"""The learning requests this machine made, kept outside the repository: a request a log names that is not
here came from elsewhere (a clone, a pull, a merge), and its transcript is never read.

A request in the log names the file the learner reads and sends to the model. The log is shared through git,
so any repository can ship requests naming any path; each request this machine makes is first noted in
`requests` in the project's local directory (`projections.quickroads.local_dir`, under the user-level one),
which no clone can write, and the learner reads a transcript only for a request noted there with that path.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from eventlog.errors import PlaybookError
from eventlog.safefiles import create, directory, write_all
from projections.quickroads import local_dir, user_dir

REQUESTS_NAME = "requests"
MAX_REQUESTS_BYTES = 64 << 20
"""The most of the record read, from its end: a line per learning request (about 150 bytes), hundreds of thousands
of them, the newest last."""


class RequestNotRecorded(PlaybookError):
    """This machine's record of its learning requests cannot be written: no request is made."""


def requests_path(project: Path) -> Path:
    return Path(local_dir(project)) / REQUESTS_NAME


def note(project: Path, request: str, transcript: str) -> None:
    """Note that this machine asks to learn `transcript` as `request`; durable when it returns, and done before the
    request reaches the log, so that no learner finds it there unnoted."""
    path = requests_path(project)
    line = (json.dumps([request, transcript]) + "\n").encode("utf-8", "surrogateescape")
    try:
        with directory(path.parent, user_dir(), create=True) as dir_fd:  # no link followed below the user's
            fd = create(dir_fd, path.name, append=True)
        try:
            write_all(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise RequestNotRecorded(f"cannot note the learning request in {path}: {exc}") from exc


def noted(project: Path) -> set[tuple[str, str]]:
    """The (request, transcript) pairs this machine noted for `project`, from the record's last
    MAX_REQUESTS_BYTES (a request still pending is a recent one); none when the record cannot be read: a
    regular file, never through a link."""
    try:
        fd = os.open(requests_path(project), os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except (OSError, ValueError):
        return set()
    with os.fdopen(fd, "rb") as handle:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            return set()
        if status.st_size > MAX_REQUESTS_BYTES:
            handle.seek(status.st_size - MAX_REQUESTS_BYTES)
            handle.readline()  # the rest of a line cut by the seek
        raw = handle.read(MAX_REQUESTS_BYTES)
    found: set[tuple[str, str]] = set()
    for line in raw.splitlines():
        try:
            pair = json.loads(line.decode("utf-8", "surrogateescape"))
        except (ValueError, RecursionError):
            continue  # a line a crash cut short
        if isinstance(pair, list) and len(pair) == 2 and all(isinstance(part, str) for part in pair):
            found.add((pair[0], pair[1]))
    return found


def made_here(project: Path, request: str, transcript: str) -> bool:
    """True when this machine made `request` to learn `transcript`."""
    return (request, transcript) in noted(project)
