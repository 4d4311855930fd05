"""The core: domain rules, event types, decide/evolve and the append-only store. No other layer is imported here.

The names below are imported when first used, not with the package: importing one module of it
(`eventlog.errors` for a hook, `eventlog.store` for a reader) does not load the deciders and every
rule with it, which would cost every command and hook their start-up time.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: a quick path importing one module (`safefiles`, `files`) does not pay for typing
if TYPE_CHECKING:
    from typing import Any

    from .decide import AddNewKeyPoints, ApplyOperations, Command, Evaluate, ImportLegacy, Prune, ReplaceContent, decide
    from .decide import decide_all
    from .domain import SECTION_SLUGS, KeyPoint, PlaybookState, generate_keypoint_name, resolve_section
    from .errors import CorruptLogError, PlaybookError, StorageError
    from .events import Cause
    from .evolve import apply, evolve, fold
    from .memory import InMemoryEventStore
    from .jsonl import JsonlEventStore
    from .store import Position

_WHERE = {
    **dict.fromkeys(("AddNewKeyPoints", "ApplyOperations", "Command", "Evaluate", "ImportLegacy", "Prune",
                     "ReplaceContent", "decide", "decide_all"), "decide"),
    **dict.fromkeys(("SECTION_SLUGS", "KeyPoint", "PlaybookState", "generate_keypoint_name", "resolve_section"),
                    "domain"),
    **dict.fromkeys(("CorruptLogError", "PlaybookError", "StorageError"), "errors"),
    "Cause": "events",
    **dict.fromkeys(("apply", "evolve", "fold"), "evolve"),
    "InMemoryEventStore": "memory",
    "JsonlEventStore": "jsonl",
    "Position": "store",
}

__all__ = [
    "AddNewKeyPoints", "ApplyOperations", "Cause", "Command", "CorruptLogError", "Evaluate", "ImportLegacy",
    "InMemoryEventStore", "JsonlEventStore", "KeyPoint", "PlaybookError", "PlaybookState", "Position", "Prune",
    "ReplaceContent", "SECTION_SLUGS", "StorageError", "apply", "decide", "decide_all", "evolve", "fold",
    "generate_keypoint_name", "resolve_section",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
