"""Ctrl-C (SIGINT) or SIGTERM during a long command: the log stays whole, one line says what happened and how
to go on, and the exit status is 130 or 143. Run on a log large enough that each command is still working
when the signal comes."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eventlog.store import LogReader

pytestmark = pytest.mark.slow  # a log of 200,000 events and a process per command

ROOT = Path(__file__).resolve().parents[1]
EXIT = {signal.SIGINT: 130, signal.SIGTERM: 143}


@pytest.fixture(scope="module")
def large(tmp_path_factory: pytest.TempPathFactory) -> Path:
    sys.path.insert(0, str(ROOT))
    from benchmarks.fold import write_log

    project = tmp_path_factory.mktemp("large")
    (project / ".claude").mkdir()
    write_log(project / ".claude" / "playbook.events.jsonl", 200_000)
    subprocess.run([sys.executable, "-m", "playbook", "--project", str(project), "rebuild"], check=True,
                   capture_output=True, cwd=ROOT, timeout=600)
    return project


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def reading_the_log(pid: int, log: Path) -> bool:
    """True once process `pid` holds the log open: the command is at its work, past the interpreter's start."""
    try:
        return any(os.readlink(f"/proc/{pid}/fd/{fd}") == str(log) for fd in os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return False


def interrupted(project: Path, sig: signal.Signals, *args: str, after: float = 0.1) -> subprocess.CompletedProcess:
    """`playbook ARGS` in `project`, sent `sig` `after` seconds into reading its log."""
    process = subprocess.Popen([sys.executable, "-m", "playbook", "--project", str(project), *args], cwd=project,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    log = (project / ".claude" / "playbook.events.jsonl").resolve()
    deadline = time.monotonic() + 60
    while not reading_the_log(process.pid, log) and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(after)
    process.send_signal(sig)
    out, err = process.communicate(timeout=120)
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def assert_one_line(done: subprocess.CompletedProcess, sig: signal.Signals, command: str) -> None:
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    assert done.returncode == EXIT[sig], (done.returncode, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"run `playbook {command}` again" in lines[0], done.stderr


def assert_whole(log: Path) -> None:
    reader = LogReader(log, strict=True)
    for _ in reader:
        pass
    assert reader.torn is None


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
@pytest.mark.parametrize("command", [["verify"], ["rebuild"], ["timeline", "--html", "page.html"], ["stats"]])
def test_a_reading_command_stopped_leaves_the_log_as_it_was(large: Path, tmp_path: Path, sig: signal.Signals,
                                                            command: list[str]) -> None:
    project = tmp_path / "project"
    shutil.copytree(large, project)
    log = project / ".claude" / "playbook.events.jsonl"
    before = digest(log)
    done = interrupted(project, sig, *command)
    assert_one_line(done, sig, command[0])
    assert digest(log) == before


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_purge_stopped_leaves_the_old_log_or_the_new_one_whole(large: Path, tmp_path: Path,
                                                                 sig: signal.Signals) -> None:
    project = tmp_path / "project"
    shutil.copytree(large, project)
    done = interrupted(project, sig, "purge", "--match", "pattern")
    if done.returncode != 0:
        assert_one_line(done, sig, "purge")
    assert_whole(project / ".claude" / "playbook.events.jsonl")
    assert subprocess.run([sys.executable, "-m", "playbook", "--project", str(project), "show"], cwd=ROOT,
                          capture_output=True, timeout=300).returncode == 0


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_merge_stopped_leaves_ours_or_the_merged_log_whole(large: Path, tmp_path: Path, sig: signal.Signals) -> None:
    project = tmp_path / "project"
    shutil.copytree(large, project)
    other = tmp_path / "other"
    shutil.copytree(large, other)
    subprocess.run([sys.executable, "-m", "playbook", "--project", str(other), "add", "from the other machine"],
                   cwd=ROOT, check=True, capture_output=True, timeout=300)
    subprocess.run([sys.executable, "-m", "playbook", "--project", str(project), "add", "from this machine"],
                   cwd=ROOT, check=True, capture_output=True, timeout=300)
    done = interrupted(project, sig, "merge", str(other / ".claude" / "playbook.events.jsonl"))
    if done.returncode != 0:
        assert_one_line(done, sig, "merge")
    assert_whole(project / ".claude" / "playbook.events.jsonl")


def test_serve_stopped_says_so_in_one_line(large: Path) -> None:
    process = subprocess.Popen([sys.executable, "-m", "playbook", "--project", str(large), "serve", "--port", "0"],
                               cwd=large, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None
    first = process.stdout.readline()  # it says where it serves once it does
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=60)
    done = subprocess.CompletedProcess(process.args, process.returncode, first + out, err)
    assert "127.0.0.1" in first, first + err
    assert_one_line(done, signal.SIGTERM, "serve")
