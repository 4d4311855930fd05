"""Helpers shared by the spec acceptance tests (test_sections, test_scoring, test_curator, test_invariants).

Fixtures (`project`, `diag_mode`) live in conftest.py next to this file.
"""

import copy
import json

from playbook import load_template

CANON = [
    "PATTERNS & APPROACHES",
    "MISTAKES TO AVOID",
    "USER PREFERENCES",
    "PROJECT CONTEXT",
    "OTHERS",
]
PAT, MIS, PREF, CTX, OTH = CANON
ENTRY_KEYS = {"name", "text", "helpful", "harmful"}


# --------------------------------------------------------------------------- playbook builders


def kp(name, text, helpful=0, harmful=0):
    return {"name": name, "text": text, "helpful": helpful, "harmful": harmful}


def make_pb(sections=None, version="1.0", last_updated=None):
    secs = {name: [] for name in CANON}
    for name, entries in (sections or {}).items():
        secs[name] = copy.deepcopy(entries)
    return {"version": version, "last_updated": last_updated, "sections": secs}


def empty_sections():
    return {name: [] for name in CANON}


def sections_with(**by_section):
    """sections_with(PAT=[...]) -> all five sections, the given ones filled."""
    key = {"PAT": PAT, "MIS": MIS, "PREF": PREF, "CTX": CTX, "OTH": OTH}
    secs = {name: [] for name in CANON}
    for k, v in by_section.items():
        secs[key[k]] = v
    return secs


def all_entries(pb):
    return [e for entries in pb["sections"].values() for e in entries]


# --------------------------------------------------------------------------- files in the project


def claude_dir(project):
    return project / ".claude"


def write_legacy(project, data):
    """Write a legacy snapshot file (and no log) that load_playbook() must read."""
    d = claude_dir(project)
    d.mkdir(parents=True, exist_ok=True)
    assert not (d / "playbook.events.jsonl").exists()
    (d / "playbook.json").write_text(json.dumps(data), encoding="utf-8")


def read_snapshot(project):
    return json.loads((claude_dir(project) / "playbook.json").read_text(encoding="utf-8"))


def diag_files(project, name):
    d = claude_dir(project) / "diagnostic"
    if not d.exists():
        return []
    return sorted(d.glob(f"*_{name}.txt"))


def diag_text(project, name):
    return "\n".join(p.read_text(encoding="utf-8") for p in diag_files(project, name))


# --------------------------------------------------------------------------- rendering


def rendered_candidates(block):
    """The playbook.txt template with the key points block inserted at {key_points}."""
    template = load_template("playbook.txt")
    candidates = {template.replace("{key_points}", block)}
    try:
        candidates.add(template.format(key_points=block))
    except (KeyError, IndexError, ValueError):
        pass
    return candidates
