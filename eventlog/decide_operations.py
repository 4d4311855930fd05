"""The curator's and reflector's requests decided: operations (ADD, UPDATE, DELETE, MERGE), new key points,
ratings, and the prune rule."""

from __future__ import annotations

from typing import Any

import msgspec

from . import similarity
from .commands import Absorb, AddNewKeyPoints, ApplyOperations, Evaluate, Prune, SkipReason
from .decision import Decision
from .domain import MAX_TEXT_LENGTH, OTHERS, PRUNE_RULE, KeyPoint, PlaybookState, next_name, resolve_section_detail
from .domain import should_prune
from .events import KeyPointAbsorbed, KeyPointAdded, KeyPointDeleted, KeyPointEvaluated, KeyPointPruned
from .events import KeyPointsMerged, KeyPointUpdated
from .legacy import to_jsonable
from .values import Origin, SkipKind, SkipReasonName

MAX_OPERATIONS = 10
RATINGS = ("helpful", "harmful", "neutral")


def _text(value: Any) -> tuple[str | None, SkipReasonName | None, int | None]:
    """(text cut to MAX_TEXT_LENGTH, reason it is unusable, its length as given when it was cut)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None, SkipReason.EMPTY_TEXT, None
    if not isinstance(value, str):
        return None, SkipReason.INVALID_TEXT, None
    if len(value) > MAX_TEXT_LENGTH:
        return value[:MAX_TEXT_LENGTH], None, len(value)
    return value, None, None


def _add(d: Decision, kind: SkipKind, index: int, item: Any, text: Any, section_name: Any, origin: Origin,
         absorb: Absorb | None = None) -> None:
    value, problem, cut_from = _text(text)
    if value is None:
        d.skip(kind, problem or SkipReason.EMPTY_TEXT, "ADD without text", index, item)
        return
    if value in d.texts():
        d.skip(kind, SkipReason.DUPLICATE_TEXT, f"text already in the playbook: {value[:80]}", index, item)
        return
    if absorb is not None and (alike := most_alike(d.state, value, absorb)) is not None:
        kp, score = alike
        d.emit(KeyPointAbsorbed(name=kp.name, text=kp.text, absorbed=value, similarity=round(score, 3),
                                method=absorb.method, origin=origin, cut_from=cut_from))
        return
    section, unknown = resolve_section_detail(section_name)
    d.emit(
        KeyPointAdded(
            section=section, name=next_name(d.state, section), text=value, helpful=0, harmful=0, origin=origin,
            requested_section=section_name if unknown else None, cut_from=cut_from,
        )
    )


def most_alike(state: PlaybookState, text: str, absorb: Absorb) -> tuple[KeyPoint, float] | None:
    """The key point most like `text` at `absorb.threshold` or above (the first of equals), and how alike."""
    best: tuple[KeyPoint, float] | None = None
    for _section, kp in state.entries():
        if kp.name in absorb.spare:
            continue
        score = similarity.similarity(kp.text, text, absorb.method)
        if score >= absorb.threshold and (best is None or score > best[1]):
            best = kp, score
    return best


def aimed_at(op: Any) -> list[Any]:
    """The names an operation changes, as given: UPDATE's and DELETE's `target_id`, MERGE's `source_ids`."""
    if not isinstance(op, dict):
        return []
    if op.get("type") in ("UPDATE", "DELETE"):
        return [op.get("target_id")]
    sources = op.get("source_ids")
    return list(sources) if op.get("type") == "MERGE" and isinstance(sources, list) else []


def sparing(absorb: Absorb | None, operations: Any) -> Absorb | None:
    """`absorb`, sparing also every key point that `operations` aim at."""
    if absorb is None or not isinstance(operations, list):
        return absorb
    aimed = {name for op in operations for name in aimed_at(op) if isinstance(name, str)}
    return msgspec.structs.replace(absorb, spare=absorb.spare | aimed) if aimed - absorb.spare else absorb


def _target(d: Decision, kind: SkipKind, index: int, op: dict[str, Any], verb: str) -> str | None:
    target = op.get("target_id")
    if not isinstance(target, str) or not target.strip():
        d.skip(kind, SkipReason.EMPTY_TARGET_ID, f"{verb} without target_id", index, op)
        return None
    if d.state.get(target) is None:
        d.skip(kind, SkipReason.UNKNOWN_ID, f"{verb} of unknown id {target}", index, op)
        return None
    return target


def operation(d: Decision, index: int, op: Any, origin: Origin = "operation", absorb: Absorb | None = None) -> None:
    kind: SkipKind = "operation"
    if not isinstance(op, dict):
        d.skip(kind, SkipReason.NOT_AN_OBJECT, f"operation of type {type(op).__name__}", index, op)
        return
    op_type = op.get("type", "")
    if op_type == "ADD":
        _add(d, kind, index, op, op.get("text"), op.get("section"), origin, absorb)
    elif op_type == "UPDATE":
        text, problem, cut_from = _text(op.get("text"))
        target = op.get("target_id")
        if not isinstance(target, str) or not target.strip():
            d.skip(kind, SkipReason.EMPTY_TARGET_ID, "UPDATE without target_id", index, op)
        elif text is None:
            d.skip(kind, problem or SkipReason.EMPTY_TEXT, f"UPDATE of {target} without text", index, op)
        elif (kp := d.state.get(target)) is None:
            d.skip(kind, SkipReason.UNKNOWN_ID, f"UPDATE of unknown id {target}", index, op)
        elif kp.text == text:
            d.skip(kind, SkipReason.UNCHANGED_TEXT, f"UPDATE of {target} with its current text", index, op)
        else:
            d.emit(KeyPointUpdated(name=target, text=text, previous_text=kp.text, cut_from=cut_from))
    elif op_type == "DELETE":
        if (target := _target(d, kind, index, op, "DELETE")) is not None:
            kp = d.state.get(target)
            assert kp is not None
            reason = op.get("reason")
            d.emit(
                KeyPointDeleted(
                    section=d.state.where[target], name=target, text=kp.text,
                    reason=reason if isinstance(reason, str) else ("" if reason is None else str(to_jsonable(reason))),
                )
            )
    elif op_type == "MERGE":
        _merge(d, index, op)
    else:
        shown = op_type if isinstance(op_type, str) else repr(to_jsonable(op_type))
        d.skip(kind, SkipReason.UNKNOWN_TYPE, f"unknown operation type {shown!r}", index, op)


def _merge(d: Decision, index: int, op: dict[str, Any]) -> None:
    kind: SkipKind = "operation"
    source_ids = op.get("source_ids")
    text, problem, cut_from = _text(op.get("merged_text"))
    if not isinstance(source_ids, list) or len(source_ids) < 2:
        d.skip(kind, SkipReason.TOO_FEW_SOURCES, "MERGE needs at least two source_ids", index, op)
        return
    if text is None:
        reason = SkipReason.EMPTY_MERGED_TEXT if problem == SkipReason.EMPTY_TEXT else problem
        d.skip(kind, reason or SkipReason.EMPTY_MERGED_TEXT, "MERGE without merged_text", index, op)
        return
    valid: list[str] = []
    missing: list[str] = []
    for source in source_ids:
        if isinstance(source, str) and d.state.get(source) is not None:
            if source not in valid:
                valid.append(source)
        else:
            missing.append(source if isinstance(source, str) else repr(to_jsonable(source)))
    if len(valid) < 2:
        d.skip(
            kind, SkipReason.TOO_FEW_SOURCES,
            f"MERGE has {len(valid)} existing source id(s); unknown: {', '.join(missing) or 'none'}", index, op,
        )
        return
    section, _unknown = resolve_section_detail(op.get("section"))
    if section == OTHERS and not _names_others(op.get("section")):
        section = d.state.where[valid[0]]
    sources = [d.state.get(name) for name in valid]
    d.emit(
        KeyPointsMerged(
            section=section, name=next_name(d.state, section), text=text, sources=valid,
            helpful=sum(kp.helpful for kp in sources if kp), harmful=sum(kp.harmful for kp in sources if kp),
            missing_sources=missing, cut_from=cut_from,
        )
    )


def _names_others(section_name: Any) -> bool:
    return isinstance(section_name, str) and section_name.strip().upper() == OTHERS


def apply_operations(d: Decision, command: ApplyOperations) -> None:
    operations = command.operations
    if not isinstance(operations, list):
        d.skip("operation", SkipReason.NOT_A_LIST, "operations is not a list", None, operations)
        return
    if len(operations) > MAX_OPERATIONS:
        d.skip(
            "operation", SkipReason.TRUNCATED,
            f"{len(operations)} operations given, truncated to {MAX_OPERATIONS}", MAX_OPERATIONS,
            operations[MAX_OPERATIONS:],
        )
    absorb = sparing(command.absorb, operations[:MAX_OPERATIONS])
    for index, op in enumerate(operations[:MAX_OPERATIONS]):
        operation(d, index, op, command.origin, absorb)


def add_new_key_points(d: Decision, command: AddNewKeyPoints) -> None:
    items = command.new_key_points
    if not isinstance(items, list):
        if items is not None:
            d.skip("new_key_point", SkipReason.NOT_A_LIST, "new_key_points is not a list", None, items)
        return
    for index, item in enumerate(items):
        if isinstance(item, str):
            _add(d, "new_key_point", index, item, item, OTHERS, "new_key_point")
        elif isinstance(item, dict):
            _add(d, "new_key_point", index, item, item.get("text"), item.get("section"), "new_key_point")
        else:
            d.skip("new_key_point", SkipReason.NOT_AN_OBJECT, f"new key point of type {type(item).__name__}", index, item)


def evaluate(d: Decision, command: Evaluate) -> None:
    evaluations = command.evaluations
    if not isinstance(evaluations, list):
        if evaluations is not None:
            d.skip("evaluation", SkipReason.NOT_A_LIST, "evaluations is not a list", None, evaluations)
        return
    for index, item in enumerate(evaluations):
        if not isinstance(item, dict):
            d.skip("evaluation", SkipReason.NOT_AN_OBJECT, f"evaluation of type {type(item).__name__}", index, item)
            continue
        name, rating = item.get("name"), item.get("rating")
        kp = d.state.get(name) if isinstance(name, str) else None
        if kp is None or not isinstance(name, str):
            d.skip("evaluation", SkipReason.UNKNOWN_ID, f"evaluation of unknown id {name!r}", index, item)
        elif rating not in RATINGS:
            d.skip("evaluation", SkipReason.UNKNOWN_RATING, f"unknown rating {rating!r} for {name}", index, item)
        else:
            rationale = item.get("rationale")
            d.emit(
                KeyPointEvaluated(
                    name=name, rating=rating,
                    helpful=kp.helpful + (rating == "helpful"), harmful=kp.harmful + (rating == "harmful"),
                    rationale=rationale if isinstance(rationale, str) and rationale else None,
                )
            )


def prune(d: Decision, command: Prune) -> None:
    for section, kp in d.state.entries():
        if should_prune(kp.helpful, kp.harmful):
            d.emit(
                KeyPointPruned(
                    section=section, name=kp.name, text=kp.text, helpful=kp.helpful, harmful=kp.harmful,
                    rule=PRUNE_RULE,
                )
            )
