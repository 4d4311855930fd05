"""A fixed sequence of commands replayed with a fixed clock and fixed ids gives the same bytes.

The sequence goes through every writer the product has: the spec's facade (a legacy
playbook.json taken in, updates, saves, a hand edit, an unreadable snapshot), the CLI
(revert, rebuild, read commands), a learning cycle against a scripted model, and a torn
tail repaired by the next append. The log, playbook.json, the prompts the models were sent
and the commands' output must equal the files under tests/golden/replay/ byte for byte:
a change in how events are decided, encoded, chained, folded or rendered shows here.
Set UPDATE_GOLDEN=1 to rewrite them after an intended change.
"""

from __future__ import annotations

import importlib
import itertools
import json
import os
import shutil
import sys
import types
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from playbook.api import apply_structured_operations, load_playbook, prune_harmful, save_playbook, update_playbook_data
from playbook.commands.cli import main
from playbook.learner.bootstrap import transcripts_dir
from playbook.learner.learn import learn_pending
from playbook.learner.requests import request_learning
from tests.fake_anthropic import FakeAnthropic, reply_text, request_texts

GOLDEN = Path(__file__).parent / "golden" / "replay"
TRANSCRIPT = Path(__file__).parent / "fixtures" / "transcripts" / "tool_use_resumed.jsonl"
START = datetime(2026, 11, 22, 8, 0, 0, tzinfo=timezone.utc)
PACKAGES = ("eventlog", "projections", "playbook")

REFLECTION = {"analysis": "pat-001 was followed; the tests ran before the commit.",
              "bullet_tags": [{"name": "pat-001", "tag": "helpful", "rationale": "followed, and it worked"},
                              {"name": "kpt_002", "tag": "harmful", "rationale": "not what the user wanted"},
                              {"name": "nope-9", "tag": "helpful"}]}
CURATION = {"reasoning": "One new preference, one sharper wording.",
            "operations": [{"type": "ADD", "section": "USER PREFERENCES", "text": "prefer pathlib"},
                           {"type": "UPDATE", "target_id": "pat-001", "text": "run the whole suite before a commit"},
                           {"type": "DELETE", "target_id": "nope-7", "reason": "gone"}]}


class Clock:
    """Every call is one second after the one before."""

    def __init__(self) -> None:
        self.now = START

    def tick(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


def _fixed_datetime(clock: Clock) -> type:
    class FixedDatetime(datetime):
        @classmethod
        def now(cls, tz=None):  # type: ignore[override]
            moment = clock.tick()
            return moment if tz is not None else moment.replace(tzinfo=None)

    return FixedDatetime


def _fix_time_and_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every module of the project that reads the clock or draws a uuid gets a scripted one."""
    # Every module that reads the clock, imported now: one imported later would read the real clock, and how
    # many ticks a replay takes would hang on which tests ran in this process before it.
    for module in ("playbook.learner.models", "projections.usage", "projections.outside", "projections.anchors",
                   "projections.pagedata", "eventlog.jsonl", "playbook.wiring.diagnostics", "playbook.wiring.notice",
                   "playbook.wiring.doctor_project", "playbook.learner.retries", "playbook.learner.review",
                   "playbook.learner.learn", "playbook.commands.when"):
        importlib.import_module(module)

    clock = Clock()
    fixed = _fixed_datetime(clock)
    counter = iter(range(1, 1 << 30))
    ids = types.SimpleNamespace(uuid4=lambda: uuid.UUID(int=next(counter) * 0x1000_0000_0000_0000_0000_0001),
                                UUID=uuid.UUID)
    for name, module in list(sys.modules.items()):
        if module is None or name.split(".")[0] not in PACKAGES:
            continue
        if getattr(module, "datetime", None) is datetime:
            monkeypatch.setattr(module, "datetime", fixed)
        if getattr(module, "uuid", None) is uuid:
            monkeypatch.setattr(module, "uuid", ids)
    from playbook.learner import models

    # each model call takes 125 ms on this clock, whatever the machine does
    monkeypatch.setattr(models, "_clock", itertools.count(0, 0.125).__next__)


def _models(body: dict):
    text = request_texts(body)
    if "You are the reflector" in text:
        return reply_text(json.dumps(REFLECTION))
    if "You are the curator" in text:
        return reply_text(json.dumps(CURATION))
    return reply_text("Done.")


def _replay(project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> dict[str, bytes]:
    out: list[str] = []

    def cli(*argv: str) -> None:
        capsys.readouterr()
        code = main(["--project", ".", *argv])
        captured = capsys.readouterr()
        out.append(f"$ playbook {' '.join(argv)}  -> {code}\n{captured.out}{captured.err}")

    claude = Path(".claude")
    claude.mkdir()
    # A legacy playbook.json with no log: taken in on first use.
    (claude / "playbook.json").write_text(json.dumps({
        "version": "1.0", "last_updated": "2026-01-15T10:00:00",
        "key_points": ["Run the tests before committing", {"name": "kpt_002", "text": "Prefer small commits", "score": 2},
                       {"name": "kpt_003", "text": "Never force-push", "score": -3}]}))
    playbook = load_playbook()
    playbook = update_playbook_data(playbook, {"new_key_points": ["use type hints",
                                                                  {"text": "write docstrings", "section": "PATTERNS & APPROACHES"}],
                                               "evaluations": [{"name": "kpt_003", "rating": "harmful"}]})
    save_playbook(playbook)
    playbook = apply_structured_operations(load_playbook(), [
        {"type": "ADD", "section": "MISTAKES TO AVOID", "text": "do not mock the store"},
        {"type": "MERGE", "source_ids": ["kpt_001", "oth-001"], "merged_text": "Run the tests; use type hints"},
        {"type": "UPDATE", "target_id": "kpt_002", "text": "Prefer small, focused commits"},
        {"type": "DELETE", "target_id": "missing-1"}])
    save_playbook(prune_harmful(playbook))
    # A hand edit of playbook.json becomes events on the next read.
    edited = json.loads((claude / "playbook.json").read_text())
    edited["sections"]["OTHERS"][0]["helpful"] = 4
    edited["version"] = "1.1"
    (claude / "playbook.json").write_text(json.dumps(edited, indent=2))
    load_playbook()
    # A learning cycle against a scripted model.
    # the log names it as given; it is this project's session in Claude Code's directory, reached through a link
    sessions = transcripts_dir(Path("."), Path(os.environ["CLAUDE_CONFIG_DIR"]))
    sessions.mkdir(parents=True)
    shutil.copy(TRANSCRIPT, sessions / "session.jsonl")
    os.symlink(sessions / "session.jsonl", "session.jsonl")
    with FakeAnthropic(_models) as api:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-golden")
        request_learning(Path("."), "SessionEnd", "session.jsonl", "session-1", "other")
        outcomes = learn_pending(Path("."))
        prompts = [request_texts(body) for body in api.message_bodies()]
    out.append(f"learn: {[(o.status, o.detail) for o in outcomes]}\n")
    # A torn tail (a writer that died mid-write) is cut by the next writer.
    with open(claude / "playbook.events.jsonl", "ab") as log:
        log.write(b'{"type":"KeyPointAdded","seq":999,"tx":"unfinished')
    playbook = load_playbook()
    # An unreadable playbook.json is set aside and rebuilt.
    (claude / "playbook.json").write_text("{not json")
    save_playbook(update_playbook_data(load_playbook(), {"new_key_points": ["keep the log append-only"]}))
    learned = [line for line in (claude / "playbook.events.jsonl").read_text().splitlines()
               if '"type":"TransactionCommitted"' in line and '"source":"hook:SessionEnd"' in line]
    cli("revert", json.loads(learned[-1])["tx"])
    cli("revert", "session-1", "--dry-run")
    cli("log", "-n", "4")
    cli("log", "--type", "merged,skipped,repaired,set-aside,learning", "-v")
    cli("history", "oth-002")
    cli("history", "pat-001")
    cli("diff", "3", "12")
    cli("stats")
    cli("verify")
    cli("rebuild")
    cli("show", "--json")
    kept = sorted(p.name for p in claude.iterdir() if ".legacy-" in p.name or ".unreadable-" in p.name
                  or ".torn-" in p.name)
    return {
        "playbook.events.jsonl": (claude / "playbook.events.jsonl").read_bytes(),
        "playbook.json": (claude / "playbook.json").read_bytes(),
        "prompts.txt": "\n\n=====\n\n".join(prompts).encode(),
        "output.txt": ("".join(out) + "kept: " + ", ".join(kept) + "\n").encode(),
    }


@pytest.mark.slow
def test_a_fixed_command_sequence_gives_the_same_log_snapshot_and_output(tmp_path, monkeypatch, capsys):
    for name in list(os.environ):
        if name.startswith(("ANTHROPIC_", "AGENTIC_CONTEXT_", "PLAYBOOK_")):
            monkeypatch.delenv(name)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("PLAYBOOK_RETRY_BASE_DELAY", "0.01")
    # The sequence's learned preference stays in the project, and no user-level playbook outside the test is read.
    monkeypatch.setenv("PLAYBOOK_PREFERENCES_PER_PROJECT", "1")
    monkeypatch.setenv("PLAYBOOK_USER_DIR", str(tmp_path / "user-level"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", ".")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path))  # Claude Code's directory, where the transcript is
    _fix_time_and_ids(monkeypatch)
    produced = _replay(tmp_path, monkeypatch, capsys)
    if os.environ.get("UPDATE_GOLDEN"):
        GOLDEN.mkdir(parents=True, exist_ok=True)
        for name, data in produced.items():
            (GOLDEN / name).write_bytes(data)
    for name, data in produced.items():
        expected = (GOLDEN / name).read_bytes()
        assert data.decode() == expected.decode(), f"{name} differs from tests/golden/replay/{name}"
