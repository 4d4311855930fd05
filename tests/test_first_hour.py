"""What a new user meets in the first hour: short session ids, a wrong --project or WHEN, the help,
a hand edit with a wrong field, and importing the same file twice."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from eventlog.decide import ApplyOperations
from eventlog.events import Cause
from playbook.commands.cli import build_parser
from tests.test_cli import Run, assert_one_line_error, demo, project, repo, run  # noqa: F401  (fixtures)

SESSION = "0aec4c1e-5d7a-4f0b-9c31-7a1be2f0d9a4"
OTHER = "0aec4c99-0000-4000-8000-000000000000"


def learn(repo, session: str, text: str) -> None:
    repo.append([ApplyOperations([{"type": "ADD", "section": "PATTERNS & APPROACHES", "text": text}])],
                Cause(source="hook:SessionEnd", session=session))


def test_a_session_id_prefix_names_the_session_like_a_transaction_prefix(run, repo):
    learn(repo, SESSION, "Use pathlib")
    learn(repo, "7f3e2a00-1111-4222-8333-444455556666", "Prefer small commits")
    at = run("at", "0aec4c", "--json")
    assert at.code == 0, at.err
    assert [e["text"] for e in at.json()["sections"]["PATTERNS & APPROACHES"]] == ["Use pathlib"]
    assert run("at", "0aec4c").out == run("at", SESSION).out.replace(SESSION, "0aec4c")
    assert run("diff", "0aec4c", "7f3e2a").code == 0
    # a prefix two sessions share is refused, naming both
    learn(repo, OTHER, "Run the tests")
    ambiguous = run("at", "0aec4c")
    assert_one_line_error(ambiguous)
    assert "ambiguous" in ambiguous.err and SESSION in ambiguous.err and OTHER in ambiguous.err
    assert run("at", "0aec4c1e").code == 0


def test_a_session_prefix_of_digits_past_the_end_is_the_session(run, repo):
    learn(repo, "071829aa-0000-4000-8000-000000000000", "Use pathlib")
    learn(repo, "d4e5f600-0000-4000-8000-000000000000", "Prefer small commits")
    doc = run("at", "071829", "--json").json()
    assert [e["text"] for e in doc["sections"]["PATTERNS & APPROACHES"]] == ["Use pathlib"]


def test_a_seq_past_the_end_of_the_log_is_an_error(run, repo):
    learn(repo, SESSION, "Use pathlib")
    for argv in (["at", "99999"], ["show", "--at", "99999"], ["diff", "1", "99999"], ["log", "--since", "99999"]):
        result = run(*argv)
        assert_one_line_error(result)
        assert result.err == "playbook: seq 99999 is past the end of the log (the last seq is 2)\n"
    assert run("at", "2").code == 0


@pytest.mark.slow
def test_a_project_that_does_not_exist_is_a_one_line_error(tmp_path):
    for argv in (["--project", "/does/not/exist", "show"], ["show", "--project", "/does/not/exist"],
                 ["--project", str(tmp_path / "file"), "log"]):
        (tmp_path / "file").write_text("")
        result = subprocess.run([sys.executable, "-m", "playbook", *argv], capture_output=True, text=True,
                                cwd=tmp_path)
        assert result.returncode == 1 and result.stdout == ""
        assert result.stderr.count("\n") == 1 and result.stderr.startswith("playbook: project "), result.stderr
    assert not Path("/does/not/exist").exists()


@pytest.mark.parametrize("argv", [[], ["--user"], ["--project", "."]], ids=["bare", "--user", "--project"])
def test_no_command_is_the_help_on_stderr_with_every_command(tmp_path, argv):
    launch = Path(__file__).resolve().parents[1] / "playbook" / "quick" / "launch.py"
    result = subprocess.run([sys.executable, "-I", "-S", str(launch), *argv], capture_output=True, text=True,
                            cwd=tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("usage: playbook ")
    listed = [line.split()[0] for line in result.stderr.splitlines() if re.match(r"    \S", line)]
    commands = next(a for a in build_parser()._actions if a.dest == "command").choices
    assert listed == list(commands), "every command, in --help's order"
    helped = subprocess.run([sys.executable, "-I", "-S", str(launch), "--help"], capture_output=True, text=True,
                            cwd=tmp_path)
    assert result.stderr == helped.stdout
    assert not (tmp_path / ".claude").exists()


def test_the_when_help_appears_only_under_commands_that_take_a_when():
    parser = build_parser()
    subcommands = next(a for a in parser._actions if a.dest == "command").choices
    with_when = {name for name, sub in subcommands.items() if "WHEN is an ISO time" in sub.format_help()}
    assert with_when == {"show", "at", "log", "diff"}


def test_a_hand_edit_with_a_wrong_field_is_reported_with_the_fields_an_entry_has(run, project):
    assert run("import", str(_write(project / "seed.json", {"sections": {"OTHERS": ["Use pathlib"]}}))).code == 0
    snapshot = project / ".claude" / "playbook.json"
    data = json.loads(snapshot.read_text())
    data["sections"]["OTHERS"].append({"name": "oth-009", "content": "Use ruff"})
    snapshot.write_text(json.dumps(data))
    result = run("show")
    assert result.code == 0
    assert result.err.count("\n") == 1, result.err
    assert result.err.startswith("playbook: an entry of playbook.json was not taken in (entry without usable text)")
    assert '"content": "Use ruff"' in result.err and "unknown field content" in result.err
    assert '{"name": "pat-001", "text": "...", "helpful": 0, "harmful": 0}' in result.err
    # recorded as skipped too, and reported once: the next command finds nothing new to take in
    assert "skipped    change: empty_text" in run("log", "-n", "1").out
    assert run("show").err == ""


def _write(path: Path, data) -> Path:
    path.write_text(json.dumps(data))
    return path


@pytest.mark.slow
def test_importing_a_file_already_in_the_playbook_adds_nothing_and_says_so(run, repo, tmp_path):
    file = _write(tmp_path / "old.json", {"version": "1.0", "sections": {
        "PATTERNS & APPROACHES": [{"name": "pat-001", "text": "Use pathlib", "helpful": 2, "harmful": 0}],
        "OTHERS": ["Prefer small commits"]}})
    assert run("import", str(file)).code == 0
    lines = repo.store.path.read_bytes()
    again = run("import", str(file))
    assert again.code == 0
    assert again.out == f"nothing imported from {file}: its 2 entries are already in the playbook\n"
    assert repo.store.path.read_bytes() == lines  # nothing recorded
    doc = run("import", str(file), "--json").json()
    assert doc["entries"] == 0 and doc["tx"] is None and len(doc["already_present"]) == 2
    # a file with one new entry imports that one and names the others
    _write(file, {"sections": {"OTHERS": ["Prefer small commits", "Run the tests first"]}})
    mixed = run("import", str(file))
    assert mixed.out.startswith(f"imported 1 entry from {file}")
    assert "duplicate_text: already in the playbook as kpt_001" in mixed.out
    texts = sorted(kp.text for _, kp in repo.current()[0].entries())
    assert texts == ["Prefer small commits", "Run the tests first", "Use pathlib"]


@pytest.mark.slow
def test_share_names_the_files_to_commit_from_the_current_directory(tmp_path, monkeypatch, capsys):
    from playbook.commands.cli import main

    project = tmp_path / "app"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(project)
    assert main(["share"]) == 0
    said = capsys.readouterr().out.splitlines()[-1]
    assert said.startswith("shared: commit .gitattributes, .gitignore and .claude/playbook.events.jsonl;"), said
    monkeypatch.chdir(tmp_path)
    assert main(["--project", "app", "share"]) == 0
    assert "commit app/.gitattributes, app/.gitignore and app/.claude/playbook.events.jsonl;" in capsys.readouterr().out
