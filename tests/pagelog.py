"""A project history for the page's tests, built through the real write path: learning cycles of
several sessions, a hook's request, a manual edit, a revert, an import and a merge of key points."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import eventlog.store
import eventlog.storage
from eventlog.decide import ApplyOperations, CompleteLearning, Evaluate, ImportLegacy, Prune, ReplaceContent, RequestLearning
from eventlog.events import Cause
from projections.repository import PlaybookRepository
from projections.snapshot import playbook_dict

MODEL = "claude-sonnet-4-5"
HOSTILE = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2"></script>'


def hook(session: str, analysis: str | None = None, reasoning: str | None = None) -> Cause:
    return Cause(source="hook:SessionEnd", session=session, model=MODEL, analysis=analysis, reasoning=reasoning)


def build_history(repo: PlaybookRepository, monkeypatch, cycles: int = 24) -> dict[str, str]:
    """Append the history with a fixed clock (a day apart); returns transaction ids by label."""
    clock = iter(datetime(2026, 3, 1, 9, tzinfo=timezone.utc) + timedelta(hours=7 * k) for k in range(10_000))
    monkeypatch.setattr(eventlog.storage, "utc_now", lambda: next(clock).isoformat(timespec="microseconds"))
    tx: dict[str, str] = {}

    def append(label: str, commands: list, cause: Cause) -> None:
        committed = repo.append(commands, cause)
        assert committed is not None
        tx[label] = committed.commit.tx

    append("import", [ImportLegacy(data={"version": "1.0", "key_points": [
        "Run the tests before committing", {"name": "kpt_002", "text": "Prefer small commits", "score": 2}]},
        path="old/playbook.json")], Cause(source="import", note="playbook.json found without a log"))
    append("first", [ApplyOperations([
        {"type": "ADD", "section": "PATTERNS & APPROACHES", "text": "Use pathlib for file paths"},
        {"type": "ADD", "section": "USER PREFERENCES", "text": "Answer in British English"},
        {"type": "ADD", "section": "MISTAKES TO AVOID", "text": "Do not mock the store in tests"}])],
        hook("s-first", analysis="The user asked for pathlib.", reasoning="Three lessons worth keeping."))
    append("request", [RequestLearning(request="req-1", hook="SessionEnd", transcript="/t/s-2.jsonl", session="s-2")],
           Cause(source="hook:SessionEnd", session="s-2"))
    append("second", [
        Evaluate([{"name": "pat-001", "rating": "helpful", "rationale": "followed it"}]),
        ApplyOperations([{"type": "UPDATE", "target_id": "pat-001", "text": "Use pathlib, never os.path"},
                         {"type": "ADD", "section": "PATTERNS & APPROACHES", "text": "Read files with Path.read_text"}]),
        CompleteLearning(request="req-1", transcript="/t/s-2.jsonl", from_line=0, through_line=40, cited=["pat-001"])],
        hook("s-2", analysis="pat-001 helped.", reasoning="Sharpen pat-001; one more pathlib point."))
    append("merge", [ApplyOperations([{"type": "MERGE", "source_ids": ["pat-001", "pat-002"],
                                       "merged_text": "Use pathlib (Path.read_text), never os.path"}])],
           hook("s-3", reasoning="Two pathlib points say the same."))
    append("hostile", [ApplyOperations([{"type": "ADD", "section": "OTHERS", "text": HOSTILE}])],
           hook("s-4", analysis=HOSTILE, reasoning="</script><script>window.__pwned = 3</script>"))
    for k in range(cycles):
        append(f"cycle-{k}", [Evaluate([{"name": "pat-003", "rating": "helpful" if k % 3 else "harmful",
                                         "rationale": f"cycle {k}"},
                                        {"name": "mis-001", "rating": "harmful", "rationale": "not here"}]),
                              ApplyOperations([{"type": "ADD", "section": "PROJECT CONTEXT",
                                                "text": f"Context note number {k}"}] if k % 4 == 0 else []),
                              Prune()],
               hook(f"s-cycle-{k}", analysis=f"Cycle {k} of the routine work.", reasoning="Routine."))
    append("delete", [ApplyOperations([{"type": "DELETE", "target_id": "pref-001", "reason": "the user writes US English"}])],
           hook("s-late", reasoning="The user corrected the spelling."))
    base = repo.current()[0]
    edited = playbook_dict(base)
    edited["sections"]["OTHERS"].append({"name": "oth-099", "text": "Edited by hand", "helpful": 0, "harmful": 0})
    append("manual", [ReplaceContent(target=edited, origin="manual_edit", base=base)],
           Cause(source="manual_edit", note="playbook.json edited by hand"))
    return tx
