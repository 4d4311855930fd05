"""The application: the spec's public functions over the event-sourced playbook.

Importing this package must stay cheap: the session-start hook imports it.
"""

from eventlog.domain import SECTION_SLUGS, generate_keypoint_name, resolve_section
from projections.render import load_template

from .api import (
    apply_structured_operations,
    format_playbook,
    load_playbook,
    prune_harmful,
    save_playbook,
    update_playbook_data,
)
from .diagnostics import is_diagnostic_mode, save_diagnostic
from .project import get_project_dir

__all__ = [
    "SECTION_SLUGS",
    "apply_structured_operations",
    "format_playbook",
    "generate_keypoint_name",
    "get_project_dir",
    "is_diagnostic_mode",
    "load_playbook",
    "load_template",
    "prune_harmful",
    "resolve_section",
    "save_diagnostic",
    "save_playbook",
    "update_playbook_data",
]
