"""`playbook serve`: the history page and its data over HTTP, read-only, on 127.0.0.1 only.

GET / answers the page with the head and the newest chunk inside; the page fetches older
chunks from /data/chunk/N as it needs them. Nothing but GET and HEAD is answered, the
listening address is the loopback interface whatever is asked, and a request naming
another host (a DNS rebinding attempt) is refused. The data is built again, in one pass,
when the log has changed since the last page was asked for; chunks before the last are
the same in every build of a log that only grew.

Any local process can connect: a connection that sends nothing for CONNECTION_TIMEOUT seconds is
closed, at most MAX_CONNECTIONS are served at once (one more is closed at once), and a client that
resets its connection is no event worth a line.
"""

from __future__ import annotations

import re
import socket
import sys
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from projections.pagedata import CHUNK_EVENTS, PageData
from projections.repository import PlaybookRepository

from playbook.rendering.page import page_data, page_parts
from playbook.rendering.safe_text import clean

HOST = "127.0.0.1"
CONNECTION_TIMEOUT = 10.0
"""Seconds a connection may stay silent (the page's requests are small and local) before it is closed."""
MAX_CONNECTIONS = 32
"""Connections served at once: each holds a thread until it is answered or times out."""
_CHUNK = re.compile(r"^/data/chunk/(\d{1,9})$")
_LOCAL_HOSTS = {"127.0.0.1", "localhost"}


class PageSource:
    """The page data of one project, built again when the log's size or mtime changed."""

    def __init__(self, repo: PlaybookRepository, chunk_events: int = CHUNK_EVENTS) -> None:
        self.repo = repo
        self.chunk_events = chunk_events
        self._lock = threading.Lock()
        self._data: PageData | None = None
        self._stamp: tuple[int, int] | None = None

    def _log_stamp(self) -> tuple[int, int]:
        try:
            stat = Path(self.repo.log_path).stat()
        except OSError:
            return (-1, -1)
        return (stat.st_size, stat.st_mtime_ns)

    def current(self, refresh: bool) -> PageData:
        with self._lock:
            stamp = self._log_stamp()
            if self._data is None or (refresh and stamp != self._stamp):
                self._data = page_data(self.repo, chunk_events=self.chunk_events)
                self._stamp = stamp
            return self._data


_HEADERS = (("Cache-Control", "no-store"), ("X-Content-Type-Options", "nosniff"), ("Referrer-Policy", "no-referrer"))


def _answer(source: PageSource, host: str, path: str) -> tuple[HTTPStatus, bytes, str]:
    """What a GET of `path` in a request naming `host` gets: status, body, content type. The page
    itself rebuilds the data when the log changed; the head and chunks it then fetches are that build's."""
    if host.rsplit(":", 1)[0].strip("[]").lower() not in _LOCAL_HOSTS:
        return HTTPStatus.FORBIDDEN, b"only local requests\n", "text/plain"
    path = path.split("?", 1)[0]
    if path in ("/", "/index.html"):
        return HTTPStatus.OK, b"".join(page_parts(source.current(refresh=True), "server")), "text/html; charset=utf-8"
    if path == "/data/head":
        return HTTPStatus.OK, source.current(refresh=False).head_json, "application/json"
    match = _CHUNK.match(path)
    if match:
        chunks = source.current(refresh=False).chunks
        n = int(match.group(1))
        if n < len(chunks):
            return HTTPStatus.OK, chunks[n], "application/json"
    return HTTPStatus.NOT_FOUND, b"not found\n", "text/plain"


def _handler(source: PageSource) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "playbook"
        sys_version = ""
        timeout = CONNECTION_TIMEOUT

        def do_HEAD(self) -> None:
            self._reply(body=False)

        def do_GET(self) -> None:
            self._reply(body=True)

        def _reply(self, body: bool) -> None:
            status, payload, kind = _answer(source, self.headers.get("Host") or "", self.path)
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(payload)))
            for name, value in _HEADERS:
                self.send_header(name, value)
            self.end_headers()
            if body:
                self.wfile.write(payload)

        def log_message(self, format: str, *args: object) -> None:
            pass  # the terminal shows the address once, not a line per request

    return Handler


class PageServer(ThreadingHTTPServer):
    """A thread per connection, MAX_CONNECTIONS at most; a connection's failure is silent when the client went
    away, else one line on stderr, never a traceback."""

    daemon_threads = True
    request_queue_size = 128  # held by the kernel until accepted; past it a client waits a second to try again

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(address, handler)
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self.shutdown_request(request)  # as many as it serves are open: this one is closed unanswered
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()  # no thread started to release it
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        error = sys.exc_info()[1]
        if isinstance(error, (ConnectionError, TimeoutError, socket.timeout)):
            return  # the client reset or left: nothing the user can act on
        print(f"playbook: serve: a request failed: {clean(f'{type(error).__name__}: {error}')}", file=sys.stderr)


def make_server(repo: PlaybookRepository, port: int = 0, chunk_events: int = CHUNK_EVENTS) -> PageServer:
    """A server for `repo`'s page on 127.0.0.1:`port` (0: any free port), its data built once now."""
    source = PageSource(repo, chunk_events)
    source.current(refresh=True)
    return PageServer((HOST, port), _handler(source))
