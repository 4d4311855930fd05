"""Writes each eval case's playbook fixture: `project/.claude/` from the case's `lessons.json`.

    python plugin/evals/build.py            # every case under plugin/evals/
    python plugin/evals/build.py CASE_DIR   # one case

The playbook is written the way the product writes it: through `PlaybookRepository`, each lesson
added by a learning cycle (source `hook:SessionEnd`), rated over later cycles, and the prune rule
applied. Only the log, `playbook.json`, the SessionStart projection, the recall index and the
project's settings (learning off: an eval session is never learned from) are kept.

A case's scaffold copies `project/` into the run's workspace and sets `playbook.json` and the
settings file to FIXED_MTIME, so the projections' headers (log size, playbook.json's mtime, the
settings' stamp) name the workspace's files as they are: the plugin's SessionStart hook injects the
projection as is, and its UserPromptSubmit hook recalls from the index, with nothing but a
`python3` on PATH. The projections are written here as an eval run sees its machine: no user-level
playbook and no settings of the user's.

lessons.json:

    {"lessons": [{"section": "PROJECT CONTEXT", "text": "...", "helpful": 3, "harmful": 0}, ...],
     "pruned": [{"section": "...", "text": "...", "helpful": 0, "harmful": 3}],
     "filler": 40,            # that many unrelated lessons before the case's own (optional)
     "budget": 400}           # the injection budget in tokens (optional): leaves lessons to recall
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

FIXED_MTIME = 1767225600  # 2026-01-01T00:00:00Z; the scaffolds' `TZ=UTC touch -t 202601010000.00`
EVALS = Path(__file__).resolve().parent
KEPT = ("playbook.events.jsonl", "playbook.json", "playbook.hook.json", "playbook.recall.json",
        "playbook.settings.json")
LEARNING_OFF = {"playbook_update_on_exit": False, "playbook_update_on_clear": False,
                "playbook_update_on_subagent_stop": False, "playbook_update_on_precompact": False}
FILLER = [
    "The Helm chart's values for staging live in deploy/staging.yaml",
    "Grafana dashboards are exported to ops/dashboards as JSON, one file per board",
    "The iOS app pins Alamofire; bump it only with the mobile team",
    "Feature flags are read from LaunchDarkly at start, cached for 60 seconds",
    "The nightly ETL job writes to the warehouse schema `raw_events`",
    "Storybook stories sit beside their component as *.stories.tsx",
    "The Terraform state bucket is versioned; never delete old state files",
    "The Android build needs JDK 17; Gradle fails obscurely with 21",
    "Sentry releases are tagged with the git short hash",
    "The CSV importer accepts semicolon separators for the German market",
    "Design tokens come from the Figma export in tokens/figma.json",
    "The search index is rebuilt every Sunday at 02:00 UTC",
]


@contextlib.contextmanager
def _eval_machine() -> Iterator[Path]:
    """The process environment of an eval run, for the projections: an empty Claude Code directory (yielded),
    and none of the variables that shape them; the environment as it was afterwards."""
    config = Path(tempfile.mkdtemp(prefix="playbook-eval-config-"))
    saved = dict(os.environ)
    os.environ["CLAUDE_CONFIG_DIR"] = str(config)
    for name in ("PLAYBOOK_USER_DIR", "PLAYBOOK_INJECTION_BUDGET", "PLAYBOOK_RECALL", "PLAYBOOK_RECALL_MAX_CHARS"):
        os.environ.pop(name, None)
    try:
        yield config
    finally:
        os.environ.clear()
        os.environ.update(saved)
        shutil.rmtree(config, ignore_errors=True)


def build(case: Path) -> Path:
    """Write `case`/project/.claude from `case`/lessons.json; returns that directory."""
    spec = json.loads((case / "lessons.json").read_text(encoding="utf-8"))
    target = case / "project" / ".claude"
    work = Path(tempfile.mkdtemp(prefix="playbook-eval-fixture-")) / ".claude"
    try:
        with _eval_machine():
            _write(spec, case, work)
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True)
        for name in KEPT:
            shutil.copy2(work / name, target / name)
    finally:
        shutil.rmtree(work.parent, ignore_errors=True)
    return target


def _write(spec: dict[str, Any], case: Path, work: Path) -> None:
    """The playbook of `spec` in `work`, as learning writes it, and its projections at FIXED_MTIME."""
    from eventlog.commands import ApplyOperations, Evaluate, Prune
    from eventlog.records import Cause
    from projections.repository import PlaybookRepository

    work.mkdir()
    settings = dict(LEARNING_OFF)
    if "budget" in spec:
        settings["playbook_injection_budget"] = spec["budget"]
    (work / "playbook.settings.json").write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")
    repo = PlaybookRepository(work)
    lessons = [{"section": "OTHERS", "text": text, "helpful": 1, "harmful": 0}
               for text in FILLER[:spec.get("filler", 0)]]
    lessons += spec.get("lessons", [])
    pruned = spec.get("pruned", [])
    for number, lesson in enumerate([*lessons, *pruned], start=1):
        session = f"eval-fixture-{case.name}-{number:03d}"
        committed = repo.append([ApplyOperations([{"type": "ADD", "section": lesson["section"],
                                                   "text": lesson["text"]}])],
                                Cause(source="hook:SessionEnd", session=session, model="claude-sonnet-4-5",
                                      reasoning="A lesson of this session worth keeping."))
        assert committed is not None
        state = repo.state()
        name = next(kp.name for _, kp in state.entries() if kp.text == lesson["text"])
        ratings = ["helpful"] * lesson.get("helpful", 0) + ["harmful"] * lesson.get("harmful", 0)
        for at, rating in enumerate(ratings, start=1):
            repo.append([Evaluate([{"name": name, "rating": rating,
                                    "rationale": f"the session {'followed' if rating == 'helpful' else 'was misled by'} it"}]),
                         Prune()],
                        Cause(source="hook:SessionEnd", session=f"{session}-{at}", model="claude-sonnet-4-5",
                              analysis=f"{name} was {rating} in this session."))
    for lesson in pruned:
        assert lesson["text"] not in repo.state().texts(), lesson
    _project_at_fixed_mtime(repo, work)


def _project_at_fixed_mtime(repo: object, claude_dir: Path) -> None:
    """The SessionStart projection and the recall index again, for playbook.json and the settings file at
    FIXED_MTIME (what a scaffold sets them to)."""
    from projections.repository import PlaybookRepository

    assert isinstance(repo, PlaybookRepository)
    fixed = FIXED_MTIME * 1_000_000_000
    for name in ("playbook.json", "playbook.settings.json"):
        os.utime(claude_dir / name, ns=(fixed, fixed))
    state, position = repo.current()
    repo._write_snapshot(state, position, snapshot=False)


def cases(root: Path = EVALS) -> list[Path]:
    return sorted(path.parent for path in root.rglob("lessons.json") if "results" not in path.parts)


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(EVALS.parent))
    for case in [Path(a).resolve() for a in argv] or cases():
        print(build(case).relative_to(EVALS.parent))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
