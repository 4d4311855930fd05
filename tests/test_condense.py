"""What the reflector is sent is condensed, and what matters still reaches it.

Over the sessions recorded from the real Claude Code CLI (benchmarks/transcripts/), learned by
the real learner against the fake API: every prompt the user typed, every text the assistant
wrote (its conclusions) and every error message (tool errors, and the error lines of an output
cut short) is in the reflector's request, while the request is at most half of what it was
before condensing on the tool-heavy session.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from benchmarks.condense import TARGET_RATIO, measure
from playbook.learner.condense import CONDENSED, PLAIN, Caps
from playbook.learner.bootstrap import transcripts_dir
from playbook.learner.learn import learn_pending
from playbook.learner.requests import request_learning
from playbook.learner.transcript import read_transcript
from tests.fake_anthropic import FakeAnthropic, request_texts
from tests.test_learning import models, project, use  # noqa: F401

RECORDED = Path(__file__).resolve().parent.parent / "benchmarks" / "transcripts"
ERROR_LINE = re.compile(r"^(?:E\s{2,}\S.*|[\w.]*(?:Error|Exception): .+|FAILED .+)$", re.MULTILINE)


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def conversation(path: Path) -> tuple[list[str], list[str], list[str]]:
    """The prompts the user typed, the assistant's texts, and the tool errors' and outputs' error lines."""
    prompts, texts, errors = [], [], []
    for record in records(path):
        content = (record.get("message") or {}).get("content")
        if record.get("type") == "user" and isinstance(content, str) and not record.get("isMeta"):
            prompts.append(content)
        elif record.get("type") == "assistant" and isinstance(content, list):
            texts += [block["text"] for block in content if block.get("type") == "text"]
        elif record.get("type") == "user" and isinstance(content, list):
            for block in content:
                if block.get("type") != "tool_result":
                    continue
                output = block["content"] if isinstance(block["content"], str) else "\n".join(
                    part.get("text", "") for part in block["content"])
                if block.get("is_error"):
                    errors.append(output.strip().splitlines()[-1])
                errors += [line.strip() for line in ERROR_LINE.findall(output)]
    return prompts, texts, errors


def reflector_request(project: Path, tmp_path: Path, monkeypatch, kind: str) -> str:
    transcript = transcripts_dir(project, Path(os.environ["CLAUDE_CONFIG_DIR"])) / f"{kind}.jsonl"
    transcript.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(RECORDED / f"{kind}.jsonl", transcript)
    with FakeAnthropic(models()) as api:
        use(api, monkeypatch)
        request_learning(project, "SessionEnd", str(transcript), "s", "other")
        assert [o.status for o in learn_pending(project)] == ["completed"]
        return request_texts(api.message_bodies()[0])


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["short", "tool_heavy", "long"])
def test_user_messages_conclusions_and_errors_all_reach_the_reflector(project, tmp_path, monkeypatch, kind):
    sent = reflector_request(project, tmp_path, monkeypatch, kind)
    prompts, texts, errors = conversation(RECORDED / f"{kind}.jsonl")
    assert prompts and texts
    for prompt in prompts:
        assert prompt in sent
    for text in texts:
        assert text in sent
    if kind == "tool_heavy":
        assert len(errors) >= 8  # tool errors, pytest's E lines, tracebacks' last lines, FAILED lines
    for error in errors:
        assert error in sent, error


def test_the_tool_heavy_session_is_sent_at_most_half_as_large():
    rows = {row["kind"]: row for row in measure(RECORDED)}
    assert rows["tool_heavy"]["ratio"] <= TARGET_RATIO
    for row in rows.values():  # never larger than before, and the file is far larger than either
        assert row["condensed"]["reflector_bytes"] <= row["plain"]["reflector_bytes"] < row["transcript_bytes"]


def test_an_output_repeated_word_for_word_is_sent_once(tmp_path):
    path = tmp_path / "agent-x.jsonl"
    dump = "\n".join(f"{n}\tline {n} of the file" for n in range(1, 400))
    lines = []
    for index in range(3):
        lines.append({"type": "assistant", "isSidechain": True, "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": f"t{index}", "name": "Read", "input": {"file_path": "/p/a.py"}}]}})
        lines.append({"type": "user", "isSidechain": True, "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"t{index}", "content": dump}]}})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    results = [m.content for m in read_transcript(path).messages if m.role == "user"]
    assert results[0].startswith("[tool result: 1\tline 1 of the file") and "more chars]" in results[0]
    assert results[1] == results[2] == (f"[tool result: {len(dump):,} characters, the same as the earlier output "
                                        "of Read /p/a.py]")
    plain = [m.content for m in read_transcript(path, caps=PLAIN).messages if m.role == "user"]
    assert plain[1] == plain[0]


def test_a_long_output_keeps_head_tail_and_error_lines_within_its_cap():
    from playbook.learner.condense import cut as _cut

    output = "\n".join(["collecting ..."] + [f"test_{n} PASSED" for n in range(300)]
                       + ["E       AssertionError: 3 != 4"] + [f"more {n}" for n in range(300)] + ["1 failed"])
    cut = _cut(output, CONDENSED.tool_result, CONDENSED)
    assert cut.startswith("collecting ...") and cut.endswith("1 failed")
    assert "E       AssertionError: 3 != 4" in cut and "chars cut; error lines kept:]" in cut
    assert len(cut) <= CONDENSED.tool_result + CONDENSED.error_lines + 80
    assert _cut(output, 100, Caps(head_only=True)).endswith(f"… [{len(output) - 100:,} more chars]")
