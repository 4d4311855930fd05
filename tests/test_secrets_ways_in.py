"""Every way a text enters the log is scrubbed as the learner's are: `playbook add`, `edit`, `add --user` (and
`/remember`, which runs `playbook add`), `rm --reason`, a hand edit of playbook.json, a legacy playbook.json,
`playbook import`, `playbook recover`, and the spec's `save_playbook` and `update_playbook_data`.

Each planted secret of the corpus goes in through the real entry point (the command line's `main`, the
spec's functions, a file written by hand followed by the SessionStart hook as Claude Code runs it); its
value must then be in no file under `.claude/` (the log, playbook.json, the hook's projection), not in the
hook's output and not in `playbook show`, and the redaction must be said, by kind, never by value.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import playbook
from playbook.commands.cli import main
from tests.secret_corpus import PLANTED, all_planted

ROOT = Path(__file__).resolve().parent.parent
KINDS = sorted(PLANTED)
# How the line that says what was redacted names each kind (`projections.redactor.KIND_NAMES`).
NAMES = {"aws-access-key": "AWS access key ID", "aws-secret-key": "AWS secret key", "github-token": "GitHub token",
         "npm-token": "npm token", "url-password": "password in a URL", "private-key": "private key", "jwt": "JWT",
         "secret-assignment": "value of a secret-named setting"}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))
    monkeypatch.delenv("CLAUDE_CODE_SESSION_ID", raising=False)
    return project


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def session_start(project: Path) -> subprocess.CompletedProcess[bytes]:
    """The SessionStart hook as Claude Code runs it: the script, isolated, without site-packages at first."""
    env = {**os.environ, "CLAUDE_PROJECT_DIR": str(project)}
    return subprocess.run([sys.executable, "-I", "-S", str(ROOT / "playbook" / "quick" / "inject.py")], input=b"{}",
                          capture_output=True, env=env, cwd=project, timeout=60)


def injected(hook: subprocess.CompletedProcess[bytes]) -> str:
    assert hook.returncode == 0 and b"Traceback" not in hook.stderr, hook
    return json.loads(hook.stdout)["hookSpecificOutput"]["additionalContext"]


def assert_nowhere(values: list[str], directory: Path, *shown: str) -> None:
    """No value in any file under `directory` (a legacy file's kept copy aside: it keeps the file's bytes as
    they were, and is never shared), nor in what was `shown`."""
    files = [path for path in directory.rglob("*") if path.is_file() and ".legacy-" not in path.name]
    assert any(path.name == "playbook.events.jsonl" for path in files) and any(
        path.name == "playbook.json" for path in files), files
    for value in values:
        escaped = json.dumps(value)[1:-1]
        for path in files:
            content = path.read_bytes().decode("utf-8", "replace")
            assert value not in content and escaped not in content, (value, path)
        for output in shown:
            assert value not in output, (value, output)


def assert_said(line: str, kinds: set[str], source: str) -> None:
    """`line` says that secrets of each of `kinds` were redacted from `source`, before they were stored."""
    assert "redacted " in line and f"from {source} before storing it" in line, line
    for kind in kinds & set(NAMES):
        assert NAMES[kind] in line, (kind, line)


def planted(kind: str) -> list[tuple[str, str]]:
    return PLANTED[kind]


def values(kind: str) -> list[str]:
    return [value for _, value in PLANTED[kind]]


# --- the command line -------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_playbook_add_stores_no_secret_and_says_what_it_redacted(project, capsys, kind):
    said = []
    for number, (text, _) in enumerate(planted(kind)):  # numbered: two texts must not redact to the same one
        code, out, err = run(capsys, "add", f"Deploy with {text} ({number})", "--section", "project")
        assert code == 0, err
        said.append(err)
    hook = session_start(project)
    show = run(capsys, "show")[1]
    assert_nowhere(values(kind), project / ".claude", injected(hook), show, out)
    assert f"[REDACTED:{kind}]" in show
    for err in said:
        assert err.startswith("playbook: redacted ") and err.count("\n") == 1, err
        assert_said(err, {kind}, "the text")


@pytest.mark.parametrize("kind", KINDS)
def test_playbook_edit_stores_no_secret_and_says_what_it_redacted(project, capsys, kind):
    assert run(capsys, "add", "Deploy with make")[0] == 0
    said = []
    for number, (text, _) in enumerate(planted(kind)):
        code, out, err = run(capsys, "edit", "oth-001", f"Deploy with {text} ({number})")
        assert code == 0, err
        said.append(err)
    hook = session_start(project)
    show = run(capsys, "show")[1]
    assert_nowhere(values(kind), project / ".claude", injected(hook), show, out)
    assert f"[REDACTED:{kind}]" in show
    for err in said:
        assert_said(err, {kind}, "the text")


@pytest.mark.parametrize("kind", KINDS)
def test_playbook_add_user_stores_no_secret_and_says_what_it_redacted(project, capsys, kind):
    said = []
    for number, (text, _) in enumerate(planted(kind)):
        code, out, err = run(capsys, "add", "--user", f"Always use {text} ({number})", "--section", "preferences")
        assert code == 0, err
        said.append(err)
    hook = session_start(project)  # a project without a playbook of its own gets the user's
    show = run(capsys, "show", "--user")[1]
    assert_nowhere(values(kind), Path(os.environ["PLAYBOOK_USER_DIR"]), injected(hook), show, out)
    assert f"[REDACTED:{kind}]" in show
    for err in said:
        assert_said(err, {kind}, "the text")


@pytest.mark.slow
def test_remember_runs_the_command_its_prompt_gives_and_stores_no_secret(project, capsys):
    """`/remember` has Claude run the one command its prompt gives, the text single-quoted as the prompt says:
    run here as the Bash tool would, in a shell, with `playbook` the installed command line."""
    prompt = (ROOT / "plugin" / "commands" / "remember.md").read_text(encoding="utf-8")
    command = next(line.strip() for line in prompt.splitlines() if line.strip().startswith("playbook add "))
    (text, value), = PLANTED["slack-token"]
    typed = f"Post deploys to the channel with {text}, it's the bot's"
    shell = command.replace("'TEXT'", "'" + typed.replace("'", "'\\''") + "'").replace("'SECTION'", "'context'")
    shell = shell.replace("playbook add", f"{sys.executable} -m playbook add", 1)
    done = subprocess.run(["bash", "-c", shell], capture_output=True, env=dict(os.environ), cwd=project, timeout=60)
    assert done.returncode == 0, done.stderr
    show = run(capsys, "show")[1]
    assert_nowhere([value], project / ".claude", injected(session_start(project)), show, done.stdout.decode())
    assert "[REDACTED:slack-token], it's the bot's" in show
    assert_said(done.stderr.decode(), {"slack-token"}, "the text")


def test_playbook_rm_stores_no_secret_in_its_reason(project, capsys):
    assert run(capsys, "add", "Deploy with make")[0] == 0
    text, value = PLANTED["github-token"][0]
    code, _, err = run(capsys, "rm", "oth-001", "--reason", f"it leaked {text}")
    assert code == 0, err
    log = run(capsys, "log", "-v")[1]
    assert_nowhere([value], project / ".claude", log)
    assert "[REDACTED:github-token]" in log
    assert_said(err, {"github-token"}, "the reason")


# --- playbook.json written by hand --------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_a_hand_edit_of_playbook_json_stores_no_secret_and_the_hook_says_what_it_redacted(project, capsys, kind):
    assert run(capsys, "add", "Deploy with make")[0] == 0
    snapshot = project / ".claude" / "playbook.json"
    data = json.loads(snapshot.read_text())
    entries = data["sections"]["OTHERS"]
    entries[0]["text"] = f"Deploy with make; the key is {planted(kind)[0][0]}"
    entries += [{"name": f"oth-{number:03d}", "text": f"Deploy with {text} ({number})", "helpful": 0, "harmful": 0}
                for number, (text, _) in enumerate(planted(kind)[1:], start=2)]
    snapshot.write_text(json.dumps(data))

    hook = session_start(project)
    context = injected(hook)
    show = run(capsys, "show")[1]
    assert_nowhere(values(kind), project / ".claude", context, show)
    assert f"[REDACTED:{kind}]" in show and f"[REDACTED:{kind}]" in context
    said = hook.stderr.decode()
    assert said.startswith("playbook: playbook.json edited by hand; redacted ") and said.count("\n") == 1, said
    assert "before storing it" in said and all(NAMES[k] in said for k in {kind} & set(NAMES)), said
    commits = [line for line in (project / ".claude" / "playbook.events.jsonl").read_text().splitlines()
               if '"manual_edit"' in line and "TransactionCommitted" in line]
    assert len(commits) == 1 and "; redacted " in json.loads(commits[0])["note"], commits


@pytest.mark.slow
def test_a_legacy_playbook_json_is_imported_without_its_secrets(project, capsys):
    secrets = all_planted()
    legacy = {"version": "1.0", "key_points": [{"name": f"kpt_{number:03d}", "text": f"Use {text} ({number})", "score": 1}
                                               for number, (_, text, _) in enumerate(secrets, start=1)]}
    claude = project / ".claude"
    claude.mkdir()
    (claude / "playbook.json").write_text(json.dumps(legacy))
    hook = session_start(project)
    context = injected(hook)
    show = run(capsys, "show")[1]
    assert_nowhere([value for _, _, value in secrets], claude, context, show)
    assert "playbook.json found without a log; redacted " in hook.stderr.decode(), hook.stderr


def test_playbook_import_and_recover_store_no_secret(project, capsys, tmp_path):
    secrets = all_planted()
    legacy = tmp_path / "old-playbook.json"
    legacy.write_text(json.dumps({"key_points": [f"Use {text} ({number})"
                                                 for number, (_, text, _) in enumerate(secrets[: len(secrets) // 2])]}))
    code, _, imported = run(capsys, "import", str(legacy))
    assert code == 0, imported

    # A playbook.json ahead of the log is set aside by the next writer; recover takes back what it holds.
    assert run(capsys, "add", "Deploy with make")[0] == 0
    claude = project / ".claude"
    ahead = json.loads((claude / "playbook.json").read_text())
    ahead["sections"]["OTHERS"] += [{"name": f"oth-{number:03d}", "text": f"Use {text} ({number})", "helpful": 0,
                                     "harmful": 0}
                                    for number, (_, text, _) in enumerate(secrets[len(secrets) // 2:], start=100)]
    kept = claude / "playbook.json.ahead-20990101T000000000000Z"
    kept.write_text(json.dumps(ahead))
    code, _, recovered = run(capsys, "recover", str(kept))
    assert code == 0, recovered
    kept.unlink()  # the user's own file, outside what the playbook stores
    show = run(capsys, "show")[1]
    assert_nowhere([value for _, _, value in secrets], claude, injected(session_start(project)), show)
    assert "redacted " in imported and f"from {legacy} before storing it" in imported, imported
    assert f"from {kept.name} before storing it" in recovered, recovered


# --- the spec's functions ----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_save_playbook_stores_no_secret_and_says_what_it_redacted(project, capsys, kind):
    pb = playbook.load_playbook()
    pb["sections"]["PROJECT CONTEXT"] += [{"name": f"ctx-{number:03d}", "text": f"Deploy with {text} ({number})",
                                           "helpful": 0, "harmful": 0}
                                          for number, (text, _) in enumerate(planted(kind), start=1)]
    playbook.save_playbook(pb)
    err = capsys.readouterr().err
    hook = session_start(project)
    show = run(capsys, "show")[1]
    assert_nowhere(values(kind), project / ".claude", injected(hook), show)
    assert f"[REDACTED:{kind}]" in show
    assert all(value not in json.dumps(pb) for value in values(kind))  # the caller's dict says what the log does
    assert playbook.load_playbook()["sections"] == pb["sections"]
    assert_said(err, {kind}, "the playbook")


def test_update_playbook_data_and_apply_structured_operations_take_in_no_secret(project, capsys):
    secrets = all_planted()
    pb = playbook.load_playbook()
    for start in range(0, len(secrets), 8):  # a cycle applies at most 10 operations
        batch = [f"Use {text} ({start + number})" for number, (_, text, _) in enumerate(secrets[start:start + 8])]
        if start % 16:
            pb = playbook.apply_structured_operations(pb, [{"type": "ADD", "text": text, "section": "OTHERS"}
                                                           for text in batch])
        else:
            pb = playbook.update_playbook_data(pb, {"new_key_points": [{"text": text, "section": "PROJECT CONTEXT"}
                                                                       for text in batch], "evaluations": []})
    err = capsys.readouterr().err
    assert sum(len(entries) for entries in pb["sections"].values()) == len(secrets)
    playbook.save_playbook(pb)
    show = run(capsys, "show")[1]
    assert_nowhere([value for _, _, value in secrets], project / ".claude", injected(session_start(project)), show)
    assert all(value not in json.dumps(pb) for _, _, value in secrets)
    assert "from the extraction result" in err and "from the operations" in err, err
