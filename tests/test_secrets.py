"""Secrets never leave the machine and never enter the log: the scrubber on a labelled corpus, and a
whole learning cycle (hook, background learner, fake API, CLI) with every kind planted everywhere."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eventlog.decide import ApplyOperations
from eventlog.events import Cause
from playbook.learner.bootstrap import transcripts_dir
from projections.scrub import find_secrets, scrub
from projections.repository import PlaybookRepository
from tests.fake_anthropic import FakeAnthropic, reply_text, request_texts
from tests.secret_corpus import GENERATED, NEAR_MISSES, PLANTED, all_planted, code_heavy_text, contexts, generated
from tests.test_e2e_claude_code import CLAUDE
from tests.test_learning_cli import store_login

# At most this many findings on an ordinary code-heavy session (the project's own source and docs,
# about 1.3 MB): each one would hide a piece of a lesson behind a redaction for nothing.
MAX_FALSE_POSITIVES = 3


@pytest.mark.parametrize(("kind", "text", "value"), all_planted(), ids=lambda v: v if len(v) < 20 else None)
def test_every_planted_secret_is_caught_in_every_context_and_keeps_its_kind(kind, text, value):
    for context, planted in contexts(text).items():
        scrubbed = scrub(planted)
        assert value not in scrubbed, (context, scrubbed)
        assert f"[REDACTED:{kind}]" in scrubbed, (context, scrubbed)
        assert scrub(scrubbed) == scrubbed  # a redaction is never taken for a secret


def test_the_corpus_covers_every_kind_the_scrubber_must_know():
    assert set(PLANTED) >= {"aws-access-key", "aws-secret-key", "anthropic-api-key", "openai-api-key",
                            "google-api-key", "github-token", "gitlab-token", "slack-token", "slack-webhook",
                            "stripe-key", "private-key", "jwt", "url-password", "secret-assignment", "npm-token"}


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_what_only_looks_like_a_secret_is_left_alone(text):
    assert find_secrets(text) == [], scrub(text)


# Of the shapes that are easy to miss, at most this share may get through: an AWS secret key whose lower-case
# runs read like an identifier's words, a URL password shaped like a shell variable ($Abc) are left, about
# 2 in 10,000 each.
MIN_CAUGHT = 0.998


@pytest.mark.parametrize("item", GENERATED)
def test_random_secrets_of_the_shapes_easy_to_miss_are_caught(item):
    """npm tokens on their own, shell passwords of letters only, quoted values after a secret's name, AWS secret
    keys without their name, URL passwords in every scheme: 1000 drawn at random, nearly all caught."""
    drawn = generated(item)
    missed = [text for text, secret in drawn if secret in scrub(text)]
    print(f"{item}: {len(drawn) - len(missed)}/{len(drawn)} caught")
    assert len(drawn) - len(missed) >= MIN_CAUGHT * len(drawn), missed[:10]


def test_a_private_key_block_cut_short_by_a_truncated_tool_output_is_redacted_to_its_end():
    text = "[tool result: -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\nAAAAC3Nz… [812 more chars]]"
    assert scrub(text) == "[tool result: [REDACTED:private-key]… [812 more chars]]"


def test_code_and_prose_are_left_alone():
    ordinary = (
        "api_key = os.environ['ANTHROPIC_API_KEY']\npassword = getpass.getpass()\ntoken = None\n"
        "sorted(items, key=lambda item: item.name)\ncommit 4fd4f2a9c1b0e2d3f4a5b6c7d8e9f0a1b2c3d4e5\n"
        "PLAYBOOK_UPDATE_ON_EXIT=1 claude -p 'hi'\nsecret_name: str = 'db-password'\n"
        "https://example.com/path?x=1\nssh://git@github.com/o/r.git\n"
    )
    assert find_secrets(ordinary) == []


@pytest.mark.slow
def test_false_positives_on_an_ordinary_code_heavy_transcript_are_few():
    text = code_heavy_text()
    findings = find_secrets(text)
    shown = [(f.kind, text[max(0, f.start - 40):f.end]) for f in findings]
    print(f"false positives: {len(findings)} in {len(text)} characters")
    assert len(findings) <= MAX_FALSE_POSITIVES, shown


# -- a whole cycle -------------------------------------------------------------------------------

PRIVATE_WORDS = "my-bank-pin-is-8841"


def _record(kind: str, content: object, **extra: object) -> str:
    return json.dumps({"type": kind, "isSidechain": False, "message": {"role": kind, "content": content}, **extra})


def _transcript(path: Path) -> None:
    secrets = [text for _, text, _ in all_planted()]
    lines = [_record("user", f"Please set up the deploy. <private>{PRIVATE_WORDS}</private> Keys: {secrets[0]}")]
    for number, secret in enumerate(secrets):
        tool = f"toolu_{number}"
        lines.append(_record("assistant", [{"type": "tool_use", "id": tool, "name": "Bash",
                                            "input": {"command": f"echo '{secret}' >> .env"}}]))
        lines.append(_record("user", [{"type": "tool_result", "tool_use_id": tool,
                                       "content": contexts(secret)["tool output"]}]))
        lines.append(_record("assistant", [{"type": "tool_use", "id": tool + "r", "name": "Read",
                                            "input": {"file_path": "/proj/config.py"}}]))
        lines.append(_record("user", [{"type": "tool_result", "tool_use_id": tool + "r",
                                       "content": [{"type": "text", "text": contexts(secret)["file dump"]}]}]))
        lines.append(_record("user", contexts(secret)["user message"]))
        lines.append(_record("assistant", [{"type": "text", "text": f"Noted: {secret}"}]))
    path.write_text("\n".join(lines) + "\n")


def _escaped(value: object) -> str:
    """`value` as JSON with every character of every string written as a `\\uXXXX` escape: valid JSON a model
    may write, in which no secret can be seen until it is decoded."""
    if isinstance(value, str):
        units = value.encode("utf-16-be")
        return '"' + "".join(f"\\u{units[i]:02x}{units[i + 1]:02x}" for i in range(0, len(units), 2)) + '"'
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_escaped(key)}: {_escaped(item)}" for key, item in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_escaped(item) for item in value) + "]"
    return json.dumps(value)


def _models(body: dict, escaped: bool = False):
    """Reflector and curator that quote every planted secret back, in every field the learner records."""
    secrets = [text for _, text, _ in all_planted()]
    encode = _escaped if escaped else json.dumps
    if "You are the reflector" in request_texts(body):
        return reply_text(encode({
            "analysis": "The session used " + "; ".join(secrets),
            "bullet_tags": [{"name": "pat-001", "tag": "helpful", "rationale": f"worked with {secrets[1]}"}],
        }))
    return reply_text(encode({
        "reasoning": "Remember the credentials: " + "; ".join(secrets),
        "operations": [{"type": "ADD", "section": "PROJECT CONTEXT", "text": f"Credential {i}: {secret}"}
                       for i, secret in enumerate(secrets[:9])]
        + [{"type": "UPDATE", "name": "pat-001", "text": "Run the tests; " + " ".join(secrets[9:])}],
    }))


def _run(args: list[str], env: dict[str, str], stdin: bytes = b"") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "playbook", *args], input=stdin, capture_output=True,
                          env=env, timeout=120)


@pytest.mark.slow
@pytest.mark.parametrize(("backend", "escaped"), [("api", False), ("cli", False), ("api", True)],
                         ids=["api", "cli", "api, replies escaped"])
def test_a_learning_cycle_sends_records_and_prints_no_planted_secret(tmp_path, backend, escaped):
    """With a key, and on a login through the Claude Code CLI: what goes out and what comes back is scrubbed,
    in a reply's text and again once its JSON is decoded (a `\\u0067hp_...` escape hides a token from the first)."""
    if backend == "cli" and CLAUDE is None:
        if os.environ.get("CI") == "true":
            raise AssertionError("Claude Code must be installed in CI")
        pytest.skip("Claude Code is not installed (npm install @anthropic-ai/claude-code)")
    home = tmp_path / "home"
    transcript = transcripts_dir(tmp_path / "proj", home / ".claude") / "session.jsonl"
    transcript.parent.mkdir(parents=True)
    _transcript(transcript)
    project = tmp_path / "proj"
    PlaybookRepository(project / ".claude").append(
        [ApplyOperations([{"type": "ADD", "text": "run the tests", "section": "PATTERNS & APPROACHES"}])],
        Cause(source="test"))
    values = [value for _, _, value in all_planted()]
    with FakeAnthropic(functools.partial(_models, escaped=escaped)) as api:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "AGENTIC_CONTEXT_", "PLAYBOOK_"))}
        env |= {"HOME": str(home), "CLAUDE_PROJECT_DIR": str(project), "ANTHROPIC_BASE_URL": api.url,
                "PLAYBOOK_UPDATE_ON_EXIT": "1", "PLAYBOOK_RETRY_BASE_DELAY": "0.01"}
        if backend == "api":
            env["ANTHROPIC_API_KEY"] = "sk-test-key"
        else:
            store_login(home / ".claude")
            env |= {"PLAYBOOK_CLAUDE": str(CLAUDE), "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                    "DISABLE_AUTOUPDATER": "1"}
        env.pop("CLAUDE_CONFIG_DIR", None)
        payload = {"hook_event_name": "SessionEnd", "reason": "prompt_input_exit", "session_id": "s-1",
                   "transcript_path": str(transcript)}
        hook = _run(["hook", "SessionEnd"], env, json.dumps(payload).encode())
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            state = PlaybookRepository(project / ".claude").state()
            if not state.pending:
                break
            time.sleep(0.05)
        outputs = [hook] + [_run([*args, "--project", str(project)], env) for args in (
            ["learn", "--pending"], ["show"], ["log", "-v"], ["log", "--json"], ["history", "pat-001"],
            ["history", "ctx-001"], ["stats"], ["verify"])]
        sent = [json.dumps(body) for body in api.message_bodies()]
    assert len(sent) == 2, [o.stderr for o in outputs]
    assert all(body.get("model") for body in api.message_bodies())
    state = PlaybookRepository(project / ".claude").state()
    assert not state.pending
    texts = [kp.text for _, kp in state.entries()]
    assert any("[REDACTED:aws-access-key]" in text for text in texts), texts  # the lessons stay readable
    assert "[private]" in sent[0] and PRIVATE_WORDS not in "".join(sent)
    files = {path: path.read_bytes().decode("utf-8", "replace") for path in (project / ".claude").rglob("*")
             if path.is_file()}
    assert project / ".claude" / "playbook.learn.log" in files
    printed = [o.stdout.decode("utf-8", "replace") + o.stderr.decode("utf-8", "replace") for o in outputs]
    for value in values + [PRIVATE_WORDS]:
        for body in sent:
            assert value not in body
        for path, content in files.items():
            assert value not in content, (value, path)
        for output in printed:
            assert value not in output, value


@pytest.mark.slow
def test_the_hooks_and_the_session_start_path_never_import_the_detector(tmp_path):
    project = tmp_path / "proj"
    PlaybookRepository(project / ".claude").append(
        [ApplyOperations([{"type": "ADD", "text": "run the tests", "section": "PATTERNS & APPROACHES"}])],
        Cause(source="test"))
    code = ("import sys, playbook.commands.cli, playbook.wiring.hooks, playbook.learner.learn, playbook.quick.inject;"
            f"from playbook.wiring.hooks import session_start_output; assert session_start_output({str(project)!r});"
            "print('detect_secrets' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


@pytest.mark.slow
def test_scrubbing_loads_neither_requests_nor_the_detect_secrets_scanner(tmp_path):
    """A command that scrubs (`add`, `edit`, every save) pays for the detectors' patterns only; what it leaves
    out still imports whole when asked for."""
    code = ("import sys, projections.scrub as s;"
            "assert s.scrub('ghp_' + 'a1B2' * 9) == '[REDACTED:github-token]';"
            "print(sorted(m for m in ('requests', 'urllib3', 'detect_secrets.core.scan') if m in sys.modules));"
            "from detect_secrets import SecretsCollection; import requests;"
            "print(SecretsCollection.__name__, requests.Session.__name__, type(requests).__name__)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path)
    assert result.stdout.split("\n")[:2] == ["[]", "SecretsCollection Session module"], result.stdout
