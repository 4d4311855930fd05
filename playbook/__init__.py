"""The application: the spec's public functions over the event-sourced playbook.

Attributes load on first use (PEP 562), so importing a submodule such as
`playbook.quick.inject` costs nothing: the session-start hook depends on that.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: importing typing costs a start-up what the standard-library-only paths avoid
if TYPE_CHECKING:
    from typing import Any

_EXPORTS = {
    "SECTION_SLUGS": "eventlog.domain",
    "generate_keypoint_name": "eventlog.domain",
    "resolve_section": "eventlog.domain",
    "load_template": "projections.render",
    "apply_structured_operations": "playbook.api",
    "format_playbook": "playbook.api",
    "load_playbook": "playbook.api",
    "prune_harmful": "playbook.api",
    "save_playbook": "playbook.api",
    "update_playbook_data": "playbook.api",
    "is_diagnostic_mode": "playbook.wiring.diagnostics",
    "save_diagnostic": "playbook.wiring.diagnostics",
    "get_project_dir": "playbook.wiring.project",
    "run_reflector": "playbook.learner.models",
    "run_curator": "playbook.learner.models",
    "extract_keypoints": "playbook.learner.models",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'playbook' has no attribute {name!r}")
    import importlib  # here: the standard-library-only hooks import this package and never need it

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
