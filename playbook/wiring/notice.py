"""The one line SessionStart shows the user when a hook cannot do its job, at most once a day per cause.

Each cause (`projections.quicknotice.NOTICE_CAUSES`) is decided where it is known and kept in the
project's notice with its line, which names the cause and its fix: the learning hooks, the learner,
`playbook enable` / `disable` and the SessionStart slow path decide whether learning can run at all
(`learning_cause`); the learner, whether its cycles keep failing (`failing_line`) and whether the
day's token budget is spent (`budget_line`); a hook that fails, what failed (`record_failure`); the
hook scripts, standard library only, that the hooks' Python cannot load the playbook. The SessionStart
script (`playbook/quick/inject.py`) shows the first cause not shown today as the hook's `systemMessage`
and notes it; with no notice it costs one failed `open`. Every read and write of the notice goes
through `projections.quicknotice` (reading; `quickroads.notice_path`) and `playbook.quick.notices` (writing): it lives in the
project's local directory (`quickroads.local_dir`, under the user-level one), never in the repository, whose
`.claude/` can hold any file: a message shown as ours must come from this machine alone.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from eventlog.domain import PlaybookState
from eventlog.errors import CorruptLogError, PlaybookError, StorageError
from eventlog.files import FILE_MODE
from playbook.quick.notices import change_notice, note_learning
from projections.quicknotice import DOCTOR, LEARNING_LINES, MISSING_PYTHON, hook_line, storage_line

from playbook.learner.backend import model_config
from .settings import load_settings

if TYPE_CHECKING:
    from projections.repository import PlaybookRepository

FAILING_IN_A_ROW = 3
"""Learning cycles that fail one after the other before the notice says so: one failure is retried quietly, a
run of them means something to fix (a refused key, a model that no longer exists, a logged-out CLI)."""
FAILURES_LOOKBACK = timedelta(days=30)
"""How far back the run of failures is looked for: the log is read from its end, never all of it."""


def learning_cause(project: Path, state: PlaybookState) -> tuple[str, str] | None:
    """The cause that keeps learning from running in `project` at all, and the notice's line for it; None when
    learning can run."""
    if state.disabled:
        return "disabled", LEARNING_LINES["disabled"]
    settings = load_settings(project)
    if not any(getattr(settings, key) for key in settings.__struct_fields__ if key.startswith("playbook_update_on_")):
        return "all-off", LEARNING_LINES["all-off"]
    if model_config() is None:
        return "no-backend", LEARNING_LINES["no-backend"]
    return None


def learning_blocker(project: Path, state: PlaybookState) -> str | None:
    """Why learning cannot run in `project`, in one line without its fix, or None when it can."""
    from projections.quicknotice import ALL_OFF, DISABLED, NO_BACKEND

    found = learning_cause(project, state)
    if found is None:
        return None
    return {"disabled": DISABLED, "all-off": ALL_OFF}.get(found[0], f"learning cannot run: {NO_BACKEND}")


def change(project: Path, changes: dict[str, tuple[str, str] | None]) -> None:
    """Set or settle causes of the project's notice. Never raises on I/O: a notice is a courtesy, and a project
    whose files cannot be written still works as far as it can."""
    try:
        change_notice(project, changes, FILE_MODE)
    except OSError:
        pass


def update_notice(project: Path, state: PlaybookState, settled: tuple[str, ...] = ()) -> str | None:
    """Decide again whether learning can run and keep the notice so; `settled` names other causes the caller
    found settled (`HOOK_CAUSES` from a hook that ran in full). Returns why learning cannot run, if it cannot."""
    found = learning_cause(project, state)
    changes: dict[str, tuple[str, str] | None] = {cause: None for cause in LEARNING_LINES}
    # PLAYBOOK_PYTHON that cannot be run is settled only once the hook script finds it again.
    changes.update({cause: None for cause in settled if cause != "python" or not os.environ.get(MISSING_PYTHON)})
    changes["notice"] = None  # an older version's line: its cause is decided again here
    if found is not None:
        changes[found[0]] = ("-", found[1])
    change(project, changes)
    return learning_blocker(project, state)


def error_number(exc: BaseException) -> int | None:
    """The system's error number behind `exc` (an OSError, or a StorageError raised from one), if any."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno is not None:
            return seen.errno
        seen = seen.__cause__ or seen.__context__
    return None


def failure_cause(event: str, exc: BaseException) -> tuple[str, str]:
    """The notice's cause and line for `exc`, which stopped the hook (or the learner) `event`."""
    if isinstance(exc, (StorageError, OSError)):
        return "storage", storage_line(str(exc), error_number(exc))
    if isinstance(exc, CorruptLogError):
        return "hook", hook_line(event, f"{exc} (`playbook verify` names the damage)")
    error = str(exc) if isinstance(exc, PlaybookError) else f"{type(exc).__name__}: {exc}"
    return "hook", hook_line(event, error)


def record_failure(project: Path, event: str, exc: BaseException, log: bool = True) -> None:
    """Keep what stopped the hook (or learner) `event`: as the notice's cause, and (`log`) in the learn log when it
    was learning that failed, so no failure is only ever on a hook's stderr, which Claude Code does not show."""
    cause, line = failure_cause(event, exc)
    change(project, {cause: ("-", line)})
    if log and event != "SessionStart":
        try:
            note_learning(project, line)
        except OSError:
            pass  # the same disk or permissions: the notice, if it could be written, is the record


def note(project: Path, line: str) -> None:
    """A learning failure a hook met before any learner could record it in the log, into the learn log."""
    try:
        note_learning(project, line)
    except OSError:
        pass


def failing_line(repo: PlaybookRepository) -> str | None:
    """The notice's line when the newest FAILING_IN_A_ROW learning cycles all failed (with the last error), else
    None. Reads the log from its end, back at most FAILURES_LOOKBACK."""
    from eventlog.events import LearningCompleted, LearningFailed
    from projections.timeline import Timeline

    kinds = (LearningCompleted, LearningFailed)  # a cycle given up is also its LearningFailed: counted once
    since = (datetime.now(timezone.utc) - FAILURES_LOOKBACK).isoformat()
    outcomes = [event for transaction in Timeline(repo).newest(
        n=FAILING_IN_A_ROW, since=since,
        keep=lambda transaction: any(isinstance(event, kinds) for event in transaction.events))
        for event in reversed(transaction.events) if isinstance(event, kinds)]
    failed = [event for event in outcomes[:FAILING_IN_A_ROW] if not isinstance(event, LearningCompleted)]
    if len(failed) < FAILING_IN_A_ROW:
        return None
    from playbook.rendering.safe_text import clean

    last = clean(failed[0].error)[:300]
    return (f"playbook: learning failed {FAILING_IN_A_ROW} times in a row (last: {last}); the sessions wait and "
            f"are tried again; fix: {DOCTOR} (the backend, its key or login), then `playbook learn --retry`")


def budget_line(used: int, budget: int) -> str:
    """The notice's line while the day's token budget is spent (`used` of `budget` tokens) and learning waits."""
    return (f"playbook: learning paused: the daily token budget is spent ({used:,} of {budget:,} "
            "tokens today, UTC); sessions are learned tomorrow; fix: `playbook learn --ignore-budget` learns them "
            f"now, or raise playbook_daily_token_budget ({DOCTOR})")


def update_learning(repo: PlaybookRepository, spent: tuple[int, int] | None, cycles: bool) -> None:
    """After a learner's run: the budget's cause while it is `spent` (tokens used, budget; for today only), and,
    when it ran `cycles`, whether they keep failing and that its writes went through."""
    from projections.usage import today

    project = repo.claude_dir.parent
    changes: dict[str, tuple[str, str] | None] = {"budget": None if spent is None else (today(), budget_line(*spent))}
    if cycles:
        try:
            line = failing_line(repo)
        except PlaybookError:
            pass  # a log that cannot be read back says so itself, to every reader
        else:
            changes["failing"] = None if line is None else ("-", line)
        changes["storage"] = None
    change(project, changes)

