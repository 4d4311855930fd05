"""The core: domain rules, event types, decide/evolve and the append-only store. No other layer is imported here."""

from .decide import AddNewKeyPoints, ApplyOperations, Command, Evaluate, ImportLegacy, Prune, ReplaceContent, decide
from .decide import decide_all
from .domain import SECTION_SLUGS, KeyPoint, PlaybookState, generate_keypoint_name, resolve_section
from .errors import CorruptLogError, PlaybookError, StorageError
from .events import Cause
from .evolve import apply, evolve, fold
from .memory import InMemoryEventStore
from .jsonl import JsonlEventStore
from .store import Position

__all__ = [
    "AddNewKeyPoints", "ApplyOperations", "Cause", "Command", "CorruptLogError", "Evaluate", "ImportLegacy",
    "InMemoryEventStore", "JsonlEventStore", "KeyPoint", "PlaybookError", "PlaybookState", "Position", "Prune",
    "ReplaceContent", "SECTION_SLUGS", "StorageError", "apply", "decide", "decide_all", "evolve", "fold",
    "generate_keypoint_name", "resolve_section",
]
