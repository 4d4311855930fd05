"""A sync killed by SIGKILL at each of its fault points, and at random moments, leaves this machine's log and the
remote's whole (every line read, nothing unfinished, `verify` clean), and the next sync completes: both machines
then hold the same log with every lesson once. PLAYBOOK_CRASH_TRIALS sets how many random kills are made."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from eventlog.store import LogReader
from playbook.wiring.project import user_repository
from tests.gittools import HAS_GIT, git_env
from tests.kills import kill_at_random
from tests.test_sync import Machine, machines, remote_log

pytestmark = [pytest.mark.skipif(not HAS_GIT, reason="git is not installed"), pytest.mark.slow]

TRIALS = int(os.environ.get("PLAYBOOK_CRASH_TRIALS", "6"))
POINTS = ["sync-after-fetch", "merge-before-replace", "sync-before-replace", "sync-after-replace", "sync-after-commit",
          "sync-after-push"]


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    path = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(path)], check=True, env=git_env(tmp_path))
    return path


def whole(data_or_path: bytes | Path, tmp_path: Path) -> int:
    """The number of transactions of a log that reads whole, to its last byte."""
    if isinstance(data_or_path, bytes):
        path = tmp_path / "remote-copy.jsonl"
        path.write_bytes(data_or_path)
    else:
        path = data_or_path
    reader = LogReader(path, strict=True)
    count = sum(1 for _ in reader)
    assert reader.torn is None and reader.position.offset == path.stat().st_size
    return count


def both_whole(machine: Machine, remote: Path, tmp_path: Path) -> None:
    """Both logs read whole; playbook.json, which a kill may leave missing, is projected by the next command (here
    one that reads the playbook), and then `verify` is clean: nothing is set aside as if it held what the log does
    not."""
    whole(machine.log, tmp_path)
    with machine.on():
        user_repository().state()
    assert machine.clean()
    assert not list(machine.dir.glob("playbook.json.*"))
    whole(remote_log(remote, tmp_path), tmp_path)


def sync_process(machine: Machine, fault: str | None = None) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if k not in ("PLAYBOOK_FAULT", "PLAYBOOK_USER_DIR")}
    env["CLAUDE_CONFIG_DIR"] = str(machine.config)
    if fault is not None:
        env["PLAYBOOK_FAULT"] = fault
    return subprocess.Popen([sys.executable, "-m", "playbook", "sync"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, cwd=machine.config.parent)


def converged(laptop: Machine, desktop: Machine, remote: Path, tmp_path: Path, lessons: set[str]) -> None:
    again = desktop.sync()
    assert again.ok, again.line
    assert laptop.sync().ok and desktop.sync().ok
    assert laptop.log.read_bytes() == desktop.log.read_bytes() == remote_log(remote, tmp_path)
    texts = desktop.texts()
    assert lessons <= set(texts) and all(count == 1 for count in texts.values()), texts
    assert laptop.clean() and desktop.clean()


def diverged_pair(tmp_path: Path, remote: Path) -> tuple[Machine, Machine, set[str]]:
    laptop, desktop = machines(tmp_path, "laptop", "desktop")
    laptop.learn("Answer in English")
    laptop.sync(remote)
    desktop.sync(remote)
    laptop.learn("Keep commits small")
    desktop.learn("Prefer short answers")
    assert laptop.sync().pushed
    return laptop, desktop, {"Answer in English", "Keep commits small", "Prefer short answers"}


@pytest.mark.parametrize("fault", POINTS)
def test_a_sync_killed_at_a_fault_point_leaves_both_logs_whole_and_the_next_completes(tmp_path: Path, remote: Path,
                                                                                      fault: str) -> None:
    laptop, desktop, lessons = diverged_pair(tmp_path, remote)
    process = sync_process(desktop, fault)
    assert process.wait(timeout=120) == -signal.SIGKILL
    both_whole(desktop, remote, tmp_path)
    assert b"Prefer short answers" in desktop.log.read_bytes()  # nothing learned here is lost
    converged(laptop, desktop, remote, tmp_path, lessons)


def test_syncs_killed_at_random_leave_both_logs_whole_and_the_next_completes(tmp_path: Path, remote: Path) -> None:
    rng = random.Random(int(os.environ.get("PLAYBOOK_CRASH_SEED", "27")))
    laptop, desktop, lessons = diverged_pair(tmp_path, remote)
    for trial in range(TRIALS):
        learner = rng.choice([laptop, desktop])
        text = f"Lesson {trial} from {learner.config.name}"
        learner.learn(text)
        lessons.add(text)
        process = sync_process(learner)
        kill_at_random(process, rng, 0.05, 1.2)
        both_whole(learner, remote, tmp_path)
    converged(laptop, desktop, remote, tmp_path, lessons)
