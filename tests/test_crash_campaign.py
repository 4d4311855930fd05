"""SIGKILL at random moments of the commands that replace or add to what proves the log: the merge driver,
`playbook merge`, `anchor` and `recover` (purge has its own campaign in tests/test_purge.py). Afterwards each
file is the old one or the new one, whole; `verify --anchor` passes or names the damage in one line; and the
same command run again completes. PLAYBOOK_CRASH_TRIALS sets how many kills each test makes."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from eventlog.store import LogReader
from tests.kills import kill_at_random

pytestmark = pytest.mark.slow  # real processes killed at random

ROOT = Path(__file__).resolve().parents[1]
TRIALS = int(os.environ.get("PLAYBOOK_CRASH_TRIALS", "6"))


def playbook(project: Path, *args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "playbook", "--project", str(project), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, **kwargs)  # type: ignore[call-overload]


def killed(args: list[str], rng: random.Random, longest: float) -> None:
    process = subprocess.Popen([sys.executable, "-m", "playbook", *args], cwd=ROOT, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    kill_at_random(process, rng, 0.05, longest)


def whole(log: Path) -> list[str]:
    """The transaction ids of `log`, read strictly: every committed transaction whole, no damage."""
    reader = LogReader(log, strict=True)
    found = [t.commit.tx for t in reader]
    return found


def assert_verified_or_named(project: Path) -> None:
    done = playbook(project, "verify", "--anchor")
    assert "Traceback" not in done.stdout + done.stderr
    assert done.returncode in (0, 1), done.stderr
    if done.returncode == 1:
        assert done.stdout.strip() or done.stderr.strip()


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project whose log of 20,000 events is anchored, and another machine's copy with more learned on it."""
    sys.path.insert(0, str(ROOT))
    from benchmarks.fold import write_log

    root = tmp_path_factory.mktemp("campaign")
    project = root / "project"
    (project / ".claude").mkdir(parents=True)
    write_log(project / ".claude" / "playbook.events.jsonl", 20_000)
    assert playbook(project, "rebuild").returncode == 0
    assert playbook(project, "anchor").returncode == 0
    shutil.copy(project / ".claude" / "playbook.events.jsonl", root / "ancestor.jsonl")  # where the two part
    other = root / "other"
    shutil.copytree(project, other)
    for text in ("learned on the other machine", "and another thing"):
        assert playbook(other, "add", text).returncode == 0
    assert playbook(project, "add", "learned here").returncode == 0
    return root


def fresh(base: Path, tmp_path: Path) -> tuple[Path, Path]:
    project, other = tmp_path / "project", tmp_path / "other"
    shutil.copytree(base / "project", project)
    shutil.copytree(base / "other", other)
    return project, other


def test_playbook_merge_killed_at_random_leaves_ours_or_the_merge_and_the_next_merge_completes(
        base: Path, tmp_path: Path) -> None:
    rng = random.Random()
    for _trial in range(TRIALS):
        project, other = fresh(base, tmp_path / f"t{_trial}")
        log = project / ".claude" / "playbook.events.jsonl"
        before = whole(log)
        killed(["--project", str(project), "merge", str(other / ".claude" / "playbook.events.jsonl")], rng, 2.0)
        after = whole(log)
        assert after == before or set(before) <= set(after)
        assert_verified_or_named(project)
        again = playbook(project, "merge", str(other / ".claude" / "playbook.events.jsonl"))
        assert again.returncode == 0, again.stderr
        assert "learned on the other machine" in playbook(project, "show").stdout


def test_the_merge_driver_killed_at_random_leaves_ours_whole_or_the_merge(base: Path, tmp_path: Path) -> None:
    rng = random.Random()
    for _trial in range(TRIALS):
        project, other = fresh(base, tmp_path / f"t{_trial}")
        ours = tmp_path / f"t{_trial}" / "ours.jsonl"
        shutil.copy(project / ".claude" / "playbook.events.jsonl", ours)
        before = ours.read_bytes()
        killed(["merge-driver", str(base / "ancestor.jsonl"), str(ours),
                str(other / ".claude" / "playbook.events.jsonl"), ".claude/playbook.events.jsonl"], rng, 2.0)
        if ours.read_bytes() != before:
            whole(ours)  # the merged log, whole
        done = subprocess.run([sys.executable, "-m", "playbook", "merge-driver", str(base / "ancestor.jsonl"), str(ours),
                               str(other / ".claude" / "playbook.events.jsonl"), ".claude/playbook.events.jsonl"],
                              cwd=project, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        whole(ours)


def test_anchor_killed_at_random_leaves_anchors_that_verify_or_are_named_and_anchor_runs_again(
        base: Path, tmp_path: Path) -> None:
    rng = random.Random()
    for _trial in range(TRIALS):
        project, _other = fresh(base, tmp_path / f"t{_trial}")
        killed(["--project", str(project), "anchor"], rng, 0.8)
        assert_verified_or_named(project)
        again = playbook(project, "anchor")
        assert again.returncode == 0 and "Traceback" not in again.stderr, again.stderr
        assert playbook(project, "verify", "--anchor").returncode == 0


def test_recover_killed_at_random_leaves_the_log_whole_and_recover_runs_again(base: Path, tmp_path: Path) -> None:
    rng = random.Random()
    for _trial in range(TRIALS):
        project, _other = fresh(base, tmp_path / f"t{_trial}")
        claude = project / ".claude"
        ahead = claude / "playbook.json.ahead-20260101T000000Z"
        snapshot = (claude / "playbook.json").read_text()
        ahead.write_text(snapshot.replace('"OTHERS": [', '"OTHERS": [{"name": "oth-999", "text": "kept aside", '
                                          '"helpful": 0, "harmful": 0}, ', 1))
        log = claude / "playbook.events.jsonl"
        before = whole(log)
        killed(["--project", str(project), "recover", str(ahead)], rng, 1.5)
        after = whole(log)
        assert after[:len(before)] == before
        assert_verified_or_named(project)
        again = playbook(project, "recover", str(ahead))
        assert "Traceback" not in again.stderr and again.returncode in (0, 1), again.stderr
        assert "kept aside" in playbook(project, "show").stdout
