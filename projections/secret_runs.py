"""A secret's pattern searched in time linear in the text, where `re.finditer` takes time quadratic in a run of
the pattern's start (`sk-sk-sk-...`, `eyJeyJ...`, `////...`): a text from another machine (a synced remote, an org
repository) is scanned before it is taken in, and one crafted so would hold the scan for hours."""

from __future__ import annotations

import re
from collections.abc import Iterator


def matches(regex: re.Pattern[str], text: str, start: str | None = None,
            run: re.Pattern[str] | None = None) -> Iterator[re.Match[str]]:
    """What `regex.finditer(text)` finds. With `start`, the literal every match begins with, and `run`, what
    follows a start up to where no match from it can reach: a start that finds no match skips the rest of its
    run, since each later start in it could find only a match the first one would have (none)."""
    if start is None or run is None:
        yield from regex.finditer(text)
        return
    position = 0
    while (at := text.find(start, position)) >= 0:
        found = regex.match(text, at)
        if found is None:
            reach = run.match(text, at)
            position = max(reach.end() if reach is not None else 0, at + 1)
            continue
        yield found
        position = max(found.end(), at + 1)


__all__ = ["matches"]
