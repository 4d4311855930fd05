"""The playbook as text for the model's prompt (REQ-SECT-003, REQ-SCORE-003/008)."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from functools import cache
from typing import Any

from eventlog.domain import SECTION_SLUGS, PlaybookState


@cache
def load_template(name: str) -> str:
    """The prompt template `name` (e.g. "playbook.txt") shipped in the `prompts` package."""
    import prompts

    if prompts.__file__ is not None and os.path.isfile(found := os.path.join(os.path.dirname(prompts.__file__), name)):
        # a package installed as files: read directly, as `importlib.resources` (a few milliseconds of imports
        # on every writing hook) would
        with open(found, encoding="utf-8") as handle:
            return handle.read()
    from importlib import resources  # a package in a zip, or of another kind

    return resources.files("prompts").joinpath(name).read_text(encoding="utf-8")


UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
"""What a key point's line never holds raw: control characters (a line break, an escape sequence), bidi controls,
line and paragraph separators. A text from another machine (a synced remote, an org repository) holding one
could otherwise end its line and write lines of its own: a section header, another playbook's key point."""
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    ch = match.group()
    return _NAMED.get(ch) or (f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}")


def one_line(value: Any) -> str:
    """`value` as one line: every character of `UNSAFE` written as its escape (`\\n`, `\\x1b`)."""
    text = value if isinstance(value, str) else str(value)
    return text if text.isprintable() else UNSAFE.sub(_escape, text)


def format_entry(name: Any, text: Any, helpful: Any, harmful: Any) -> str:
    """A key point's line: its id and text each kept to the one line (`one_line`)."""
    return f"[{one_line(name)}] helpful={helpful} harmful={harmful} :: {one_line(text)}"


USER_HEADING = " (user-level: yours in every project)"
"""What follows a section's header for the user-level playbook's key points, which come first."""


def org_heading(name: str) -> str:
    """What follows a section's header for an org's key points, after the user's and before the project's."""
    return f" (org {name}: your organisation's, in every project)"


def format_sections(sections: dict[str, list[tuple[Any, Any, Any, Any]]],
                    user: dict[str, list[tuple[Any, Any, Any, Any]]] | None = None,
                    orgs: Sequence[tuple[str, dict[str, list[tuple[Any, Any, Any, Any]]]]] = ()) -> str:
    """Key point blocks under `## SECTION` headers in canonical order, the `user` ones (the user-level
    playbook's) first under headers of their own, then each of `orgs` (name, sections); "" when every section
    is empty."""
    blocks = []
    layers = [(user or {}, USER_HEADING), *((entries, org_heading(name)) for name, entries in orgs), (sections, "")]
    for entries_of, heading in layers:
        for section in SECTION_SLUGS:
            entries = entries_of.get(section) or []
            if entries:
                blocks.append("\n".join([f"## {section}{heading}", *(format_entry(*entry) for entry in entries)]))
    if not blocks:
        return ""
    return load_template("playbook.txt").format(key_points="\n\n".join(blocks))


def format_state(state: PlaybookState) -> str:
    return format_sections(
        {section: [(kp.name, kp.text, kp.helpful, kp.harmful) for kp in entries.values()]
         for section, entries in state.sections.items()}
    )
