"""Reading model replies: JSON found in prose or code fences, shaped into what callers expect.

Pure functions, so the parsing rules are tested without a model (REQ-CUR-001, REQ-CUR-016).
"""

from __future__ import annotations

import json
import re
from typing import Any

_FENCED_JSON = re.compile(r"```json\s*(.*?)```", re.DOTALL)
_FENCED = re.compile(r"```\s*(.*?)```", re.DOTALL)
_MAX_BRACE_STARTS = 64


def _loads(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _balanced(text: str, start: int, budget: list[int] | None = None) -> str | None:
    """The `{...}` starting at `start`, matching braces outside JSON strings.

    `budget` ([characters left]) is shared by the scans of one reply and spent here; None once it is gone.
    """
    depth = 0
    in_string = escaped = False
    end = len(text) if budget is None else min(len(text), start + max(budget[0], 0))
    if budget is not None:
        budget[0] -= end - start
    for index in range(start, end):
        char = text[index]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return text[start : index + 1]
    return None


def extract_json(text: Any) -> dict[str, Any] | None:
    """The first JSON object found by: ```json fence, bare ``` fence, balanced braces, raw parse."""
    if not isinstance(text, str):
        return None
    for pattern in (_FENCED_JSON, _FENCED):
        match = pattern.search(text)
        if match and (value := _loads(match.group(1).strip())) is not None:
            return value
    start = text.find("{")
    # Each start is scanned to its closing brace: `{"a":{"a":...` 100k deep cost 64 scans of the
    # whole reply (seconds of a learner's time for 600 KB). A reply gets a few passes' worth of
    # scanning in all, plenty for prose around a JSON object.
    budget = [4 * len(text) + 65536]
    for _ in range(_MAX_BRACE_STARTS):
        if start < 0:
            break
        candidate = _balanced(text, start, budget)
        if candidate is None:
            break
        if (value := _loads(candidate)) is not None:
            return value
        start = text.find("{", start + 1)
    return _loads(text.strip())


def parse_extraction_reply(text: Any) -> dict[str, Any]:
    """What `extract_keypoints` returns for a reply: `operations` only when the reply holds a list there."""
    data = extract_json(text) or {}
    result: dict[str, Any] = {
        "new_key_points": data["new_key_points"] if isinstance(data.get("new_key_points"), list) else [],
        "evaluations": data["evaluations"] if isinstance(data.get("evaluations"), list) else [],
    }
    if isinstance(data.get("operations"), list):
        result["operations"] = data["operations"]
    return result


def parse_curator_reply(text: Any) -> dict[str, Any]:
    """`{"reasoning": str, "operations": list}`; both empty when the reply holds no JSON object."""
    return curator_fields(extract_json(text))


def curator_fields(data: dict[str, Any] | None) -> dict[str, Any]:
    """`parse_curator_reply` of a reply already decoded (`extract_json`)."""
    if data is None:
        return {"reasoning": "", "operations": []}
    reasoning = data.get("reasoning", "")
    operations = data.get("operations", [])
    return {
        "reasoning": reasoning if isinstance(reasoning, str) else json.dumps(reasoning),
        "operations": operations if isinstance(operations, list) else [],
    }


def build_playbook_dict(playbook: dict[str, Any]) -> dict[str, str]:
    """Flat `{name: text}` over all sections, for the extraction prompt (REQ-SECT-009)."""
    flat: dict[str, str] = {}
    sections = playbook.get("sections") if isinstance(playbook, dict) else None
    for entries in (sections or {}).values():
        for kp in entries if isinstance(entries, list) else []:
            if isinstance(kp, dict) and "name" in kp and "text" in kp:
                flat[kp["name"]] = kp["text"]
    return flat
