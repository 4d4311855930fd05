"""A fake Anthropic Messages API on 127.0.0.1, for tests that run real clients against it.

    with FakeAnthropic(lambda body: reply_text("Hi [pat-001]")) as api:
        env = {"ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "sk-test"}
        ...  # run the client (the anthropic SDK, Claude Code)
        assert "MARKER" in request_texts(api.message_bodies()[0])

It answers POST /v1/messages (any query string, e.g. ?beta=true) in the plain JSON
shape or, when the body asks for "stream": true, in Anthropic's SSE format
(message_start, content_block_start, content_block_delta, content_block_stop,
message_delta, message_stop, each as `event: NAME\\ndata: JSON\\n\\n`), and
POST /v1/messages/count_tokens. Everything else gets a 404 JSON error. A client that
disconnects mid-answer never takes the server down.

Only the standard library is used, so the fake works in any test environment.
"""

from __future__ import annotations

import gzip
import itertools
import json
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

__all__ = [
    "FakeAnthropic",
    "RecordedRequest",
    "Reply",
    "reply_error",
    "reply_text",
    "reply_tool_use",
    "usage_of",
    "request_texts",
    "sse_events",
]

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


@dataclass
class Reply:
    """What the fake answers to one request.

    `text` is the assistant's text. `content`, when given, is the list of content
    blocks to answer instead (e.g. a tool_use block); `stop_reason` defaults to
    "tool_use" when a tool_use block is among them, else "end_turn". A `status`
    other than 200 answers `body` (or an Anthropic-shaped error) with `headers`.
    `body` given with status 200 is sent as is, raw (garbage tests). `delay` is slept
    before anything is sent.
    """

    text: str = ""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    body: bytes | None = None
    content: list[dict[str, Any]] | None = None
    stop_reason: str | None = None
    usage: dict[str, int] | None = None
    """Usage fields that replace the estimated ones (e.g. cache tokens)."""

    def blocks(self) -> list[dict[str, Any]]:
        if self.content is not None:
            return self.content
        return [{"type": "text", "text": self.text}]

    def final_stop_reason(self) -> str:
        if self.stop_reason:
            return self.stop_reason
        return "tool_use" if any(b.get("type") == "tool_use" for b in self.blocks()) else "end_turn"


def reply_text(text: str) -> Reply:
    return Reply(text=text)


def reply_tool_use(name: str, tool_input: dict[str, Any], *, text: str = "", tool_id: str | None = None) -> Reply:
    """An assistant turn that calls one tool (optionally after some text)."""
    blocks: list[dict[str, Any]] = []
    if text:
        blocks.append({"type": "text", "text": text})
    blocks.append(
        {"type": "tool_use", "id": tool_id or f"toolu_fake{next(_ids):06d}", "name": name, "input": tool_input}
    )
    return Reply(content=blocks)


def reply_error(status: int, retry_after: float | int | None = None, message: str = "fake error") -> Reply:
    """An Anthropic-shaped error: {"type": "error", "error": {"type": ..., "message": ...}}."""
    error_type = _ERROR_TYPES.get(status, "api_error")
    body = json.dumps({"type": "error", "error": {"type": error_type, "message": message}}).encode()
    headers = {"content-type": "application/json"}
    if retry_after is not None:
        headers["retry-after"] = str(retry_after)
    return Reply(status=status, headers=headers, body=body)


@dataclass
class RecordedRequest:
    method: str
    path: str  # with the query string, as sent
    headers: dict[str, str]  # lower-cased names
    body: Any  # the parsed JSON body, or None
    usage: dict[str, int] | None = None  # the usage the fake reported in its 200 reply, if it gave one

    @property
    def route(self) -> str:
        """The path without its query string."""
        return urlsplit(self.path).path


_ids = itertools.count(1)


def _estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4)


def _block_text(block: Any) -> list[str]:
    if isinstance(block, str):
        return [block]
    if not isinstance(block, dict):
        return []
    kind = block.get("type")
    out: list[str] = []
    if isinstance(block.get("text"), str):
        out.append(block["text"])
    if kind == "tool_use":
        out.append(json.dumps(block.get("input"), ensure_ascii=False))
    if kind == "thinking" and isinstance(block.get("thinking"), str):
        out.append(block["thinking"])
    content = block.get("content")
    if isinstance(content, (str, list)):
        out.extend(_content_text(content))
    return out


def _content_text(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [t for block in content for t in _block_text(block)]
    return []


def request_texts(request_body: Any) -> str:
    """The system prompt and every message's text of a Messages request, as one string.

    Strings and content blocks (text, tool_use input, tool_result content) alike, so
    a test can assert that some text reached the model. Accepts a RecordedRequest too.
    """
    if isinstance(request_body, RecordedRequest):
        request_body = request_body.body
    if not isinstance(request_body, dict):
        return ""
    parts = _content_text(request_body.get("system"))
    for message in request_body.get("messages") or []:
        if isinstance(message, dict):
            parts.extend(_content_text(message.get("content")))
    return "\n".join(parts)


def usage_of(reply: Reply, body: dict[str, Any]) -> dict[str, int]:
    """The usage the fake reports for `reply` to `body`: tokens estimated as characters / 4, or `reply.usage`."""
    blocks = reply.blocks()
    out_text = "".join(b.get("text", "") for b in blocks) + "".join(
        json.dumps(b.get("input")) for b in blocks if b.get("type") == "tool_use"
    )
    usage = {
        "input_tokens": _estimate_tokens(request_texts(body)),
        "output_tokens": _estimate_tokens(out_text),
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }
    return {**usage, **(reply.usage or {})}


def _message(reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
    blocks = reply.blocks()
    return {
        "id": f"msg_fake{next(_ids):06d}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model") or "claude-fake",
        "content": blocks,
        "stop_reason": reply.final_stop_reason(),
        "stop_sequence": None,
        "usage": usage_of(reply, body),
    }


def _split(text: str, parts: int = 3) -> list[str]:
    if len(text) <= 1:
        return [text]
    size = max(1, -(-len(text) // parts))
    return [text[i : i + size] for i in range(0, len(text), size)]


def sse_events(reply: Reply, body: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The (event name, data) pairs of a streamed answer, in Anthropic's order."""
    message = _message(reply, body)
    start = dict(message, content=[], stop_reason=None)
    start["usage"] = dict(message["usage"], output_tokens=1)
    yield "message_start", {"type": "message_start", "message": start}
    for index, block in enumerate(message["content"]):
        kind = block.get("type")
        if kind == "text":
            yield "content_block_start", {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "text", "text": ""},
            }
            for piece in _split(block.get("text", "")):
                yield "content_block_delta", {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "text_delta", "text": piece},
                }
        elif kind == "tool_use":
            yield "content_block_start", {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}},
            }
            for piece in _split(json.dumps(block.get("input", {}))):
                yield "content_block_delta", {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": piece},
                }
        else:  # any other block: sent whole in its start event
            yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": block}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield "message_delta", {
        "type": "message_delta",
        "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
        "usage": {"output_tokens": message["usage"]["output_tokens"]},
    }
    yield "message_stop", {"type": "message_stop"}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
        pass

    def handle(self) -> None:
        try:
            super().handle()
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, TimeoutError, OSError):
            self.close_connection = True

    # -- reading ---------------------------------------------------------------

    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            data = bytearray()
            while True:
                size_line = self.rfile.readline(65537)
                size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass
                    break
                data += self.rfile.read(size)
                self.rfile.readline(65537)
            raw = bytes(data)
        else:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length > 0 else b""
        encoding = (self.headers.get("Content-Encoding") or "").lower()
        try:
            if encoding == "gzip":
                raw = gzip.decompress(raw)
            elif encoding == "deflate":
                raw = zlib.decompress(raw)
        except (OSError, zlib.error):
            pass
        return raw

    def _record(self) -> RecordedRequest:
        raw = self._read_body()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        request = RecordedRequest(
            method=self.command,
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
        )
        self.server.fake._record(request)
        return request

    # -- writing ---------------------------------------------------------------

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        sent = {k.lower() for k in (headers or {})}
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if "content-type" not in sent:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("request-id", f"req_fake{next(_ids):06d}")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        self.wfile.flush()

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(payload).encode(), headers)

    def _not_found(self) -> None:
        reply = reply_error(404, message=f"{self.command} {self.path} is not served by the fake")
        self._send(404, reply.body or b"", reply.headers)

    def _stream(self, reply: Reply, body: dict[str, Any]) -> None:
        self.send_response(200)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("request-id", f"req_fake{next(_ids):06d}")
        self.end_headers()
        for name, data in sse_events(reply, body):
            chunk = f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    # -- routes ----------------------------------------------------------------

    def do_POST(self) -> None:  # noqa: N802
        request = self._record()
        route = request.route.rstrip("/")
        body = request.body if isinstance(request.body, dict) else {}
        if route == "/v1/messages/count_tokens":
            self._send_json(200, {"input_tokens": _estimate_tokens(request_texts(body))})
            return
        if route != "/v1/messages":
            self._not_found()
            return
        try:
            reply = self.server.fake.responder(body)
        except Exception as exc:  # a broken responder is a 500, not a dead server
            reply = reply_error(500, message=f"responder failed: {exc!r}")
        if reply.delay:
            time.sleep(reply.delay)
        if reply.status != 200:
            self._send(reply.status, reply.body or reply_error(reply.status).body or b"", reply.headers)
        elif reply.body is not None:
            self._send(200, reply.body, reply.headers)
        elif body.get("stream") is True:
            request.usage = usage_of(reply, body)
            self.server.fake._served(request.usage)
            self._stream(reply, body)
        else:
            request.usage = usage_of(reply, body)
            self.server.fake._served(request.usage)
            self._send_json(200, _message(reply, body), reply.headers)

    def _other(self) -> None:
        self._record()
        self._not_found()

    do_GET = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _other  # noqa: N815


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128  # socketserver's 5 drops connections when a test fires many at once
    fake: FakeAnthropic

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that went away is not the test's concern


class FakeAnthropic:
    """The fake API server; a context manager (also `start()` / `stop()`)."""

    def __init__(self, responder: Callable[[dict[str, Any]], Reply] | None = None) -> None:
        self.responder: Callable[[dict[str, Any]], Reply] = responder or (lambda body: reply_text("OK."))
        self.requests: list[RecordedRequest] = []
        self.usage: list[dict[str, int]] = []
        """The usage of every Messages reply served with status 200, in order (what a client was billed)."""
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.url = ""

    def _record(self, request: RecordedRequest) -> None:
        with self._arrived:
            self.requests.append(request)
            self._arrived.notify_all()

    def _served(self, usage: dict[str, int]) -> None:
        with self._lock:
            self.usage.append(usage)

    def usage_totals(self) -> dict[str, int]:
        """Each usage field summed over the replies served so far, and `calls`: how many."""
        with self._lock:
            served = list(self.usage)
        totals = {"calls": len(served)}
        for usage in served:
            for key, value in usage.items():
                totals[key] = totals.get(key, 0) + value
        return totals

    def snapshot(self) -> list[RecordedRequest]:
        """A copy of the requests received so far."""
        with self._lock:
            return list(self.requests)

    def message_requests(self) -> list[RecordedRequest]:
        """The POSTs to /v1/messages (not count_tokens), in order of arrival."""
        return [r for r in self.snapshot() if r.method == "POST" and r.route.rstrip("/") == "/v1/messages"]

    def message_bodies(self) -> list[dict[str, Any]]:
        return [r.body for r in self.message_requests() if isinstance(r.body, dict)]

    def wait_for(self, count: int, timeout: float = 10.0) -> list[RecordedRequest]:
        """Block until `count` requests arrived (or `timeout` passed); the requests so far."""
        deadline = time.monotonic() + timeout
        with self._arrived:
            while len(self.requests) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._arrived.wait(left)
            return list(self.requests)

    def start(self) -> FakeAnthropic:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self
        port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{port}"
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), name="fake-anthropic", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeAnthropic:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
