"""`playbook export --claude-md`: the playbook as a CLAUDE.md section, to read or share as plain text.

The section sits between two HTML comments; exporting again into the same file replaces it and keeps
everything else in the file as it was. Texts are written as single Markdown list items: a line break
in a key point becomes a space, a control character an escape (`\x1b`), and nothing in a text can
close the section early.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from eventlog.domain import SECTION_SLUGS, PlaybookState
from eventlog.errors import PlaybookError
from eventlog.safefiles import directory, write_atomically
from playbook.rendering.safe_text import clean

BEGIN = "<!-- playbook:begin (written by `playbook export --claude-md`; the next export replaces it) -->"
END = "<!-- playbook:end -->"
_SECTION = re.compile(r"<!-- playbook:begin\b.*?-->.*?<!-- playbook:end -->\n?", re.S)


def _one_line(text: str) -> str:
    """`text` as one Markdown line: a control character or terminal escape (a key point a clone's log or a model
    wrote) is written as an escape, as every other output writes it, never sent raw to a terminal or a file."""
    return clean(" ".join(text.split())).replace("<!--", "&lt;!--").replace("-->", "--&gt;")


def claude_md_section(state: PlaybookState, title: str) -> str:
    """The playbook under a `## title` header, one `###` per section that has key points."""
    lines = [BEGIN, f"## {_one_line(title)}", ""]
    for section in SECTION_SLUGS:
        entries = state.sections[section]
        if not entries:
            continue
        lines += [f"### {section}", ""]
        lines += [f"- {_one_line(kp.text)} ({kp.name}; helpful {kp.helpful}, harmful {kp.harmful})"
                  for kp in entries.values()]
        lines.append("")
    if not state.where:
        lines += ["(no key points yet)", ""]
    lines.append(END)
    return "\n".join(lines) + "\n"


def write_section(path: Path, section: str) -> str:
    """Put `section` into the file at `path`: in place of the one an earlier export wrote, else at its end
    (the file is created if missing). Returns "replaced", "added" or "created"."""
    try:
        current = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        current = None
    except (OSError, UnicodeDecodeError) as exc:
        raise PlaybookError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from exc
    if current is None:
        text, done = section, "created"
    elif _SECTION.search(current):
        text, done = _SECTION.sub(lambda _match: section, current, count=1), "replaced"
    else:
        text, done = current + ("\n" if current and not current.endswith("\n") else "") + (
            "\n" if current else "") + section, "added"
    _replace(path, text.encode("utf-8"))
    return done


def _replace(path: Path, data: bytes) -> None:
    """Replace `path` whole, keeping its mode (a new file gets the umask's): readers never see half a file.

    Follows no link under its name: the file is written in the directory the user named
    (`eventlog.safefiles`), and a link there is replaced, not written through."""
    try:
        mode = os.stat(path).st_mode & 0o777
    except FileNotFoundError:
        mode = None
    try:
        with directory(path.parent, path.parent) as dir_fd:
            write_atomically(dir_fd, path.name, data, mode=0o666, exact_mode=mode)
    except OSError as exc:
        raise PlaybookError(f"cannot write {path}: {exc.strerror or exc}") from exc
