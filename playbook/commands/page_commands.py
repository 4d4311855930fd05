"""The `playbook` subcommands that show the log's history as a web page: timeline (a file) and serve.

`playbook.commands.cli` parses the arguments and dispatches here; the page itself is `playbook.rendering.page`'s.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from eventlog.errors import PlaybookError

from playbook.wiring.project import playbook_of


def _port(text: str) -> int:
    if not text.isdecimal() or not 0 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (0-65535)")
    return int(text)


def add_pages(add: Callable[..., argparse.ArgumentParser], plain: list[argparse.ArgumentParser]) -> None:
    """Register timeline and serve with the parser's `add`."""
    timeline = add("timeline", cmd_timeline, "the playbook's history as one web page (no network needed)",
                   parents=plain)
    timeline.add_argument("--html", metavar="FILE", required=True, help="write the page to FILE")
    serve = add("serve", cmd_serve, "serve the history page on 127.0.0.1 (read-only)", parents=plain)
    serve.add_argument("--port", type=_port, default=0, metavar="N", help="port (default: any free one)")
    serve.add_argument("--open", action="store_true", help="open the page in a browser")


def cmd_timeline(args: argparse.Namespace) -> int:
    from playbook.rendering.page import write_page

    repo = playbook_of(args)
    target = Path(args.html)
    if target.is_dir():
        raise PlaybookError(f"{args.html} is a directory: give the page's file name")
    size = write_page(repo, target, progress=_progress(repo.log_path))
    print(f"wrote {target} ({size / 1e6:.1f} MB): open it in a browser, no network needed")
    return 0


def _progress(path: Path) -> Callable[[int], None] | None:
    """A reporter of bytes read, on stderr when it is a terminal and the log is large enough to wait for."""
    try:
        total = path.stat().st_size
    except OSError:
        return None
    if total < (32 << 20) or not sys.stderr.isatty():
        return None

    def report(done: int) -> None:
        sys.stderr.write(f"\rreading the log: {100 * done // total}%")
        sys.stderr.flush()

    return report


def cmd_serve(args: argparse.Namespace) -> int:
    from .serve import make_server

    try:
        server = make_server(playbook_of(args), args.port)
    except OSError as exc:
        raise PlaybookError(f"cannot listen on 127.0.0.1:{args.port}: {exc.strerror or exc}") from exc
    port = server.server_address[1]
    url = f"http://127.0.0.1:{port}/"
    print(f"serving the playbook's history at {url} (read-only; Ctrl-C stops)", flush=True)
    if args.open:
        import webbrowser

        webbrowser.open(url)
    try:
        server.serve_forever()
    finally:
        server.server_close()
    return 0
