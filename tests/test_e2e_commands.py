"""The plugin's slash commands, typed into the real Claude Code CLI (`claude -p "/event-sourced-playbook:show"`).

Claude Code runs the plugin from this repository (`--plugin-dir`) in a scratch HOME against the fake
Messages API. Commands without arguments run the CLI themselves (`!` lines) and hand its output to
the model; commands with arguments have the model run the CLI through the Bash tool, which the
command's `allowed-tools` permits with no `--allowedTools`. The fake model here does what each
command's text asks of it. Every change must land in the project's log, attributed to the user and
to the session it was typed in.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from eventlog.decide import RequestLearning, SwitchPlaybook
from eventlog.events import Cause, KeyPointAdded, KeyPointDeleted
from projections.repository import PlaybookRepository
from tests.fake_anthropic import FakeAnthropic, Reply, reply_text, reply_tool_use, request_texts
from tests.test_e2e_claude_code import CLAUDE, REFLECTION

ROOT = Path(__file__).resolve().parent.parent
PLUGIN_DIR = ROOT / "plugin"
PLUGIN = json.loads((PLUGIN_DIR / ".claude-plugin" / "plugin.json").read_text())["name"]
LEARNED = "Run the linter before the tests"
CURATION = {"reasoning": "The linter caught it first.",
            "operations": [{"type": "ADD", "text": LEARNED, "section": "PATTERNS & APPROACHES"}]}

pytestmark = [pytest.mark.slow, pytest.mark.skipif(CLAUDE is None and os.environ.get("CI") != "true",
                                reason="Claude Code is not installed (npm install @anthropic-ai/claude-code)")]


def _tool_results(body: dict) -> list[str]:
    last = (body.get("messages") or [{}])[-1]
    content = last.get("content") if isinstance(last.get("content"), list) else []
    return [json.dumps(block.get("content")) for block in content
            if isinstance(block, dict) and block.get("type") == "tool_result"]


def _invoked(text: str) -> tuple[str, list[str]] | None:
    """The plugin command a request carries and its arguments, as the model reads them."""
    found = re.findall(rf"<command-name>/{PLUGIN}:(\w+)</command-name>(?:\s*<command-args>(.*?)</command-args>)?",
                       text, re.S)
    if not found:
        return None
    name, args = found[-1]
    return name, shlex.split(args)


def model(body: dict) -> Reply:
    """The sessions' model: it does what the command's text asks, runs the CLI with the Bash tool, then
    answers in one line."""
    text = request_texts(body)
    if "You are the reflector" in text:
        return reply_text(json.dumps(REFLECTION))
    if "You are the curator" in text:
        return reply_text(json.dumps(CURATION))
    if _tool_results(body):
        return reply_text("Done.")
    last = (body.get("messages") or [{}])[-1]
    if last.get("role") == "user" and "yes, apply it" in json.dumps(last.get("content")):
        revert = re.findall(r"to undo it: (playbook revert [0-9a-f]{16})", text)
        return reply_tool_use("Bash", {"command": revert[-1], "description": "Undo the last learning cycle"})
    invoked = _invoked(text)
    if invoked is None:
        return reply_text("OK")
    name, args = invoked
    command = None
    if name == "why" and args:
        command = f"playbook history {shlex.quote(args[0])}"
    elif name == "remember" and args:
        command = f"playbook add {shlex.quote(args[0])}" + (f" --section {shlex.quote(args[1])}" if len(args) > 1 else "")
    elif name == "forget" and args:
        command = f"playbook rm {shlex.quote(args[0])}" + (
            f" --reason {shlex.quote(' '.join(args[1:]))}" if len(args) > 1 else "")
    if command is None:
        return reply_text("Here it is. Apply it?" if name == "undo" else "Here it is.")
    return reply_tool_use("Bash", {"command": command, "description": f"playbook {name}"})


def test_slash_commands_show_why_remember_forget_undo_and_learn_through_the_cli(tmp_path):
    project, home = tmp_path / "project", tmp_path / "home"
    config = home / ".claude"
    (project / ".claude").mkdir(parents=True)
    config.mkdir(parents=True)
    (project / ".claude" / "playbook.json").write_text(json.dumps(
        {"version": "1.0", "sections": {"PROJECT CONTEXT": [
            {"name": "ctx-001", "text": "the API lives in server/", "helpful": 2, "harmful": 0}]}}))
    # Learning only when asked: the sessions of this test must not add learning cycles of their own.
    (project / ".claude" / "playbook.settings.json").write_text(json.dumps(
        {"playbook_update_on_exit": False, "playbook_update_on_clear": False,
         "playbook_update_on_subagent_stop": False, "playbook_update_on_precompact": False}))
    repo = PlaybookRepository(project / ".claude")

    with FakeAnthropic(model) as api:
        assert CLAUDE is not None
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("ANTHROPIC_", "AGENTIC_CONTEXT_", "CLAUDE", "PLAYBOOK_"))}
        env |= {"HOME": str(home), "CLAUDE_CONFIG_DIR": str(config), "ANTHROPIC_BASE_URL": api.url,
                "ANTHROPIC_API_KEY": "sk-test-e2e", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "DISABLE_AUTOUPDATER": "1", "PLAYBOOK_PYTHON": sys.executable}

        def claude(prompt: str, *extra: str) -> tuple[dict, str]:
            """Run one `claude -p`; its result, and the text of the last request it sent to the model."""
            before = len(api.message_bodies())
            result = subprocess.run([CLAUDE, "--plugin-dir", str(PLUGIN_DIR), *extra, "-p", prompt, "--output-format",
                                     "json"], cwd=project, env=env, capture_output=True, text=True, timeout=180)
            assert result.returncode == 0, result.stdout + result.stderr
            assert "Traceback" not in result.stdout + result.stderr
            bodies = api.message_bodies()[before:]
            assert bodies, f"{prompt!r} sent nothing to the model: {result.stdout}"
            return json.loads(result.stdout), "\n".join(request_texts(b) + "".join(_tool_results(b)) for b in bodies)

        shown, seen = claude(f"/{PLUGIN}:show")
        command_text = seen[seen.index(f"<command-name>/{PLUGIN}:show</command-name>"):]
        assert "[ctx-001] helpful=2 harmful=0 :: the API lives in server/" in command_text
        assert "log at seq" in command_text, command_text  # `playbook show`'s own footer, not the injection

        # learn now: the sessions waiting to be learned from. The one of only the plugin's own command has
        # nothing to learn and is skipped before any model call; the one the user asked something in is
        # learned, through the fake reflector and curator.
        asked, _ = claude("Run the linter, then the tests")
        for number, session in enumerate((shown["session_id"], asked["session_id"]), 1):
            transcript = next(config.glob(f"projects/*/{session}.jsonl"))
            # a request this machine made, noted where the hook notes it (under Claude Code's directory here)
            subprocess.run([sys.executable, "-c", "import sys; from pathlib import Path; "
                            "from playbook.learner.made_here import note; note(Path(sys.argv[1]), *sys.argv[2:])",
                            str(project), f"req-{number}", str(transcript)], env=env, check=True, cwd=ROOT)
            repo.append([RequestLearning(request=f"req-{number}", hook="SessionEnd", transcript=str(transcript),
                                         session=session)], Cause(source="hook:SessionEnd", session=session))
        before = len(api.message_bodies())
        _, seen = claude(f"/{PLUGIN}:learn")
        assert "req-1: skipped: only the playbook's own slash commands" in seen, seen
        assert "req-2: completed" in seen, seen
        reflected = [b for b in api.message_bodies()[before:] if "You are the reflector" in request_texts(b)]
        assert len(reflected) == 1 and "Run the linter, then the tests" in request_texts(reflected[0])
        assert LEARNED in {kp.text for _, kp in repo.state().entries()}

        # undo: a preview first (nothing written), applied once the user says yes in the same session.
        size = repo.log_path.stat().st_size
        asked, seen = claude(f"/{PLUGIN}:undo")
        assert "would revert" in seen and LEARNED in seen and "dry run: nothing was written" in seen, seen
        assert repo.log_path.stat().st_size == size
        # The command's allowed-tools cover its own turn; the user's yes is a new turn, where Claude Code asks
        # for the permission (given here as the user would give it at the prompt).
        applied, _ = claude("yes, apply it", "--resume", asked["session_id"], "--allowedTools", "Bash(playbook revert:*)")
        assert not applied["permission_denials"], applied
        assert LEARNED not in {kp.text for _, kp in repo.state().entries()}
        assert list(repo.store.read())[-1].commit.source == "revert"

        remembered, seen = claude(f"/{PLUGIN}:remember \"Answer in English, it's shorter\" preferences")
        assert "added as transaction" in seen and "pref-001" in seen, seen
        added = list(repo.store.read())[-1]
        assert added.commit.source == "manual:add" and added.commit.session == remembered["session_id"]
        assert isinstance(added.events[0], KeyPointAdded)
        assert (added.events[0].section, added.events[0].text) == ("USER PREFERENCES", "Answer in English, it's shorter")

        _, seen = claude(f"/{PLUGIN}:why pref-001")
        assert "history of pref-001" in seen and "created in USER PREFERENCES (by user)" in seen, seen

        forgot, seen = claude(f"/{PLUGIN}:forget pref-001 the team writes in French")
        deleted = list(repo.store.read())[-1]
        assert deleted.commit.source == "manual:rm" and deleted.commit.session == forgot["session_id"]
        assert isinstance(deleted.events[0], KeyPointDeleted)
        assert deleted.events[0].reason == "the team writes in French"

        # A bad ID is the CLI's one line, handed back to the session; nothing is recorded.
        size = repo.log_path.stat().st_size
        _, seen = claude(f"/{PLUGIN}:forget pat-404")
        assert "playbook: no key point pat-404 in the playbook" in seen
        assert repo.log_path.stat().st_size == size


def test_the_doctor_command_hands_its_report_to_the_session_even_when_a_check_fails(tmp_path):
    project, home = tmp_path / "project", tmp_path / "home"
    config = home / ".claude"
    (project / ".claude").mkdir(parents=True)
    config.mkdir(parents=True)
    # A disabled project: the doctor exits 1, which would fail a `!` line of the command by itself.
    PlaybookRepository(project / ".claude").append([SwitchPlaybook(enabled=False)], Cause(source="cli:disable"))
    with FakeAnthropic(model) as api:
        assert CLAUDE is not None
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("ANTHROPIC_", "AGENTIC_CONTEXT_", "CLAUDE", "PLAYBOOK_"))}
        env |= {"HOME": str(home), "CLAUDE_CONFIG_DIR": str(config), "ANTHROPIC_BASE_URL": api.url,
                "ANTHROPIC_API_KEY": "sk-test-e2e", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "DISABLE_AUTOUPDATER": "1", "PLAYBOOK_PYTHON": sys.executable}
        result = subprocess.run([CLAUDE, "--plugin-dir", str(PLUGIN_DIR), "-p", f"/{PLUGIN}:doctor", "--output-format",
                                 "json"], cwd=project, env=env, capture_output=True, text=True, timeout=180)
        assert result.returncode == 0, result.stdout + result.stderr
        seen = "\n".join(request_texts(body) for body in api.message_bodies())
    assert f"<command-name>/{PLUGIN}:doctor</command-name>" in seen
    report = seen[seen.index("one line per check"):]
    assert "✔ python (" in report and "✔ log: verified" in report, report[:3000]
    assert "✘ injection: the playbook is disabled in this project" in report and "fix: `playbook enable`" in report
