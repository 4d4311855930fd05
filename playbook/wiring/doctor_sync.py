"""`playbook doctor`'s check of the user-level playbook's sync: what the last sync said. A sync runs in the
background, so a refused or unreachable remote is said here, with its fix, without failing the checkup."""

from __future__ import annotations

from playbook.sync.place import SyncPlace

from .doctor import Check, Setting, failed, ok
from .project import user_dir

SYNCED = "synced with "
"""How the line of a sync that merged and pushed begins (`playbook.sync.cycle`)."""


def check_sync(setting: Setting) -> list[Check]:
    """One line when a remote is named for the user-level playbook: its last sync, or that none ran yet."""
    place = SyncPlace(user_dir())
    if not place.git_dir.is_dir() or place.git_dir.is_symlink():
        return []
    said = place.status()
    if said is None:
        return [failed("sync", "a remote is named but no sync has finished yet", "`playbook sync`", blocks=False)]
    if said.startswith(SYNCED) or "nothing to sync yet" in said:
        return [ok("sync", said)]
    return [failed("sync", f"the last sync did not merge: {said}",
                   f"`playbook sync` tries now and says why; its background runs log to {place.path('sync.log')}",
                   blocks=False)]
