"""`playbook show` of a current playbook.json, with the standard library alone.

The plain `show` (no WHEN, no JSON, no other option) prints what playbook.json holds whenever
that file is the one the log's writer last wrote and the log has not grown since: the same
evidence the SessionStart hook trusts (`playbook.inject`), the log's size and the file's
modification time recorded in the hook's projection. Then nothing of the log's machinery is
loaded. In every other case (a hand edit, a legacy file, a log that grew or was replaced, a
`.claude` leading out of the project, a project whose merge driver may need registering) this
answers None and the full command runs, which takes in what it finds and says so.
"""

from __future__ import annotations

import json
import os
import stat
import sys

TYPE_CHECKING = False  # not typing's: importing typing costs a start-up what the standard-library-only paths avoid
if TYPE_CHECKING:
    from typing import Any

from .inject import INJECTION_NAME, claude_outside
from .safe_text import clean
from .terminal import Style, shown, when

SECTIONS = ("PATTERNS & APPROACHES", "MISTAKES TO AVOID", "USER PREFERENCES", "PROJECT CONTEXT", "OTHERS")
"""`eventlog.domain.SECTION_SLUGS`, in its order: a snapshot with other sections is left to the full command."""
DRIVER_ATTRIBUTE = b"merge=playbook"
"""What `playbook.share.names_our_driver` looks for in .gitattributes."""


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
        return os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd()
    return project if os.path.isdir(project) else None  # the full command says what is wrong with it


def _regular(path: str, limit: int | None = None) -> tuple[bytes, os.stat_result] | None:
    """A regular file's bytes and status, never through a FIFO or device a repository may carry."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except (OSError, ValueError):
        return None
    with os.fdopen(fd, "rb") as handle:
        status = os.fstat(handle.fileno())
        if not stat.S_ISREG(status.st_mode):
            return None
        return (handle.readline(limit) if limit is not None else handle.read()), status


def current_snapshot(project: str) -> dict[str, Any] | None:
    """playbook.json of `project` when it is the writer's own and the log has not moved since, else None."""
    if claude_outside(project) is not None:
        return None
    if os.path.lexists(os.path.join(project, ".gitattributes")):
        attributes = _regular(os.path.join(project, ".gitattributes"))
        if attributes is None or DRIVER_ATTRIBUTE in attributes[0]:
            return None  # the full command checks this clone's registration of the merge driver
    claude_dir = os.path.join(project, ".claude")
    try:
        header = _regular(os.path.join(claude_dir, INJECTION_NAME), 512)
        if header is None:
            return None
        size, mtime = header[0].split()[:2]  # then the settings stamp and the user-level playbook's mark
        if os.stat(os.path.join(claude_dir, "playbook.events.jsonl")).st_size != int(size):
            return None
        found = _regular(os.path.join(claude_dir, "playbook.json"))
        if found is None or found[1].st_mtime_ns != int(mtime):
            return None
        snapshot = json.loads(found[0])
    except (OSError, ValueError):
        return None
    if not _well_formed(snapshot) or snapshot["log"].get("offset") != int(size):
        return None  # a large playbook.json lags the log by a short tail, which the full command folds
    return snapshot


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


def show_lines(snapshot: dict[str, Any], style: Style) -> list[str]:
    """`playbook.report.show_lines` of the playbook `snapshot` holds, now (no WHEN): the same lines."""
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


def show(argv: list[str]) -> int | None:
    """Run `playbook show` for command-line arguments `argv` when it needs no more than playbook.json; None
    when the full command must run."""
    project = _project(argv)
    snapshot = current_snapshot(project) if project is not None else None
    if snapshot is None:
        return None
    for stream in (sys.stdout, sys.stderr):  # as the command line does: escapes, never an encoding error
        try:
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            pass
    try:
        sys.stdout.write("\n".join(show_lines(snapshot, Style.for_stream(sys.stdout))) + "\n")
        sys.stdout.flush()
    except BrokenPipeError:  # `playbook show | head`: the reader left; end quietly, as the command line does
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
    return 0
