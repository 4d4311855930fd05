"""When a learning request whose cycle failed is tried again, and after how many failures it is given up."""

from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone

from eventlog.domain import PendingLearning

MAX_ATTEMPTS = 5
RETRY_DELAY = 60.0
"""Seconds before the first retry; each later one waits 4 times longer (1, 4, 16, 64 minutes)."""


def env_number(name: str, default: float) -> float:
    """The environment variable `name` as a number; `default` when it is unset or not a number."""
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        return default


def max_attempts() -> int:
    """Failed cycles after which a request is given up (`PLAYBOOK_LEARN_ATTEMPTS`, default 5)."""
    return max(int(env_number("PLAYBOOK_LEARN_ATTEMPTS", MAX_ATTEMPTS)), 1)


def retry_delay(attempts: int) -> float:
    """Seconds to wait after the `attempts`-th failure (`PLAYBOOK_LEARN_RETRY_DELAY` is the first wait)."""
    return env_number("PLAYBOOK_LEARN_RETRY_DELAY", RETRY_DELAY) * 4.0 ** max(attempts - 1, 0)


def next_try(pending: PendingLearning) -> datetime | None:
    """When a failed request is due again; None for one that never failed (due at once)."""
    if not pending.attempts or not pending.failed_at:
        return None
    try:
        failed = datetime.fromisoformat(pending.failed_at)
    except ValueError:
        return None
    if failed.tzinfo is None:
        failed = failed.replace(tzinfo=timezone.utc)
    return failed + timedelta(seconds=retry_delay(pending.attempts))


def due(pending: PendingLearning) -> bool:
    """Whether `pending` may be tried now: it never failed, or its retry delay has passed."""
    when = next_try(pending)
    return when is None or when <= datetime.now(timezone.utc)
