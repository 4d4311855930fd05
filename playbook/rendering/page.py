"""The history page: one self-contained HTML file (or the page `playbook serve` answers with).

The template, its script and its style ship as package data (`playbook/rendering/web/`). The page
needs no network: script and style are inline, the data is embedded as JSON in
`<script type="application/json">` elements (escaped so that no text can close them), and
a Content-Security-Policy lets only the page's own script run (by its hash) and, served,
lets it fetch only from where it came from.
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Callable, Iterator
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Literal

from eventlog.errors import PlaybookError
from eventlog.safefiles import create_new, directory, remove, replace
from projections.pagedata import CHUNK_EVENTS, PageData, build
from projections.repository import PlaybookRepository

Source = Literal["embedded", "server"]


class PageError(PlaybookError):
    """The page could not be written where asked."""

    def __init__(self, path: Path, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"cannot write {path}: {reason}")


@cache
def _asset(name: str) -> str:
    return resources.files("playbook.rendering").joinpath("web", name).read_text(encoding="utf-8")


def _csp(script: str, source: Source) -> str:
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    connect = "'self'" if source == "server" else "'none'"
    return (f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; img-src data:; "
            f"connect-src {connect}; base-uri 'none'; form-action 'none'")


def _data_script(ident: str, payload: bytes) -> bytes:
    return b'<script type="application/json" id="' + ident.encode() + b'">' + payload + b"</script>\n"


def page_parts(data: PageData, source: Source = "embedded") -> Iterator[bytes]:
    """The page's bytes in order. Embedded: the head and the newest chunk come before the script
    (so the first screen renders while the browser is still reading older chunks), the rest after.
    Served: only the head and the newest chunk; the page fetches the others."""
    script = _asset("page.js")
    template = _asset("page.html")
    title = "playbook history"
    before, rest = template.split("@DATA@")
    middle, after = rest.split("@LATER@")
    js_before, js_after = middle.split("@JS@")
    newest = len(data.chunks) - 1
    yield (before.replace("@CSP@", _csp(script, source)).replace("@TITLE@", title)
           .replace("@CSS@", _asset("page.css")).replace("@SOURCE@", source)).encode()
    yield _data_script("pb-head", data.head_json)
    yield _data_script(f"pb-chunk-{newest}", data.chunks[newest])
    yield (js_before + script + js_after).encode()
    if source == "embedded":
        for n in range(newest - 1, -1, -1):
            yield _data_script(f"pb-chunk-{n}", data.chunks[n])
    yield after.encode()


def page_data(repo: PlaybookRepository, progress: Callable[[int], None] | None = None,
              chunk_events: int = CHUNK_EVENTS) -> PageData:
    """The page data of a project's log (one pass over it)."""
    return build(repo.log_path, project=repo.claude_dir.parent.name, chunk_events=chunk_events, progress=progress)


def write_page(repo: PlaybookRepository, target: Path, progress: Callable[[int], None] | None = None,
               chunk_events: int = CHUNK_EVENTS) -> int:
    """Write the self-contained page to `target` (through a temporary file and a rename, so a
    reader never sees half a page); returns its size in bytes.

    Follows no link under the page's name: it is written in the directory the user named
    (`eventlog.safefiles`), and a link there is replaced, not written through."""
    data = page_data(repo, progress, chunk_events)
    temporary = f".{target.name}.{os.getpid()}.tmp"
    size = 0
    try:
        with directory(target.parent, target.parent) as dir_fd:
            fd = create_new(dir_fd, temporary, mode=0o666)
            try:
                with os.fdopen(fd, "wb") as handle:
                    for part in page_parts(data):
                        handle.write(part)
                        size += len(part)
                replace(dir_fd, temporary, target.name)
            except BaseException:
                remove(dir_fd, temporary)
                raise
    except OSError as exc:
        raise PageError(target, exc.strerror or str(exc)) from exc
    return size
