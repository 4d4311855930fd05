"""A lean context: what the injection budget gives the next session, and what it leaves out."""

from __future__ import annotations

import msgspec

from eventlog.domain import PlaybookState
from projections.injection import Injection, injection_budget, plan
from projections.repository import PlaybookRepository


class _Output(msgspec.Struct):
    additionalContext: str = ""


class _HookOutput(msgspec.Struct):
    hookSpecificOutput: _Output


def current_plan(repo: PlaybookRepository, state: PlaybookState | None = None) -> Injection:
    """The injection plan for the playbook now, under the budget in force for the project."""
    state = repo.state() if state is None else state
    return plan(state, injection_budget(repo.claude_dir.parent))


def injected_context(repo: PlaybookRepository) -> Injection:
    """Exactly what the next session receives: the projected hook output, brought up to date first."""
    state = repo.refresh()
    planned = current_plan(repo, state)
    try:
        output = repo.injection_path.read_bytes().partition(b"\n")[2]
    except OSError:
        output = b""
    text = msgspec.json.decode(output, type=_HookOutput).hookSpecificOutput.additionalContext if output.strip() else ""
    return msgspec.structs.replace(planned, text=text)


def left_out_state(repo: PlaybookRepository) -> PlaybookState:
    """The playbook now, keeping only the key points the budget leaves out of the injection."""
    state = repo.state()
    left_out = set(current_plan(repo, state).left_out)
    kept = state.copy()
    for section, entries in kept.sections.items():
        kept.sections[section] = {name: kp for name, kp in entries.items() if name in left_out}
    kept.where = {name: section for name, section in kept.where.items() if name in left_out}
    return kept
