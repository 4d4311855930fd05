"""The user-level playbook's part in learning: the USER PREFERENCES a project's curator adds go there.

A preference is the user's, not the project's: learned in one project, it is injected in every
one. `playbook_preferences_per_project` keeps them in the project instead.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from eventlog.decide import ApplyOperations
from eventlog.decide_operations import MAX_OPERATIONS
from eventlog.domain import resolve_section_detail
from eventlog.events import Cause
from eventlog.store import Committed
from projections.injection import PREFERENCES

from playbook.wiring.project import repository, user_repository
from playbook.wiring.settings import lean_settings, load_settings

from .lean import absorbing


def split_preferences(operations: Any, project: Path) -> tuple[list[dict[str, Any]], Any]:
    """(the curator's ADDs to USER PREFERENCES, for the user-level playbook; the rest of its operations).

    Nothing is taken out when preferences are kept per project, when the project's playbook is the
    user-level one, or when the reply has more operations than a cycle applies (the project's log
    records that cut, over the reply as it was)."""
    if (not isinstance(operations, list) or len(operations) > MAX_OPERATIONS
            or load_settings(project).playbook_preferences_per_project or repository(project).user_dir is None):
        return [], operations
    preferences = [op for op in operations if isinstance(op, dict) and op.get("type") == "ADD"
                   and resolve_section_detail(op.get("section")) == (PREFERENCES, False)]
    return preferences, [op for op in operations if not any(op is taken for taken in preferences)]


def learn_preferences(preferences: list[dict[str, Any]], cause: Cause, project: Path) -> Committed | None:
    """Append `preferences` (ADD operations) to the user-level playbook as one transaction with the learning
    cycle's cause; a text it already holds is skipped and recorded, so a cycle run again adds nothing twice, and
    a near-duplicate of one it holds is absorbed into it, as in the project's playbook."""
    note = f"user preferences learned in {project}"
    return user_repository().append([ApplyOperations(preferences, absorb=absorbing(lean_settings(project)))],
                                    msgspec.structs.replace(cause, note=note))
