"""`playbook bootstrap`: the project's earlier Claude Code sessions learned oldest first, once each.

The sessions are transcripts written by real Claude Code sessions (tests/fixtures/transcripts and
benchmarks/transcripts), laid out as Claude Code lays them out under `$CLAUDE_CONFIG_DIR/projects/`.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from eventlog.events import LearningCompleted, LearningRequested, ModelCallRecorded
from playbook.learner.bootstrap import sessions, transcripts_dir
from playbook.commands.cli import main
from playbook.learner.learn import learn_pending
from playbook.learner.requests import request_learning
from projections.repository import PlaybookRepository
from tests.fake_anthropic import FakeAnthropic, Reply, request_texts
from tests.test_learning import REFLECTION, models, project, use  # noqa: F401

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "transcripts"
RECORDED = ROOT / "benchmarks" / "transcripts"
# (file name in the project's directory, source, the time its first record gets)
LAYOUT = [
    ("11111111-0000-0000-0000-000000000003.jsonl", FIXTURES / "interactive.jsonl", "2026-10-03T09:00:00.000Z"),
    ("11111111-0000-0000-0000-000000000001.jsonl", RECORDED / "short.jsonl", "2026-10-01T09:00:00.000Z"),
    ("11111111-0000-0000-0000-000000000002.jsonl", FIXTURES / "subagent_parent.jsonl", "2026-10-02T09:00:00.000Z"),
    ("11111111-0000-0000-0000-000000000002/subagents/agent-a49dfa499c7a98770.jsonl", FIXTURES / "subagent_agent.jsonl",
     "2026-10-02T09:05:00.000Z"),
    ("11111111-0000-0000-0000-000000000004.jsonl", RECORDED / "tool_heavy.jsonl", "2026-10-04T09:00:00.000Z"),
]
OLDEST_FIRST = [LAYOUT[1][0], LAYOUT[2][0], LAYOUT[3][0], LAYOUT[0][0], LAYOUT[4][0]]


def stamped(source: Path, moment: str) -> bytes:
    """The transcript with every record's timestamp moved to `moment` (the order a user's history has)."""
    out = []
    for line in source.read_bytes().splitlines(keepends=True):
        record = json.loads(line)
        if "timestamp" in record:
            record["timestamp"] = moment
        out.append(json.dumps(record, separators=(",", ":")).encode() + b"\n")
    return b"".join(out)


def lay_out(config: Path, project: Path) -> Path:
    """Five transcripts (one a subagent's) in the project's transcripts' directory under `config`."""
    directory = config / "projects" / str(project.resolve()).replace("/", "-")
    for name, source, moment in LAYOUT:
        target = directory / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(stamped(source, moment))
    return directory


@pytest.fixture
def history(project, tmp_path, monkeypatch) -> Path:
    """The project's Claude Code history: five transcripts (one a subagent's) in its transcripts' directory."""
    config = tmp_path / "claude-config"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    directory = lay_out(config, project)
    assert transcripts_dir(project) == directory
    return directory


def completed(project: Path) -> list[LearningCompleted]:
    return [e for t in PlaybookRepository(project / ".claude").store.read() for e in t.events
            if isinstance(e, LearningCompleted)]


def bootstrap(project: Path, capsys, *args: str) -> str:
    capsys.readouterr()
    assert main(["--project", str(project), "bootstrap", *args]) == 0
    return capsys.readouterr().out


@pytest.mark.slow
def test_a_dry_run_lists_the_sessions_oldest_first_with_size_tokens_and_cost_and_spends_nothing(
        project, history, monkeypatch, capsys):
    log = project / ".claude" / "playbook.events.jsonl"
    before = log.read_bytes()
    with FakeAnthropic(models()) as api:
        use(api, monkeypatch)
        out = bootstrap(project, capsys, "--dry-run")
        assert api.message_requests() == []
    rows = out.splitlines()[:-1]
    assert [row.split()[-1] for row in rows] == OLDEST_FIRST
    for row, (name, _, _) in zip(rows, sorted(LAYOUT, key=lambda item: item[2])):
        size = (history / name).stat().st_size
        assert f"{size:,} B" in row and "tokens" in row and "$" in row
    assert out.splitlines()[-1].startswith("bootstrap --dry-run: 5 of 5 sessions to learn (0 already learned)")
    assert "nothing was sent" in out
    assert log.read_bytes() == before


@pytest.mark.slow
def test_bootstrap_learns_every_session_oldest_first_then_nothing_again(project, history, monkeypatch, capsys):
    with FakeAnthropic(models()) as api:
        use(api, monkeypatch)
        out = bootstrap(project, capsys)
        assert len(api.message_requests()) == 2 * 5
        lines = [line for line in out.splitlines() if line.startswith("bootstrap: ") and "/5 " in line]
        assert [line.split()[2].rstrip(":") for line in lines] == OLDEST_FIRST
        assert all(line.endswith("completed") for line in lines)
        assert "5 of 5 sessions done (5 completed)" in out and "every session of this project is learned" in out
        assert [Path(e.transcript).relative_to(history).as_posix() for e in completed(project)] == OLDEST_FIRST
        requests = [e for t in PlaybookRepository(project / ".claude").store.read() for e in t.events
                    if isinstance(e, LearningRequested)]
        assert {e.hook for e in requests} == {"bootstrap"}
        # A second run finds nothing new and sends nothing.
        again = bootstrap(project, capsys)
        assert len(api.message_requests()) == 10 and "0 of 0 sessions done" in again
        assert "5 already learned" in bootstrap(project, capsys, "--dry-run")


@pytest.mark.slow
def test_limit_and_since_choose_the_sessions(project, history, monkeypatch, capsys):
    with FakeAnthropic(models()) as api:
        use(api, monkeypatch)
        bootstrap(project, capsys, "--limit", "2")
        assert [Path(e.transcript).relative_to(history).as_posix() for e in completed(project)] == OLDEST_FIRST[:2]
        out = bootstrap(project, capsys, "--since", "2026-10-03")
        assert [Path(e.transcript).relative_to(history).as_posix() for e in completed(project)] == [
            *OLDEST_FIRST[:2], OLDEST_FIRST[3], OLDEST_FIRST[4]]
        assert "2 of 2 sessions done" in out


@pytest.mark.slow
def test_a_transcript_the_hooks_learned_is_never_counted_twice(project, history, monkeypatch, capsys):
    whole = history / LAYOUT[1][0]
    partial = history / LAYOUT[4][0]
    lines = partial.read_bytes().splitlines(keepends=True)
    rest = b"".join(lines[60:])
    partial.write_bytes(b"".join(lines[:60]))
    with FakeAnthropic(models()) as api:
        use(api, monkeypatch)
        # The hooks learned one session whole, and the first 60 lines of another, before bootstrap existed.
        request_learning(project, "SessionEnd", str(whole), "s1", "other")
        request_learning(project, "PreCompact", str(partial), "s4", "manual")
        learn_pending(project)
        with open(partial, "ab") as handle:  # the session went on after the compaction
            handle.write(rest)
        assert "1 already learned" in bootstrap(project, capsys, "--dry-run")
        bootstrap(project, capsys)
        assert len(api.message_requests()) == 2 * 2 + 2 * 4
    spans: dict[str, list[tuple[int, int]]] = {}
    for event in completed(project):
        spans.setdefault(event.transcript, []).append((event.from_line, event.through_line))
    assert spans[str(whole)] == [(0, len(whole.read_bytes().splitlines()))]
    assert spans[str(partial)] == [(0, 60), (60, len(lines))]
    assert len(spans) == 5


@pytest.mark.slow
def test_the_budget_reached_midway_stops_and_says_how_far_it_got(project, history, monkeypatch, capsys):
    monkeypatch.setenv("PLAYBOOK_DAILY_TOKEN_BUDGET", "1")
    with FakeAnthropic(models()) as api:
        use(api, monkeypatch)
        out = bootstrap(project, capsys)
        assert len(api.message_requests()) == 2  # one cycle, then the budget is spent
        assert "1 of 5 sessions done (1 completed)" in out
        assert "stopped with 4 session(s) left: daily token budget reached" in out
        assert "playbook bootstrap --ignore-budget" in out
        out = bootstrap(project, capsys, "--ignore-budget")
        assert "4 of 4 sessions done (4 completed)" in out and len(completed(project)) == 5


def _wait(predicate, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError("timed out")


def _env(project: Path, history: Path, api: FakeAnthropic, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "AGENTIC_CONTEXT_", "PLAYBOOK_"))}
    return env | {"ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "sk-test-bootstrap", "PLAYBOOK_CLAUDE": "",
                  "CLAUDE_CONFIG_DIR": str(history.parent.parent), "PLAYBOOK_RETRY_BASE_DELAY": "0.01", **extra}


@pytest.mark.slow
def test_a_run_killed_mid_cycle_continues_where_it_stopped(project, history):
    released = {"third": False}

    def respond(body: dict) -> Reply:
        text = request_texts(body)
        # The third session's reflector hangs until the test lets it go (after the kill).
        if "You are the reflector" in text and "SUBAGENT please say hello" in text and not released["third"]:
            return Reply(text=json.dumps(REFLECTION), delay=30)
        return models()(body)

    with FakeAnthropic(respond) as api:
        env = _env(project, history, api)
        command = [sys.executable, "-m", "playbook", "--project", str(project), "bootstrap"]
        process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   start_new_session=True)
        try:
            _wait(lambda: len(completed(project)) == 2 and len(api.message_requests()) == 5)
        finally:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        repo = PlaybookRepository(project / ".claude")
        pending = list(repo.current()[0].pending.values())
        assert [Path(p.transcript).relative_to(history).as_posix() for p in pending] == [OLDEST_FIRST[2]]
        released["third"] = True
        again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
        assert again.returncode == 0, again.stderr
        assert "3 of 3 sessions done (3 completed)" in again.stdout
    learned = [Path(e.transcript).relative_to(history).as_posix() for e in completed(project)]
    assert learned == OLDEST_FIRST  # each once, in order; the interrupted one's request was taken up again
    requests = [e for t in repo.store.read() for e in t.events if isinstance(e, LearningRequested)]
    assert len(requests) == 5
    calls = [e for t in repo.store.read() for e in t.events if isinstance(e, ModelCallRecorded)]
    assert len(calls) == 10  # the killed cycle's call was never answered, so never recorded


@pytest.mark.slow
def test_ctrl_c_stops_the_run_in_one_line_and_the_next_run_continues(project, history):
    released = {"third": False}

    def respond(body: dict) -> Reply:
        text = request_texts(body)
        if "You are the reflector" in text and "SUBAGENT please say hello" in text and not released["third"]:
            return Reply(text=json.dumps(REFLECTION), delay=30)
        return models()(body)

    with FakeAnthropic(respond) as api:
        env = _env(project, history, api)
        command = [sys.executable, "-I", "-S", str(ROOT / "playbook" / "quick" / "launch.py"), "--project", str(project),
                   "bootstrap"]
        process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   start_new_session=True)
        try:
            _wait(lambda: len(completed(project)) == 2 and len(api.message_requests()) == 5)
            os.killpg(process.pid, signal.SIGINT)  # what Ctrl-C sends the terminal's foreground group
            out, err = process.communicate(timeout=60)
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        assert process.returncode == 130 and err == "", err
        assert out.splitlines()[-1] == ("bootstrap: stopped after 2 of 5 sessions; run `playbook bootstrap` again "
                                        "to continue"), out
        released["third"] = True
        again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
        assert again.returncode == 0 and "3 of 3 sessions done (3 completed)" in again.stdout, again.stderr
    assert [Path(e.transcript).relative_to(history).as_posix() for e in completed(project)] == OLDEST_FIRST


@pytest.mark.slow
def test_a_terminal_gets_a_progress_bar(project, history):
    with FakeAnthropic(models()) as api:
        env = _env(project, history, api)
        leader, follower = pty.openpty()
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))  # 30 rows, 100 columns
        process = subprocess.Popen([sys.executable, "-m", "playbook", "--project", str(project), "bootstrap"],
                                   env=env, stdout=follower, stderr=follower, stdin=subprocess.DEVNULL)
        os.close(follower)
        output = b""
        while True:
            ready, _, _ = select.select([leader], [], [], 60)
            if not ready:
                break
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            output += chunk
        process.wait(timeout=60)
        os.close(leader)
    text = output.decode("utf-8", "replace")
    assert process.returncode == 0, text
    assert "bootstrap:" in text and "5/5" in text and "100%" in text and "session" in text
    assert "bootstrap: 1/5" not in text  # the bar, not the plain lines
    assert ", 11111111]" in text, "the bar names the session by its id's start"


def test_no_history_is_said_in_one_line(project, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "empty"))
    out = bootstrap(project, capsys)
    assert out.startswith("bootstrap: no Claude Code sessions of this project in ") and out.count("\n") == 1
    assert sessions(project, PlaybookRepository(project / ".claude").current()[0]) == []


LAUNCH = ROOT / "playbook" / "quick" / "launch.py"


@pytest.fixture
def bare(tmp_path: Path) -> Path:
    """A project Claude Code has run in that has no `.claude` directory, with its history."""
    bare = tmp_path / "bare"
    bare.mkdir()
    lay_out(tmp_path / "claude-config", bare)
    return bare


def launched(project: Path, api: FakeAnthropic, *args: str) -> subprocess.CompletedProcess[str]:
    """The command as the plugin runs it (`python -I -S launch.py`), in the project."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "AGENTIC_CONTEXT_", "PLAYBOOK_"))}
    env |= {"ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "sk-test-bootstrap", "PLAYBOOK_CLAUDE": "",
            "CLAUDE_CONFIG_DIR": str(project.parent / "claude-config"), "CLAUDE_PROJECT_DIR": str(project)}
    return subprocess.run([sys.executable, "-I", "-S", str(LAUNCH), *args], env=env, cwd=project,
                          capture_output=True, text=True, timeout=120)


def test_bootstrap_in_a_project_with_no_claude_directory_makes_it_and_learns(bare: Path) -> None:
    with FakeAnthropic(models()) as api:
        done = launched(bare, api, "bootstrap", "--limit", "1")
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert "1 of 1 sessions done (1 completed)" in done.stdout
    assert (bare / ".claude").is_dir() and not (bare / ".claude").is_symlink()
    assert len(completed(bare)) == 1


@pytest.mark.parametrize("args", [["learn"], ["learn", "--retry"], ["learn", "--pending"]])
def test_learn_in_a_project_with_no_claude_directory_has_nothing_to_learn(bare: Path, args: list[str]) -> None:
    with FakeAnthropic(models()) as api:
        done = launched(bare, api, *args)
    assert (done.returncode, done.stdout, done.stderr) == (0, "no pending learning\n", "")
    assert not (bare / ".claude").exists(), "no directory made for a lock"


def test_bootstrap_where_claude_is_a_link_to_nothing_is_one_line(bare: Path, tmp_path: Path) -> None:
    (bare / ".claude").symlink_to(bare / "gone")  # inside the project, but nothing there: no write follows it
    with FakeAnthropic(models()) as api:
        done = launched(bare, api, "bootstrap", "--limit", "1")
    assert done.returncode == 1 and "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert not (bare / "gone").exists()
