"""`playbook show`'s text kept beside the log (`.claude/playbook.show.txt`), with the standard library alone.

The text is kept as the full command prints it to a pipe, with where the bold spans go on a terminal, so
one file serves both: it is rendered in colour and the escape sequences are taken out, which is exact
because the only ones in it are those `Style.paint` writes (everything from the log went through `clean`,
which escapes every control character). Its first line is the stamp it was rendered under (the inode, size
and modification time of the log, of playbook.json and of the sources that render it, and the interpreter's
version), the length of the text and the bold spans. A text whose stamp differs in anything from the files
now (an append, a hand edit, a log replaced, another version of this code) or whose length is not the one
recorded (a write a crash cut short) is never printed: the caller renders again.

It is written by whichever `show` rendered the playbook (the quick path from a current playbook.json, the
full command after folding a lagging one), never by an append, which then costs nothing more; through a
temporary file renamed over the old one, so a reader sees one whole text or the other.
"""

from __future__ import annotations

import os
import stat
import sys
import time

from eventlog.files import FILE_MODE
from projections.quickroads import LOG_NAME, SHOW_NAME, SNAPSHOT_NAME

TYPE_CHECKING = False  # not typing's: the standard-library-only paths do not pay for importing it
if TYPE_CHECKING:
    from typing import Any, BinaryIO

    from playbook.rendering.terminal import Style

FORMAT = b"show-text-1"
"""Changes whenever what `show` prints changes shape (a text of the old shape is then rendered again)."""
MAX_BYTES = 64 << 20
"""The longest text kept or read: a playbook whose text is longer is rendered each time."""
HEADER_BYTES = 4096
"""The longest first line read: the stamp, the text's length and its bold spans."""
BOLD, RESET = b"\x1b[1m", b"\x1b[0m"
TAIL_BYTES = 64
"""The log's last bytes read with its status: its last line ends in `"h":"<32 hex digits>"}` and a line break."""
SECTIONS = ("PATTERNS & APPROACHES", "MISTAKES TO AVOID", "USER PREFERENCES", "PROJECT CONTEXT", "OTHERS")
"""`eventlog.domain.SECTION_SLUGS`, in its order: a snapshot with other sections is left to the full command."""
RENDERERS = ("quick/show_text.py", "quick/quick_show.py", "rendering/report.py", "rendering/terminal.py",
             "rendering/safe_text.py")
"""The sources that shape the text: a text rendered by other versions of them is rendered again."""


def stamp(claude_dir: str) -> bytes | None:
    """What a text rendered now from `claude_dir`'s log and playbook.json is keyed to (their inode, size and
    modification time, and the log's last bytes); None unless both are regular files (no link: the full command
    alone tells a link inside the project from one leading out)."""
    parts = [FORMAT, b"%x" % sys.hexversion]  # another interpreter may class characters otherwise (`clean`)
    here = os.path.dirname(os.path.dirname(__file__))  # the package: the renderers sit in two of its rooms
    try:
        log = log_status(os.path.join(claude_dir, LOG_NAME))
        snapshot = os.lstat(os.path.join(claude_dir, SNAPSHOT_NAME))  # a link, which may lead elsewhere, is no source
        if log is None or not stat.S_ISREG(snapshot.st_mode):
            return None
        parts.append(b"%d:%d:%d:%s" % (log[0].st_ino, log[0].st_size, log[0].st_mtime_ns, log[1].hex().encode()))
        parts.append(b"%d:%d:%d" % (snapshot.st_ino, snapshot.st_size, snapshot.st_mtime_ns))
        for name in RENDERERS:
            status = os.stat(os.path.join(here, name))
            parts.append(b"%d:%d:%d" % (status.st_ino, status.st_size, status.st_mtime_ns))
    except (OSError, ValueError):
        return None
    return b" ".join(parts)


def log_status(path: str) -> tuple[os.stat_result, bytes] | None:
    """The log's status and its last TAIL_BYTES, which end in the chain's head (`head`), when it is a regular file
    (never through a link); None otherwise. OSError when it cannot be opened.

    The head tells two logs of the same size, inode and modification time apart (another branch's checked out
    within one tick of a coarse clock, a restore in place), which the full command tells apart by it too."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            return None
        return status, os.pread(fd, TAIL_BYTES, max(0, status.st_size - TAIL_BYTES))
    finally:
        os.close(fd)


def opened(fd: int) -> BinaryIO | None:
    """`fd` as a file to read, else None with `fd` closed: a directory a repository carries under a file's name
    opens, but `fdopen` refuses it."""
    try:
        return os.fdopen(fd, "rb")
    except (OSError, ValueError):
        os.close(fd)
        return None


def head(tail: bytes) -> str | None:
    """The chain's head the log's last line (a commit's) ends with, from its last bytes `tail`, else None."""
    at = tail.rfind(b'"h":"')
    end = tail.find(b'"', at + 5) if at >= 0 else -1
    return tail[at + 5 : end].decode("ascii", "replace") if end > at + 5 else None


def kept(claude_dir: str, stamped: bytes, color: bool) -> bytes | None:
    """The text kept in `claude_dir` when it was rendered under `stamped`, in colour or not, else None.

    Never read through a link, a FIFO or a device a repository may carry, nor past MAX_BYTES."""
    try:
        fd = os.open(os.path.join(claude_dir, SHOW_NAME), os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except (OSError, ValueError):
        return None
    handle = opened(fd)
    if handle is None:
        return None
    with handle:
        status = os.fstat(handle.fileno())
        if not stat.S_ISREG(status.st_mode) or status.st_size > MAX_BYTES + HEADER_BYTES:
            return None
        header = handle.readline(HEADER_BYTES)
        text = handle.read(MAX_BYTES + 1)
    fields = header[:-1].rsplit(b" ", 2)
    if not header.endswith(b"\n") or len(fields) != 3 or fields[0] != stamped or fields[1] != b"%d" % len(text):
        return None
    try:
        spans = _spans(fields[2], len(text))
    except ValueError:
        return None
    return _paint(text, spans) if color else text


def keep(claude_dir: str, stamped: bytes, painted: bytes, root: str) -> None:
    """Keep `painted`, rendered under `stamped`, for the next `show`; nothing when it cannot be written (a
    read-only checkout, a name taken by something else): showing never fails for it.

    Follows no link below `root` (the project, or the user-level playbook's directory): the text goes to a
    temporary file renamed over the old one (`eventlog.safefiles`)."""
    text, spans = _unpaint(painted)
    header = b"%s %d %s\n" % (stamped, len(text), b",".join(b"%d:%d" % span for span in spans) or b"-")
    if len(text) > MAX_BYTES or len(header) > HEADER_BYTES:
        return
    try:
        from eventlog import safefiles

        with safefiles.directory(claude_dir, root) as dir_fd:
            _remove_leftovers(dir_fd)
            safefiles.write_atomically(dir_fd, SHOW_NAME, header + text, durable_name=False, mode=FILE_MODE)
    except (OSError, ValueError):
        pass


def _remove_leftovers(dir_fd: int) -> None:
    """Remove the temporary files of writes a killed `show` left (older than a minute: not one being written)."""
    from eventlog.safefiles import remove

    try:
        for name in os.listdir(dir_fd):
            if name.startswith(f".{SHOW_NAME}.") and name.endswith(".tmp"):
                if os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mtime < time.time() - 60:
                    remove(dir_fd, name)
    except (OSError, ValueError):
        pass


def plain(painted: bytes) -> bytes:
    """`painted` without colour, as the full command prints it to a pipe or a file."""
    return _unpaint(painted)[0]


def _unpaint(painted: bytes) -> tuple[bytes, list[tuple[int, int]]]:
    """The plain text of `painted`, and where in it the bold spans are."""
    pieces: list[bytes] = []
    spans: list[tuple[int, int]] = []
    at = length = 0
    while (start := painted.find(BOLD, at)) >= 0 and (end := painted.find(RESET, start)) >= 0:
        pieces += (painted[at:start], painted[start + len(BOLD):end])
        length += start - at
        spans.append((length, length + end - start - len(BOLD)))
        length = spans[-1][1]
        at = end + len(RESET)
    pieces.append(painted[at:])
    return b"".join(pieces), spans


def _spans(field: bytes, length: int) -> list[tuple[int, int]]:
    """The bold spans a header's last field names, in order and inside a text of `length` bytes."""
    if field == b"-":
        return []
    spans, last = [], 0
    for pair in field.split(b","):
        start, _, end = pair.partition(b":")
        span = int(start), int(end)
        if not last <= span[0] <= span[1] <= length:
            raise ValueError("bold spans out of order")
        spans.append(span)
        last = span[1]
    return spans


def _paint(text: bytes, spans: list[tuple[int, int]]) -> bytes:
    pieces: list[bytes] = []
    at = 0
    for start, end in spans:
        pieces += (text[at:start], BOLD, text[start:end], RESET)
        at = end
    pieces.append(text[at:])
    return b"".join(pieces)


def show_lines(snapshot: dict[str, Any], style: Style) -> list[str]:
    """`playbook.rendering.report.show_lines` of the playbook `snapshot` holds, now (no WHEN): the same lines."""
    from playbook.rendering.safe_text import clean
    from playbook.rendering.terminal import shown, when

    sections: dict[str, list[dict[str, Any]]] = snapshot["sections"]
    lines: list[str] = []
    for section in SECTIONS:
        entries = sections[section]
        if not entries:
            continue
        if lines:
            lines.append("")
        lines.append(style.paint(f"## {section}", "bold"))
        for e in entries:
            lines.append(f"[{clean(e['name'])}] helpful={e['helpful']} harmful={e['harmful']} :: {clean(shown(e['text']))}")
    if not lines:
        lines.append("(the playbook is empty)")
    lines.append("")
    total = 0
    for section in SECTIONS:
        count = len(sections[section])
        total += count
        lines.append(f"{section:<24}{count:>5}")
    lines.append(style.paint(f"{'all':<24}{total:>5}", "bold"))
    lines.append(f"log at seq {snapshot['log']['seq']}")
    updated = snapshot.get("last_updated")
    lines.append(f"last updated {when(updated) if updated else 'never'}")
    return lines
