"""The model calls against a fake Anthropic API: retries, failures, and the curator's contract."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time

import pytest

from playbook.learner import models
from playbook.learner.models import ModelError, model_config
from tests.fake_anthropic import FakeAnthropic, Reply, reply_error, reply_text

PLAYBOOK = {"version": "1.0", "last_updated": None, "sections": {
    "PATTERNS & APPROACHES": [{"name": "pat-001", "text": "handle errors", "helpful": 2, "harmful": 1}],
    "MISTAKES TO AVOID": [], "USER PREFERENCES": [], "PROJECT CONTEXT": [], "OTHERS": []}}
REFLECTION = {"analysis": "The session showed poor error handling. pat-001 was not applied.",
              "bullet_tags": [{"name": "pat-001", "tag": "harmful", "rationale": "Error handling advice was ignored"}]}
CURATION = {"reasoning": "pat-001 has been tagged harmful repeatedly. The advice may need updating.",
            "operations": [{"type": "UPDATE", "target_id": "pat-001",
                            "text": "Use structured error handling with try/except blocks and specific exception types"}]}


@pytest.fixture
def api_env(monkeypatch):
    for name in ("AGENTIC_CONTEXT_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_API_KEY", "AGENTIC_CONTEXT_MODEL",
                 "ANTHROPIC_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL", "AGENTIC_CONTEXT_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PLAYBOOK_RETRY_BASE_DELAY", "0.01")

    def use(api: FakeAnthropic) -> None:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-planted-secret")

    return use


def scripted(*replies):
    queue = list(replies)
    return lambda body: queue.pop(0) if len(queue) > 1 else queue[0]


def test_SCN_CUR_010_01_curator_produces_reasoning_and_operations(api_env):
    with FakeAnthropic(lambda body: reply_text(json.dumps(CURATION))) as api:
        api_env(api)
        result = asyncio.run(models.run_curator(REFLECTION, PLAYBOOK))
        prompt = json.dumps(api.message_bodies()[0])
    assert result == CURATION
    assert "Error handling advice was ignored" in prompt and "[pat-001] helpful=2 harmful=1" in prompt


@pytest.mark.slow
def test_SCN_CUR_010_02_curator_api_error_returns_empty_result(api_env):
    with FakeAnthropic(lambda body: reply_error(500)) as api:
        api_env(api)
        assert asyncio.run(models.run_curator(REFLECTION, PLAYBOOK)) == {"reasoning": "", "operations": []}
        assert len(api.message_requests()) == models.MAX_RETRIES


def test_a_never_raising_call_records_what_it_caught(api_env, tmp_path, monkeypatch, capsys):
    """REQ-CUR-012: the failure is one line on stderr, and a diagnostic file in diagnostic mode."""
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(tmp_path))
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "diagnostic_mode").write_text("")
    with FakeAnthropic(lambda body: reply_text("no JSON here")) as api:
        api_env(api)
        assert asyncio.run(models.run_curator(REFLECTION, PLAYBOOK)) == {"reasoning": "", "operations": []}
    err = capsys.readouterr().err
    assert "run_curator failed: ModelError" in err
    files = list((tmp_path / ".claude" / "diagnostic").glob("*_run_curator_error.txt"))
    assert len(files) == 1 and "holds no JSON object" in files[0].read_text()


def test_SCN_CUR_010_03_curator_with_empty_reflector_output(api_env):
    with FakeAnthropic(lambda body: reply_text('{"reasoning": "nothing to do", "operations": []}')) as api:
        api_env(api)
        result = asyncio.run(models.run_curator({}, PLAYBOOK))
    assert result == {"reasoning": "nothing to do", "operations": []}


def test_SCN_CUR_012_01_curator_unparseable_json_returns_empty_result(api_env):
    with FakeAnthropic(lambda body: reply_text("I would rather not answer in JSON today.")) as api:
        api_env(api)
        assert asyncio.run(models.run_curator(REFLECTION, PLAYBOOK)) == {"reasoning": "", "operations": []}


def test_curator_prompt_holds_the_reflection_not_the_transcript(api_env):
    with FakeAnthropic(lambda body: reply_text(json.dumps(CURATION))) as api:
        api_env(api)
        asyncio.run(models.run_curator(REFLECTION, PLAYBOOK))
        text = json.dumps(api.message_bodies()[0])
    assert "Session transcript" not in text and "poor error handling" in text


def test_429_then_success_is_retried_honouring_retry_after(api_env):
    with FakeAnthropic(scripted(reply_error(429, retry_after=0), reply_text(json.dumps(REFLECTION)))) as api:
        api_env(api)
        result = asyncio.run(models.reflect([{"role": "user", "content": "hi"}], PLAYBOOK, ["pat-001"],
                                            model_config()))
        assert len(api.message_requests()) == 2
    assert result == REFLECTION


def test_other_4xx_fail_at_once(api_env):
    with FakeAnthropic(lambda body: reply_error(400)) as api:
        api_env(api)
        with pytest.raises(ModelError, match="1 attempt"):
            asyncio.run(models.complete("hi", model_config()))
        assert len(api.message_requests()) == 1


@pytest.mark.slow
def test_prose_around_json_is_accepted_and_garbage_is_an_error(api_env):
    prose = "Here you go:\n" + json.dumps(REFLECTION) + "\nHope that helps."
    with FakeAnthropic(scripted(reply_text(prose), reply_text("}{ not json at all"))) as api:
        api_env(api)
        config = model_config()
        assert asyncio.run(models.reflect([], PLAYBOOK, [], config)) == REFLECTION
        with pytest.raises(ModelError):
            asyncio.run(models.reflect([], PLAYBOOK, [], config))


def test_model_and_credentials_follow_the_documented_precedence():
    assert model_config({}) is None
    env = {"ANTHROPIC_API_KEY": "k3", "ANTHROPIC_AUTH_TOKEN": "k2", "ANTHROPIC_DEFAULT_SONNET_MODEL": "m3",
           "ANTHROPIC_BASE_URL": "http://b2"}
    config = model_config(env)
    assert (config.model, config.auth_token, config.api_key, config.base_url) == ("m3", "k2", None, "http://b2")
    env |= {"AGENTIC_CONTEXT_API_KEY": "k1", "ANTHROPIC_MODEL": "m2", "AGENTIC_CONTEXT_BASE_URL": "http://b1"}
    config = model_config(env)
    assert (config.model, config.api_key, config.base_url) == ("m2", "k1", "http://b1")
    assert model_config(env | {"AGENTIC_CONTEXT_MODEL": "m1"}).model == "m1"
    assert model_config({"ANTHROPIC_API_KEY": "k"}).model == models.DEFAULT_MODEL
    assert "k1" not in repr(config) and "k1" not in str(config)


@pytest.mark.slow
def test_the_injection_path_never_imports_anthropic():
    code = ("import sys, playbook, playbook.wiring.hooks, playbook.quick.inject, playbook.api, projections.injection;"
            "print('anthropic' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


@pytest.mark.slow
def test_the_learning_hooks_import_neither_anthropic_nor_asyncio():
    # A SessionEnd hook records the request and starts the learner: Claude Code waits for it,
    # so it must not pay for the model client or the event loop the learner alone needs.
    code = ("import sys, playbook.commands.cli, playbook.wiring.hooks, playbook.learner.learn;"
            "print(sorted(m for m in ('anthropic', 'asyncio', 'requests') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize("credential", ["key", "token"])
def test_a_call_sends_one_credential_the_way_claude_code_does(credential, monkeypatch):
    monkeypatch.setenv("PLAYBOOK_RETRY_BASE_DELAY", "0.01")
    with FakeAnthropic(lambda body: reply_text("answer")) as api:
        config = models.ModelConfig("m-test", "sk-test-key" if credential == "key" else None,
                                    "oauth-token" if credential == "token" else None, api.url + "/")
        assert asyncio.run(models.complete("question", config)) == "answer"
        [request] = api.message_requests()
    assert request.route == "/v1/messages" and request.headers["anthropic-version"] == "2023-06-01"
    assert request.body["model"] == "m-test" and request.body["messages"] == [{"role": "user", "content": "question"}]
    if credential == "key":
        assert request.headers["x-api-key"] == "sk-test-key" and "authorization" not in request.headers
    else:
        assert request.headers["authorization"] == "Bearer oauth-token" and "x-api-key" not in request.headers


def test_a_call_cut_by_its_deadline_returns_at_once_and_is_recorded_as_cancelled(monkeypatch):
    from eventlog.commands import ModelCall

    with FakeAnthropic(lambda body: Reply(text="too late", delay=5)) as api:
        config = models.ModelConfig("m-test", "sk-test-key", None, api.url)
        calls: list[ModelCall] = []

        async def cut() -> None:
            await asyncio.wait_for(models.complete("question", config, calls=calls), 0.3)

        started = time.monotonic()
        with pytest.raises(asyncio.TimeoutError):
            asyncio.run(cut())
        assert time.monotonic() - started < 3  # neither the call nor the interpreter waited for the reply
    assert [(c.outcome, c.error) for c in calls] == [("cancelled", "deadline")]


def test_a_reply_larger_than_any_answer_is_not_read_past_its_cap(monkeypatch):
    from playbook.learner import messages_api

    monkeypatch.setattr(messages_api, "MAX_REPLY_BYTES", 1 << 20)
    huge = b'{"content": [{"type": "text", "text": "' + b"x" * (3 << 20) + b'"}]}'
    with FakeAnthropic(lambda body: Reply(body=huge)) as api:
        config = models.ModelConfig("m-test", "sk-test-key", None, api.url)
        with pytest.raises(ModelError, match="could not be read: a reply of more than 1 MiB"):
            asyncio.run(models.complete("question", config))
        assert len(api.message_requests()) == 1  # not asked again: the same endpoint would send the same


def test_a_reply_that_ends_too_slowly_is_a_timeout_and_asked_again(monkeypatch):
    monkeypatch.setattr(models, "REQUEST_TIMEOUT", 0.3)
    monkeypatch.setenv("PLAYBOOK_RETRY_BASE_DELAY", "0.01")
    answers = iter([Reply(text="late", delay=1.0), reply_text("on time")])
    with FakeAnthropic(lambda body: next(answers)) as api:
        config = models.ModelConfig("m-test", "sk-test-key", None, api.url)
        calls: list = []
        assert asyncio.run(models.complete("question", config, calls=calls)) == "on time"
    assert [(c.outcome, c.error) for c in calls] == [("error", "APITimeoutError"), ("ok", None)]


def test_a_redirect_is_a_failure_and_the_key_goes_nowhere_else():
    with FakeAnthropic(lambda body: reply_text("the key reached this server")) as elsewhere:
        moved = Reply(status=307, headers={"location": elsewhere.url + "/v1/messages"}, body=b"")
        with FakeAnthropic(lambda body: moved) as api:
            config = models.ModelConfig("m-test", "sk-test-key", None, api.url)
            with pytest.raises(ModelError, match=r"APIStatusError \(HTTP 307\)"):
                asyncio.run(models.complete("question", config))
        assert elsewhere.message_requests() == []


def test_a_reply_that_trickles_is_cut_at_the_request_timeout(monkeypatch):
    import socket
    import threading

    monkeypatch.setattr(models, "REQUEST_TIMEOUT", 0.5)
    monkeypatch.setenv("PLAYBOOK_RETRY_BASE_DELAY", "0.01")
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def trickle() -> None:  # headers, then a byte every 0.1 s: no socket wait is ever long
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            with connection:
                connection.recv(65536)
                connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")
                while not stop.is_set():
                    try:
                        connection.sendall(b" ")
                    except OSError:
                        break
                    time.sleep(0.1)

    threading.Thread(target=trickle, daemon=True).start()
    config = models.ModelConfig("m-test", "sk-test-key", None, f"http://127.0.0.1:{listener.getsockname()[1]}")
    calls: list = []
    started = time.monotonic()
    try:
        with pytest.raises(ModelError, match="APITimeoutError"):
            asyncio.run(models.complete("question", config, calls=calls))
    finally:
        stop.set()
        listener.close()
    assert time.monotonic() - started < 10
    assert [c.error for c in calls] == ["APITimeoutError"] * models.MAX_RETRIES


@pytest.mark.parametrize("asked, slept", [("1e9", 60.0), ("inf", None), ("nan", None), ("-5", 0.0), ("2", 2.0)])
def test_retry_after_is_honoured_up_to_a_minute(asked, slept, monkeypatch):
    waits: list[float] = []

    async def no_wait(delay: float) -> None:
        waits.append(delay)

    monkeypatch.setattr(models.asyncio, "sleep", no_wait)
    monkeypatch.setenv("PLAYBOOK_RETRY_BASE_DELAY", "0.01")
    answers = iter([Reply(status=429, headers={"retry-after": asked}), reply_text("now")])
    with FakeAnthropic(lambda body: next(answers)) as api:
        config = models.ModelConfig("m-test", "sk-test-key", None, api.url)
        assert asyncio.run(models.complete("question", config)) == "now"
    [waited] = waits
    assert waited == slept if slept is not None else waited < 0.02  # not finite: the backoff's own delay


def test_a_key_read_with_its_newline_is_sent_without_it_and_one_no_header_can_carry_is_never_quoted():
    with FakeAnthropic(lambda body: reply_text("answer")) as api:
        config = models.ModelConfig("m-test", "sk-test-key\n", None, api.url)
        assert asyncio.run(models.complete("question", config)) == "answer"
        assert api.message_requests()[0].headers["x-api-key"] == "sk-test-key"
        calls: list = []
        bad = models.ModelConfig("m-test", "sk-test-\u2019key", None, api.url)
        with pytest.raises(ModelError) as caught:
            asyncio.run(models.complete("question", bad, calls=calls))
    chain = [caught.value, caught.value.__cause__, getattr(caught.value.__cause__, "__cause__", None)]
    assert not any("sk-test-" in str(error) for error in chain if error is not None)
    assert [c.error for c in calls] == ["InvalidHeaderError"]  # not retried: the same key fails the same way
