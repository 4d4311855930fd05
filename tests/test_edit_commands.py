"""`playbook add`, `edit`, `rm` and `undo`: the user's own changes, recorded as events like any other.

Each change is one transaction attributed to the user (source `manual:<verb>`, the Claude Code
session when run inside one), decided by the curator's rules; a bad ID, section or text is one
line on stderr, a non-zero exit, and nothing recorded.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from eventlog.decide import ApplyOperations, CompleteLearning, RequestLearning
from eventlog.events import Cause, KeyPointAdded, KeyPointDeleted, KeyPointUpdated
from playbook.commands.cli import main
from projections.repository import PlaybookRepository
from projections.verify import verify


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(tmp_path))
    monkeypatch.delenv("CLAUDE_CODE_SESSION_ID", raising=False)
    return tmp_path


@pytest.fixture
def repo(project) -> PlaybookRepository:
    return PlaybookRepository(project / ".claude")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def learn(repo: PlaybookRepository, session: str, operations: list[dict]) -> str:
    """A learning cycle as the learner appends it: the request, then the curator's operations with the completion."""
    request = f"req-{session}"
    repo.append([RequestLearning(request=request, hook="SessionEnd", transcript=f"/t/{session}.jsonl",
                                 session=session)], Cause(source="hook:SessionEnd", session=session))
    committed = repo.append([ApplyOperations(operations),
                             CompleteLearning(request=request, transcript=f"/t/{session}.jsonl", from_line=0,
                                              through_line=10)],
                            Cause(source="hook:SessionEnd", session=session, model="claude-sonnet-5-5",
                                  reasoning=f"curated {session}"))
    assert committed is not None
    return committed.commit.tx


@pytest.mark.slow
def test_add_edit_rm_are_the_users_transactions_with_the_curators_events(repo, capsys, monkeypatch):
    monkeypatch.setenv("CLAUDE_CODE_SESSION_ID", "5e55-1011")
    code, out, err = run(capsys, "add", "Use uv, not pip", "--section", "patterns")
    assert (code, err) == (0, "") and "pat-001" in out and "Use uv, not pip" in out
    assert run(capsys, "edit", "pat-001", "Use uv for every install")[0] == 0
    assert run(capsys, "rm", "pat-001", "--reason", "the project moved to pixi")[0] == 0
    assert run(capsys, "add", "Answer in English", "--section", "USER preferences")[0] == 0
    assert run(capsys, "add", "The API lives in server/")[0] == 0  # no section: OTHERS

    transactions = list(repo.store.read())
    assert [t.commit.source for t in transactions] == ["manual:add", "manual:edit", "manual:rm", "manual:add",
                                                      "manual:add"]
    assert {t.commit.session for t in transactions} == {"5e55-1011"}
    added, updated, deleted = (t.events[0] for t in transactions[:3])
    assert isinstance(added, KeyPointAdded) and (added.section, added.origin) == ("PATTERNS & APPROACHES", "user")
    assert isinstance(updated, KeyPointUpdated) and updated.previous_text == "Use uv, not pip"
    assert isinstance(deleted, KeyPointDeleted) and deleted.reason == "the project moved to pixi"
    state = repo.state()
    assert [(s, kp.name, kp.text) for s, kp in state.entries()] == [
        ("USER PREFERENCES", "pref-001", "Answer in English"), ("OTHERS", "oth-001", "The API lives in server/")]
    assert verify(repo).ok

    # The history of a key point names the user's change and the session it was made in.
    code, out, _ = run(capsys, "history", "pat-001")
    assert code == 0 and "manual:rm" in out and "session 5e55-1" in out and "the project moved to pixi" in out


@pytest.mark.parametrize("argv, message", [
    (["edit", "pat-009", "text"], "no key point pat-009 in the playbook"),
    (["rm", "pat-009"], "no key point pat-009 in the playbook"),
    (["add", "Tests first", "--section", "rules"], "unknown section 'rules': one of PATTERNS & APPROACHES (pat)"),
    (["add", "Tests first", "--section", "p"], "unknown section 'p'"),  # PATTERNS, PREFERENCES, PROJECT: ambiguous
    (["add", "   "], "the text is empty"),
    (["add", "x" * 2001], "the text has 2001 characters; a key point holds at most 2000"),
    (["add", "Run the tests first"], "nothing changed: the playbook already holds this text as pat-001"),
    (["edit", "pat-001", "Run the tests first"], "nothing changed: pat-001 already reads so"),
])
def test_bad_ids_sections_and_texts_are_one_line_and_record_nothing(repo, capsys, argv, message):
    assert run(capsys, "add", "Run the tests first", "--section", "pat")[0] == 0
    before = repo.log_path.read_bytes()
    code, out, err = run(capsys, *argv)
    assert code in (1, 2) and out == ""
    assert err.startswith("playbook: ") and message in err and err.count("\n") == 1, err
    assert repo.log_path.read_bytes() == before


@pytest.mark.slow
def test_a_bad_id_from_a_real_process_is_one_line_without_a_traceback(project):
    result = subprocess.run([sys.executable, "-I", "-m", "playbook", "--project", str(project), "rm", "nope-1"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == "playbook: no key point nope-1 in the playbook (playbook show lists them)\n"


@pytest.mark.slow
def test_undo_previews_then_reverts_the_last_learning_cycle_and_then_the_one_before(repo, capsys):
    first = learn(repo, "s-1", [{"type": "ADD", "section": "PATTERNS & APPROACHES", "text": "Run the tests first"}])
    second = learn(repo, "s-2", [{"type": "ADD", "section": "MISTAKES TO AVOID", "text": "Never push on Friday"},
                                 {"type": "ADD", "section": "PROJECT CONTEXT", "text": "The API lives in server/"}])
    run(capsys, "add", "Answer in English", "--section", "pref")  # the user's own change is not a learning cycle

    size = repo.log_path.stat().st_size
    code, out, _ = run(capsys, "undo", "--dry-run")
    assert code == 0 and repo.log_path.stat().st_size == size
    assert f"the last learning cycle: transaction {second}" in out and "session s-2" in out
    assert "Never push on Friday" in out and "The API lives in server/" in out and "dry run: nothing was written" in out
    assert f"to undo it: playbook revert {second}" in out

    assert run(capsys, "undo")[0] == 0
    texts = {kp.text for _, kp in repo.state().entries()}
    assert texts == {"Run the tests first", "Answer in English"}

    code, out, _ = run(capsys, "undo", "--json")
    assert code == 0 and json.loads(out)["transactions"] == [first]
    assert {kp.text for _, kp in repo.state().entries()} == {"Answer in English"}

    code, out, _ = run(capsys, "undo")
    assert code == 0 and out.startswith("nothing to undo")
    assert verify(repo).ok
