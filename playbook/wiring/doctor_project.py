"""`playbook doctor`'s checks of the project's own playbook (learning, the day's budget, the files in `.claude`, the
log and the injection), and the whole checkup: every check in order, after those of `playbook.wiring.doctor`. Each
reads; none writes (the state is folded as `PlaybookRepository.current` folds it).
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import msgspec

from eventlog.domain import PlaybookState
from projections.quickroads import (INJECTION_NAME, MAX_PROJECTION_BYTES, claude_outside, current_body,
                                    too_large_to_fold)
from projections.repository import PlaybookRepository

from .doctor import Check, Setting, check_backend, check_hooks, check_pythons, failed, ok
from .doctor_org import check_orgs
from .doctor_sync import check_sync

LOOKBACK = timedelta(days=30)
"""How far back the learning check reads the log for cycles: from its end, never all of it."""
LOW_DISK = 64 << 20
"""Free bytes below which a write of the log, a snapshot or a checkpoint may fail."""
PRIVATE_NAMES = ("playbook.events.jsonl", "playbook.json", "playbook.hook.json", "playbook.recall.json",
                 "playbook.learn.log", "playbook.notice")


def _repo(setting: Setting) -> PlaybookRepository | None:
    """The project's playbook, when it has a log; None before its first session ends."""
    from .project import repository

    repo = repository(setting.project)
    return repo if repo.log_path.exists() else None


def _state(repo: PlaybookRepository) -> PlaybookState:
    return repo.current()[0]


def _ago(at: str) -> str:
    try:
        then = datetime.fromisoformat(at)
    except ValueError:
        return at
    minutes = int((datetime.now(timezone.utc) - then).total_seconds() // 60)
    for size, unit in ((1440, "d"), (60, "h")):
        if minutes >= size:
            return f"{at[:16].replace('T', ' ')} UTC, {minutes // size}{unit} ago"
    return f"{at[:16].replace('T', ' ')} UTC, {max(minutes, 0)}m ago"


def check_learning(setting: Setting) -> list[Check]:
    """Learning is on, its last cycle, what waits, and whether cycles keep failing."""
    from eventlog.events import LearningCompleted, LearningFailed
    from projections.timeline import Timeline

    from .notice import FAILING_IN_A_ROW, learning_cause

    repo = _repo(setting)
    if repo is None:
        return [ok("learning", "no log yet: the first session that ends records a learning request")]
    state = _state(repo)
    cause = learning_cause(setting.project, state)
    if cause is not None and cause[0] != "no-backend":  # no backend is the backend check's line
        return [failed("learning", cause[1].removeprefix("playbook: "),
                       "`playbook enable`" if cause[0] == "disabled" else "set a playbook_update_on_* setting to true")]
    kinds = (LearningCompleted, LearningFailed)  # a cycle given up is also its LearningFailed: counted once
    since = (datetime.now(timezone.utc) - LOOKBACK).isoformat()
    outcomes = [(event, transaction.commit.at)
                for transaction in Timeline(repo).newest(
                    n=50, since=since, keep=lambda t: any(isinstance(event, kinds) for event in t.events))
                for event in reversed(transaction.events) if isinstance(event, kinds)]
    last = next((at for event, at in outcomes if isinstance(event, LearningCompleted)), None)
    failures = [event for event, _ in outcomes[:FAILING_IN_A_ROW] if not isinstance(event, LearningCompleted)]
    waiting = len(state.pending)
    retried = sum(1 for pending in state.pending.values() if pending.attempts)
    parts = [f"last cycle {_ago(last)}" if last else f"no cycle in the last {LOOKBACK.days} days",
             f"{waiting} waiting" + (f" ({retried} failed before, tried again later)" if retried else "")]
    detail = "; ".join(parts)
    if len(failures) >= FAILING_IN_A_ROW:
        from playbook.rendering.safe_text import clean

        error = clean(getattr(failures[0], "error", ""))[:200]
        return [failed("learning", f"{detail}; the last {FAILING_IN_A_ROW} cycles failed (last: {error})",
                       "fix the backend (above), then `playbook learn --retry`")]
    return [ok("learning", detail)]


def check_budget(setting: Setting) -> list[Check]:
    """What learning spent today against `playbook_daily_token_budget`."""
    from projections.usage import spent_on

    from .settings import load_settings

    budget = int(load_settings(setting.project).playbook_daily_token_budget)
    repo = _repo(setting)
    used = spent_on(repo).tokens if repo is not None else 0
    if budget <= 0:
        return [ok("budget", f"{used:,} tokens today (UTC); no daily limit")]
    if used >= budget:
        return [failed("budget", f"spent: {used:,} of {budget:,} tokens today (UTC); learning waits for tomorrow",
                       "`playbook learn --ignore-budget` learns now, or raise playbook_daily_token_budget")]
    return [ok("budget", f"{used:,} of {budget:,} tokens used today (UTC)")]


def check_files(setting: Setting) -> list[Check]:
    """`.claude` and the playbook's files in it are the project's, ours, writable and private; the disk has room."""
    from eventlog.files import SHARED_FILES

    claude = setting.project / ".claude"
    outside = claude_outside(setting.project)
    if outside is not None:
        return [failed("files", f"{claude} is a link to {outside}, outside the project: nothing is read or written there",
                       f"replace the link {claude} with a directory of the project's own")]
    if not claude.exists():
        return [ok("files", f"no {claude} yet: made at the first session end")]
    unwritable, foreign, open_to_others = [], [], []
    paths = [claude, *(claude / name for name in PRIVATE_NAMES if os.path.lexists(claude / name))]
    for path in paths:
        status = os.lstat(path)
        if stat.S_ISLNK(status.st_mode):
            continue  # the hooks and writers refuse one that leads out (the log check says so)
        directory = stat.S_ISDIR(status.st_mode)
        if not os.access(path, os.W_OK | (os.X_OK if directory else 0)):
            unwritable.append(path.name)
        if status.st_uid != os.getuid():
            foreign.append(path.name)
        if status.st_mode & 0o002 or (not SHARED_FILES and status.st_mode & (0o077 if not directory else 0o022)):
            open_to_others.append(f"{path.name} {stat.filemode(status.st_mode)}")
    free = shutil.disk_usage(claude).free
    if unwritable or foreign:
        names = ", ".join(dict.fromkeys(unwritable + foreign))
        return [failed("files", f"not writable by you: {names} (in {claude})",
                       f"make them yours and writable: `chown -R $(id -un) {claude} && chmod -R u+rwX {claude}`")]
    if free < LOW_DISK:
        return [failed("files", f"{free >> 20} MiB free on the disk of {claude}", "free some disk space")]
    if open_to_others:
        return [failed("files", f"open to other users: {', '.join(open_to_others)}",
                       f"`chmod -R go-rwx {claude}` (or PLAYBOOK_SHARED_FILES=1 when a team shares the checkout)",
                       blocks=False)]
    return [ok("files", f"{claude}: yours, writable, private; {free / 1e9:.1f} GB free")]


def check_log(setting: Setting) -> list[Check]:
    """`playbook verify`: the log's chain, sequence and transactions, and the snapshot."""
    from projections.verify import only_behind, verify

    repo = _repo(setting)
    if repo is None:
        return [ok("log", "no log yet")]
    report = verify(repo)
    if report.ok or only_behind(report):
        return [ok("log", f"verified: {report.transactions} transactions, seq {report.seq}")]
    first = report.problems[0]
    where = f"{os.path.basename(first.file)}:{first.line}: " if first.line else ""
    return [failed("log", f"{where}{first.what}" + (f" (and {len(report.problems) - 1} more)"
                                                    if len(report.problems) > 1 else ""),
                   "`playbook verify` says what to do; writers refuse a damaged log")]


def check_injection(setting: Setting) -> list[Check]:
    """What the next session is given: its size against the budget, what is left out, and whether the hook can
    give it without folding the log."""
    from playbook.learner.lean import current_plan

    repo = _repo(setting)
    if repo is None:
        return [ok("injection", "nothing yet: no playbook in this project")]
    state = _state(repo)
    if state.disabled:
        return [failed("injection", "the playbook is disabled in this project: nothing is injected",
                       "`playbook enable`")]
    plan = current_plan(repo, state)
    claude = str(repo.claude_dir)
    try:
        current = current_body(claude, INJECTION_NAME, MAX_PROJECTION_BYTES, user=True) is not None
    except (OSError, ValueError):
        current = False
    if not current and (size := too_large_to_fold(claude)) is not None:
        return [failed("injection", f"not injected: the log ({size / 1e6:.0f} MB) changed outside this machine's "
                       "writers and is too large for a hook to fold", "`playbook rebuild` once")]
    count = len(plan.included) + len(plan.user_included) + len(plan.org_included)
    budget = f"{plan.budget:,} tokens" if plan.budget > 0 else "no budget"
    detail = f"{count} key point(s) in about {plan.tokens:,} tokens of {budget}"
    left = len(plan.left_out) + len(plan.user_left_out) + len(plan.org_left_out)
    if left:
        detail += f"; {left} left out (`playbook show --left-out`)"
    if not current:
        detail += "; the next session start projects it again first"
    if plan.budget > 0 and plan.tokens > plan.budget:
        return [failed("injection", f"{detail}: over the budget", "raise playbook_injection_budget", blocks=False)]
    return [ok("injection", detail)]


# --- all of them --------------------------------------------------------------------------------------------


CHECKS: tuple[Callable[[Setting], list[Check]], ...] = (
    check_pythons, check_hooks, check_backend, check_learning, check_budget, check_files, check_log, check_injection,
    check_orgs, check_sync)
"""Every check, in the order the report shows them."""


def diagnose(project: Path, offline: bool = False, env: Mapping[str, str] | None = None) -> list[Check]:
    """Every check's lines for `project`; a check that fails to run is a line saying so, never a traceback."""
    setting = Setting(project, dict(os.environ if env is None else env), offline)
    found: list[Check] = []
    for check in CHECKS:
        try:
            found.extend(check(setting))
        except Exception as exc:  # one check that cannot run leaves the others
            name = check.__name__.removeprefix("check_")
            found.append(failed(name, f"could not be checked: {type(exc).__name__}: {exc}", "see the error",
                                blocks=False))
    return found


def blocking(found: list[Check]) -> bool:
    """Whether a failed check keeps learning or injection from working."""
    return any(not check.ok and check.blocks for check in found)


def as_json(found: list[Check]) -> dict[str, Any]:
    return {"ok": not blocking(found), "checks": [msgspec.to_builtins(check) for check in found]}
