"""Diagnostic files: written only while the user keeps `<project>/.claude/diagnostic_mode`.

The log already holds every skip, truncation, unknown section and prune as data;
diagnostic mode also writes them as small text files, as the older tool did.

A repository can ship `.claude/diagnostic_mode` (and `.claude/diagnostic` as a link to any
directory of the user's): so the flag counts only when it is the user's own, a regular file
that git does not track, and the files are written under a `diagnostic` directory reached
from the project without following a link (`eventlog.safefiles`). No environment variable
switches diagnostics on: a project's settings can set the environment its hooks run in.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from eventlog import events as ev
from eventlog.domain import PRUNE_RULE
from eventlog.safefiles import create, directory
from eventlog.store import Committed

from projections.outside import Divergence, redactions_said

from .project import Opened, claude_dir
from playbook.rendering.safe_text import clean

FLAG_NAME = "diagnostic_mode"
DIAGNOSTIC_DIR = "diagnostic"


def is_diagnostic_mode() -> bool:
    """True while `<project>/.claude/diagnostic_mode` is the user's: a regular file (no link) git does not track.

    A stat when there is no such file, the common case; git is asked only when there is one."""
    flag = claude_dir() / FLAG_NAME
    try:
        if not stat.S_ISREG(os.lstat(flag).st_mode):
            return False
    except OSError:
        return False
    return not _shipped(flag)


def _shipped(flag: Path) -> bool:
    """True unless git says it does not track `flag`, or the project is in no git repository at all.

    When git cannot tell (not installed, a repository it refuses to read), a `.git` in the project or above
    it means the flag may have come with the repository: it does not count."""
    project = os.path.realpath(flag.parent.parent)
    relative = os.path.relpath(os.path.realpath(flag.parent) + os.sep + flag.name, project)
    env = {name: value for name, value in os.environ.items() if not name.startswith("GIT_")}
    try:
        done = subprocess.run(["git", "-c", "core.fsmonitor=false", "ls-files", "-z", "--", relative], cwd=project,
                              env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=10)
        if done.returncode == 0:
            return bool(done.stdout)
    except (OSError, subprocess.SubprocessError):
        pass
    here = project
    while True:
        if os.path.lexists(os.path.join(here, ".git")):
            return True
        if here == os.path.dirname(here):
            return False
        here = os.path.dirname(here)


def save_diagnostic(content: str, name: str) -> Path:
    """Write one diagnostic file under `<project>/.claude/diagnostic/` and return its path.

    Follows no link: the directory is reached (made when missing) from the project one component at a
    time without following a link out of it, and the file is created in it as a regular file only."""
    where = claude_dir()
    path = where / DIAGNOSTIC_DIR / f"{datetime.now(timezone.utc):%Y%m%d-%H%M%S-%f}_{name}.txt"
    with directory(path.parent, where.parent, create=True) as dir_fd:
        fd = create(dir_fd, path.name, truncate=True)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(content)
    return path


def warn(message: str) -> None:
    """One line on stderr; ids and texts from a model are escaped, never printed raw."""
    print(f"playbook: {clean(message)}", file=sys.stderr)


def _short(text: str) -> str:
    return text[:80]


Note = Callable[[str, str], None]


def describe(events: list[ev.Event]) -> tuple[list[str], dict[str, list[str]]]:
    """(lines for stderr, diagnostic name -> lines) describing what `events` did or skipped."""
    stderr: list[str] = []
    notes: dict[str, list[str]] = {}

    def note(name: str, line: str) -> None:
        notes.setdefault(name, []).append(line)

    for event in events:
        if isinstance(event, ev.OperationSkipped):
            _describe_skip(event, note, stderr)
        else:
            _describe_change(event, note, stderr)
    return stderr, notes


def _describe_skip(event: ev.OperationSkipped, note: Note, stderr: list[str]) -> None:
    match event:
        case ev.OperationSkipped(reason="truncated", detail=detail):
            note("curator_truncation", detail)
        case ev.OperationSkipped(reason="unknown_id", detail=detail, kind=kind):
            note("curator_unknown_id", detail)
            if kind == "operation":
                stderr.append(f"skipped {detail}")
        case ev.OperationSkipped(reason="too_few_sources", detail=detail):
            note("curator_invalid_operation", detail)
            if "unknown:" in detail:
                note("curator_unknown_id", detail)
        case ev.OperationSkipped(kind="change", reason="empty_text" | "invalid_text" | "not_an_object" as reason,
                                 detail=detail, operation=item):
            note("curator_invalid_operation", f"{reason}: {detail}")
            stderr.append(hand_edit_problem(detail, item))
        case ev.OperationSkipped(kind=kind, reason=reason, detail=detail) if kind != "import":
            note("curator_invalid_operation", f"{reason}: {detail}")


def _describe_change(event: ev.Event, note: Note, stderr: list[str]) -> None:
    match event:
        case ev.KeyPointAdded(requested_section=str() as requested, text=text):
            note("sections_unknown_section", f"Unknown section '{requested}' for key point: \"{_short(text)}\". Assigned to OTHERS.")
        case ev.KeyPointsMerged(missing_sources=missing, name=name) if missing:
            note("curator_unknown_id", f"MERGE into {name}: unknown source ids {', '.join(missing)}")
        case ev.KeyPointDeleted(name=name, text=text, reason=reason):
            note("curator_delete", f"DELETE {name}: \"{_short(text)}\" reason: {reason}")
        case ev.KeyPointUpdated(name=name, text=text, previous_text=previous):
            note("curator_update", f"UPDATE {name}: \"{_short(previous)}\" -> \"{_short(text)}\"")
        case ev.KeyPointPruned(name=name, text=text, helpful=helpful, harmful=harmful):
            line = f"pruned {name}: \"{_short(text)}\" (helpful={helpful}, harmful={harmful}) reason: {PRUNE_RULE}"
            stderr.append(line)
            note("playbook_pruning", line)
        case ev.PlaybookImported(file_format="unreadable", moved_aside=moved, error=error):
            stderr.append(f"playbook.json could not be read ({error}); it is kept as {moved or 'nothing'} "
                          "and the playbook starts empty")
        case ev.SnapshotSetAside(moved_to=moved, error=error, kind="ahead" | "beside"):
            stderr.append(f"{error}: it is kept as {moved} and playbook.json was rebuilt from the log; "
                          f"`playbook recover` takes its content back into the log")
        case ev.SnapshotSetAside(moved_to=moved, error=error):
            stderr.append(f"playbook.json could not be read ({error}); it is kept as {moved or 'nothing'} "
                          "and was rebuilt from the log")
        case ev.PlaybookImported(file_format="flat", entries=count):
            note("sections_migration", f"Migrated {count} entries from flat key_points to OTHERS section")
        case ev.PlaybookImported(file_format="dual_key"):
            note("sections_dual_key_warning", "Dual-key playbook.json detected: both 'sections' and 'key_points' "
                 "present. Using 'sections', ignoring 'key_points'.")
        case ev.KeyPointImported(source_format="dict_with_score" | "bare_string" as fmt, name=name):
            note("playbook_migration", f"{name}: migrated from {fmt.replace('_', ' ')}")


ENTRY_FIELDS = ("name", "text", "helpful", "harmful")
"""The fields of an entry of playbook.json (`score` is read too, from files of the older tool)."""


def hand_edit_problem(detail: str, item: object) -> str:
    """The line that tells a user why an entry they wrote was not taken in, and what an entry looks like."""
    import json

    shown = json.dumps(item, ensure_ascii=False)
    shown = shown if len(shown) <= 120 else shown[:119] + "…"
    line = f"an entry of playbook.json was not taken in ({detail}): {shown}"
    if isinstance(item, dict):
        unknown = sorted(str(key) for key in item if key not in (*ENTRY_FIELDS, "score"))
        if unknown:
            line += f"; unknown field{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}"
    return line + '; an entry is {"name": "pat-001", "text": "...", "helpful": 0, "harmful": 0}'


def divergence_line(divergence: Divergence, injected: bool = False) -> str:
    """The one line a reader says when playbook.json holds what the log does not, and leaves it as it is."""
    then = "the session gets the playbook it holds; " if injected else ""
    return (f"{divergence.describe()}: left as it is ({then}the next write keeps it as playbook.json.ahead-*); "
            "`playbook recover` takes its content back into the log")


def report(events: list[ev.Event], already: list[ev.Event] | None = None) -> None:
    """Print what deserves the user's eye to stderr; in diagnostic mode, write the diagnostic files.

    What `already` describes was reported before (the facade calls that produced it): each of its lines
    is left out once, so replaying those calls into the log does not say the same thing twice."""
    stderr, notes = describe(events)
    if already:
        said, noted = describe(already)
        stderr = _without(stderr, said)
        notes = {name: kept for name, lines in notes.items() if (kept := _without(lines, noted.get(name, [])))}
    for line in stderr:
        warn(line)
    if notes and is_diagnostic_mode():
        try:
            for name, lines in notes.items():
                save_diagnostic("\n".join(lines) + "\n", name)
        except OSError as exc:  # the next would fail alike: one line says so
            warn(f"diagnostic files not written: {exc}")


def report_opened(repos: Opened, injected: bool = False) -> None:
    """Say, once, what the repositories a command opened took in from outside the log, and for each
    project whose playbook.json still holds what its log does not, the one line that says so (unless the
    command's own report said it)."""
    told: set[Path] = set(repos.told)
    for repo in repos:
        for committed in repo.taken_in:
            report_taken_in(committed)
            if any(isinstance(event, ev.SnapshotSetAside) and event.kind != "unreadable" for event in committed.events):
                told.add(repo.claude_dir)
    for repo in repos:
        if repo.claude_dir in told:
            continue
        told.add(repo.claude_dir)
        divergence = repo.divergence()
        if divergence is not None:
            warn(divergence_line(divergence, injected))


def report_taken_in(committed: Committed) -> None:
    """`report` of a transaction that took in what waited outside the log, and the line that says which
    secrets were redacted from it, if any (the kinds, never the values)."""
    report(committed.events)
    said = redactions_said(committed)
    if said is not None:
        warn(said)


def _without(lines: list[str], said: list[str]) -> list[str]:
    """`lines` less one occurrence of each line of `said`."""
    left = list(said)
    kept = []
    for line in lines:
        if line in left:
            left.remove(line)
        else:
            kept.append(line)
    return kept
