"""Hostile input at every door: each gives a clear message and loses nothing.

1. Hook stdin (real processes): empty, not JSON, JSON of the wrong shape or with fields of
   the wrong type, several MB, binary junk, nested 100k deep. Exit 0, at most one line on
   stderr (escaped: no raw control characters), no traceback, nothing appended to the log.
2. Transcript paths: missing, a directory, a FIFO, a path under a file, unreadable, and
   outside Claude Code's configuration directory (`$CLAUDE_CONFIG_DIR`, else `~/.claude`,
   resolved, so `..` and symlinks cannot escape): one clear line, nothing recorded. The
   learner, given such a path anyway, records a skip and never hangs.
3. Transcript contents: broken lines, a 30 MB line, binary junk, 100k nested lists, lone
   surrogates: `read_transcript` never raises, counts what it skipped, keeps the rest.
4. Model replies through the real learning cycle (fake API, `request_learning` +
   `learn_pending`): empty, truncated, absurdly deep, not a Messages reply at all, hundreds
   of operations, unknown ids, megabyte texts, terminal escapes, operations of every wrong
   type, the API key quoted back. The outcome is recorded, the playbook is unchanged or
   correctly changed, and the key never reaches a file under .claude, stdout or stderr.
5. Legacy playbook.json of every malformed kind (and arbitrary JSON from hypothesis):
   `load_playbook()` never raises, imports what it can, records each rejection as an
   `OperationSkipped` of kind "import", and moves an unreadable file aside.
6. A log written by a newer version (an unknown event type, an unknown field): read, kept
   byte for byte through later appends, `load_playbook`/`save_playbook`/`playbook verify`.

Small artifacts that once broke something are kept in tests/fixtures/hostile/.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from unittest import mock

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import playbook
from eventlog.decide import ApplyOperations, RequestLearning
from eventlog.domain import MAX_COUNTER, MAX_TEXT_LENGTH, SECTION_SLUGS
from eventlog.events import Cause, KeyPointAdded, KeyPointDeleted, KeyPointEvaluated, KeyPointsMerged, KeyPointUpdated
from eventlog.events import LearningCompleted, LearningFailed, LearningRequested, LearningSkipped, OperationSkipped
from eventlog.events import ModelCallRecorded, PlaybookImported, UnknownRecord
from eventlog.legacy import normalize_playbook
from eventlog.store import LogReader
from playbook.commands import cli
from playbook.wiring.hooks import run_hook
from playbook.wiring.install import hook_command
from playbook.learner.learn import learn_pending
from playbook.learner.requests import request_learning
from playbook.learner.sessions import claude_config_dir
from playbook.learner.transcript import TranscriptError, read_transcript
from projections.quickroads import project_slug
from projections.repository import PlaybookRepository
from projections.verify import verify
from tests.fake_anthropic import FakeAnthropic, Reply, reply_text, request_texts

HOSTILE = Path(__file__).parent / "fixtures" / "hostile"
TRANSCRIPTS = Path(__file__).parent / "fixtures" / "transcripts"
SECRET = "sk-ant-hostile-planted-key-7c41e9"
EVENTS = ("SessionStart", "SessionEnd", "PreCompact", "SubagentStop")
LEARNING_EVENTS = EVENTS[1:]
COMMON = settings(deadline=None, database=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
# Characters that must never reach a terminal raw from data (as in playbook/rendering/report.py).
RAW_CONTROLS = [b"\x1b", b"\x07", b"\x00", b"\r", b"\x08", "\x9b".encode(), "\u202e".encode(), "\u2028".encode()]


def clean_env(**extra: str) -> dict[str, str]:
    """The test's environment without a key or settings; its own user-level directory is kept, where this
    machine notes the learning requests it makes."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "AGENTIC_CONTEXT_", "CLAUDE", "PLAYBOOK_")) or k == "PLAYBOOK_USER_DIR"}
    return env | extra


def sessions_of(project: Path, config: Path) -> Path:
    """Where Claude Code configured in `config` keeps `project`'s sessions: the only transcripts learned from."""
    return Path(os.path.realpath(config)) / "projects" / project_slug(os.path.realpath(project))


def log_bytes(project: Path) -> bytes | None:
    path = project / ".claude" / "playbook.events.jsonl"
    return path.read_bytes() if path.exists() else None


def all_events(project: Path) -> list:
    return [e for t in PlaybookRepository(project / ".claude").store.read() for e in t.events]


def seed(project: Path, *texts: str) -> PlaybookRepository:
    repo = PlaybookRepository(project / ".claude")
    repo.append([ApplyOperations([{"type": "ADD", "text": t, "section": "PATTERNS & APPROACHES"} for t in texts])],
                Cause(source="test"))
    return repo


def assert_one_clean_line(stderr: bytes, what: object) -> None:
    assert b"Traceback" not in stderr, (what, stderr[-2000:])
    assert stderr.count(b"\n") <= 1, (what, stderr[:2000])
    assert not stderr or (stderr.startswith(b"playbook:") and stderr.endswith(b"\n")), (what, stderr[:500])
    for raw in RAW_CONTROLS:
        assert raw not in stderr, (what, raw, stderr[:500])


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Fail instead of hanging (a blocked open() of a FIFO is interrupted by the alarm)."""
    def expired(signum, frame):
        raise TimeoutError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# === 1. hook stdin =======================================================================================

_rng = random.Random(20261122)
BAD_STDIN: dict[str, bytes] = {
    # not an object (tests/test_hooks_install.py has "", "not json", a list, a string, b"\xff\xfe\x00", ...)
    "number": b"42",
    "null": b"null",
    "true": b"true",
    "float overflow": b"-1e999",
    "nested 100k deep": b"[" * 100_000,
    "utf-8 BOM": b'\xef\xbb\xbf{"transcript_path": "x"}',
    "utf-16": '{"session_id": "s"}'.encode("utf-16"),
    "NUL bytes": b"\x00" * 4096,
    "binary junk, 3 MB": _rng.randbytes(3 << 20),
    "valid JSON, 5 MB": json.dumps({"hook_event_name": "SessionEnd", "reason": "other", "session_id": "s",
                                    "last_assistant_message": "x" * (5 << 20)}).encode(),
    # objects with fields of the wrong type
    "wrong-typed fields": b'{"transcript_path": 5, "session_id": {}}',
    "every field wrong": json.dumps({"transcript_path": ["a"], "agent_transcript_path": {"x": 1}, "reason": 7,
                                     "cwd": 5, "session_id": [], "hook_event_name": None, "trigger": False,
                                     "source": {"startup": 1}}).encode(),
    "null path": b'{"transcript_path": null, "agent_transcript_path": null}',
    "empty path": b'{"transcript_path": "", "agent_transcript_path": ""}',
    "duplicate keys": b'{"transcript_path": "/etc/passwd", "transcript_path": 5}',
    "lone surrogate path": b'{"transcript_path": "\\ud800", "agent_transcript_path": "\\udfff"}',
    "NUL in path": b'{"transcript_path": "/tmp/a\\u0000b", "agent_transcript_path": "/tmp/a\\u0000b"}',
    "escapes in path": (HOSTILE / "hook_stdin_escapes.json").read_bytes(),
    "outside path": b'{"transcript_path": "/etc/passwd", "agent_transcript_path": "/etc/passwd", "reason": "other"}',
}


# Each hook process costs about 0.3 s of CPU (interpreter and imports), so real processes get the
# inputs that matter at the process level (size, binary, depth, what reaches stderr); every input
# runs in process below, through the same `run_hook`.
PROCESS_INPUTS = ["binary junk, 3 MB", "valid JSON, 5 MB", "nested 100k deep", "every field wrong", "escapes in path"]


def _hook_commands() -> list[tuple[str, str]]:
    commands = [("SessionStart", hook_command("SessionStart"))]  # as installed: playbook/quick/inject.py
    commands += [(event, f'"{sys.executable}" -m playbook hook {event}') for event in EVENTS]
    return commands


@pytest.mark.slow
@pytest.mark.parametrize(("event", "command"), _hook_commands(),
                         ids=["SessionStart-installed", *(f"{e}-module" for e in EVENTS)])
def test_bad_hook_stdin_is_one_clean_line_exit_0_and_records_nothing(tmp_path, event, command):
    project, home = tmp_path / "proj", tmp_path / "home"
    (home / ".claude" / "projects").mkdir(parents=True)
    project.mkdir()
    seed(project, "use pathlib")
    before = log_bytes(project)
    env = clean_env(HOME=str(home), CLAUDE_PROJECT_DIR=str(project), PLAYBOOK_UPDATE_ON_EXIT="1",
                    PLAYBOOK_UPDATE_ON_CLEAR="1")

    def run(item: tuple[str, bytes]) -> tuple[str, subprocess.CompletedProcess]:
        name, stdin = item
        return name, subprocess.run(command, shell=True, input=stdin, capture_output=True, env=env, cwd=project,
                                    timeout=60)

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(run, [(name, BAD_STDIN[name]) for name in PROCESS_INPUTS]))
    for name, result in results:
        assert result.returncode == 0, (name, result.stderr)
        assert_one_clean_line(result.stderr, name)
        if event == "SessionStart":
            # the playbook is injected whatever the input (the installed command ignores stdin), or nothing is
            assert result.stdout == b"" or "use pathlib" in json.loads(result.stdout)["hookSpecificOutput"][
                "additionalContext"], name
        else:
            assert result.stdout == b"", name
            assert result.stderr, f"{name}: a learning hook that learns nothing says why"
    assert log_bytes(project) == before, "bad hook input recorded something in the log"
    messages = {name: result.stderr for name, result in results}
    if event != "SessionStart":
        assert b"nested too deeply" in messages["nested 100k deep"]
        assert b"larger than" in messages["valid JSON, 5 MB"]
        assert rb"\x1b[2J" in messages["escapes in path"] and b"is outside" in messages["escapes in path"]


@pytest.mark.parametrize("event", EVENTS)
def test_every_bad_hook_stdin_in_process(hook_sandbox, event):
    project, config = hook_sandbox
    before = log_bytes(project)
    env = {"CLAUDE_PROJECT_DIR": str(project), "CLAUDE_CONFIG_DIR": str(config), "HOME": str(config.parent),
           "PLAYBOOK_UPDATE_ON_EXIT": "1", "PLAYBOOK_UPDATE_ON_CLEAR": "1"}
    messages = {}
    with mock.patch.dict(os.environ, env), mock.patch("playbook.learner.requests.spawn_learner") as spawn:
        for name, stdin in BAD_STDIN.items():
            out, err = call_hook(event, stdin)
            assert_one_clean_line(err, name)
            messages[name] = err.decode()
            if event == "SessionStart":
                assert out == b"" or "use pathlib" in json.loads(out)["hookSpecificOutput"]["additionalContext"]
            else:
                assert out == b"" and err, name
    assert not spawn.called and log_bytes(project) == before
    if event == "SessionStart":
        return
    expected = {"number": "a JSON number, not an object", "null": "a JSON null, not an object",
                "true": "a JSON boolean, not an object", "float overflow": "a JSON number, not an object",
                "nested 100k deep": "nested too deeply", "utf-8 BOM": "not JSON", "utf-16": "not JSON",
                "NUL bytes": "not JSON", "binary junk, 3 MB": "larger than", "valid JSON, 5 MB": "larger than",
                "wrong-typed fields": "no transcript_path", "every field wrong": "no transcript_path",
                "null path": "no transcript_path", "empty path": "no transcript_path",
                "duplicate keys": "no transcript_path", "lone surrogate path": "\\ud800 is missing or unreadable",
                "NUL in path": "/tmp/a\\x00b is missing or unreadable",
                "escapes in path": "/nope\\n\\x1b[2J\\x1b[31mred\\x07\\r is outside",
                "outside path": "/etc/passwd is outside"}
    if event == "SubagentStop":
        expected["lone surrogate path"] = "\\udfff is missing or unreadable"
    for name, text in expected.items():
        assert text in messages[name], (name, messages[name])


_FIELD_NAMES = ["session_id", "transcript_path", "agent_transcript_path", "cwd", "hook_event_name", "reason",
                "source", "trigger", "agent_type", "prompt_id", "stop_hook_active", "custom_instructions"]
_json_scalars = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
                 | st.text(max_size=30))
_json_values = st.recursive(_json_scalars, lambda inner: st.lists(inner, max_size=4)
                            | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=20)
_paths = st.sampled_from(["", "/", ".", "..", "/etc/passwd", "t.jsonl", "~/.claude/x.jsonl", "/dev/zero",
                          "/proc/self/environ", "CONFIG", "CONFIG/..", "CONFIG/../x.jsonl", "CONFIG/missing.jsonl",
                          "CONFIG/projects", "CONFIG\n/evil", "\x1b[2J"]) | st.text(max_size=40)


@pytest.mark.slow
@settings(COMMON, max_examples=60)
@given(payload=st.dictionaries(st.sampled_from(_FIELD_NAMES) | st.text(max_size=10), _json_values | _paths,
                               max_size=8),
       event=st.sampled_from(EVENTS))
def test_any_hook_object_is_handled_in_process(hook_sandbox, payload, event):
    """Whatever object the hook gets: no exception, at most one escaped line, nothing recorded."""
    project, config = hook_sandbox
    payload = {k: v.replace("CONFIG", str(config)) if isinstance(v, str) else v for k, v in payload.items()}
    before = log_bytes(project)
    env = {"CLAUDE_PROJECT_DIR": str(project), "CLAUDE_CONFIG_DIR": str(config), "HOME": str(config.parent),
           "PLAYBOOK_UPDATE_ON_EXIT": "1", "PLAYBOOK_UPDATE_ON_CLEAR": "1"}
    with mock.patch.dict(os.environ, env), mock.patch("playbook.learner.requests.spawn_learner") as spawn:
        out, err = call_hook(event, json.dumps(payload).encode())
    assert_one_clean_line(err, payload)
    assert log_bytes(project) == before, payload
    assert not spawn.called


@pytest.fixture(scope="module")
def hook_sandbox(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("hook-sandbox")
    project, config = root / "proj", root / "claude-config"
    (config / "projects").mkdir(parents=True)
    project.mkdir()
    seed(project, "use pathlib")
    return project, config


def call_hook(event: str, stdin: bytes) -> tuple[bytes, bytes]:
    """run_hook in this process: (stdout bytes, stderr bytes)."""
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="backslashreplace")
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert run_hook(event, io.TextIOWrapper(io.BytesIO(stdin))) == 0
    out.flush()
    err.flush()
    return out.buffer.getvalue(), err.buffer.getvalue()


def test_a_hook_with_stdin_closed_says_so(tmp_path):
    result = subprocess.run(f'"{sys.executable}" -m playbook hook PreCompact <&-', shell=True, capture_output=True,
                            env=clean_env(HOME=str(tmp_path), CLAUDE_PROJECT_DIR=str(tmp_path)), timeout=60)
    assert result.returncode == 0
    assert_one_clean_line(result.stderr, "stdin closed")
    assert b"stdin is closed" in result.stderr and log_bytes(tmp_path) is None


# === 2. transcript paths ==================================================================================


@pytest.fixture
def sandbox(tmp_path, monkeypatch) -> Iterator[tuple[Path, Path, list]]:
    """(project, ~/.claude, spawned learners): HOME is a temp dir; the learner is not started."""
    home, project = tmp_path / "home", tmp_path / "proj"
    config = home / ".claude"
    project.mkdir()
    sessions_of(project, config).mkdir(parents=True)
    for name in list(os.environ):
        if name.startswith(("ANTHROPIC_", "AGENTIC_CONTEXT_", "CLAUDE_CONFIG_DIR")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))
    monkeypatch.setenv("PLAYBOOK_UPDATE_ON_EXIT", "1")
    spawned: list = []
    monkeypatch.setattr("playbook.learner.requests.spawn_learner", spawned.append)
    yield project, config, spawned


def transcript_file(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(TRANSCRIPTS / "tool_use_resumed.jsonl", path)
    return path


def hook_input(event: str, path: object) -> bytes:
    key = "agent_transcript_path" if event == "SubagentStop" else "transcript_path"
    return json.dumps({"hook_event_name": event, "session_id": "s", "reason": "other", key: path}).encode()


def requested(project: Path) -> list[LearningRequested]:
    if log_bytes(project) is None:
        return []
    return [e for e in all_events(project) if isinstance(e, LearningRequested)]


@pytest.mark.parametrize("event", LEARNING_EVENTS)
def test_a_transcript_under_the_claude_directory_is_accepted(sandbox, event):
    project, config, spawned = sandbox
    path = transcript_file(sessions_of(project, config) / "s.jsonl")
    out, err = call_hook(event, hook_input(event, str(path)))
    assert (out, err) == (b"", b"")
    assert [(e.hook, e.transcript) for e in requested(project)] == [(event, str(path))]
    assert spawned == [project]


@pytest.mark.parametrize("where", ["elsewhere", "dot-dot", "symlink-out", "sibling-prefix", "home-not-config"])
@pytest.mark.parametrize("event", LEARNING_EVENTS)
def test_a_transcript_outside_the_claude_directory_is_refused(sandbox, tmp_path, monkeypatch, event, where):
    project, config, spawned = sandbox
    outside = transcript_file(tmp_path / "secrets" / "s.jsonl")
    if where == "elsewhere":
        given_path = str(outside)
    elif where == "dot-dot":  # lexically under ~/.claude, really not
        given_path = f"{config}/projects/-proj/../../../secrets/s.jsonl"
    elif where == "symlink-out":
        link = sessions_of(project, config) / "link.jsonl"
        link.symlink_to(outside)
        given_path = str(link)
    elif where == "sibling-prefix":  # ~/.claude-evil starts with ~/.claude but is not under it
        given_path = str(transcript_file(config.with_name(".claude-evil") / "s.jsonl"))
    else:  # CLAUDE_CONFIG_DIR moves the directory: ~/.claude is then outside
        given_path = str(transcript_file(sessions_of(project, config) / "s.jsonl"))
        monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "config"))
        (tmp_path / "config").mkdir()
    out, err = call_hook(event, hook_input(event, given_path))
    assert_one_clean_line(err, where)
    assert b"is outside" in err and b"nothing to learn" in err
    assert os.path.realpath(claude_config_dir()).encode() in err
    assert out == b"" and requested(project) == [] and spawned == []
    assert log_bytes(project) is None


def test_claude_config_dir_is_honoured_and_resolved(sandbox, tmp_path, monkeypatch):
    project, _config, spawned = sandbox
    real = tmp_path / "real-config"
    real.mkdir()
    (tmp_path / "linked-config").symlink_to(real, target_is_directory=True)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "linked-config"))
    assert claude_config_dir() == str(real)
    slug = sessions_of(project, real).name
    for given_path in (tmp_path / "linked-config" / "projects" / slug / "a.jsonl", real / "projects" / slug / "b.jsonl"):
        transcript_file(given_path)
        out, err = call_hook("PreCompact", hook_input("PreCompact", str(given_path)))
        assert (out, err) == (b"", b""), given_path
    assert len(requested(project)) == 2 and len(spawned) == 2


@pytest.mark.parametrize("kind", ["missing", "directory", "fifo", "under-a-file", "unreadable", "dangling-link"])
@pytest.mark.parametrize("event", LEARNING_EVENTS)
def test_an_unusable_transcript_inside_is_one_clear_line(sandbox, event, kind):
    project, config, spawned = sandbox
    path = sessions_of(project, config) / "s.jsonl"
    if kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "under-a-file":
        transcript_file(path)
        path = path / "agent.jsonl"
    elif kind == "unreadable":
        transcript_file(path).chmod(0)
        if os.access(path, os.R_OK):
            pytest.skip("running as root: chmod 000 does not stop reads (the FIFO and under-a-file cases cover it)")
    elif kind == "dangling-link":
        path.symlink_to(sessions_of(project, config) / "gone.jsonl")
    out, err = call_hook(event, hook_input(event, str(path)))
    assert_one_clean_line(err, kind)
    assert b"missing or unreadable" in err and str(path).encode() in err
    assert out == b"" and requested(project) == [] and spawned == []


@pytest.mark.slow
@pytest.mark.parametrize("event", LEARNING_EVENTS)
def test_refused_transcripts_as_real_processes(tmp_path, event):
    project, home = tmp_path / "proj", tmp_path / "home"
    (home / ".claude" / "projects").mkdir(parents=True)
    project.mkdir()
    outside = transcript_file(tmp_path / "elsewhere.jsonl")
    env = clean_env(HOME=str(home), CLAUDE_PROJECT_DIR=str(project), PLAYBOOK_UPDATE_ON_EXIT="1")
    for given_path in (str(outside), f"{home}/.claude/projects/../../../elsewhere.jsonl"):
        result = subprocess.run([sys.executable, "-m", "playbook", "hook", event], input=hook_input(event, given_path),
                                capture_output=True, env=env, cwd=project, timeout=60)
        assert result.returncode == 0 and result.stdout == b""
        assert_one_clean_line(result.stderr, given_path)
        assert result.stderr == (f"playbook: {event}: transcript {given_path} is outside "
                                 f"{sessions_of(project, home / '.claude')}, this project's sessions; "
                                 "nothing to learn\n").encode()
    assert log_bytes(project) is None


@pytest.mark.parametrize("kind", ["fifo", "directory", "missing", "under-a-file", "dev-zero"])
def test_read_transcript_refuses_what_is_not_a_regular_file_without_blocking(tmp_path, kind):
    path = tmp_path / "t.jsonl"
    if kind == "fifo":
        os.mkfifo(path)  # opening it for reading used to block until a writer came: forever
    elif kind == "directory":
        path.mkdir()
    elif kind == "under-a-file":
        path.write_text("{}\n")
        path = path / "x.jsonl"
    elif kind == "dev-zero":
        path = Path("/dev/zero")  # never ends
    with time_limit(5), pytest.raises(TranscriptError, match="cannot read transcript"):
        read_transcript(path)


@pytest.mark.slow
def test_the_learner_skips_a_transcript_that_became_unusable(learning_project, tmp_path, monkeypatch):
    """Between the hook and the learner the file can go away or be replaced: a recorded skip, no hang."""
    project = learning_project
    sessions = sessions_of(project, tmp_path)
    sessions.mkdir(parents=True)
    kinds = {"fifo": sessions / "fifo.jsonl", "directory": sessions / "dir.jsonl",
             "missing": sessions / "gone.jsonl", "under-a-file": sessions / "file.jsonl" / "x.jsonl"}
    os.mkfifo(kinds["fifo"])
    kinds["directory"].mkdir()
    (sessions / "file.jsonl").write_text("{}\n")
    with FakeAnthropic(models()) as api:
        use(api, monkeypatch)
        for path in kinds.values():
            request_learning(project, "SessionEnd", str(path), "s")
        with time_limit(30):
            outcomes = learn_pending(project)
        assert api.message_requests() == []
    assert [o.status for o in outcomes] == ["skipped"] * 4
    skipped = {e.transcript: e.reason for e in all_events(project) if isinstance(e, LearningSkipped)}
    assert set(skipped) == {str(p) for p in kinds.values()}
    assert "not a regular file" in skipped[str(kinds["fifo"])]
    assert "directory" in skipped[str(kinds["directory"])]
    assert PlaybookRepository(project / ".claude").current()[0].pending == {}


# === 3. transcript contents ===============================================================================


def user_line(text: str) -> bytes:
    return json.dumps({"type": "user", "message": {"role": "user", "content": text}}).encode()


def assistant_line(text: str) -> bytes:
    return json.dumps({"type": "assistant", "message": {"role": "assistant",
                                                        "content": [{"type": "text", "text": text}]}}).encode()


def test_the_junk_fixture_keeps_every_good_message():
    transcript = read_transcript(HOSTILE / "transcript_junk.jsonl")
    assert (transcript.lines, transcript.broken_lines) == (13, 8)
    assert [(m.role, m.content) for m in transcript.messages] == [
        ("user", "first question"),
        ("assistant", "answer ? \x1b[31mred\x1b[0m [pat-001]"),  # the lone surrogate replaced, escapes kept as data
        ("user", "second"),
        ("assistant", "ok"),
    ]


@pytest.mark.slow
def test_giant_deep_binary_and_surrogate_lines_are_skipped_and_counted(tmp_path):
    path = tmp_path / "t.jsonl"
    with open(path, "wb") as handle:
        handle.write(user_line("before") + b"\n")
        handle.write(b'{"type":"user","message":{"role":"user","content":"' + b"x" * (30 << 20) + b'"}}\n')
        handle.write(b"[" * 100_000 + b"]" * 100_000 + b"\n")
        handle.write(b'{"type":"user","message":{"role":"user","content":' + b"[" * 100_000 + b"\n")
        handle.write(_rng.randbytes(1 << 20).replace(b"\n", b" ") + b"\n")
        handle.write(b'{"type":"assistant","message":{"role":"assistant","content":"lone \\udc00 surrogate"}}\n')
        handle.write(b'{"type":"user","message":{"role":"user","content":"' + "é".encode() * (1 << 20) + b'"}}\n')
        handle.write(assistant_line("after") + b"\n")
        handle.write(b"\xff\xfe never finished")  # a last line without its newline: left for the next read
    with time_limit(30):
        transcript = read_transcript(path)
    assert transcript.broken_lines == 5  # the 30 MB line, both deep ones, the junk, the 2 MB line (over 1 MB)
    assert transcript.lines == 8
    assert [(m.role, m.content) for m in transcript.messages] == [
        ("user", "before"), ("assistant", "lone ? surrogate\nafter")]
    again = read_transcript(path, start_line=transcript.lines)
    assert (again.messages, again.lines) == ([], 8)


_junk_lines = st.one_of(
    st.binary(min_size=1, max_size=40).map(lambda b: b"\xff" + b.replace(b"\n", b"")),  # never valid UTF-8
    st.sampled_from([b"[1]", b'"s"', b"42", b"null", b"true", b"   ", b"", b'{"type":"user"}',
                     b'{"type":"assistant","message":7}', b'{"type":"user","message":{"content":{}}}',
                     b"[" * 5000, b'{"a":' * 5000, b'{"type":"user","message":{"content":"' + b"x" * 3000]),
)
_good_texts = st.text(min_size=1, max_size=40).filter(
    lambda t: t.strip() and not t.lstrip().startswith("<")).map(lambda t: t + "\x1b[0m")


@pytest.mark.slow
@settings(COMMON, max_examples=60)
@given(items=st.lists(st.one_of(_junk_lines.map(lambda b: ("junk", b)),
                                st.tuples(st.sampled_from(["user", "assistant"]), _good_texts)), max_size=25))
def test_junk_between_good_records_never_raises_and_loses_no_good_message(items):
    lines, expected, broken = [], [], 0
    for role, value in items:
        if role == "junk":
            lines.append(value)
            broken += 1
            continue
        lines.append(user_line(value) if role == "user" else assistant_line(value))
        text = value.strip()
        if expected and expected[-1][0] == role:
            expected[-1] = (role, f"{expected[-1][1]}\n{text}")
        else:
            expected.append((role, text))
    with tempfile.NamedTemporaryFile("wb", suffix=".jsonl") as handle:
        handle.write(b"".join(line + b"\n" for line in lines))
        handle.flush()
        transcript = read_transcript(handle.name, max_line_bytes=2000)
    assert (transcript.lines, transcript.broken_lines) == (len(lines), broken)
    assert [(m.role, m.content) for m in transcript.messages] == expected


# === 4. model replies, through the real learning cycle ====================================================

REFLECTION = {"analysis": "The tests were run first, as pat-001 says.",
              "bullet_tags": [{"name": "pat-001", "tag": "helpful", "rationale": "it was followed"}]}
CURATION = {"reasoning": "Nothing to add.", "operations": []}


def as_reply(value: object) -> Reply:
    if isinstance(value, Reply):
        return value
    return reply_text(value if isinstance(value, str) else json.dumps(value))


def models(reflector: object = None, curator: object = None):
    def respond(body: dict) -> Reply:
        text = request_texts(body)
        if "You are the reflector" in text:
            return as_reply(REFLECTION if reflector is None else reflector)
        if "You are the curator" in text:
            return as_reply(CURATION if curator is None else curator)
        return reply_text("Done.")
    return respond


def use(api: FakeAnthropic, monkeypatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)


def strip_model_env(monkeypatch) -> None:
    for name in list(os.environ):
        if name.startswith(("ANTHROPIC_", "AGENTIC_CONTEXT_")):
            monkeypatch.delenv(name)


@pytest.fixture
def learning_project(tmp_path, monkeypatch) -> Path:
    strip_model_env(monkeypatch)
    monkeypatch.setenv("PLAYBOOK_RETRY_BASE_DELAY", "0.01")
    monkeypatch.setenv("PLAYBOOK_LEARN_DEADLINE", "30")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path))  # Claude Code's directory: the learner reads only transcripts inside it
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))
    seed(project, "run the tests before committing", "never force-push")
    return project


def entries(project: Path) -> dict[str, tuple[str, int, int]]:
    state = PlaybookRepository(project / ".claude").current()[0]
    return {kp.name: (kp.text, kp.helpful, kp.harmful) for _, kp in state.entries()}


def assert_secret_nowhere(project: Path, *outputs: bytes | str) -> None:
    for path in (project / ".claude").rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
    for output in outputs:
        assert SECRET not in (output if isinstance(output, str) else output.decode("utf-8", "replace"))


_counter = iter(range(10**9))


def learn_once(project: Path, tmp_path: Path, api: FakeAnthropic, monkeypatch):
    """One learning request over a fresh copy of a real transcript; (outcome, events of the last transaction)."""
    use(api, monkeypatch)
    path = transcript_file(sessions_of(project, tmp_path) / f"s{next(_counter)}.jsonl")
    request_learning(project, "SessionEnd", str(path), "s")
    outcomes = learn_pending(project)
    assert len(outcomes) == 1
    last = list(PlaybookRepository(project / ".claude").store.read())[-1]
    return outcomes[0], last.events


DEEP = 100_000
FAILING_REPLIES = {
    "reflector empty": ("", None),
    "curator empty": (None, ""),
    "reflector truncated": ('{"analysis": "cut off", "bullet_tags": [{"name": "pat-', None),
    "curator truncated": (None, '{"reasoning": "r", "operations": [{"type": "ADD", "text": "half'),
    "reflector nested 100k lists": ("[" * DEEP + "]" * DEEP, None),
    "curator nested 100k objects": (None, '{"a":' * DEEP + "1" + "}" * DEEP),
    "reflector only control characters": ("\x00\x1b[2J\x07\r" * 100, None),
    # 200 answers that are not Messages replies: these used to kill the learner (JSONDecodeError,
    # TypeError, AttributeError, RecursionError) and leave the request pending
    "200 not JSON": (Reply(body=b"<html>502 Bad Gateway</html>"), None),
    "200 empty body": (Reply(body=b""), None),
    "200 a JSON list": (None, Reply(body=b"[]")),
    "200 content null": (Reply(body=(HOSTILE / "model_reply_no_content.json").read_bytes()), None),
    "200 text null": (None, Reply(body=(HOSTILE / "model_reply_text_null.json").read_bytes())),
    "200 nested 100k": (Reply(body=b'{"content":' + b"[" * DEEP + b"]" * DEEP + b"}"), None),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(FAILING_REPLIES))
def test_an_unusable_reply_is_a_recorded_failure_and_changes_nothing(learning_project, tmp_path, monkeypatch,
                                                                     capfd, case):
    project = learning_project
    before = entries(project)
    with FakeAnthropic(models(*FAILING_REPLIES[case])) as api:
        outcome, events = learn_once(project, tmp_path, api, monkeypatch)
    assert outcome.status == "failed" and outcome.detail
    failed = [e for e in events if isinstance(e, LearningFailed)]
    calls = [e for e in events if isinstance(e, ModelCallRecorded)]
    # the failure, and what the calls that led to it used: nothing else
    assert len(events) == 1 + len(calls) and calls and failed and failed[0].error == outcome.detail
    assert entries(project) == before
    # kept for a retry after its delay, so the next learner does not take it first again at once
    assert [p.attempts for p in PlaybookRepository(project / ".claude").current()[0].pending.values()] == [1]
    assert learn_pending(project) == []
    captured = capfd.readouterr()
    assert_secret_nowhere(project, captured.out, captured.err)


@pytest.mark.slow
@pytest.mark.parametrize("where", ["elsewhere", "link out", "dot-dot", "sibling prefix", "another project's session",
                                   "not made here"])
def test_learn_pending_reads_no_transcript_a_shipped_log_names_outside_claude_codes_directory(tmp_path, where):
    """A log the repository carries can hold any `LearningRequested`: `playbook learn --pending`, as the hooks
    start it, reads only this project's own sessions in $CLAUDE_CONFIG_DIR (resolved), and only for requests
    this machine made; it records the others as skipped with the reason, and still learns the next request."""
    project, home, config = tmp_path / "project", tmp_path / "home", tmp_path / "config"
    project.mkdir()
    private = transcript_file(home / "notes.jsonl")
    with private.open("a") as handle:
        handle.write(json.dumps({"type": "user", "message": {"role": "user", "content": "PRIVATE-4f1e notes"}}) + "\n")
    sessions = sessions_of(project, config)
    sessions.mkdir(parents=True)
    if where == "link out":
        (sessions / "linked.jsonl").symlink_to(private)
        named = str(sessions / "linked.jsonl")
    elif where == "dot-dot":
        named = str(sessions / ".." / ".." / ".." / "home" / "notes.jsonl")
    elif where in ("sibling prefix", "another project's session", "not made here"):
        named = str(transcript_file({"sibling prefix": tmp_path / "config-evil",  # starts with config, not inside
                                     "another project's session": config / "projects" / "-home-u-other",
                                     "not made here": sessions}[where] / "s.jsonl"))
        with open(named, "a") as handle:
            handle.write(json.dumps({"type": "user", "message": {"role": "user", "content": "PRIVATE-4f1e"}}) + "\n")
    else:
        named = str(private)
    if where == "not made here":  # in the log as a clone brings it: never noted on this machine
        repo = PlaybookRepository(project / ".claude")
        repo.append([RequestLearning(request="f00dfeedf00dfeed", hook="SessionEnd", transcript=named, session="s-1")],
                    Cause(source="hook:SessionEnd", session="s-1"))
        hostile = "f00dfeedf00dfeed"
        reason = f"request {hostile} was not made on this machine (the log came from elsewhere); transcript " \
                 f"{named} not learned from"
    else:
        hostile = request_learning(project, "SessionEnd", named, "s-1")
        reason = f"transcript {named} is outside {sessions}, this project's sessions; not learned from"
    honest = request_learning(project, "SessionEnd", str(transcript_file(sessions / "s-2.jsonl")), "s-2")
    with FakeAnthropic(models()) as api:
        env = clean_env(CLAUDE_PROJECT_DIR=str(project), CLAUDE_CONFIG_DIR=str(config), HOME=str(home),
                        ANTHROPIC_BASE_URL=api.url, ANTHROPIC_API_KEY=SECRET, PLAYBOOK_CLAUDE="")
        result = subprocess.run([sys.executable, "-m", "playbook", "learn", "--pending"], capture_output=True,
                                text=True, env=env, cwd=project, timeout=120)
        sent = [json.dumps(request.body) for request in api.message_requests()]
    assert (result.returncode, result.stderr) == (0, ""), result.stderr
    assert result.stdout.splitlines() == [f"{hostile}: skipped: {reason}", f"{honest}: completed"], result.stdout
    assert sent and not any("PRIVATE-4f1e" in body for body in sent)
    skipped = [e for e in all_events(project) if isinstance(e, LearningSkipped)]
    assert [(e.request, e.reason, e.transcript) for e in skipped] == [(hostile, reason, named)]
    assert b"PRIVATE-4f1e" not in log_bytes(project)


@pytest.mark.slow
def test_the_learner_process_survives_a_reply_that_is_not_a_message(learning_project, tmp_path):
    """As the hooks start it: `playbook learn --pending` in its own process, exit 0, no traceback, and a
    later request is not blocked behind the poisoned one."""
    project = learning_project
    with FakeAnthropic(models(Reply(body=b"\x00 not a reply"))) as api:
        env = clean_env(CLAUDE_PROJECT_DIR=str(project), CLAUDE_CONFIG_DIR=str(tmp_path), ANTHROPIC_BASE_URL=api.url,
                        ANTHROPIC_API_KEY=SECRET, PLAYBOOK_RETRY_BASE_DELAY="0.01")
        for index in range(2):
            path = transcript_file(sessions_of(project, tmp_path) / f"t{index}.jsonl")
            request_learning(project, "SessionEnd", str(path), "s")
        result = subprocess.run([sys.executable, "-m", "playbook", "learn", "--pending"], capture_output=True,
                                text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr and result.stdout.count(": failed: ") == 2, result.stdout
    assert [p.attempts for p in PlaybookRepository(project / ".claude").current()[0].pending.values()] == [1, 1]
    assert_secret_nowhere(project, result.stdout, result.stderr)


def deep(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


def skips(events: list, kind: str) -> list[tuple[int | None, str]]:
    return [(e.index, e.reason) for e in events if isinstance(e, OperationSkipped) and e.kind == kind]


@pytest.mark.slow
def test_deep_but_parseable_replies_are_skipped_item_by_item(learning_project, tmp_path, monkeypatch):
    project = learning_project
    before = entries(project)
    reflector = {"analysis": deep(400), "bullet_tags": [{"name": deep(400), "tag": "helpful"},
                                                        {"name": "pat-001", "tag": deep(400)}, deep(400)]}
    curator = {"reasoning": deep(400), "operations": [deep(400), {"type": deep(400)},
                                                      {"type": "DELETE", "target_id": deep(400)},
                                                      {"type": "ADD", "text": deep(400)}]}
    with FakeAnthropic(models(reflector, curator)) as api:
        outcome, events = learn_once(project, tmp_path, api, monkeypatch)
    assert outcome.status == "completed"
    assert skips(events, "evaluation") == [(0, "unknown_id"), (1, "unknown_rating"), (2, "not_an_object")]
    assert skips(events, "operation") == [(0, "not_an_object"), (1, "unknown_type"), (2, "empty_target_id"),
                                          (3, "invalid_text")]
    assert entries(project) == before
    assert any(isinstance(e, LearningCompleted) for e in events)


@pytest.mark.slow
def test_hundreds_of_operations_apply_ten_and_record_the_rest(learning_project, tmp_path, monkeypatch):
    project = learning_project
    operations = [{"type": "ADD", "text": f"point {i}", "section": "USER PREFERENCES"} for i in range(300)]
    with FakeAnthropic(models(curator={"reasoning": "many", "operations": operations})) as api:
        outcome, events = learn_once(project, tmp_path, api, monkeypatch)
    assert outcome.status == "completed"
    added = [e.text for e in events if isinstance(e, KeyPointAdded)]
    assert added == [f"point {i}" for i in range(10)]
    truncated = [e for e in events if isinstance(e, OperationSkipped) and e.reason == "truncated"]
    assert len(truncated) == 1 and truncated[0].index == 10 and len(truncated[0].operation) == 290
    assert truncated[0].operation[-1] == operations[-1]  # what was cut is kept, in full
    assert len(entries(project)) == 12


@pytest.mark.slow
def test_ids_that_do_not_exist_are_skipped_and_recorded(learning_project, tmp_path, monkeypatch):
    project = learning_project
    before = entries(project)
    reflector = {"analysis": "a", "bullet_tags": [{"name": "nope-404", "tag": "harmful"},
                                                  {"name": "pat-999", "tag": "helpful"}]}
    curator = {"reasoning": "r", "operations": [
        {"type": "UPDATE", "target_id": "pat-404", "text": "x"},
        {"type": "DELETE", "target_id": "mis-404", "reason": "gone"},
        {"type": "MERGE", "source_ids": ["pat-001", "ctx-404"], "merged_text": "merged"},
        {"type": "MERGE", "source_ids": ["nope-1", "nope-2", "nope-3"], "merged_text": "merged"},
        {"type": "UPDATE", "target_id": "", "text": "x"},
        {"type": "DELETE"},
    ]}
    with FakeAnthropic(models(reflector, curator)) as api:
        outcome, events = learn_once(project, tmp_path, api, monkeypatch)
    assert outcome.status == "completed"
    assert skips(events, "evaluation") == [(0, "unknown_id"), (1, "unknown_id")]
    assert skips(events, "operation") == [(0, "unknown_id"), (1, "unknown_id"), (2, "too_few_sources"),
                                          (3, "too_few_sources"), (4, "empty_target_id"), (5, "empty_target_id")]
    assert entries(project) == before


@pytest.mark.slow
def test_megabyte_texts_are_cut_and_the_cut_is_recorded(learning_project, tmp_path, monkeypatch):
    project = learning_project
    big = "long " * 400_000  # 2 MB
    curator = {"reasoning": "r" * (1 << 20), "operations": [
        {"type": "ADD", "text": big, "section": "PROJECT CONTEXT"},
        {"type": "UPDATE", "target_id": "pat-001", "text": "u" * (256 << 10)},
        {"type": "MERGE", "source_ids": ["pat-001", "pat-002"], "merged_text": "m" * (256 << 10)},
    ]}
    with FakeAnthropic(models(curator=curator)) as api:
        outcome, events = learn_once(project, tmp_path, api, monkeypatch)
    assert outcome.status == "completed"
    added = next(e for e in events if isinstance(e, KeyPointAdded))
    updated = next(e for e in events if isinstance(e, KeyPointUpdated))
    merged = next(e for e in events if isinstance(e, KeyPointsMerged))
    assert (added.text, added.cut_from) == (big[:MAX_TEXT_LENGTH], len(big))
    assert (updated.text, updated.cut_from) == ("u" * MAX_TEXT_LENGTH, 256 << 10)
    assert (merged.text, merged.cut_from) == ("m" * MAX_TEXT_LENGTH, 256 << 10)
    assert all(len(text) <= MAX_TEXT_LENGTH for text, _, _ in entries(project).values())
    assert verify(PlaybookRepository(project / ".claude")).ok


HOSTILE_TEXT = "\x1b[2J\x1b[31mred\x07bell\r\nnew line\x00nul\u202eevil\u2028sep\x9b31m\x08"


@pytest.mark.slow
def test_terminal_escapes_are_stored_as_data_and_never_printed_raw(learning_project, tmp_path, monkeypatch):
    project = learning_project
    reflector = {"analysis": f"analysis {HOSTILE_TEXT}", "bullet_tags": [
        {"name": "pat-001", "tag": "helpful", "rationale": f"why {HOSTILE_TEXT}"}]}
    curator = {"reasoning": f"reasoning {HOSTILE_TEXT}", "operations": [
        {"type": "ADD", "text": f"added {HOSTILE_TEXT}", "section": f"SECTION {HOSTILE_TEXT}"},
        {"type": "UPDATE", "target_id": "pat-002", "text": f"updated {HOSTILE_TEXT}"},
        {"type": "DELETE", "target_id": f"pat-{HOSTILE_TEXT}"}]}
    with FakeAnthropic(models(reflector, curator)) as api:
        outcome, events = learn_once(project, tmp_path, api, monkeypatch)
    assert outcome.status == "completed"
    # stored exactly as given: data, not something to clean up
    assert next(e for e in events if isinstance(e, KeyPointAdded)).text == f"added {HOSTILE_TEXT}"
    assert next(e for e in events if isinstance(e, KeyPointEvaluated)).rationale == f"why {HOSTILE_TEXT}"
    last = list(PlaybookRepository(project / ".claude").store.read())[-1]
    assert last.commit.analysis == f"analysis {HOSTILE_TEXT}"
    commands = [["show"], ["show", "--json"], ["log", "-v"], ["log", "--json"], ["history", "oth-001"],
                ["history", "pat-002", "-v"], ["stats"], ["diff", "1"], ["verify"]]

    def run(args: list[str]) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "playbook", "--project", str(project), *args],
                              capture_output=True, env=clean_env(), timeout=60)

    with ThreadPoolExecutor(max_workers=5) as pool:
        results = dict(zip(map(" ".join, commands), pool.map(run, commands)))
    for name, result in results.items():
        assert result.returncode == 0 and b"Traceback" not in result.stderr, (name, result.stderr)
        for raw in RAW_CONTROLS:
            assert raw not in result.stdout + result.stderr, (name, raw)
    assert rb"added \x1b[2J\x1b[31mred\x07bell\r\nnew line\x00nul\u202eevil\u2028sep\x9b31m\x08" in results[
        "show"].stdout
    assert b"\\u001b[2J" in results["show --json"].stdout
    assert rb"\x1b[31mred" in results["log -v"].stdout
    shown = json.loads(results["log --json"].stdout)
    assert f"added {HOSTILE_TEXT}" in strings(shown)  # --json gives the data back exactly


def test_the_spec_api_never_prints_a_models_escapes_raw(legacy_project, capfd):
    pb = playbook.load_playbook()
    playbook.update_playbook_data(pb, {"operations": [{"type": "UPDATE", "target_id": f"x{HOSTILE_TEXT}",
                                                       "text": "t"}]})
    err = capfd.readouterr().err.encode()
    assert err.count(b"\n") <= 1
    for raw in RAW_CONTROLS:
        assert raw not in err, raw


def strings(value: object) -> set[str]:
    if isinstance(value, str):
        return {value}
    if isinstance(value, dict):
        return {s for v in value.values() for s in strings(v)}
    if isinstance(value, list):
        return {s for v in value for s in strings(v)}
    return set()


@pytest.mark.slow
def test_a_key_the_model_quotes_back_is_redacted_before_it_is_recorded(learning_project, tmp_path, monkeypatch,
                                                                      capfd):
    """A transcript can hold the key (`export ANTHROPIC_API_KEY=...`); a model that quotes it must not
    put it in the log, the snapshot or the SessionStart injection."""
    project = learning_project
    reflector = {"analysis": f"The user exported ANTHROPIC_API_KEY={SECRET}.", "bullet_tags": [
        {"name": "pat-001", "tag": "helpful", "rationale": SECRET}]}
    curator = {"reasoning": f"remember {SECRET}", "operations": [
        {"type": "ADD", "text": f"The API key is {SECRET}", "section": "PROJECT CONTEXT"}]}
    with FakeAnthropic(models(reflector, curator)) as api:
        outcome, events = learn_once(project, tmp_path, api, monkeypatch)
    assert outcome.status == "completed"
    assert entries(project)["ctx-001"][0] == "The API key is [redacted credential]"
    captured = capfd.readouterr()
    assert_secret_nowhere(project, captured.out, captured.err)


_ops_strategy = st.lists(st.one_of(
    _json_values,
    st.fixed_dictionaries({"type": st.sampled_from(["ADD", "UPDATE", "MERGE", "DELETE", "add", "", "NOPE"])
                           | _json_values},
                          optional={"text": _json_values | st.text(max_size=20),
                                    "target_id": _json_values | st.sampled_from(["pat-001", "pat-002", "oth-001"]),
                                    "source_ids": _json_values | st.lists(st.sampled_from(["pat-001", "pat-002",
                                                                                          "x"]), max_size=3),
                                    "merged_text": _json_values | st.text(max_size=20),
                                    "section": _json_values | st.sampled_from(list(SECTION_SLUGS)),
                                    "reason": _json_values}),
), max_size=14) | _json_values


@pytest.mark.slow
@settings(COMMON, max_examples=15)
@given(operations=_ops_strategy, tags=_json_values)
def test_operations_of_every_wrong_type_through_the_cycle(learning_sandbox, operations, tags):
    project, tmp_path, holder, api = learning_sandbox
    holder["reflector"] = {"analysis": "a", "bullet_tags": tags}
    holder["curator"] = {"reasoning": "r", "operations": operations}
    path = transcript_file(sessions_of(project, tmp_path) / f"s{next(_counter)}.jsonl")
    env = {"CLAUDE_PROJECT_DIR": str(project), "CLAUDE_CONFIG_DIR": str(tmp_path), "ANTHROPIC_BASE_URL": api.url,
           "ANTHROPIC_API_KEY": SECRET, "PLAYBOOK_RETRY_BASE_DELAY": "0.01", "PLAYBOOK_LEARN_DEADLINE": "30"}
    stripped = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "AGENTIC_CONTEXT_"))}
    with mock.patch.dict(os.environ, stripped | env, clear=True):
        request_learning(project, "SessionEnd", str(path), "s")
        [outcome] = learn_pending(project)
    assert outcome.status == "completed", outcome
    last = list(PlaybookRepository(project / ".claude").store.read())[-1]
    applied = [e for e in last.events if isinstance(e, (KeyPointAdded, KeyPointUpdated, KeyPointDeleted,
                                                        KeyPointsMerged))]
    skipped = [e for e in last.events if isinstance(e, OperationSkipped) and e.kind == "operation"]
    if isinstance(operations, list):
        given_count = min(len(operations), 10)
        truncated = [e for e in skipped if e.reason == "truncated"]
        assert len(truncated) == (len(operations) > 10)
        assert len(applied) + len(skipped) - len(truncated) == given_count
    else:
        assert applied == [] and [e.reason for e in skipped] == ["not_a_list"]
    repo = PlaybookRepository(project / ".claude")
    assert repo.current()[0].pending == {}
    assert all(isinstance(text, str) and 0 < len(text) <= MAX_TEXT_LENGTH for text, _, _ in entries(project).values())


@pytest.fixture(scope="module")
def learning_sandbox(tmp_path_factory) -> Iterator[tuple[Path, Path, dict, FakeAnthropic]]:
    root = tmp_path_factory.mktemp("learning-sandbox")
    project = root / "project"
    project.mkdir()
    seed(project, "run the tests before committing", "never force-push")
    holder: dict = {}
    with FakeAnthropic(lambda body: as_reply(holder["reflector"] if "You are the reflector" in request_texts(body)
                                             else holder["curator"])) as api:
        yield project, root, holder, api
    assert verify(PlaybookRepository(project / ".claude")).ok
    assert_secret_nowhere(project)


# === 5. legacy playbook.json ==============================================================================


@pytest.fixture
def legacy_project(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(tmp_path))
    (tmp_path / ".claude").mkdir()
    return tmp_path


@pytest.mark.parametrize("odd", ["pat-\u00b2", "pat-\u0663", "pat-0009", "pat-x7", "pat-007\n", "pat-12 ", "pat-"])
def test_names_with_odd_digits_are_kept_and_new_ids_follow_generate_keypoint_name(legacy_project, odd):
    # "pat-²" passes str.isdigit but not int(); "pat-٣" is a decimal digit that \d and int() both take.
    entries = [{"name": "pat-001", "text": "a", "helpful": 0, "harmful": 0},
               {"name": odd, "text": "b", "helpful": 0, "harmful": 0}]
    expected = playbook.generate_keypoint_name(entries, "pat")
    pb = {"version": "1.0", "last_updated": None, "sections": {"PATTERNS & APPROACHES": entries}}
    added = playbook.apply_structured_operations(pb, [{"type": "ADD", "text": "c", "section": "PATTERNS & APPROACHES"}])
    assert [e["name"] for e in added["sections"]["PATTERNS & APPROACHES"]] == ["pat-001", odd, expected]
    write_legacy(legacy_project, pb)  # the same names through a legacy import and the log
    loaded = playbook.load_playbook()
    assert [e["name"] for e in loaded["sections"]["PATTERNS & APPROACHES"]] == ["pat-001", odd]
    loaded["sections"]["PATTERNS & APPROACHES"].append({"name": expected, "text": "c", "helpful": 0, "harmful": 0})
    playbook.save_playbook(loaded)
    assert playbook.load_playbook() == loaded


def test_a_lone_surrogate_in_a_text_is_saved_as_a_replacement_character(legacy_project):
    pb = playbook.load_playbook()
    pb = playbook.update_playbook_data(pb, {"new_key_points": ["good point", "half emoji \ud83d"],
                                            "evaluations": [{"name": "x\udc00", "rating": "helpful",
                                                             "rationale": "\ud800"}]})
    playbook.save_playbook(pb)
    texts = [e["text"] for e in playbook.load_playbook()["sections"]["OTHERS"]]
    assert texts == ["good point", "half emoji \ufffd"]
    assert [t.commit.seq for t in LogReader(legacy_project / ".claude" / "playbook.events.jsonl", strict=True)]


def test_a_legacy_file_with_a_lone_surrogate_escape_keeps_its_other_entries(legacy_project):
    entries = [{"name": f"kpt_{i:03d}", "text": f"point {i}", "helpful": i, "harmful": 0} for i in range(1, 6)]
    entries[2]["text"] = "bad \ud800"  # json.dumps writes the escape: valid JSON, no UTF-8 for it
    path = write_legacy(legacy_project, {"version": "1.0", "key_points": entries})
    original = path.read_bytes()
    loaded = playbook.load_playbook()["sections"]["OTHERS"]
    assert [e["text"] for e in loaded] == ["point 1", "point 2", "bad \ufffd", "point 4", "point 5"]
    assert [kept.read_bytes() for kept in path.parent.glob("playbook.json.legacy-*")] == [original]


def test_ids_and_counters_of_thousands_of_digits_neither_raise_nor_poison_the_log(legacy_project):
    playbook.save_playbook({"sections": {"PATTERNS & APPROACHES": [
        {"name": "pat-" + "9" * 4300, "text": "odd id", "helpful": 0, "harmful": 0}]}})
    pb = playbook.load_playbook()
    pb["sections"]["PATTERNS & APPROACHES"].clear()
    playbook.save_playbook(pb)
    added = playbook.update_playbook_data(playbook.load_playbook(), {"new_key_points": [
        {"text": "new", "section": "PATTERNS & APPROACHES"}]})
    assert [e["name"] for e in added["sections"]["PATTERNS & APPROACHES"]] == ["pat-001"]
    for name in ("pat-" + "5" * 5000, "kpt_" + "1" * 5000):
        pb = {"sections": {"PATTERNS & APPROACHES": [{"name": name, "text": "x", "helpful": 10**5000,
                                                      "harmful": -(10**5000)}]}}
        entries = pb["sections"]["PATTERNS & APPROACHES"]
        assert playbook.generate_keypoint_name(entries, "pat") == "pat-001"
        assert "x" in playbook.format_playbook(pb)
        out = playbook.apply_structured_operations(pb, [{"type": "ADD", "text": "y", "section": "PATTERNS & APPROACHES"}])
        assert [(e["name"], e["helpful"]) for e in out["sections"]["PATTERNS & APPROACHES"]] == [
            (name, MAX_COUNTER), ("pat-001", 0)]
        playbook.save_playbook(pb)
        assert playbook.load_playbook()["sections"]["PATTERNS & APPROACHES"][0]["helpful"] == MAX_COUNTER


def test_a_legacy_file_with_numbers_python_cannot_read_is_imported(legacy_project):
    path = legacy_project / ".claude" / "playbook.json"
    path.write_text('{"key_points": [{"name": "kpt_002", "text": "x", "score": ' + "9" * 5000 + '}, '
                    '{"name": "kpt_003", "text": "z", "helpful": -' + "9" * 5000 + "}, \"y\"]}")
    loaded = playbook.load_playbook()["sections"]["OTHERS"]
    assert [(e["name"], e["text"], e["helpful"]) for e in loaded] == [("kpt_002", "x", 0), ("kpt_003", "z", 0),
                                                                        ("kpt_001", "y", 0)]


def test_a_key_added_by_hand_to_playbook_json_is_recorded_not_lost(legacy_project):
    pb = playbook.load_playbook()
    playbook.update_playbook_data(pb, {"new_key_points": ["beta"]})
    playbook.save_playbook(pb)
    path = legacy_project / ".claude" / "playbook.json"
    data = json.loads(path.read_text())
    data["key_points"] = ["remember delta"]  # sections win (REQ-SECT-007): ignored, but kept in the log
    path.write_text(json.dumps(data))
    assert [e["text"] for e in playbook.load_playbook()["sections"]["OTHERS"]] == ["beta"]
    skipped = [e for e in all_events(legacy_project) if isinstance(e, OperationSkipped)]
    assert [(e.reason, e.operation) for e in skipped] == [("ignored_key_points", ["remember delta"])]


def test_an_entry_added_by_hand_under_an_unknown_section_records_where_it_was_found(legacy_project):
    pb = playbook.load_playbook()
    playbook.update_playbook_data(pb, {"new_key_points": ["beta"]})
    playbook.save_playbook(pb)
    path = legacy_project / ".claude" / "playbook.json"
    data = json.loads(path.read_text())
    data["sections"]["MY NOTES"] = [{"name": "note-1", "text": "by hand", "helpful": 0, "harmful": 0}]
    path.write_text(json.dumps(data))
    assert [e["name"] for e in playbook.load_playbook()["sections"]["OTHERS"]] == ["oth-001", "note-1"]
    added = [e for e in all_events(legacy_project) if isinstance(e, KeyPointAdded) and e.name == "note-1"]
    assert [(e.section, e.requested_section, e.origin) for e in added] == [("OTHERS", "MY NOTES", "manual_edit")]


@pytest.mark.parametrize("log_first", [False, True])
def test_an_unreadable_playbook_json_is_reported_on_one_line_with_where_it_is_kept(legacy_project, capsys,
                                                                                   log_first):
    if log_first:
        playbook.save_playbook({"sections": {"OTHERS": [{"name": "oth-001", "text": "a", "helpful": 0,
                                                         "harmful": 0}]}})
        capsys.readouterr()
    path = legacy_project / ".claude" / "playbook.json"
    path.write_bytes(b'{"key_points": ["a", "b",]}')  # a trailing comma
    texts = [e["text"] for e in playbook.load_playbook()["sections"]["OTHERS"]]
    assert texts == (["a"] if log_first else [])
    kept = list(path.parent.glob("playbook.json.unreadable-*"))
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("playbook: playbook.json could not be read")
    assert len(kept) == 1 and kept[0].name in lines[0]
    playbook.load_playbook()
    assert capsys.readouterr().err == ""  # said once, when it happened


def write_legacy(project: Path, data: object) -> Path:
    path = project / ".claude" / "playbook.json"
    path.write_bytes(data if isinstance(data, bytes) else json.dumps(data).encode())
    return path


def check_import(project: Path, data: object) -> dict:
    """load_playbook on a readable legacy file: what normalize_playbook says is imported, every rejection
    recorded, the log verifies, and saving what was loaded appends nothing."""
    pb = playbook.load_playbook()
    normalized = normalize_playbook(data)
    names = [e["name"] for entries_ in pb["sections"].values() for e in entries_]
    assert sorted(names) == sorted(e.name for e in normalized.entries)
    events = all_events(project)
    header = [e for e in events if isinstance(e, PlaybookImported)]
    assert len(header) == 1 and header[0].entries == len(normalized.entries)
    rejected = [e for e in events if isinstance(e, OperationSkipped)]
    assert all(e.kind == "import" for e in rejected)
    assert [(e.reason, e.detail) for e in rejected] == [(r.reason, r.detail) for r in normalized.rejected]
    repo = PlaybookRepository(project / ".claude")
    assert verify(repo).ok, verify(repo).problems
    size = repo.store.size()
    playbook.save_playbook(pb)
    assert repo.store.size() == size
    return pb


MALFORMED = {
    "top-level list": [{"text": "a"}],
    "top-level number": 42,
    "top-level string": "a playbook",
    "top-level null": None,
    "sections a list": {"sections": [{"text": "a"}]},
    "sections a string": {"sections": "PATTERNS"},
    "sections and key_points both junk": {"sections": 5, "key_points": {"a": 1}},
    "key_points a dict": {"key_points": {"name": "kpt_001", "text": "a"}},
    "deeply nested junk entries": {"key_points": [deep(600), {"text": "kept", "name": deep(600)},
                                                  {"text": deep(600)}]},
    "version and last_updated of wrong types": {"version": [1], "last_updated": {"a": 1}, "key_points": ["kept"]},
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_legacy_files_import_what_they_can(legacy_project, case):
    write_legacy(legacy_project, MALFORMED[case])
    check_import(legacy_project, MALFORMED[case])


def test_wrong_types_names_and_sections_fixture(legacy_project):
    data = json.loads((HOSTILE / "legacy_wrong_types.json").read_bytes())
    write_legacy(legacy_project, data)
    pb = check_import(legacy_project, data)
    assert [e["text"] for e in pb["sections"]["MISTAKES TO AVOID"]] == [
        "kept", "duplicate name", "number name", "list name", "empty name", "a bare string"]
    assert [e["name"] for e in pb["sections"]["OTHERS"]] == ["x-1"]
    imported = {e.text: e.original_name for e in all_events(legacy_project) if type(e).__name__ == "KeyPointImported"}
    assert imported["duplicate name"] == "mis-001" and imported["number name"] == "12"
    reasons = [e.reason for e in all_events(legacy_project) if isinstance(e, OperationSkipped)]
    assert reasons == ["not_a_list", *["not_an_object"] * 4, "empty_text", "empty_text", "invalid_text",
                       "not_a_list"]


def test_counters_of_every_wrong_kind_are_imported_and_the_rejection_recorded(legacy_project):
    data = json.loads((HOSTILE / "legacy_invalid_counters.json").read_bytes())
    write_legacy(legacy_project, data)
    pb = check_import(legacy_project, data)
    counters = {e["name"]: (e["helpful"], e["harmful"]) for e in pb["sections"]["PATTERNS & APPROACHES"]}
    assert counters == {"pat-001": (0, 0), "pat-002": (0, 1), "pat-003": (2, 0), "pat-004": (MAX_COUNTER, MAX_COUNTER),
                        "pat-005": (0, 0), "pat-006": (0, 0)}
    details = [e.detail for e in all_events(legacy_project) if isinstance(e, OperationSkipped)]
    assert details == [
        "helpful of pat-001: str '5', taken as 0", "harmful of pat-001: str 'lots', taken as 0",
        "helpful of pat-002: -3 is negative, taken as 0", "helpful of pat-003: 2.5 is not a whole number, taken as 2",
        f"helpful of pat-004: a number of 31 digits is larger than {MAX_COUNTER}, taken as {MAX_COUNTER}",
        f"harmful of pat-004: 1e+300 is larger than {MAX_COUNTER}, taken as {MAX_COUNTER}",
        "helpful of pat-005: NoneType None, taken as 0", "harmful of pat-005: bool True, taken as 0",
        "score of pat-006: str 'high', ignored"]
    original = [e.operation for e in all_events(legacy_project) if isinstance(e, OperationSkipped)][0]
    assert original == data["sections"]["PATTERNS & APPROACHES"][0]  # the entry as it was in the file


@pytest.mark.slow
def test_ten_thousand_entries_import_in_time(legacy_project):
    data = {"key_points": [{"name": "kpt_001" if i % 3 == 0 else i, "text": f"point {i}", "helpful": i % 5}
                           for i in range(10_000)]}
    write_legacy(legacy_project, data)
    started = time.perf_counter()
    pb = playbook.load_playbook()
    assert time.perf_counter() - started < 15
    assert len(pb["sections"]["OTHERS"]) == 10_000
    assert len({e["name"] for e in pb["sections"]["OTHERS"]}) == 10_000


@pytest.mark.parametrize("content", [b"\xef\xbb\xbf" + b'{"key_points": ["a BOM first"]}', b'{"a": NaN}',
                                     b'{"key_points": ["cut' , (HOSTILE / "legacy_lone_surrogate.json").read_bytes()])
def test_a_legacy_file_that_is_not_json_is_moved_aside_and_kept(legacy_project, content):
    """A file msgspec cannot read is moved aside and kept; one Python's json reads is imported, and kept."""
    path = write_legacy(legacy_project, content)
    playbook.load_playbook()
    kept = list(path.parent.glob("playbook.json.unreadable-*"))
    if kept:
        assert len(kept) == 1 and kept[0].read_bytes() == content
        first = all_events(legacy_project)[0]
        assert isinstance(first, PlaybookImported) and first.file_format == "unreadable"
        assert first.moved_aside == kept[0].name and first.error
    else:  # what Python's json reads (a BOM, NaN) is imported, and the original kept byte for byte
        copies = list(path.parent.glob("playbook.json.legacy-*"))
        assert len(copies) == 1 and copies[0].read_bytes() == content
        first = all_events(legacy_project)[0]
        assert isinstance(first, PlaybookImported) and first.moved_aside == copies[0].name


@pytest.mark.parametrize("content", [(HOSTILE / "legacy_invalid_utf8.json").read_bytes(),
                                     b'{"key_points": ' + b"[" * 5000 + b"]" * 5000 + b"}"],
                         ids=["invalid-utf8", "nested-5000"])
def test_unreadable_bytes_are_moved_aside_not_raised(legacy_project, content):
    path = write_legacy(legacy_project, content)
    playbook.load_playbook()
    kept = list(path.parent.glob("playbook.json.unreadable-*"))
    assert len(kept) == 1 and kept[0].read_bytes() == content


_counters = (st.integers(min_value=-(2**70), max_value=2**70) | st.floats(allow_nan=False, allow_infinity=False)
             | _json_values)
_entries = st.one_of(
    st.fixed_dictionaries({}, optional={"name": st.sampled_from(["kpt_001", "kpt_002", "pat-001", "", "x"])
                                        | _json_values,
                                        "text": st.text(max_size=20) | _json_values,
                                        "helpful": _counters, "harmful": _counters, "score": _counters}),
    st.text(max_size=20), _json_values)
_section_names = st.sampled_from([*SECTION_SLUGS, "mistakes to avoid", " Others ", "Made Up", ""]) | st.text(
    max_size=8)
_playbookish = st.fixed_dictionaries({}, optional={
    "version": _json_values, "last_updated": _json_values,
    "sections": st.dictionaries(_section_names, st.lists(_entries, max_size=5) | _json_values, max_size=6)
    | _json_values,
    "key_points": st.lists(_entries, max_size=6) | _json_values,
})


@pytest.mark.slow
@settings(COMMON, max_examples=300)
@given(data=_playbookish | _json_values)
def test_normalize_playbook_never_raises_and_names_are_unique(data):
    normalized = normalize_playbook(data)
    names = [e.name for e in normalized.entries]
    assert len(names) == len(set(names))
    assert all(isinstance(e.text, str) and e.text.strip() for e in normalized.entries)
    assert all(isinstance(e.helpful, int) and e.helpful >= 0 and e.harmful >= 0 for e in normalized.entries)
    msgspec.json.encode(normalized)  # what is recorded can be written to the log


@pytest.mark.slow
@settings(COMMON, max_examples=40)
@given(data=_playbookish | _json_values)
def test_load_playbook_takes_in_arbitrary_json(legacy_root, data):
    project = Path(tempfile.mkdtemp(dir=legacy_root))
    (project / ".claude").mkdir()
    write_legacy(project, data)
    with mock.patch.dict(os.environ, {"CLAUDE_PROJECT_DIR": str(project)}):
        check_import(project, json.loads(json.dumps(data)))


@pytest.fixture(scope="module")
def legacy_root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("legacy")


# === 6. a log written by a newer version ==================================================================


@pytest.fixture
def future_project(tmp_path, monkeypatch) -> Path:
    strip_model_env(monkeypatch)
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(tmp_path))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path))  # Claude Code's directory: the learner reads only transcripts inside it
    (tmp_path / ".claude").mkdir()
    shutil.copy(HOSTILE / "log_from_the_future.jsonl", tmp_path / ".claude" / "playbook.events.jsonl")
    return tmp_path


@pytest.mark.slow
def test_a_newer_versions_log_survives_load_save_and_verify(future_project):
    log = future_project / ".claude" / "playbook.events.jsonl"
    original = log.read_bytes()
    pb = playbook.load_playbook()
    assert [e["text"] for e in pb["sections"]["PATTERNS & APPROACHES"]] == ["written by this version"]
    # a known type with a field this version lacks is read; the unknown type is kept and not applied
    assert [e["name"] for e in pb["sections"]["OTHERS"]] == ["oth-001"]
    pb["sections"]["USER PREFERENCES"].append({"name": "pref-001", "text": "added now", "helpful": 0, "harmful": 0})
    playbook.save_playbook(pb)
    assert log.read_bytes().startswith(original), "a later writer dropped or rewrote the newer version's lines"
    unknown = [e for e in all_events(future_project) if isinstance(e, UnknownRecord)]
    assert [(e.type, e.seq) for e in unknown] == [("KeyPointTranslated", 3)]
    reloaded = playbook.load_playbook()
    assert [e["text"] for e in reloaded["sections"]["USER PREFERENCES"]] == ["added now"]
    result = subprocess.run([sys.executable, "-m", "playbook", "--project", str(future_project), "verify"],
                            capture_output=True, text=True, env=clean_env(), timeout=60)
    assert result.returncode == 0 and result.stdout.startswith("OK"), result.stdout + result.stderr
    # rebuild from the whole log, then once more through the hooks' path: still nothing dropped
    PlaybookRepository(future_project / ".claude").rebuild()
    assert log.read_bytes().startswith(original)


@pytest.mark.slow
def test_a_newer_versions_log_takes_a_learning_cycle(future_project, tmp_path, monkeypatch):
    log = future_project / ".claude" / "playbook.events.jsonl"
    original = log.read_bytes()
    monkeypatch.setenv("PLAYBOOK_RETRY_BASE_DELAY", "0.01")
    with FakeAnthropic(models()) as api:
        outcome, _events = learn_once(future_project, tmp_path, api, monkeypatch)
    assert outcome.status == "completed"
    assert log.read_bytes().startswith(original)
    assert entries(future_project)["pat-001"] == ("written by this version", 1, 0)


@pytest.mark.parametrize("command", [["log"], ["show"]])
def test_the_cli_shows_a_newer_versions_transaction(future_project, capsys, command):
    assert cli.main(["--project", str(future_project), *command]) == 0
    out = capsys.readouterr().out.encode()
    for raw in RAW_CONTROLS:
        assert raw not in out
