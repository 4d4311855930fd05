"""`playbook purge`: a secret taken out of the log's whole history, under kill -9 and concurrent writers."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eventlog.decide import ApplyOperations, decide_all
from eventlog.events import Cause, HistoryRewritten
from eventlog.store import LogReader
from playbook.commands.cli import main
from projections.repository import PlaybookRepository
from projections.verify import verify
from tests.kills import kill_at_random

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "hunter2-staging-Zq81xK"
AWS = "AKIAIOSFODNN7EXAMPLE"
KILL_TRIALS = int(os.environ.get("PLAYBOOK_PURGE_KILL_TRIALS", "6"))


def ops(*operations: dict):
    return lambda state: decide_all(state, [ApplyOperations(list(operations))])


def add(text: str) -> dict:
    return {"type": "ADD", "text": text, "section": "OTHERS"}


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(tmp_path))
    return tmp_path


def build(project: Path) -> PlaybookRepository:
    """A log where the token reached three lines: an add, an update's before and after, and a commit's analysis."""
    repo = PlaybookRepository(project / ".claude")
    repo.append(ops(add("Prefer small commits"), add(f"Log in to staging with password {TOKEN}")),
                Cause(source="hook:SessionEnd", session="s-1"))
    repo.append(ops(add("Run the linter first")), Cause(source="hook:SessionEnd", session="s-2",
                                                          analysis=f"the user pasted {TOKEN} and {AWS}"))
    name = next(kp.name for _s, kp in repo.current()[0].entries() if TOKEN in kp.text)
    repo.append(ops({"type": "UPDATE", "target_id": name, "text": f"Staging uses {TOKEN}; ask before using it"}),
                Cause(source="hook:SessionEnd", session="s-3"))
    repo.append(ops(add("Pin the lock file")), Cause(source="hook:SessionEnd", session="s-4"))
    return repo


def cli(project: Path, capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["--project", str(project), *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def holders(claude: Path, needle: str) -> list[str]:
    return [str(p.relative_to(claude)) for p in sorted(claude.rglob("*"))
            if p.is_file() and needle.encode() in p.read_bytes()]


def playbook_without_log_block(path: Path) -> dict:
    data = json.loads(path.read_text())
    data.pop("log", None)
    return data


@pytest.mark.slow
def test_purge_match_rewrites_only_those_lines_records_it_and_every_command_works_after(project, capsys):
    repo = build(project)
    claude = repo.claude_dir
    assert cli(project, capsys, "anchor")[0] == 0
    old = repo.log_path.read_bytes()
    holding = [n for n, line in enumerate(old.splitlines(), 1) if TOKEN.encode() in line]
    before_playbook = playbook_without_log_block(repo.snapshot_path)
    head_before = repo.current()[1].hash
    assert holders(claude, TOKEN)

    code, out, err = cli(project, capsys, "purge", "--match", TOKEN)
    assert code == 0, err
    assert f"from {len(holding)} line(s)" in out and "the original log is removed" in out
    new = repo.log_path.read_bytes()
    assert holders(claude, TOKEN) == []  # the log, playbook.json, projections, checkpoints: none keeps it
    # Lines before the first rewritten one keep their bytes; each rewritten line keeps its seq.
    old_lines, new_lines = old.splitlines(), new.splitlines()
    assert new_lines[: holding[0] - 1] == old_lines[: holding[0] - 1]
    assert len(new_lines) == len(old_lines) + 2
    transactions = list(LogReader(repo.log_path, strict=True))
    record = transactions[-1].events[0]
    assert isinstance(record, HistoryRewritten)
    assert record.seqs == holding and record.reason == "match" and record.redactions == 4
    assert record.head_before == head_before and record.head_after == transactions[-2].end.hash
    assert TOKEN not in new.decode() and "[REDACTED:match]" in new.decode()

    assert verify(repo).ok
    code, out, _err = cli(project, capsys, "verify", "--anchor")
    assert code == 0, out  # the purge is accepted through its record and the anchor it appended
    name = next(kp.name for _s, kp in repo.current()[0].entries() if "Staging uses" in kp.text)
    for argv in (("history", name), ("at", "3"), ("log", "-n", "0", "-v"), ("show",), ("diff", "2")):
        code, out, err = cli(project, capsys, *argv)
        assert code == 0, (argv, err)
        assert TOKEN not in out + err
    tx = transactions[-2].commit.tx  # the last transaction before the purge (an ADD): revert it
    code, out, err = cli(project, capsys, "revert", tx)
    assert code == 0, err
    assert cli(project, capsys, "rebuild")[0] == 0
    after_playbook = playbook_without_log_block(repo.snapshot_path)
    expected = json.loads(json.dumps(before_playbook).replace(TOKEN, "[REDACTED:match]"))
    reverted = [e for e in expected["sections"]["OTHERS"] if e["text"] == "Pin the lock file"]
    expected["sections"]["OTHERS"] = [e for e in expected["sections"]["OTHERS"] if e not in reverted]
    after_playbook.pop("last_updated", None), expected.pop("last_updated", None)
    assert after_playbook == expected
    assert holders(claude, TOKEN) == []
    assert verify(repo).ok and cli(project, capsys, "verify", "--anchor")[0] == 0


@pytest.mark.slow
def test_purge_secrets_uses_the_detector_and_keep_original_keeps_the_old_log(project, capsys, tmp_path):
    repo = build(project)
    old = repo.log_path.read_bytes()
    kept = tmp_path / "elsewhere" / "original.jsonl"
    kept.parent.mkdir()
    code, out, err = cli(project, capsys, "purge", "--secrets", "--keep-original", str(kept))
    assert code == 0, err
    assert kept.read_bytes() == old and f"kept at {kept}" in out
    new = repo.log_path.read_bytes()
    assert AWS.encode() not in new and b"[REDACTED:aws-access-key]" in new
    assert holders(repo.claude_dir, AWS) == []
    record = list(LogReader(repo.log_path))[-1].events[0]
    assert isinstance(record, HistoryRewritten) and record.reason == "secrets" and record.kept_original == str(kept)
    assert verify(repo).ok
    code, out, _err = cli(project, capsys, "purge", "--secrets")
    assert code == 0 and "nothing to purge" in out


@pytest.mark.slow
def test_purge_refuses_bad_input_and_a_log_that_no_longer_extends_its_anchors(project, capsys):
    repo = build(project)
    assert cli(project, capsys, "purge")[0] == 1
    code, _out, err = cli(project, capsys, "purge", "--match", "ab")
    assert code == 1 and "at least" in err
    assert cli(project, capsys, "anchor")[0] == 0
    raw = repo.log_path.read_bytes()
    from tests.test_anchors import forge

    forge(repo.log_path, "Prefer small commits", "Prefer large commits")
    code, _out, err = cli(project, capsys, "purge", "--match", TOKEN)
    assert code == 1 and "no longer extends" in err and "Traceback" not in err
    assert TOKEN.encode() in repo.log_path.read_bytes()
    repo.log_path.write_bytes(raw)


# --- real processes ---------------------------------------------------------------------------------------


def env(project: Path, **extra: str) -> dict:
    environment = {**os.environ, "CLAUDE_PROJECT_DIR": str(project), "PYTHONPATH": str(ROOT), **extra}
    environment.pop("PLAYBOOK_FAULT", None)
    environment.update(extra)
    return environment


def purge_process(project: Path, **extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "playbook", "purge", "--match", TOKEN], env=env(project, **extra),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def big(project: Path) -> PlaybookRepository:
    repo = build(project)
    for batch in range(30):
        repo.append(ops(*[add(f"Filler key point {batch}-{n} about {'tests' if n % 2 else 'docs'}")
                          for n in range(10)]), Cause(source="test"))
    repo.append(ops(add(f"Again: {TOKEN}")), Cause(source="test"))
    return repo


def assert_old_or_new(repo: PlaybookRepository, old: bytes) -> bool:
    """The log is the old one byte for byte, or the whole new one; True when it is the new one."""
    raw = repo.log_path.read_bytes()
    if raw == old:
        return False
    transactions = list(LogReader(repo.log_path, strict=True))
    assert isinstance(transactions[-1].events[0], HistoryRewritten)
    assert TOKEN.encode() not in raw and len(raw.splitlines()) == len(old.splitlines()) + 2
    return True


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["purge-before-rename", "purge-after-rename"])
def test_purge_killed_at_its_fault_points_leaves_the_old_log_or_the_new_one(project, fault):
    repo = big(project)
    old = repo.log_path.read_bytes()
    process = purge_process(project, PLAYBOOK_FAULT=fault)
    process.wait(timeout=120)
    assert process.returncode == -signal.SIGKILL
    assert assert_old_or_new(repo, old) == (fault == "purge-after-rename")
    # Whatever was left, the next command reads it, and a purge run again finishes the job.
    rerun = purge_process(project)
    assert rerun.wait(timeout=120) == 0, rerun.stderr.read()
    assert holders(repo.claude_dir, TOKEN) == []
    assert verify(repo).ok


@pytest.mark.slow
def test_purge_killed_at_random_moments_leaves_the_old_log_or_the_new_one(project):
    repo = big(project)
    old = repo.log_path.read_bytes()
    rng = random.Random()
    outcomes = []
    for _trial in range(KILL_TRIALS):
        for derived in repo.claude_dir.glob("playbook.json*"):  # a snapshot of the last trial's new log is ahead
            derived.unlink()
        repo.log_path.write_bytes(old)
        repo.rebuild()
        assert repo.log_path.read_bytes() == old
        process = purge_process(project)
        kill_at_random(process, rng, 0.05, 1.5)
        outcomes.append(assert_old_or_new(repo, old))
        state = repo.current()[0]  # readers and writers carry on with what is there
        assert state.entries()
    assert verify(repo).ok or not outcomes[-1]


WRITER = r'''
import sys
from eventlog.decide import ApplyOperations, decide_all
from eventlog.events import Cause
from projections.repository import PlaybookRepository
repo = PlaybookRepository(sys.argv[1])
for n in range(int(sys.argv[3])):
    text = f"writer {sys.argv[2]} key point {n}"
    repo.append(lambda s: decide_all(s, [ApplyOperations([{"type": "ADD", "text": text, "section": "OTHERS"}])]),
                Cause(source="test"))
'''


@pytest.mark.slow
def test_concurrent_writers_wait_for_the_purge_and_lose_nothing(project):
    repo = big(project)
    count = 15
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(repo.claude_dir), str(w), str(count)],
                                env=env(project)) for w in range(2)]
    time.sleep(0.3)
    purger = purge_process(project)
    assert purger.wait(timeout=180) == 0, purger.stderr.read()
    for writer in writers:
        assert writer.wait(timeout=180) == 0
    texts = {kp.text for _s, kp in repo.current()[0].entries()}
    assert {f"writer {w} key point {n}" for w in range(2) for n in range(count)} <= texts
    raw = repo.log_path.read_bytes()
    assert TOKEN.encode() not in raw
    assert sum(isinstance(e, HistoryRewritten) for t in LogReader(repo.log_path) for e in t.events) == 1
    assert verify(repo).ok


def test_a_rewrite_is_accepted_only_through_the_anchor_its_purge_recorded(project, capsys):
    repo = build(project)
    assert cli(project, capsys, "anchor")[0] == 0
    anchors = repo.claude_dir / "playbook.anchors"
    kept = anchors.read_bytes()
    anchors.unlink()  # a purge by someone without the anchors: its HistoryRewritten record alone proves nothing
    old_lines = repo.log_path.read_bytes().splitlines()
    assert cli(project, capsys, "purge", "--match", TOKEN)[0] == 0
    anchors.write_bytes(kept)
    first = next(n for n, line in enumerate(old_lines, 1) if TOKEN.encode() in line)
    code, out, _err = cli(project, capsys, "verify", "--anchor")
    assert code == 1 and f"line {first} (seq {first}) is not the line that was anchored" in out


def test_purge_leaves_no_kept_show_text_holding_what_it_purged(project, capsys):
    """`show` keeps the text it prints beside the log (`playbook.quick.show_text`): a purge removes it with the other
    files that derive from the log, and a temporary one a killed `show` left, so none keeps the purged text."""
    repo = build(project)
    claude = repo.claude_dir
    code, out, _err = cli(project, capsys, "show")
    assert code == 0 and TOKEN in out
    leftover = claude / ".playbook.show.txt.99999.tmp"
    leftover.write_bytes((claude / "playbook.show.txt").read_bytes())
    assert {"playbook.show.txt", leftover.name} <= set(holders(claude, TOKEN))
    assert cli(project, capsys, "purge", "--match", TOKEN)[0] == 0
    assert holders(claude, TOKEN) == []
    code, out, _err = cli(project, capsys, "show")
    assert code == 0 and TOKEN not in out and "[REDACTED:match]" in out
