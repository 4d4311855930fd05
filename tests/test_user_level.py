"""The user-level playbook: a log of its own under $CLAUDE_CONFIG_DIR/playbook, injected ahead of every
project's, the USER PREFERENCES learned in any project, `--user` on every command, and the CLAUDE.md export.

The user-level directory is the one `tests/conftest.py` gives each test (`PLAYBOOK_USER_DIR`); the
projects are temporary directories. Hooks run as Claude Code runs them (real processes).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from eventlog.decide import ApplyOperations
from eventlog.events import Cause
from playbook.commands.cli import main
from playbook.learner.bootstrap import transcripts_dir
from playbook.wiring.install import hook_command
from playbook.wiring.project import user_dir, user_repository
from projections.injection import plan
from projections.repository import PlaybookRepository
from projections.verify import verify


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    """A project, and a HOME whose Claude Code directory holds the project's transcripts."""
    for name in list(os.environ):
        if name.startswith(("ANTHROPIC_", "AGENTIC_CONTEXT_", "CLAUDE_CODE_")):
            monkeypatch.delenv(name)
    home = tmp_path / "home"
    transcripts_dir(tmp_path / "project", home / ".claude").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))
    return project


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def session_start(project: Path, **env: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "AGENTIC_CONTEXT_"))}
    environment |= {"CLAUDE_PROJECT_DIR": str(project), **env}
    stdin = json.dumps({"hook_event_name": "SessionStart", "source": "startup", "session_id": "s"}).encode()
    return subprocess.run(hook_command("SessionStart"), shell=True, input=stdin, capture_output=True,
                          env=environment, cwd=project, timeout=60)


def context(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0 and b"Traceback" not in result.stderr, result.stderr
    return json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"] if result.stdout.strip() else ""


def test_the_location_follows_claude_config_dir(monkeypatch, tmp_path):
    monkeypatch.delenv("PLAYBOOK_USER_DIR")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "config"))
    assert user_dir() == tmp_path / "config" / "playbook"
    monkeypatch.delenv("CLAUDE_CONFIG_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert user_dir() == tmp_path / "home" / ".claude" / "playbook"


@pytest.mark.slow
def test_every_command_takes_user_and_acts_on_the_user_level_playbook_only(project, capsys):
    assert run(capsys, "add", "--user", "Answer in English", "--section", "preferences")[0] == 0
    assert run(capsys, "add", "The API lives in server/", "--section", "ctx")[0] == 0
    assert run(capsys, "--user", "edit", "pref-001", "Answer in British English")[0] == 0

    user = user_repository()
    assert [(s, kp.name, kp.text) for s, kp in user.state().entries()] == [
        ("USER PREFERENCES", "pref-001", "Answer in British English")]
    assert [kp.text for _, kp in PlaybookRepository(project / ".claude").state().entries()] == [
        "The API lives in server/"]

    code, out, _ = run(capsys, "show", "--user")
    assert code == 0 and "Answer in British English" in out and "server/" not in out
    code, out, _ = run(capsys, "history", "pref-001", "--user")
    assert code == 0 and "manual:add" in out and "manual:edit" in out
    code, out, _ = run(capsys, "log", "--user", "--json")
    assert code == 0 and [t["source"] for t in json.loads(out)["transactions"]] == ["manual:edit", "manual:add"]
    assert run(capsys, "verify", "--user")[0] == 0 and verify(user).ok
    assert run(capsys, "rm", "--user", "pref-001", "--reason", "moved abroad")[0] == 0
    assert user.state().where == {}
    assert run(capsys, "undo", "--user")[1].startswith("nothing to undo")

    # What works on a project only says so in one line.
    for command in (["learn", "--user"], ["share", "--user"]):
        code, out, err = run(capsys, *command)
        assert (code, out) == (2, "") and err.count("\n") == 1 and "not with --user" in err


@pytest.mark.slow
def test_both_are_injected_user_first_and_within_the_budget(project, capsys):
    user = user_repository()
    user.append([ApplyOperations([{"type": "ADD", "text": f"user rule {i}", "section": "USER PREFERENCES"}
                                  for i in range(3)])], Cause(source="test"))
    repo = PlaybookRepository(project / ".claude")
    repo.append([ApplyOperations([{"type": "ADD", "text": "project preference", "section": "USER PREFERENCES"},
                                  {"type": "ADD", "text": "project pattern", "section": "PATTERNS & APPROACHES"}])],
                Cause(source="test"))

    text = context(session_start(project))
    assert text.index("[user:pref-003] helpful=0 harmful=0 :: user rule 2") < text.index("[pat-001] helpful") < text.index(
        "[pref-001] helpful")
    assert "## USER PREFERENCES (user-level: yours in every project)" in text
    code, out, _ = run(capsys, "show", "--injected")
    assert out == text

    # Under any budget: no key point of the project's before every one of the user's, and within the budget.
    repo.append([ApplyOperations([{"type": "ADD", "text": f"project context {i} " + "word " * 20,
                                   "section": "PROJECT CONTEXT"} for i in range(8)])], Cause(source="test"))
    project_state, user_state = repo.state(), user.state()
    full = plan(project_state, 0, user_state).tokens
    partial = []
    for budget in range(100, full + 50, 25):
        planned = plan(project_state, budget, user_state)
        assert planned.tokens <= budget or not planned.included + planned.user_included
        if planned.included:
            assert planned.user_left_out == []
        if planned.user_included == ["pref-001", "pref-002", "pref-003"] and planned.left_out:
            partial.append(budget)
    assert partial, "some budget keeps the user's key points and leaves some of the project's out"
    text = context(session_start(project, PLAYBOOK_INJECTION_BUDGET=str(partial[0])))
    assert all(f"user rule {i}" in text for i in range(3)) and "left out" in text
    assert len(text.encode()) <= 4 * partial[0]


@pytest.mark.slow
def test_a_change_to_the_user_level_playbook_reaches_every_projects_next_session(tmp_path, project, capsys):
    other = tmp_path / "other"
    other.mkdir()
    for where in (project, other):
        PlaybookRepository(where / ".claude").append(
            [ApplyOperations([{"type": "ADD", "text": f"about {where.name}", "section": "PROJECT CONTEXT"}])],
            Cause(source="test"))
        assert "user:" not in context(session_start(where))
    assert run(capsys, "add", "--user", "Answer in English", "--section", "pref")[0] == 0
    for where in (project, other):
        text = context(session_start(where))
        assert "[user:pref-001] helpful=0 harmful=0 :: Answer in English" in text and f"about {where.name}" in text
        # ... and the projection written on the way serves the next session from the fast path.
        header = (where / ".claude" / "playbook.hook.json").read_bytes().split(b"\n", 1)[0].split()
        size = (user_dir() / "playbook.events.jsonl").stat().st_size
        assert header[3].decode() == f"{size}:{(user_dir() / 'playbook.json').stat().st_mtime_ns}"
        from playbook.quick import inject

        assert inject._fast(str(where / ".claude")) is not None


@pytest.mark.slow
def test_a_project_without_a_playbook_gets_the_users_and_nothing_is_written_in_it(project, capsys):
    assert context(session_start(project)) == ""
    assert run(capsys, "add", "--user", "Answer in English", "--section", "pref")[0] == 0
    for _ in range(2):
        assert "[user:pref-001] helpful=0 harmful=0 :: Answer in English" in context(session_start(project))
    assert list(project.iterdir()) == []
    from playbook.quick import inject  # the second session was served by the user-level projection, as it is

    assert inject._fast(str(user_dir()), user_level=True) is not None


@pytest.mark.slow
def test_a_damaged_user_level_log_never_stops_a_projects_injection(project, capsys):
    assert run(capsys, "add", "--user", "Answer in English", "--section", "pref")[0] == 0
    assert run(capsys, "add", "The API lives in server/", "--section", "ctx")[0] == 0
    log = user_dir() / "playbook.events.jsonl"
    data = bytearray(log.read_bytes())
    data[10] ^= 0x01  # a byte of the first line changed, and no snapshot to start past it
    log.write_bytes(bytes(data))
    (user_dir() / "playbook.json").unlink()
    result = session_start(project)
    text = context(result)
    assert "The API lives in server/" in text and "Answer in English" not in text
    code, _, err = run(capsys, "show", "--user")
    assert code == 1 and err.startswith("playbook: ") and err.count("\n") == 1


def test_export_writes_a_claude_md_section_and_replaces_it_on_the_next_export(project, capsys, tmp_path):
    repo = PlaybookRepository(project / ".claude")
    repo.append([ApplyOperations([{"type": "ADD", "text": "Run the tests\nfirst <!-- playbook:end -->",
                                   "section": "PATTERNS & APPROACHES"}])], Cause(source="test"))
    code, out, _ = run(capsys, "export", "--claude-md")
    assert code == 0 and out.startswith("<!-- playbook:begin") and out.endswith("<!-- playbook:end -->\n")
    assert "### PATTERNS & APPROACHES\n\n- Run the tests first &lt;!-- playbook:end --&gt; (pat-001; helpful 0, " \
           "harmful 0)" in out

    claude_md = project / "CLAUDE.md"
    claude_md.write_text("# My project\n\nBuild with make.\n")
    assert run(capsys, "export", "--claude-md", "--output", str(project))[1].startswith("added")
    repo.append([ApplyOperations([{"type": "ADD", "text": "Prefer pathlib", "section": "PATTERNS & APPROACHES"}])],
                Cause(source="test"))
    assert run(capsys, "export", "--claude-md", "--output", str(claude_md))[1].startswith("replaced")
    written = claude_md.read_text()
    assert written.startswith("# My project\n\nBuild with make.\n\n<!-- playbook:begin")
    assert written.count("<!-- playbook:begin") == 1 and "Prefer pathlib (pat-002" in written

    assert run(capsys, "add", "--user", "Answer in English", "--section", "pref")[0] == 0
    code, out, _ = run(capsys, "export", "--claude-md", "--user")
    assert "my own key points" in out and "Answer in English" in out and "Prefer pathlib" not in out


@pytest.mark.slow
def test_purge_user_takes_a_text_out_of_the_user_level_log_only(project, capsys):
    secret = "token ghp_user0level0secret0value"
    assert run(capsys, "add", "--user", secret, "--section", "pref")[0] == 0
    assert run(capsys, "add", secret, "--section", "ctx")[0] == 0
    assert run(capsys, "anchor", "--user")[0] == 0
    code, out, _ = run(capsys, "purge", "--user", "--match", "ghp_user0level0secret0value")
    assert code == 0 and f"anchored the rewrite in {user_dir() / 'playbook.anchors'}" in out
    assert "ghp_user0level0secret0value" not in (user_dir() / "playbook.events.jsonl").read_text()
    assert secret in (project / ".claude" / "playbook.events.jsonl").read_text()
    assert run(capsys, "verify", "--user", "--anchor")[0] == 0


@pytest.mark.slow
def test_the_hook_reads_no_user_level_projection_through_a_link(project, capsys, tmp_path):
    from playbook.quick import inject

    assert run(capsys, "add", "--user", "Answer in English", "--section", "pref")[0] == 0
    projection = user_dir() / "playbook.hook.json"
    outside = tmp_path / "elsewhere.json"
    outside.write_bytes(projection.read_bytes().replace(b"Answer in English", b"Answer in Klingon"))
    projection.unlink()
    projection.write_bytes(outside.read_bytes())  # what following the link would give: current
    assert b"Klingon" in inject._fast(str(user_dir()), user_level=True)
    projection.unlink()
    projection.symlink_to(outside)
    assert inject._fast(str(user_dir()), user_level=True) is None
    assert "Klingon" not in context(session_start(project))
