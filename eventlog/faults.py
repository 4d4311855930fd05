"""Fault points for crash tests: the writer names the moments a crash matters; this decides what happens there.

`point(name)` is a no-op function unless the environment variable PLAYBOOK_FAULT, read
once at import, names a point: then the process dies by SIGKILL when it reaches that
point. Points: after-write, after-fsync, after-cut (the store), before-snapshot
(`projections.repository`), purge-before-rename, purge-after-rename (`projections.purge`),
merge-before-replace (`projections.merge`), sync-after-fetch, sync-before-replace, sync-after-replace,
sync-after-commit,
sync-after-push (`playbook.sync.cycle`).
Nothing else in the code knows about crash tests.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable

_CHOSEN = os.environ.get("PLAYBOOK_FAULT")


def _nothing(name: str) -> None:
    return None


def _die_at(name: str) -> None:
    if name == _CHOSEN:
        os.kill(os.getpid(), signal.SIGKILL)


point: Callable[[str], None] = _die_at if _CHOSEN else _nothing
