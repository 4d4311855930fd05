"""The SessionStart hook's output, projected ahead of time so the hook only copies bytes.

File format: one header line `<log size> <playbook.json mtime_ns>`, then the exact
bytes the hook prints (nothing for an empty playbook). The hook trusts the file
only while both numbers still match; otherwise it takes the slow path.
"""

from __future__ import annotations

import msgspec

from eventlog.domain import PlaybookState

from .render import format_state

INJECTION_NAME = "playbook.hook.json"


class _Output(msgspec.Struct):
    hookEventName: str
    additionalContext: str


class _HookOutput(msgspec.Struct):
    hookSpecificOutput: _Output


def hook_output(state: PlaybookState) -> bytes:
    """What the SessionStart hook prints for `state`: the rendered playbook as additional context."""
    text = format_state(state)
    if not text:
        return b""
    return msgspec.json.encode(_HookOutput(_Output("SessionStart", text))) + b"\n"


def injection_file(log_size: int, snapshot_mtime_ns: int, output: bytes) -> bytes:
    return f"{log_size} {snapshot_mtime_ns}\n".encode() + output
