"""The fake Anthropic API: its wire format (raw HTTP and SSE), and the real SDK against it."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
import urllib.error
import urllib.request
from urllib.parse import urlsplit

import pytest

from tests.fake_anthropic import FakeAnthropic, Reply, reply_error, reply_text, reply_tool_use, request_texts

MODEL = "claude-test-model"


def post(url: str, path: str, payload: object, timeout: float = 10) -> tuple[int, dict[str, str], bytes]:
    """A raw POST: (status, lower-cased headers, body)."""
    data = json.dumps(payload).encode()
    request = urllib.request.Request(
        url + path, data=data, method="POST", headers={"content-type": "application/json", "x-api-key": "sk-raw"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read()
    except urllib.error.HTTPError as error:
        return error.code, {k.lower(): v for k, v in error.headers.items()}, error.read()


def parse_sse(raw: str) -> list[tuple[str, dict]]:
    """Split an SSE body into (event, data) pairs, checking the exact framing."""
    assert raw.endswith("\n\n")
    events = []
    for frame in raw[:-2].split("\n\n"):
        lines = frame.split("\n")
        assert len(lines) == 2, frame
        assert lines[0].startswith("event: ") and lines[1].startswith("data: "), frame
        name, data = lines[0][len("event: ") :], json.loads(lines[1][len("data: ") :])
        assert data["type"] == name
        events.append((name, data))
    return events


def body(text: str = "hello", stream: bool = False, **extra: object) -> dict:
    return {"model": MODEL, "max_tokens": 64, "messages": [{"role": "user", "content": text}], "stream": stream, **extra}


# -- raw HTTP ----------------------------------------------------------------------


def test_plain_message_shape_and_recording():
    with FakeAnthropic(lambda b: reply_text("Hi [pat-001]")) as api:
        assert api.url.startswith("http://127.0.0.1:")
        status, headers, raw = post(api.url, "/v1/messages", body("say hi"))
        requests = api.snapshot()
    assert status == 200 and headers["content-type"] == "application/json"
    message = json.loads(raw)
    assert message["type"] == "message" and message["role"] == "assistant" and message["model"] == MODEL
    assert message["id"].startswith("msg_")
    assert message["content"] == [{"type": "text", "text": "Hi [pat-001]"}]
    assert message["stop_reason"] == "end_turn"
    assert message["usage"]["input_tokens"] >= 1 and message["usage"]["output_tokens"] >= 1
    [request] = requests
    assert (request.method, request.path, request.route) == ("POST", "/v1/messages", "/v1/messages")
    assert request.headers["x-api-key"] == "sk-raw"
    assert request.body["messages"][0]["content"] == "say hi"


def test_default_responder_says_ok_and_query_strings_are_accepted():
    with FakeAnthropic() as api:
        status, _, raw = post(api.url, "/v1/messages?beta=true", body())
        assert api.message_requests()[0].path == "/v1/messages?beta=true"
    assert status == 200 and json.loads(raw)["content"][0]["text"] == "OK."


def test_raw_sse_stream_format():
    text = "The quick brown fox [mis-002]"
    with FakeAnthropic(lambda b: reply_text(text)) as api:
        status, headers, raw = post(api.url, "/v1/messages?beta=true", body(stream=True))
    assert status == 200 and headers["content-type"].startswith("text/event-stream")
    events = parse_sse(raw.decode())
    names = [name for name, _ in events]
    deltas = [d for n, d in events if n == "content_block_delta"]
    assert names == ["message_start", "content_block_start", *["content_block_delta"] * len(deltas),
                     "content_block_stop", "message_delta", "message_stop"]  # fmt: skip
    assert len(deltas) > 1  # the text comes in pieces
    assert all(d["delta"]["type"] == "text_delta" and d["index"] == 0 for d in deltas)
    assert "".join(d["delta"]["text"] for d in deltas) == text
    start = events[0][1]["message"]
    assert start["content"] == [] and start["stop_reason"] is None and start["model"] == MODEL
    assert events[1][1]["content_block"] == {"type": "text", "text": ""}
    message_delta = events[-2][1]
    assert message_delta["delta"]["stop_reason"] == "end_turn" and message_delta["usage"]["output_tokens"] >= 1


def test_raw_sse_tool_use_stream():
    reply = reply_tool_use("Bash", {"command": "echo hi"}, text="Running it.", tool_id="toolu_1")
    with FakeAnthropic(lambda b: reply) as api:
        _, _, raw = post(api.url, "/v1/messages", body(stream=True))
    events = parse_sse(raw.decode())
    starts = [d["content_block"] for n, d in events if n == "content_block_start"]
    assert starts == [{"type": "text", "text": ""}, {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}]
    partial = "".join(d["delta"]["partial_json"] for n, d in events if n == "content_block_delta" and d["index"] == 1)
    assert json.loads(partial) == {"command": "echo hi"}
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"


def test_count_tokens_and_unknown_paths():
    with FakeAnthropic() as api:
        status, _, raw = post(api.url, "/v1/messages/count_tokens", body("x" * 400))
        assert status == 200 and json.loads(raw)["input_tokens"] >= 100
        status, _, raw = post(api.url, "/v1/complete", body())
        assert status == 404
        error = json.loads(raw)
        assert error["type"] == "error" and error["error"]["type"] == "not_found_error"
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(api.url + "/v1/models", timeout=5)
        assert caught.value.code == 404
        assert [r.method for r in api.snapshot()] == ["POST", "POST", "GET"]
        assert len(api.message_requests()) == 0  # count_tokens is not a message request


def test_error_reply_with_retry_after():
    with FakeAnthropic(lambda b: reply_error(429, retry_after=3, message="slow down")) as api:
        status, headers, raw = post(api.url, "/v1/messages", body())
    assert status == 429 and headers["retry-after"] == "3"
    assert json.loads(raw) == {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}


def test_garbage_body_and_failing_responder():
    def responder(b: dict) -> Reply:
        if b["messages"][0]["content"] == "garbage":
            return Reply(body=b"\x00not json at all")
        raise RuntimeError("boom")

    with FakeAnthropic(responder) as api:
        status, _, raw = post(api.url, "/v1/messages", body("garbage"))
        assert (status, raw) == (200, b"\x00not json at all")
        status, _, raw = post(api.url, "/v1/messages", body("other"))
        assert status == 500 and "boom" in json.loads(raw)["error"]["message"]
        assert post(api.url, "/v1/messages/count_tokens", body())[0] == 200  # still serving


@pytest.mark.slow
def test_delay_is_honoured():
    with FakeAnthropic(lambda b: Reply(text="late", delay=0.3)) as api:
        started = time.monotonic()
        status, _, _ = post(api.url, "/v1/messages", body())
    assert status == 200 and time.monotonic() - started >= 0.3


@pytest.mark.slow
def test_client_disconnects_do_not_kill_the_server():
    with FakeAnthropic(lambda b: Reply(text="x" * 10_000, delay=0.2)) as api:
        host, port = urlsplit(api.url).hostname, urlsplit(api.url).port
        payload = json.dumps(body(stream=True)).encode()
        for _ in range(3):  # hang up before, and in the middle of, the answer
            with socket.create_connection((host, port), timeout=5) as sock:
                sock.sendall(
                    b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    b"Content-Length: %d\r\n\r\n%s" % (len(payload), payload)
                )
            with socket.create_connection((host, port), timeout=5) as sock:
                sock.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"trunc")
        time.sleep(0.5)
        status, _, raw = post(api.url, "/v1/messages", body(stream=True))
    assert status == 200 and b"message_stop" in raw


def test_keep_alive_connection_serves_several_requests():
    with FakeAnthropic(lambda b: reply_text(b["messages"][0]["content"].upper())) as api:
        connection = http.client.HTTPConnection(urlsplit(api.url).hostname, urlsplit(api.url).port, timeout=5)
        answers = []
        for word, stream in (("one", True), ("two", False), ("three", True)):
            connection.request("POST", "/v1/messages", json.dumps(body(word, stream=stream)), {"content-type": "application/json"})
            response = connection.getresponse()
            answers.append(response.read().decode())
        connection.close()
    assert "".join(d["delta"]["text"] for n, d in parse_sse(answers[0]) if n == "content_block_delta") == "ONE"
    assert json.loads(answers[1])["content"][0]["text"] == "TWO"
    assert answers[2].endswith("event: message_stop\ndata: {\"type\": \"message_stop\"}\n\n")


def test_concurrent_requests_are_all_recorded():
    statuses: list[int] = []

    def one(i: int) -> None:
        statuses.append(post(api.url, "/v1/messages", body(str(i)))[0])

    with FakeAnthropic(lambda b: Reply(text="ok", delay=0.05)) as api:
        threads = [threading.Thread(target=one, args=(i,)) for i in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        seen = api.wait_for(16, timeout=5)
    assert statuses == [200] * 16
    assert sorted(r.body["messages"][0]["content"] for r in seen) == sorted(str(i) for i in range(16))


def test_request_texts_flattens_system_and_every_kind_of_content():
    request = {
        "system": [{"type": "text", "text": "SYS-A"}, {"type": "text", "text": "SYS-B"}],
        "messages": [
            {"role": "user", "content": "plain user"},
            {"role": "system", "content": [{"type": "text", "text": "SessionStart hook additional context: MARK"}]},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm"},
                                              {"type": "tool_use", "id": "t", "name": "Bash", "input": {"command": "echo IN"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t",
                                          "content": [{"type": "text", "text": "RESULT"}]}]},
        ],
    }  # fmt: skip
    text = request_texts(request)
    for needle in ("SYS-A", "SYS-B", "plain user", "MARK", "hmm", "echo IN", "RESULT"):
        assert needle in text
    assert request_texts({"system": "just a string", "messages": []}) == "just a string"
    assert request_texts(None) == "" and request_texts({"messages": "bad"}) == ""


# -- the anthropic SDK -------------------------------------------------------------


@pytest.fixture
def anthropic_sdk():
    return pytest.importorskip("anthropic")


def client_for(sdk, api: FakeAnthropic, **options):
    options.setdefault("max_retries", 0)
    return sdk.Anthropic(base_url=api.url, api_key="sk-test-123", **options)


def test_sdk_non_streaming(anthropic_sdk):
    with FakeAnthropic(lambda b: reply_text("Plain answer [pat-001]")) as api:
        message = client_for(anthropic_sdk, api).messages.create(
            model=MODEL, max_tokens=100, system="You are a test.", messages=[{"role": "user", "content": "Hello"}]
        )
        [request] = api.message_requests()
    assert message.content[0].type == "text" and message.content[0].text == "Plain answer [pat-001]"
    assert message.stop_reason == "end_turn" and message.model == MODEL
    assert message.usage.input_tokens >= 1 and message.usage.output_tokens >= 1
    # older SDKs send x-api-key, 2.x sends the key as a bearer token
    assert "sk-test-123" in (request.headers.get("x-api-key", "") + request.headers.get("authorization", ""))
    assert "anthropic-version" in request.headers
    assert request.body.get("stream") in (None, False)
    assert "You are a test." in request_texts(request) and "Hello" in request_texts(request.body)


@pytest.mark.slow
def test_sdk_streaming(anthropic_sdk):
    with FakeAnthropic(lambda b: reply_text("Streamed answer, in pieces [mis-002]")) as api:
        with client_for(anthropic_sdk, api).messages.stream(
            model=MODEL, max_tokens=100, messages=[{"role": "user", "content": "Hello"}]
        ) as stream:
            text = "".join(stream.text_stream)
            final = stream.get_final_message()
        assert api.message_bodies()[0]["stream"] is True
    assert text == "Streamed answer, in pieces [mis-002]"
    assert final.content[0].text == text and final.stop_reason == "end_turn"
    assert final.usage.output_tokens >= 1


def test_sdk_streaming_tool_use(anthropic_sdk):
    reply = reply_tool_use("Read", {"file_path": "/etc/hostname"}, tool_id="toolu_9")
    with FakeAnthropic(lambda b: reply) as api:
        with client_for(anthropic_sdk, api).messages.stream(
            model=MODEL, max_tokens=100, messages=[{"role": "user", "content": "read it"}]
        ) as stream:
            final = stream.get_final_message()
    [block] = final.content
    assert (block.type, block.id, block.name, block.input) == ("tool_use", "toolu_9", "Read", {"file_path": "/etc/hostname"})
    assert final.stop_reason == "tool_use"


@pytest.mark.slow
def test_sdk_beta_endpoint_and_count_tokens(anthropic_sdk):
    with FakeAnthropic(lambda b: reply_text("beta ok")) as api:
        client = client_for(anthropic_sdk, api)
        message = client.beta.messages.create(model=MODEL, max_tokens=10, messages=[{"role": "user", "content": "hi"}])
        counted = client.messages.count_tokens(model=MODEL, messages=[{"role": "user", "content": "hi " * 100}])
        routes = [r.route for r in api.snapshot()]
    assert message.content[0].text == "beta ok"
    assert counted.input_tokens >= 1
    assert routes == ["/v1/messages", "/v1/messages/count_tokens"]


def test_sdk_sees_errors(anthropic_sdk):
    with FakeAnthropic(lambda b: reply_error(429, retry_after=7, message="too many")) as api:
        with pytest.raises(anthropic_sdk.RateLimitError) as caught:
            client_for(anthropic_sdk, api).messages.create(model=MODEL, max_tokens=10, messages=[{"role": "user", "content": "x"}])
    assert caught.value.status_code == 429
    assert caught.value.response.headers["retry-after"] == "7"
    assert caught.value.body["error"]["message"] == "too many"


@pytest.mark.slow
def test_sdk_retries_overloaded_then_succeeds(anthropic_sdk):
    answers = iter([reply_error(529, retry_after=0, message="Overloaded"), reply_text("second time lucky")])
    with FakeAnthropic(lambda b: next(answers)) as api:
        message = client_for(anthropic_sdk, api, max_retries=2).messages.create(
            model=MODEL, max_tokens=10, messages=[{"role": "user", "content": "x"}]
        )
        assert len(api.message_requests()) == 2
    assert message.content[0].text == "second time lucky"


@pytest.mark.slow
def test_sdk_timeout_on_delay_leaves_the_server_serving(anthropic_sdk):
    replies = iter([Reply(text="too late", delay=1.0), reply_text("on time")])
    with FakeAnthropic(lambda b: next(replies)) as api:
        client = client_for(anthropic_sdk, api, timeout=0.2)
        with pytest.raises(anthropic_sdk.APITimeoutError):
            client.messages.create(model=MODEL, max_tokens=10, messages=[{"role": "user", "content": "x"}])
        message = client_for(anthropic_sdk, api, timeout=5).messages.create(
            model=MODEL, max_tokens=10, messages=[{"role": "user", "content": "y"}]
        )
    assert message.content[0].text == "on time"
