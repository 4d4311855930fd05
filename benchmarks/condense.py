"""Tokens per learning cycle: what the reflector and the curator are sent, against the transcript's size.

    python -m benchmarks.condense

Over three sessions recorded from the real Claude Code CLI (benchmarks/transcripts/: short,
tool-heavy, long; see benchmarks/record_transcripts.py), each read twice: as before condensing
(`playbook.learner.condense.PLAIN`: each tool output's first 1,000 characters) and condensed
(`CONDENSED`). The prompts are the learner's own (`playbook.learner.prompting`), over a playbook of 40
realistic key points; the curator's is built from a reflector reply of the usual size (its
prompt holds the reflection and the playbook, not the transcript). Tokens are estimated as
UTF-8 bytes / 4, as the injection budget estimates them.

Target: the condensed reflector prompt of the tool-heavy session is at most half the plain one.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from eventlog.decide import ApplyOperations, decide
from eventlog.domain import PlaybookState
from eventlog.evolve import fold
from playbook.learner.condense import CONDENSED, PLAIN, Caps
from playbook.learner.prompting import curator_prompt, reflector_prompt
from playbook.learner.transcript import cited_ids, read_transcript
from projections.injection import estimate_tokens

TRANSCRIPTS = Path(__file__).resolve().parent / "transcripts"
KINDS = ("short", "tool_heavy", "long")
TARGET_RATIO = 0.5
"""The condensed reflector prompt of the tool-heavy session, as a share of the plain one: at most this."""

REFLECTION = {
    "analysis": "The assistant read the failing test and the module it exercises, reproduced the error and found "
                "that the fixture file was never copied into the test's directory. pat-001 (run the tests first) "
                "helped; the repeated reads of the same files cost time without adding anything.",
    "bullet_tags": [{"name": "pat-001", "tag": "helpful", "rationale": "Running the tests first showed the error"},
                    {"name": "mis-002", "tag": "neutral", "rationale": "Not relevant to this session"},
                    {"name": "ctx-003", "tag": "harmful", "rationale": "Pointed at the wrong directory"}],
}
TOPICS = ["the tests", "the transcript reader", "msgspec structs", "the JSONL log", "git hooks", "the CLI's errors",
          "pathlib", "type hints", "the fake API", "the hook's latency"]
SECTIONS = ["PATTERNS & APPROACHES", "MISTAKES TO AVOID", "USER PREFERENCES", "PROJECT CONTEXT", "OTHERS"]


def playbook(size: int = 40) -> PlaybookState:
    """A playbook of `size` key points of the usual length (about 30 tokens each)."""
    operations = [{"type": "ADD", "section": SECTIONS[i % len(SECTIONS)],
                   "text": f"When working on {TOPICS[i % len(TOPICS)]}, check the {i}th case first: it is where "
                           f"regressions showed up before, and the fix is usually one line."}
                  for i in range(size)]
    state = PlaybookState()
    for start in range(0, size, 10):  # the curator's limit: 10 operations a reply
        state = fold(decide(state, ApplyOperations(operations[start:start + 10])), state)
    return state


def prompts(path: Path, caps: Caps, state: PlaybookState) -> dict[str, int]:
    transcript = read_transcript(path, caps=caps)
    reflector = reflector_prompt(transcript.messages, state, cited_ids(transcript.messages)).encode()
    curator = curator_prompt(REFLECTION, state).encode()
    return {"reflector_bytes": len(reflector), "reflector_tokens": estimate_tokens(reflector.decode()),
            "curator_bytes": len(curator), "curator_tokens": estimate_tokens(curator.decode())}


def measure(directory: Path = TRANSCRIPTS) -> list[dict[str, Any]]:
    """Per recorded transcript: its size, and both prompts' bytes and estimated tokens, plain and condensed."""
    state = playbook()
    rows = []
    for kind in KINDS:
        path = directory / f"{kind}.jsonl"
        plain, condensed = prompts(path, PLAIN, state), prompts(path, CONDENSED, state)
        rows.append({"kind": kind, "transcript_bytes": path.stat().st_size,
                     "plain": plain, "condensed": condensed,
                     "ratio": condensed["reflector_bytes"] / plain["reflector_bytes"],
                     "cycle_tokens": condensed["reflector_tokens"] + condensed["curator_tokens"]})
    return rows


def met(rows: list[dict[str, Any]]) -> bool:
    return next(row for row in rows if row["kind"] == "tool_heavy")["ratio"] <= TARGET_RATIO


def main() -> int:
    rows = measure()
    print(f"{'transcript':<11} {'file bytes':>10}  {'reflector plain':>22}  {'reflector condensed':>22}  "
          f"{'ratio':>5}  {'curator':>16}")
    for row in rows:
        plain, condensed = row["plain"], row["condensed"]
        print(f"{row['kind']:<11} {row['transcript_bytes']:>10,}  "
              f"{plain['reflector_bytes']:>9,} B {plain['reflector_tokens']:>7,} tk  "
              f"{condensed['reflector_bytes']:>9,} B {condensed['reflector_tokens']:>7,} tk  "
              f"{row['ratio']:>5.2f}  {condensed['curator_bytes']:>7,} B {condensed['curator_tokens']:>5,} tk")
    print(f"target: tool_heavy reflector condensed <= {TARGET_RATIO:g} x plain: {'met' if met(rows) else 'NOT met'}")
    print(json.dumps(rows), file=sys.stderr)
    return 0 if met(rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
