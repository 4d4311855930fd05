"""`playbook show` answered without the command line, from one file when it can.

The plain `show` (no WHEN, no JSON, no other option) prints, with the standard library alone:

- the text the last `show` kept (`playbook.quick.show_text`), when it was rendered from the log and playbook.json
  as they are now: a stat of each and one read, whatever the playbook's size;
- else what playbook.json holds, when that file is the one the log's writer last wrote and the log has not
  grown since: the same evidence the SessionStart hook trusts (`playbook.quick.inject`), the log's size and the
  file's modification time recorded in the hook's projection. The text is then kept.

A playbook.json the writer left lagging the log by a short tail is folded forward by `playbook.quick.folded_show`
(the log's reader, without the command line's parser and modules). In every other case (a hand edit, a
legacy file, a log that was replaced, a `.claude` leading out of the project, a project whose merge driver
may need registering) this answers None and the full command runs, which takes in what it finds and says so.
"""

from __future__ import annotations

import os
import stat
import sys

TYPE_CHECKING = False  # not typing's: importing typing costs a start-up what the standard-library-only paths avoid
if TYPE_CHECKING:
    from typing import Any

from . import show_text
from .show_text import SECTIONS, show_lines
from projections.quickroads import INJECTION_NAME, LOG_BLOCK, LOG_NAME, claude_outside

DRIVER_ATTRIBUTE = b"merge=playbook"
"""What `playbook.commands.share.names_our_driver` looks for in .gitattributes."""
"""How the writer's playbook.json starts its `log` block: a string in the file holds no line break, so only the
block itself reads so."""
MAX_READ = show_text.MAX_BYTES
"""The largest file this path reads whole (.gitattributes, playbook.json): past it the full command runs."""


def _project(argv: list[str]) -> str | None:
    """The project of a plain `show [--project DIR]` (the option before or after the command), else None."""
    rest = list(argv)
    project = None
    for at, word in enumerate(rest):
        if word.startswith("--project="):
            project = word.partition("=")[2]
            del rest[at]
            break
        if word == "--project" and at + 1 < len(rest):
            project = rest[at + 1]
            del rest[at : at + 2]
            break
    if rest != ["show"] or project == "":
        return None
    if project is None:
        try:
            return os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd()
        except OSError:  # a current directory removed meanwhile: the full command says so
            return None
    return project if os.path.isdir(project) else None  # the full command says what is wrong with it


def _regular(path: str, limit: int | None = None) -> tuple[bytes, os.stat_result] | None:
    """A regular file's bytes (its first line up to `limit` with one), never through a link, a FIFO or a device
    a repository may carry (a link may lead out of the project: the full command says so), nor one over MAX_READ."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except (OSError, ValueError):
        return None
    handle = show_text.opened(fd)
    if handle is None:
        return None
    with handle:
        status = os.fstat(handle.fileno())
        if not stat.S_ISREG(status.st_mode) or (limit is None and status.st_size > MAX_READ):
            return None
        return (handle.readline(limit) if limit is not None else handle.read(MAX_READ + 1)), status


def _names_driver(project: str) -> bool:
    """True when the project's .gitattributes may name the merge driver (or cannot be read): the full command
    then checks this clone's registration of it."""
    if not os.path.lexists(os.path.join(project, ".gitattributes")):
        return False
    attributes = _regular(os.path.join(project, ".gitattributes"))
    return attributes is None or DRIVER_ATTRIBUTE in attributes[0]


def current_snapshot(project: str) -> dict[str, Any] | None:
    """playbook.json of `project` when it is the writer's own and the log has not moved since, else None."""
    if claude_outside(project) is not None or _names_driver(project):
        return None
    claude_dir = os.path.join(project, ".claude")
    try:
        header = _regular(os.path.join(claude_dir, INJECTION_NAME), 512)
        if header is None:
            return None
        size, mtime = header[0].split()[:2]  # then the settings stamp and the user-level playbook's mark
        log = show_text.log_status(os.path.join(claude_dir, LOG_NAME))
        if log is None or log[0].st_size != int(size):
            return None
        found = _regular(os.path.join(claude_dir, "playbook.json"))
        if found is None or found[1].st_mtime_ns != int(mtime):
            return None
        at = found[0].rfind(LOG_BLOCK)  # the writer's layout: a file lagging the log is told before it is decoded
        if at >= 0 and not found[0].startswith(b"%d," % int(size), at + len(LOG_BLOCK)):
            return None
        snapshot = _decode(found[0])
    except (OSError, ValueError, StopIteration):
        return None
    if not _well_formed(snapshot) or snapshot["log"].get("offset") != int(size):
        return None  # a large playbook.json lags the log by a short tail, which the full command folds
    if snapshot["log"].get("hash") != show_text.head(log[1]):
        return None  # a log of another history at the same size and time: the full command says so
    well_formed: dict[str, Any] = snapshot
    return well_formed


class _Decoding:
    """What `_json.make_scanner` reads of a `json.JSONDecoder`: the defaults of `json.loads`, but NaN and Infinity
    are refused (no field of playbook.json holds one)."""

    strict = True
    object_hook = object_pairs_hook = None
    parse_float, parse_int = float, int

    @staticmethod
    def parse_constant(name: str) -> Any:
        raise ValueError(f"not JSON: {name}")


def _decode(raw: bytes) -> Any:
    """`json.loads` of UTF-8 `raw`, by the same C scanner, without importing `json` (and with it `re` and `enum`,
    which would cost this path more than the whole decode)."""
    try:
        from _json import make_scanner
    except ImportError:  # an interpreter without the C scanner
        import json

        return json.loads(raw.decode("utf-8"))
    text = raw.decode("utf-8")
    start = len(text) - len(text.lstrip(" \t\n\r"))
    value, end = make_scanner(_Decoding())(text, start)  # type: ignore[arg-type]  # reads only these attributes
    if text[end:].strip(" \t\n\r"):
        raise ValueError("extra data after the JSON document")
    return value


def _well_formed(snapshot: Any) -> bool:
    if not isinstance(snapshot, dict) or not isinstance(snapshot.get("log"), dict):
        return False
    sections = snapshot.get("sections")
    if not isinstance(sections, dict) or tuple(sections) != SECTIONS or type(snapshot["log"].get("seq")) is not int:
        return False
    if not isinstance(snapshot.get("last_updated", ""), (str, type(None))):
        return False
    return all(isinstance(entries, list) and all(
        isinstance(e, dict) and isinstance(e.get("name"), str) and isinstance(e.get("text"), str)
        and type(e.get("helpful")) is int and type(e.get("harmful")) is int for e in entries)
        for entries in sections.values())


def text(project: str, color: bool) -> bytes | None:
    """`show`'s text for `project`, in colour or not: kept (`show_text`), or rendered now from a current
    playbook.json and then kept; None when only the full command can tell it."""
    if claude_outside(project) is not None or _names_driver(project):
        return None
    claude_dir = os.path.join(project, ".claude")
    stamped = show_text.stamp(claude_dir)
    if stamped is not None:
        found = show_text.kept(claude_dir, stamped, color)
        if found is not None:
            return found
    snapshot = current_snapshot(project)
    if snapshot is None:
        return None
    from playbook.rendering.terminal import Style

    painted = ("\n".join(show_lines(snapshot, Style(color=True))) + "\n").encode("utf-8")
    if stamped is not None and stamped == show_text.stamp(claude_dir):  # nothing moved while it was rendered
        show_text.keep(claude_dir, stamped, painted, project)
    return painted if color else show_text.plain(painted)


def _lags(project: str) -> bool:
    """True when playbook.json may be the writer's own, lagging the log (`playbook.quick.folded_show`): the log is
    longer than the position the hook's projection was written at, playbook.json the one it names."""
    claude_dir = os.path.join(project, ".claude")
    try:
        header = _regular(os.path.join(claude_dir, INJECTION_NAME), 512)
        if header is None:
            return False
        size, mtime = header[0].split()[:2]
        return (os.stat(os.path.join(claude_dir, "playbook.json")).st_mtime_ns == int(mtime)
                and os.stat(os.path.join(claude_dir, "playbook.events.jsonl")).st_size >= int(size))
    except (OSError, ValueError):
        return False


def write(data: bytes, stream: Any) -> None:
    """`data` (UTF-8) on `stream` as the full command writes its lines: escapes where the stream's encoding
    cannot show a character."""
    encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "").replace("_", "")
    buffer = getattr(stream, "buffer", None)
    if encoding == "utf8" and buffer is not None:
        stream.flush()
        buffer.write(data)
    else:
        stream.write(data.decode("utf-8"))
    stream.flush()


def show(argv: list[str]) -> int | None:
    """Run `playbook show` for command-line arguments `argv` when it needs no more than playbook.json or the
    text kept of it; None when the full command must run."""
    project = _project(argv)
    if project is None:
        return None
    from playbook.rendering.terminal import want_color

    color = want_color(sys.stdout)
    printed = text(project, color)
    if printed is None and _lags(project):
        try:
            from .folded_show import text as folded

            printed = folded(project, color)
        except Exception:  # a dependency that does not import, a log it cannot read: the full command says so
            return None
    if printed is None:
        return None
    for stream in (sys.stdout, sys.stderr):  # as the command line does: escapes, never an encoding error
        try:
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            pass
    try:
        write(printed, sys.stdout)
    except BrokenPipeError:  # `playbook show | head`: the reader left; end quietly, as the command line does
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
    return 0
