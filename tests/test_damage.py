"""One damage never turns into a second one: what a kill, a shortened log or a bad file leaves is kept and said.

Kills are real: a child process dies by SIGKILL at a fault point (`eventlog.store.fault`).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eventlog.unit_of_work import append_locked
from eventlog.decide import ApplyOperations, decide_all
from eventlog.domain import PlaybookState
from eventlog.errors import CorruptLogError
from eventlog.events import Cause, SnapshotSetAside
from eventlog.store import Position
from projections.repository import PlaybookRepository
from projections.verify import verify
from tests.test_crash import child_env

CAUSE = Cause(source="test")


def ops(*operations: dict) -> list[ApplyOperations]:
    return [ApplyOperations(list(operations))]


def run_cli(project: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess:
    """`python -m playbook ARGS --project PROJECT` as a user runs it."""
    return subprocess.run([sys.executable, "-m", "playbook", *args, "--project", str(project)], input=stdin,
                          env=child_env(), capture_output=True, text=True, timeout=120)


def run_main(project: Path, *args: str) -> subprocess.CompletedProcess:
    """`playbook ARGS --project PROJECT` run in this process, its output captured as `run_cli` does."""
    from playbook.commands.cli import main

    with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.redirect_stderr(io.StringIO()) as err:
        code = main([*args, "--project", str(project)])
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


# --- leftovers of a kill ------------------------------------------------------------------------------

CHECKPOINTER = r'''
import sys
from eventlog.decide import ApplyOperations, decide_all
from eventlog.domain import PlaybookState
from eventlog.events import Cause
from projections import checkpoints
from eventlog.store import Position
from projections.repository import PlaybookRepository
checkpoints.CHECKPOINT_EVERY = 4  # the second append passes a mark and writes a checkpoint first
repo = PlaybookRepository(sys.argv[1])
for i in range(3):
    repo.append([ApplyOperations([{"type": "ADD", "text": f"kill {i}"}])], Cause(source="crash-test"))
'''


def _killed_while_writing_a_checkpoint(claude: Path) -> list[Path]:
    child = subprocess.run([sys.executable, "-c", CHECKPOINTER, str(claude)], env=child_env("before-replace"),
                           capture_output=True, timeout=60)
    assert child.returncode == -signal.SIGKILL, child.stderr.decode()
    left = sorted((claude / "playbook.checkpoints").glob(".*.msgpack.*.tmp"))
    assert left, sorted(p.name for p in (claude / "playbook.checkpoints").iterdir())
    return left


@pytest.mark.slow
def test_checkpoint_temporaries_of_a_killed_writer_are_removed_by_the_next_writer_and_by_rebuild(tmp_path):
    claude = tmp_path / ".claude"
    repo = PlaybookRepository(claude)
    repo.append(ops({"type": "ADD", "text": "before"}), CAUSE)
    left = _killed_while_writing_a_checkpoint(claude)
    repo.append(ops({"type": "ADD", "text": "next writer"}), CAUSE)
    assert not any(path.exists() for path in left)

    left = _killed_while_writing_a_checkpoint(claude)
    rebuilt = subprocess.run([sys.executable, "-m", "playbook", "rebuild", "--project", str(tmp_path)],
                             env=child_env(), capture_output=True, timeout=60)
    assert rebuilt.returncode == 0, rebuilt.stderr.decode()
    assert not any(path.exists() for path in left)
    assert not list((claude / "playbook.checkpoints").glob(".*.tmp"))


# --- a playbook.json that is JSON but no playbook ------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("content", [b"null\n", b"[1, 2]\n", b'"a string"\n', b"42\n"])
def test_a_non_object_snapshot_with_a_log_is_moved_aside_and_the_playbook_stays_as_the_log_says(tmp_path, content):
    claude = tmp_path / ".claude"
    repo = PlaybookRepository(claude)
    repo.append(ops({"type": "ADD", "text": "keep me"}, {"type": "ADD", "text": "and me"}), CAUSE)
    repo.snapshot_path.write_bytes(content)
    assert any("not a JSON object" in p.what for p in verify(repo).problems)

    shown = run_cli(tmp_path, "show", "--json")
    assert shown.returncode == 0, shown.stderr
    assert [e["text"] for e in json.loads(shown.stdout)["sections"]["OTHERS"]] == ["keep me", "and me"]
    assert shown.stderr.count("\n") == 1 and "kept as playbook.json.unreadable-" in shown.stderr
    kept = list(claude.glob("playbook.json.unreadable-*"))
    assert [path.read_bytes() for path in kept] == [content]
    assert [t.events[0].moved_to for t in repo.store.read() if isinstance(t.events[0], SnapshotSetAside)] == \
        [kept[0].name]
    assert [e.text for _, e in repo.current()[0].entries()] == ["keep me", "and me"]
    assert verify(repo).ok


# --- a damaged last commit line ----------------------------------------------------------------------


def _five_transactions(project: Path) -> PlaybookRepository:
    repo = PlaybookRepository(project / ".claude")
    for index in range(5):
        repo.append(ops({"type": "ADD", "text": f"lesson {index}"}), CAUSE)
    return repo


def _no_traceback(result: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in result.stderr and result.stderr.count("\n") <= 2, result.stderr


@pytest.mark.slow
def test_a_writer_never_appends_after_a_damaged_last_commit_line_and_readers_never_show_a_traceback(tmp_path):
    repo = _five_transactions(tmp_path)
    log = repo.store.path
    data = log.read_bytes()
    at = data.rindex(b'{"type":"TransactionCommitted","seq":') + len(b'{"type":"TransactionCommitted","seq":')
    damaged = data[:at] + b"0" + data[at + 1:]  # "seq":10 -> "seq":00, no longer JSON
    log.write_bytes(damaged)
    line, offset = damaged.count(b"\n"), damaged.rindex(b"\n", 0, len(damaged) - 1) + 1

    with pytest.raises(CorruptLogError) as raised:
        repo.append(ops({"type": "ADD", "text": "built on damage"}), CAUSE)
    assert (raised.value.path, raised.value.line, raised.value.offset) == (log, line, offset)
    assert "playbook verify" in str(raised.value)
    imported = tmp_path / "other.json"
    imported.write_text(json.dumps({"sections": {"OTHERS": [{"name": "x", "text": "imported"}]}}))
    written = run_cli(tmp_path, "import", str(imported))
    assert written.returncode == 1 and f"{log}:{line}: " in written.stderr and f"byte {offset}" in written.stderr
    _no_traceback(written)
    assert log.read_bytes() == damaged and not list(repo.claude_dir.glob("*.torn-*"))

    checked = run_cli(tmp_path, "verify")
    assert checked.returncode == 1 and f"{log.name}:{line}: " in checked.stdout
    cut = len(data) - sum(len(line) for line in data.splitlines(keepends=True)[-2:])  # the last transaction's start
    assert f"truncate -s {cut} " in checked.stdout
    for command in (["show"], ["log"], ["log", "-v"], ["history", "oth-005"], ["stats"], ["at", "4"],
                    ["diff", "2"], ["show", "--json"], ["log", "--json"]):
        _no_traceback(run_cli(tmp_path, *command))
    assert log.read_bytes() == damaged


@pytest.mark.slow
def test_a_damaged_line_in_the_middle_is_one_line_with_file_and_line_from_every_reader(tmp_path):
    repo = _five_transactions(tmp_path)
    log = repo.store.path
    lines = log.read_bytes().splitlines(keepends=True)
    lines[3] = lines[3].replace(b'"seq":4,', b'"seq":00,')  # the second transaction's commit line
    log.write_bytes(b"".join(lines))
    offset = len(lines[0]) + len(lines[1]) + len(lines[2])
    for command in (["log"], ["log", "-v"], ["log", "-n", "0"], ["stats"], ["at", "9"], ["diff", "2"],
                    ["revert", "--dry-run", "oth-001"], ["verify"]):
        result = run_cli(tmp_path, *command)
        _no_traceback(result)
        if command != ["revert", "--dry-run", "oth-001"]:
            assert result.returncode == 1 and f"{log}:4" in result.stderr + result.stdout, (command, result)
            assert f"byte {offset}" in result.stderr + result.stdout, (command, result)



@pytest.mark.parametrize("line", [2, 3], ids=["the event that names it", "its transaction's commit line"])
def test_history_reports_a_damaged_line_of_a_transaction_it_reads_with_file_line_and_byte(tmp_path, line):
    repo = _five_transactions(tmp_path)
    log = repo.store.path
    lines = log.read_bytes().splitlines(keepends=True)
    lines[line] = lines[line].replace(b'"seq":%d,' % (line + 1), b'"seq":0%d,' % (line + 1))  # no longer JSON
    log.write_bytes(b"".join(lines))
    result = run_main(tmp_path, "history", "oth-002")
    assert result.returncode == 1 and f"{log}:{line + 1}" in result.stderr, result
    assert f"byte {sum(map(len, lines[:line]))}" in result.stderr, result
    assert run_main(tmp_path, "history", "oth-004").returncode == 0  # a transaction it does not read

# --- a snapshot ahead of the log ---------------------------------------------------------------------

READERS = [["show"], ["show", "--json"], ["log"], ["log", "-v"], ["history", "oth-001"], ["at", "2"], ["diff", "2"],
           ["stats"], ["verify"], ["show", "--at", "4"]]


def _cut_after(repo: PlaybookRepository, transactions: int) -> bytes:
    """Cut the log after its first `transactions` transactions, as a restore of an older copy does."""
    ends = [t.end.offset for t in repo.store.read()]
    data = repo.store.path.read_bytes()
    repo.store.path.write_bytes(data[:ends[transactions - 1]])
    return data[:ends[transactions - 1]]


def session_start(project: Path) -> subprocess.CompletedProcess:
    from playbook.wiring.install import hook_command

    return subprocess.run(hook_command("SessionStart"), shell=True, input="{}", capture_output=True, text=True,
                          env=child_env(CLAUDE_PROJECT_DIR=str(project)), cwd=project, timeout=60)


@pytest.mark.slow
def test_a_snapshot_ahead_of_a_shortened_log_is_never_overwritten_by_a_reader_and_every_reader_says_so(tmp_path):
    repo = _five_transactions(tmp_path)
    snapshot = repo.snapshot_path.read_bytes()
    log = _cut_after(repo, 2)
    for command in READERS:
        result = run_main(tmp_path, *command)  # in this process: the hook below is the real one
        _no_traceback(result)
        said = [line for line in (result.stderr + result.stdout).splitlines() if "ahead of the log" in line]
        assert len(said) == 1, (command, result)
        assert repo.snapshot_path.read_bytes() == snapshot and repo.store.path.read_bytes() == log, command
    shown = json.loads(run_main(tmp_path, "show", "--json").stdout)
    assert [e["text"] for e in shown["sections"]["OTHERS"]] == ["lesson 0", "lesson 1"]  # the log's playbook

    hooked = session_start(tmp_path)
    assert hooked.returncode == 0 and hooked.stderr.count("\n") == 1 and "ahead of the log" in hooked.stderr
    context = json.loads(hooked.stdout)["hookSpecificOutput"]["additionalContext"]
    assert all(f"lesson {n}" in context for n in range(5))  # the session gets what the snapshot holds
    assert repo.snapshot_path.read_bytes() == snapshot and repo.store.path.read_bytes() == log
    assert not list(repo.claude_dir.glob("playbook.json.*"))


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["ahead", "beside"])
def test_verify_reports_a_snapshot_holding_more_than_the_log_once(tmp_path, kind):
    """The problem in verify's report, human or JSON, and no closing line on stderr saying it again."""
    repo = _five_transactions(tmp_path / "held")
    if kind == "ahead":
        _cut_after(repo, 2)
        said = "ahead of the log"
    else:
        other = PlaybookRepository(tmp_path / "other" / ".claude")
        for index in range(6):
            other.append(ops({"type": "ADD", "text": f"another lesson {index}"}), CAUSE)
        repo.store.path.write_bytes(other.store.path.read_bytes())
        said = "another history than the log's"
    project = repo.claude_dir.parent
    checked = run_cli(project, "verify")
    assert checked.returncode == 1 and checked.stderr == "", checked
    assert checked.stdout.count(said) == 1 and "1 problem;" in checked.stdout, checked.stdout
    checked = run_cli(project, "verify", "--json")
    assert checked.returncode == 1 and checked.stderr == "", checked
    problems = json.loads(checked.stdout)["problems"]
    assert [said in p["what"] for p in problems] == [True]
    shown = run_cli(project, "show")  # any other command still says it, once
    assert shown.returncode == 0 and shown.stderr.count(said) == 1 and said not in shown.stdout, shown


@pytest.mark.slow
def test_a_writer_records_then_keeps_a_snapshot_ahead_of_the_log_and_recover_takes_it_back(tmp_path):
    repo = _five_transactions(tmp_path)
    snapshot = repo.snapshot_path.read_bytes()
    _cut_after(repo, 2)
    imported = tmp_path / "other.json"
    imported.write_text(json.dumps({"sections": {"OTHERS": [{"name": "oth-009", "text": "written after the cut"}]}}))
    written = run_cli(tmp_path, "import", str(imported))
    assert written.returncode == 0, written.stderr
    said = [line for line in written.stderr.splitlines() if "ahead of the log" in line]
    assert len(said) == 1 and "playbook recover" in said[0]
    kept = list(repo.claude_dir.glob("playbook.json.ahead-*"))
    assert [path.read_bytes() for path in kept] == [snapshot]
    set_aside = [(t.start.seq, e) for t in repo.store.read() for e in t.events if isinstance(e, SnapshotSetAside)]
    assert [(seq, e.moved_to, e.kind) for seq, e in set_aside] == [(4, kept[0].name, "ahead")]
    assert verify(repo).ok and repo.is_fresh()

    # The log moved on meanwhile: the new entry took the name oth-003, which the kept file gave "lesson 2".
    recovered = run_cli(tmp_path, "recover")
    assert recovered.returncode == 0 and recovered.stderr == "", recovered
    texts = {kp.text: kp.name for _, kp in repo.current()[0].entries()}
    assert set(texts) == {f"lesson {n}" for n in range(5)} | {"written after the cut"}
    assert len(set(texts.values())) == 6
    last = list(repo.store.read())[-1]
    assert last.commit.source == "recover" and kept[0].name in last.commit.note
    assert {e.origin for e in last.events} == {"recovery"}
    again = run_cli(tmp_path, "recover")
    assert again.returncode == 1 and "already recovered" in again.stderr
    assert kept[0].read_bytes() == snapshot and verify(repo).ok


@pytest.mark.slow
def test_recover_of_playbook_json_itself_keeps_it_aside_first_then_takes_it_back(tmp_path):
    repo = _five_transactions(tmp_path)
    snapshot = repo.snapshot_path.read_bytes()
    _cut_after(repo, 3)
    recovered = run_cli(tmp_path, "recover", str(repo.snapshot_path), "--json")
    assert recovered.returncode == 0, recovered
    kept = list(repo.claude_dir.glob("playbook.json.ahead-*"))
    assert [path.read_bytes() for path in kept] == [snapshot]
    assert json.loads(recovered.stdout)["file"] == str(kept[0]) and "kept as" in recovered.stderr
    assert sorted(kp.text for _, kp in repo.current()[0].entries()) == [f"lesson {n}" for n in range(5)]
    assert verify(repo).ok


@pytest.mark.slow
def test_a_snapshot_of_another_history_is_left_by_readers_and_kept_by_writers(tmp_path):
    from eventlog.jsonl import JsonlEventStore

    repo = _five_transactions(tmp_path)
    snapshot = repo.snapshot_path.read_bytes()
    _cut_after(repo, 2)
    store = JsonlEventStore(repo.store.path)  # another tool writes a history of its own, longer than before
    with store.locked():
        for n in range(4):
            append_locked(store, PlaybookState(), Position(), lambda state, n=n: decide_all(
                state, ops({"type": "ADD", "text": f"other history {n} " + "x" * 400})), CAUSE)
    diverged = repo.divergence()
    assert diverged is not None and not diverged.ahead
    for command in (["show"], ["log"], ["verify"]):
        result = run_cli(tmp_path, *command)
        # verify's report holds it as a problem; every other reader says it in one line on stderr
        said = result.stdout if command == ["verify"] else result.stderr
        assert "another history" in said and (result.stdout + result.stderr).count("another history") == 1, result
        assert repo.snapshot_path.read_bytes() == snapshot
    hooked = session_start(tmp_path)
    assert "another history" in hooked.stderr and "lesson 4" in hooked.stdout

    repo.append(ops({"type": "ADD", "text": "a writer"}), CAUSE)
    kept = list(repo.claude_dir.glob("playbook.json.ahead-*"))
    assert [path.read_bytes() for path in kept] == [snapshot] and verify(repo).ok
    assert run_cli(tmp_path, "recover").returncode == 0
    texts = {kp.text for _, kp in repo.current()[0].entries()}
    assert {f"lesson {n}" for n in range(5)} <= texts and sum(t.startswith("other history") for t in texts) == 4


# --- verify right after a killed writer ---------------------------------------------------------------

ONE_WRITE = r'''
import sys
from eventlog.decide import ApplyOperations
from eventlog.events import Cause
from projections.repository import PlaybookRepository
PlaybookRepository(sys.argv[1]).append([ApplyOperations([{"type": "ADD", "text": "killed before the snapshot"}])],
                                       Cause(source="crash-test"))
'''


@pytest.mark.slow
def test_verify_right_after_a_writer_killed_before_the_snapshot_catches_up_and_says_it_was_harmless(tmp_path):
    repo = _five_transactions(tmp_path)
    child = subprocess.run([sys.executable, "-c", ONE_WRITE, str(repo.claude_dir)], env=child_env("before-snapshot"),
                           capture_output=True, timeout=60)
    assert child.returncode == -signal.SIGKILL, child.stderr.decode()
    assert [p.what.split(":")[0] for p in verify(repo).problems] == ["behind the log"]

    checked = run_cli(tmp_path, "verify")
    assert checked.returncode == 0, checked
    assert "brought up to date" in checked.stdout and "harmless" in checked.stdout
    assert verify(repo).ok and repo.is_fresh()
    assert "killed before the snapshot" in repo.snapshot_path.read_text()
    as_json = json.loads(run_cli(tmp_path, "verify", "--json").stdout)
    assert as_json["ok"] and as_json["notes"] == []


# --- long texts on screen ----------------------------------------------------------------------------


@pytest.mark.slow
def test_a_megabyte_text_is_cut_for_display_with_a_marker_and_shown_whole_with_full(tmp_path, capsys):
    from playbook.commands.cli import main

    def run(*argv: str) -> str:
        capsys.readouterr()
        assert main([*argv, "--project", str(tmp_path)]) == 0, argv
        return capsys.readouterr().out

    from eventlog.events import KeyPointUpdated

    repo = _five_transactions(tmp_path)
    huge = "y" * 2_000_000  # one word: what wrapping it whole cost grew with the square of its length
    before = repo.current()[0].get("oth-001")
    assert before is not None
    # Texts taking a way in today are cut to MAX_TEXT_LENGTH; a log written before that, or by hand, holds any.
    repo.append(lambda state: [KeyPointUpdated(name="oth-001", text=huge, previous_text=before.text)],
                Cause(source="manual_edit"))
    for command in (["show"], ["log", "-v", "-n", "1"], ["log", "-n", "1"], ["history", "-v", "oth-001"],
                    ["at", "6"], ["diff", "5"]):
        out = run(*command)
        assert len(out) < 20_000, (command, len(out))
        if command in (["show"], ["log", "-v", "-n", "1"], ["history", "-v", "oth-001"]):
            assert f"[{len(huge) - 2000} more characters; --full shows them]" in " ".join(out.split()), command
    whole = run("log", "-v", "-n", "1", "--full")
    assert whole.replace("\n", "").replace(" ", "").count("y") >= len(huge)
    assert huge in run("show", "--json")  # scripts get every byte
    assert len(run("show")) < 20_000  # --full holds for its command only


# --- property: no read loses a byte, whatever earlier point the log is cut back to --------------------

READ_COMMANDS = [["show"], ["show", "--json"], ["log", "-v", "-n", "0"], ["log", "--json"], ["history", "oth-001"],
                 ["at", "1"], ["diff", "1"], ["stats"], ["verify"], ["show", "--at", "3"]]
OPERATIONS = st.one_of(
    st.builds(lambda text: {"type": "ADD", "text": text, "section": "OTHERS"}, st.text(min_size=1, max_size=30)),
    st.builds(lambda n, text: {"type": "UPDATE", "target_id": f"oth-{n:03d}", "text": text},
              st.integers(1, 4), st.text(min_size=1, max_size=30)),
    st.builds(lambda n: {"type": "DELETE", "target_id": f"oth-{n:03d}"}, st.integers(1, 4)),
)


@pytest.mark.slow
@settings(max_examples=int(os.environ.get("PLAYBOOK_DAMAGE_EXAMPLES", "10")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(transactions=st.lists(st.lists(OPERATIONS, min_size=1, max_size=3), min_size=1, max_size=6),
       cut=st.integers(0, 6), data=st.data())
def test_reads_and_the_hook_after_the_log_is_cut_back_keep_every_byte(transactions, cut, data):
    from playbook.commands.cli import main
    from playbook.wiring.hooks import session_start

    with tempfile.TemporaryDirectory() as root:
        project = Path(root)
        repo = PlaybookRepository(project / ".claude")
        for operations in transactions:
            repo.append([ApplyOperations(operations)], CAUSE)
        ends = [0] + [t.end.offset for t in repo.store.read()]
        log = repo.store.path.read_bytes()[:ends[min(cut, len(ends) - 1)]]
        repo.store.path.write_bytes(log)
        snapshot = repo.snapshot_path.read_bytes()
        for command in data.draw(st.permutations(READ_COMMANDS), label="commands"):
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
                main([*command, "--project", str(project)])
            assert "Traceback" not in err.getvalue()
            with contextlib.redirect_stderr(io.StringIO()):
                session_start(project)
            # The log only grew (a reader may take in what it found outside it), and the snapshot's bytes
            # are still in a file: playbook.json itself, or a copy kept beside it.
            assert repo.store.path.read_bytes().startswith(log), command
            kept = [path.read_bytes() for path in repo.claude_dir.glob("playbook.json*")]
            assert snapshot in kept, (command, sorted(p.name for p in repo.claude_dir.iterdir()))
