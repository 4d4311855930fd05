"""Text for the terminal: colour when wanted, widths in cells, cutting and wrapping, log values quoted safely."""

from __future__ import annotations

import os

TYPE_CHECKING = False  # not typing's: importing typing costs a start-up what the standard-library-only paths avoid
if TYPE_CHECKING:
    from typing import Any

from .safe_text import clean

WIDTH = 80
LABEL = 10  # width of the label column of log blocks
SHOWN = 2000
"""Characters of one text shown by default: a hand edit can hold megabytes, and a screen cannot."""
full = False
"""Set by `--full`: texts are shown whole."""


def shown(text: str) -> str:
    """`text` cut to SHOWN characters for display, with a marker saying how much was left out (not with `--full`).

    Cut before anything else looks at it, so showing a text of megabytes costs what showing SHOWN does."""
    if full or len(text) <= SHOWN:
        return text
    return f"{text[:SHOWN]}… [{len(text) - SHOWN} more characters; --full shows them]"


# --- style ----------------------------------------------------------------------------------------

_CODES = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "blue": "34", "magenta": "35",
          "cyan": "36"}


def want_color(stream: Any) -> bool:
    """Colour only on a terminal, never with NO_COLOR set (https://no-color.org) or TERM=dumb."""
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


class Style:
    def __init__(self, color: bool = False, width: int = WIDTH) -> None:
        self.color = color
        self.width = width

    @classmethod
    def for_stream(cls, stream: Any) -> Style:
        color = want_color(stream)
        width = WIDTH
        try:
            if stream.isatty():
                import shutil

                width = max(60, shutil.get_terminal_size((WIDTH, 24)).columns)
        except (AttributeError, ValueError):
            pass
        return cls(color, width)

    def paint(self, text: str, *names: str) -> str:
        if not self.color or not text or not names:
            return text
        return f"\x1b[{';'.join(_CODES[n] for n in names)}m{text}\x1b[0m"


# --- text from the log --------------------------------------------------------------------------------

# C0 and C1 controls, DEL, line/paragraph separators, bidi controls, lone surrogates.
def one_line(value: Any) -> str:
    """Prose (an analysis, a reasoning) on one line, `shown`: whitespace runs become one space, then `clean`."""
    text = value if isinstance(value, str) else str(value)
    return clean(" ".join(shown(text).split()))


def quote(text: Any) -> str:
    """A text from the log in quotes, `shown` and `clean`."""
    return f'"{clean(shown(text) if isinstance(text, str) else text)}"'


def cells(text: str) -> int:
    """Terminal columns `text` takes (wide characters 2, combining marks 0)."""
    if text.isascii():
        return len(text)
    import unicodedata  # only here: `show` and the hooks print without it

    return sum(0 if unicodedata.combining(ch) else 2 if unicodedata.east_asian_width(ch) in "WF" else 1
               for ch in text)


def fit(text: str, width: int) -> str:
    """`text` cut to `width` columns, ending in `…` when cut."""
    text = text[: 4 * max(width, 1) + 1]  # a character takes at most two cells: measure no more than is shown
    if cells(text) <= width:
        return text
    if width <= 1:
        return "…"[:width]
    out, used = [], 0
    for ch in text:
        w = cells(ch)
        if used + w > width - 1:
            break
        out.append(ch)
        used += w
    return "".join(out) + "…"


def wrap(first: str, text: str, width: int, indent: int | None = None) -> list[str]:
    """`first` then `text`, wrapped to `width` with a hanging indent (default: the width of `first`)."""
    pad = " " * (cells(first) if indent is None else indent)
    lines: list[str] = []
    for number, paragraph in enumerate(text.split("\n") or [""]):
        prefix = first if number == 0 else pad
        if len(paragraph) > 4 * SHOWN:  # with --full: textwrap takes quadratic time on a long word
            step = max(20, width) - cells(pad)
            lines.extend(f"{prefix if at == 0 else pad}{paragraph[at:at + step]}"
                         for at in range(0, len(paragraph), step))
            continue
        import textwrap  # only here: `show` and the hooks print without it

        wrapped = textwrap.wrap(paragraph, width=max(20, width), initial_indent=prefix, subsequent_indent=pad,
                                break_long_words=True, break_on_hyphens=False) or [prefix.rstrip()]
        lines.extend(wrapped)
    return lines


def when(at: str | None) -> str:
    """A log time as `YYYY-MM-DD HH:MM:SS`, in UTC."""
    if not at:
        return "-"
    from datetime import datetime, timezone  # only here: `show` of a kept text prints without it

    try:
        moment = datetime.fromisoformat(at)
    except ValueError:
        return clean(at)
    if moment.tzinfo is not None:
        moment = moment.astimezone(timezone.utc).replace(tzinfo=None)
    if moment.year < 1000:  # strftime does not pad the year to four digits
        return moment.strftime("%Y-%m-%d %H:%M:%S")
    return moment.isoformat(" ", "seconds")  # the same text, some eight times faster than strftime


def counters(helpful: int, harmful: int) -> str:
    return f"{helpful}/{harmful}"
