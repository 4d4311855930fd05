"""What every `playbook` subcommand writes on stdout: lines, one JSON document, the terminal's style.

Text goes out as it is given (callers clean what came from outside); JSON never fails on a
string UTF-8 cannot hold.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from playbook.rendering.terminal import Style


def out(lines: list[str] | str) -> None:
    text = lines if isinstance(lines, str) else "\n".join(lines)
    sys.stdout.write(text + "\n")


def out_json(document: object) -> None:
    """`document` as one JSON document on stdout (`report.to_json`)."""
    from playbook.rendering.report import to_json

    try:
        text = to_json(document)
    except UnicodeEncodeError:
        # A lone surrogate, which UTF-8 (and so JSON) cannot hold: a --project path or a name
        # given on a command line that is not UTF-8. It is written as the text `\udcff`.
        import msgspec

        text = to_json(_encodable(msgspec.to_builtins(document)))
    out(text)


def _encodable(value: Any) -> Any:
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {_encodable(key): _encodable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_encodable(item) for item in value]
    return value


def stdout_style() -> Style:
    """The report style for stdout: its width, and colour when it is a terminal."""
    from playbook.rendering.terminal import Style

    return Style.for_stream(sys.stdout)
