"""Claude Code hooks: `playbook hook <event>` reads the hook's JSON on stdin.

A hook never blocks Claude Code and never shows a traceback: whatever goes wrong
gives one line on stderr and exit status 0. Learning hooks only record a request
and start the background learner; they return in well under Claude Code's budget.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from eventlog.domain import PlaybookState
from eventlog.errors import PlaybookError

from projections.injection import injection_budget, output_of, plan
from projections.quickroads import (HOOK_CAUSES, INJECTION_NAME, MAX_PROJECTION_BYTES, MAX_STDIN, current_body,
                                    not_folded_line, too_large_to_fold)
from projections.snapshot import read_snapshot, state_of

from .project import Opened, OutsideProject, claude_dir, collecting, repository, user_repository
from playbook.rendering.safe_text import clean
from .settings import load_settings, never_learn_match

_JSON_TYPES = {list: "array", str: "string", bool: "boolean", int: "number", float: "number"}
LEARNING_EVENTS = ("SessionEnd", "PreCompact", "SubagentStop")


class HookInputError(PlaybookError):
    """The hook's stdin is not the JSON object Claude Code sends."""


def session_start(project: Path | str) -> bytes:
    """`session_start_output`, and one line on stderr for what it found outside the log."""
    with collecting() as opened:
        output = session_start_output(project)
    _report(opened, injected=True)
    return output


def _report(opened: Opened, injected: bool = False) -> None:
    try:
        from .diagnostics import report_opened

        report_opened(opened, injected=injected)
    except Exception:  # only a report: the hook has done its work
        pass


def session_start_output(project: Path | str) -> bytes:
    """The SessionStart hook's output for `project`, bringing the projection up to date first; in a project
    with no playbook, the user-level playbook's alone (and nothing is written in the project)."""
    from .notice import update_notice

    repo = repository(Path(project))
    if not repo.log_path.exists() and not repo.snapshot_path.exists():
        repo = user_repository()
        if not repo.log_path.exists() and not repo.snapshot_path.exists():
            return b""
        if (unfolded := _unfolded(repo.claude_dir)) is not None:
            return unfolded
        repo.refresh()
    elif (unfolded := _unfolded(repo.claude_dir)) is not None:
        return unfolded
    else:
        state = repo.refresh()
        update_notice(Path(project), state, settled=HOOK_CAUSES)
    if repo.diverged is not None:
        # playbook.json holds what the log does not: the session gets that playbook, and it stays as it is.
        found = read_snapshot(repo.snapshot_path)
        if found is not None and found.snapshot is not None:
            held = state_of(found.snapshot)[0]
            if repo.user_level:
                return output_of(plan(PlaybookState(), injection_budget(Path(project)), held))
            return output_of(plan(held, injection_budget(Path(project)), repo.user_playbook()[0]))
    try:
        data = repo.injection_path.read_bytes()
    except OSError:
        return b""
    return data.partition(b"\n")[2]


def _unfolded(claude_dir: Path) -> bytes | None:
    """The hook's output without folding, when the log is too large to fold here: the projection if it is
    current, else nothing injected and the one line why; None when the log may be folded."""
    size = too_large_to_fold(str(claude_dir))
    if size is None:
        return None
    try:
        current = current_body(str(claude_dir), INJECTION_NAME, MAX_PROJECTION_BYTES, user=True)
    except (OSError, ValueError):
        current = None
    if current is not None:
        return current
    return json.dumps({"systemMessage": not_folded_line(str(claude_dir), size)}).encode() + b"\n"


def read_payload(stream: Any) -> dict[str, Any]:
    if stream is None:  # a hook started with stdin closed: sys.stdin is None
        raise HookInputError("no hook input (stdin is closed)")
    raw = stream.buffer.read(MAX_STDIN + 1) if hasattr(stream, "buffer") else stream.read(MAX_STDIN + 1)
    if len(raw) > MAX_STDIN:
        raise HookInputError(f"hook input larger than {MAX_STDIN} bytes")
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", "replace")
    if not raw.strip():
        raise HookInputError("empty hook input")
    try:
        payload = json.loads(raw)
    except ValueError as exc:
        detail = f"{exc.msg} at position {exc.pos}" if isinstance(exc, json.JSONDecodeError) else str(exc)
        raise HookInputError(f"hook input is not JSON ({detail})") from None
    except RecursionError:
        # `[[[[...` (100k deep) is JSON the standard library gives up on: say so, not "hook failed".
        raise HookInputError("hook input is nested too deeply to be a hook's JSON") from None
    if not isinstance(payload, dict):
        raise HookInputError(f"hook input is a JSON {_JSON_TYPES.get(type(payload), 'null')}, not an object")
    return payload


def _project(payload: dict[str, Any]) -> Path:
    configured = os.environ.get("CLAUDE_PROJECT_DIR")
    if configured:
        return Path(configured)
    cwd = payload.get("cwd")
    return Path(cwd) if isinstance(cwd, str) and cwd else Path.cwd()


def _string(payload: dict[str, Any], key: str) -> str | None:
    value = payload.get(key)
    return value if isinstance(value, str) and value else None


def learning_transcript(event: str, payload: dict[str, Any], project: Path) -> tuple[str | None, str]:
    """(transcript to learn from, or None; why) for a learning hook, following the settings."""
    settings = load_settings(project)
    if event == "SessionEnd":
        reason = _string(payload, "reason") or "other"
        wanted = {"clear": settings.playbook_update_on_clear}.get(reason, settings.playbook_update_on_exit)
        if not wanted:
            setting = "playbook_update_on_clear" if reason == "clear" else "playbook_update_on_exit"
            return None, f"session ended ({reason}); learning on this is off ({setting})"
        return _string(payload, "transcript_path"), reason
    if event == "SubagentStop":
        if not settings.playbook_update_on_subagent_stop:
            return None, "learning from subagents is off (playbook_update_on_subagent_stop)"
        return _string(payload, "agent_transcript_path") or _string(payload, "transcript_path"), "subagent"
    if not settings.playbook_update_on_precompact:
        return None, "learning before a compaction is off (playbook_update_on_precompact)"
    return _string(payload, "transcript_path"), _string(payload, "trigger") or "compact"


def learning_hook(event: str, payload: dict[str, Any]) -> str | None:
    """Record a learning request for this hook and start the learner. Returns a note for stderr, if any; a note
    that says why nothing is learned goes to the learn log too."""
    from .notice import update_notice

    project = _project(payload)
    state = repository(project).state()
    update_notice(project, state, settled=HOOK_CAUSES)
    if state.disabled:
        return None  # `playbook disable`: nothing is learned, and SessionStart says so
    transcript, why = learning_transcript(event, payload, project)
    if transcript is None:
        if why.startswith(("session ended", "learning from", "learning before")):
            return None
        return _unlearned(project, f"{event}: no transcript_path in the hook input; nothing to learn")
    # Only this project's own sessions in Claude Code's directory are learned from: the hook input names
    # a file the background learner will read and send to the model, so a path elsewhere (`..`, a
    # symlink out, /etc/..., another project's session) must not make it read and upload it.
    from playbook.learner.sessions import claude_config_dir, inside_project_sessions, project_sessions

    directory = claude_config_dir()
    try:
        inside = inside_project_sessions(transcript, project, directory) is not None
    except ValueError:  # an embedded NUL byte, a lone surrogate: no such file can exist
        return _unlearned(project, f"{event}: transcript {transcript} is missing or unreadable; nothing to learn")
    if not inside:
        sessions = project_sessions(project, directory)[0]
        return _unlearned(project, f"{event}: transcript {transcript} is outside {sessions}, this project's "
                                   "sessions; nothing to learn")
    if not os.path.isfile(transcript) or not os.access(transcript, os.R_OK):
        return _unlearned(project, f"{event}: transcript {transcript} is missing or unreadable; nothing to learn")
    if never_learn_match(transcript, load_settings(project)) is not None:
        return None  # the user asked for this transcript never to be learned from: nothing to say
    from playbook.learner.requests import request_learning, spawn_learner

    from .notice import change

    request_learning(project, event, transcript, _string(payload, "session_id"), why)
    spawn_learner(project)
    change(project, {"storage": None})  # the log took the request: whatever kept it from writing is gone
    return None


def _unlearned(project: Path, note: str) -> str:
    """`note`, kept in the learn log as well: a session not learned from is never said on stderr alone."""
    from .notice import note as keep

    keep(project, f"playbook: {clean(note)}")
    return note


def run_hook(event: str, stdin: Any = None) -> int:
    """Entry point of `playbook hook <event>`: always exits 0."""
    if os.environ.get("PLAYBOOK_LEARNER"):
        return 0  # a session the learner itself started (`claude -p`): it must not learn from itself
    with collecting() as opened:
        _run_hook(event, stdin)
    _report(opened)
    return 0


def _run_hook(event: str, stdin: Any) -> None:
    project: Path | None = None  # known once the hook input is read and `.claude` is the project's own
    try:
        payload = read_payload(stdin or sys.stdin)
        claude_dir(_project(payload))  # a .claude leading out of the project: refused before anything is read
        project = _project(payload)
        if event == "SessionStart":
            sys.stdout.buffer.write(session_start(project))
            sys.stdout.flush()
        elif event in LEARNING_EVENTS:
            from playbook.commands.share import ensure_registered

            ensure_registered(project)
            note = learning_hook(event, payload)
            if note:
                _say(note)
        else:
            _say(f"unknown hook event {event!r}")
    except PlaybookError as exc:
        _say(f"{event} hook: {exc}")
        _record(project, event, exc)
    except Exception as exc:  # never a traceback in Claude Code
        _say(f"{event} hook failed: {type(exc).__name__}: {exc}")
        _record(project, event, exc)


def _record(project: Path | None, event: str, exc: BaseException) -> None:
    """Keep the failure for the next session start (and the learn log), beyond this hook's stderr; bad hook
    input and a `.claude` that is not the project's record nothing."""
    if project is None or isinstance(exc, (HookInputError, OutsideProject)):
        return
    try:
        from .notice import record_failure

        record_failure(project, event, exc)
    except Exception:  # only a record: the hook has said what failed
        pass


def _say(message: str) -> None:
    """One line on stderr, whatever the message holds: paths and errors from the hook input can carry
    newlines and escape sequences, which `clean` writes as escapes."""
    print(f"playbook: {clean(message)}", file=sys.stderr)
