"""The UserPromptSubmit hook: left-out key points relevant to the prompt, from an index projected ahead."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from eventlog.decide import ApplyOperations, ImportLegacy
from eventlog.events import Cause
from projections import quickjson, quickroads
from projections import recall as index
from projections.repository import PlaybookRepository

ROOT = Path(__file__).resolve().parent.parent
RECALL = ROOT / "playbook" / "quick" / "recall.py"
TOPICS = ["parser", "lock", "cache", "queue", "schema", "socket", "logger", "router", "worker", "mailer"]


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    for name in ("PLAYBOOK_INJECTION_BUDGET", "PLAYBOOK_RECALL", "PLAYBOOK_RECALL_MAX_CHARS"):
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture
def project(tmp_path) -> Path:
    (tmp_path / "proj" / ".claude").mkdir(parents=True)
    return tmp_path / "proj"


def seed(project: Path, count: int = 400) -> PlaybookRepository:
    entries = [{"name": f"pat-{i + 1:03d}", "text": f"Check the {TOPICS[i % 10]} module before release, case {i}",
                "helpful": 5 if i < 20 else 0, "harmful": 0} for i in range(count)]
    entries.append({"name": f"pat-{count + 1:03d}", "text": "Rotate the kerberos keytab after renaming the realm",
                    "helpful": 0, "harmful": 0})
    repo = PlaybookRepository(project / ".claude")
    repo.append([ImportLegacy(data={"version": "1.0", "sections": {"PATTERNS & APPROACHES": entries}},
                              path="test", genesis=False)], Cause(source="test"))
    return repo


def prompt(project: Path, text: str, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "CLAUDE_PROJECT_DIR": str(project), **env}
    stdin = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": text, "session_id": "s"}).encode()
    return subprocess.run([sys.executable, "-I", "-S", str(RECALL)], input=stdin, capture_output=True,
                          env=environment, cwd=cwd or project, timeout=60)


def context(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    if not done.stdout:
        return ""
    output = json.loads(done.stdout)["hookSpecificOutput"]
    assert output["hookEventName"] == "UserPromptSubmit"
    return output["additionalContext"]


def test_words_split_at_what_is_no_letter_or_digit_with_function_words_and_plurals_dropped():
    assert quickroads.terms("Use pathlib's Path.read_text(), not os.path!") == [
        "pathlib", "path", "read", "text", "os", "path"]
    assert quickroads.terms("naïve café 3.11 vs 3.8 — résumé") == ["naïve", "café", "11", "vs", "résumé"]
    assert quickroads.terms("keys keyss process classes") == ["key", "keyss", "process", "classe"]
    assert quickroads.terms("a b c d") == quickroads.terms("") == []


def test_the_settings_stamp_changes_with_every_setting_that_shapes_a_projection(tmp_path, monkeypatch):
    """The hooks serve a projection only while its stamp is the one computed now: each change to a settings
    file, to Claude Code's directory or to a stamped variable must change the stamp."""
    home, project = tmp_path / "stamp-home", tmp_path / "stamp-project"
    (home / ".claude").mkdir(parents=True)
    (project / ".claude").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    config = tmp_path / "stamp-config"
    config.mkdir()
    stamps = []
    for step in range(4):
        if step == 3:  # Claude Code's directory moved: the user's settings file is read there
            (config / quickroads.SETTINGS_NAME).write_text('{"playbook_injection_budget": 20}')
            monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
        if step == 1:
            (home / ".claude" / quickroads.SETTINGS_NAME).write_text('{"playbook_recall": false}')
            (project / ".claude" / quickroads.SETTINGS_NAME).write_text('{"playbook_injection_budget": 10}')
        if step == 2:
            for name, value in zip(quickroads.STAMPED_ENV, ("1 2", "0", "\u00e9")):
                monkeypatch.setenv(name, value)
        stamps.append(quickroads.settings_stamp(str(project)))
    assert len(set(stamps)) == 4


def test_a_prompt_brings_in_the_left_out_key_point_it_is_about(project):
    seed(project)
    text = context(prompt(project, "The kerberos keytab broke after we renamed the realm; what now?"))
    assert "[pat-401] helpful=0 harmful=0 :: Rotate the kerberos keytab after renaming the realm" in text
    assert len(text.splitlines()) <= 1 + index.TOP


@pytest.mark.slow
def test_what_the_session_already_has_and_vague_prompts_bring_nothing(project):
    seed(project)
    injected = json.loads(subprocess.run([sys.executable, "-m", "playbook", "--project", str(project), "show",
                                          "--injected", "--json"], capture_output=True, text=True, cwd=ROOT).stdout)
    assert "pat-001" in injected["included"] and "pat-401" in injected["left_out"]
    text = context(prompt(project, "Check the parser module before release, case 0"))
    assert "[pat-001]" not in text  # injected already at the session start
    assert context(prompt(project, "hello, how are you?")) == ""
    assert context(prompt(project, "")) == ""


def test_at_most_the_cap_of_text_is_added(project, home):
    seed(project)
    (project / ".claude" / "playbook.settings.json").write_text(json.dumps({"playbook_recall_max_chars": 120}))
    PlaybookRepository(project / ".claude").refresh()
    text = context(prompt(project, "kerberos keytab realm parser lock cache queue module release case 250"))
    lines = text.splitlines()[1:]
    assert 1 <= len(lines) and sum(len(line) + 1 for line in lines) <= 120


def test_recall_off_adds_nothing(project):
    seed(project)
    (project / ".claude" / "playbook.settings.json").write_text(json.dumps({"playbook_recall": False}))
    PlaybookRepository(project / ".claude").refresh()
    assert context(prompt(project, "kerberos keytab realm")) == ""
    # A setting changed since the index was written: the prompt that finds it stale brings it up to date
    assert "pat-401" in context(prompt(project, "kerberos keytab realm", PLAYBOOK_RECALL="1"))


@pytest.mark.slow
def test_a_stale_index_is_brought_up_to_date_by_the_prompt_that_finds_it(project):
    repo = seed(project)
    path = project / ".claude" / quickroads.RECALL_NAME
    assert not path.exists()  # an append leaves the index to the first prompt that needs it
    assert "pat-401" in context(prompt(project, "kerberos keytab realm"))
    size = (project / ".claude" / "playbook.events.jsonl").stat().st_size
    data = path.read_bytes()
    assert data.startswith(b"%d " % size)
    path.write_bytes(data.replace(str(size).encode(), b"1", 1))
    assert "pat-401" in context(prompt(project, "kerberos keytab realm"))
    assert path.read_bytes() == data
    repo.append([ApplyOperations([{"type": "ADD", "text": "Renew the kerberos keytab yearly"}])], Cause(source="t"))
    assert path.read_bytes() == data  # behind the log now
    assert "kerberos" in context(prompt(project, "kerberos keytab realm"))
    assert path.read_bytes().startswith(b"%d " % (project / ".claude" / "playbook.events.jsonl").stat().st_size)


@pytest.mark.parametrize("body", [
    b"not json", b"[" * 100_000, b'{"lines": 7}\n', b"recall-1 3 900 x 7\n", b"recall-1 3 900 2 99999\n", b'{"top": 3, "max_chars": 900, "count": 99999999999}\n',
    b'{"top": 3, "max_chars": 900, "count": 1}\n"a"\nkeytab\t99:9.0 0:1e309 x:y\n',
    b'{"top": 3, "max_chars": 900, "count": 2}\n[1]\n' + b"[" * 50_000 + b'\nkeytab\t0:9.0 1:9.0\n',
])
def test_a_damaged_or_hostile_index_never_fails_the_prompt(project, body):
    seed(project).refresh()
    path = project / ".claude" / quickroads.RECALL_NAME
    header = path.read_bytes().partition(b"\n")[0]
    path.write_bytes(header + b"\n" + body)
    done = prompt(project, "kerberos keytab realm")
    assert done.returncode == 0 and done.stdout in (b"", ) or json.loads(done.stdout)
    assert b"Traceback" not in done.stderr and len(done.stderr.splitlines()) <= 1


@pytest.mark.slow
def test_nothing_is_imported_from_the_project_directory(project):
    seed(project)
    marker = project / "hijacked"
    for module in ("json", "os", "encodings"):
        (project / f"{module}.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    text = context(prompt(project, "kerberos keytab realm", cwd=project))
    assert "pat-401" in text and not marker.exists()


def test_bad_stdin_is_silent_and_exit_0(project):
    seed(project)
    for stdin in (b"", b"not json", b"[]", b'{"prompt": 7}', b"\xff\xfe"):
        done = subprocess.run([sys.executable, "-I", "-S", str(RECALL)], input=stdin, capture_output=True,
                              env={**os.environ, "CLAUDE_PROJECT_DIR": str(project)}, timeout=60)
        assert done.returncode == 0 and done.stdout == b"" and b"Traceback" not in done.stderr


@pytest.mark.parametrize("payload", [
    {"session_id": "s", "cwd": "/p/\"prompt\": \"x\"", "prompt": "real one \u00e9 \n \"quoted\"", "n": 3},
    {"effort": {"level": "medium", "prompt": "nested"}, "list": [1, {"a": "]}"}], "ok": True, "prompt": "top"},
    {"prompt": ""}, {}, {"x": None, "y": -1.5e3, "prompt": "\ud83d\ude00 emoji"},
])
def test_the_hook_reads_hook_input_as_json_does_without_importing_json(payload):
    text = json.dumps(payload, indent=1)
    expected = {key: value for key, value in json.loads(text).items() if isinstance(value, str)}
    assert quickjson.top_level_strings(text) == expected
    for bad in ("[]", "7", '{"prompt": ', "prompt"):
        with pytest.raises((ValueError, IndexError)):
            quickjson.top_level_strings(bad)


@pytest.mark.slow
def test_an_index_log_and_playbook_linked_to_another_projects_are_never_read(project, tmp_path):
    """A repository can carry `.claude` as a directory whose playbook files link to another project's: the
    prompt brings in nothing of that playbook, as the full hook refuses such links as leading out of the project."""
    seed(project)
    assert "pat-401" in context(prompt(project, "kerberos keytab realm"))
    repository = tmp_path / "repository"
    (repository / ".claude").mkdir(parents=True)
    for name in ("playbook.events.jsonl", "playbook.json", "playbook.hook.json", quickroads.RECALL_NAME):
        assert (project / ".claude" / name).is_file()
        (repository / ".claude" / name).symlink_to(project / ".claude" / name)
    done = prompt(repository, "kerberos keytab realm")
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done
    assert b"pat-401" not in done.stdout and b"kerberos" not in done.stdout, done
