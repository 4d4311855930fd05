"""The `playbook` command: the playbook now and in the past, its log, history, diffs, reverts and checks.

Every read command takes `--json` (one JSON document on stdout) and `--project DIR`
(default: $CLAUDE_PROJECT_DIR, else the current directory). Errors are one
`playbook: ...` line on stderr and exit status 1; usage errors exit 2.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from collections.abc import Callable
from typing import Any, NoReturn

from eventlog.errors import PlaybookError
from playbook.quick.stops import install as install_stops

from .audit_commands import add_views
from .edit_commands import add_edits
from .eval_commands import add_eval
from .learning_commands import add_learning
from .org_commands import add_org
from .page_commands import add_pages
from playbook.wiring.project import Opened, collecting, project_dir
from .review_commands import add_review
from .team_commands import add_team
from .upkeep_commands import add_checks, add_repairs
from .user_commands import SETTINGS_USER_HELP, USER_HELP, add_export, on_user_level, refused

EPILOG = """\
WHEN is an ISO time (2026-11-22T10:00), a time ago (30m, 2h, 3d, 1w), a seq
number, a transaction id or a session id (or a prefix of 6+ characters); a
trailing ^ (or --before) means just before that transaction or session instead
of just after."""


class _Parser(argparse.ArgumentParser):
    """argparse's parser, with a usage error said in one line that names `--help` instead of printing the usage."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (`{self.prog} --help` shows how to use it)\n")


def _common(json: bool, user_help: str = USER_HELP) -> argparse.ArgumentParser:
    """Options every subcommand accepts after its name too (`playbook log --project X`)."""
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument("--project", metavar="DIR", default=argparse.SUPPRESS,
                        help="project directory (default: $CLAUDE_PROJECT_DIR, else the current directory)")
    parent.add_argument("--user", action="store_true", default=argparse.SUPPRESS, help=user_help)
    if json:
        parent.add_argument("--json", action="store_true", help="one JSON document on stdout")
        parent.add_argument("--full", action="store_true", default=argparse.SUPPRESS,
                            help="show long texts whole (by default a text is cut after 2000 characters, and says so)")
    return parent


def build_parser() -> argparse.ArgumentParser:
    """Every subcommand, in the order `playbook --help` lists them; each group is registered by the module
    that runs it."""
    parser = _Parser(
        prog="playbook", description="The event-sourced playbook of a Claude Code project.", epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--project", metavar="DIR", help="project directory (default: $CLAUDE_PROJECT_DIR, else "
                        "the current directory)")
    parser.add_argument("--user", action="store_true", default=argparse.SUPPRESS, help=USER_HELP)
    # Not required: `main` answers a missing command with the whole help, where argparse names only COMMAND.
    # Each subcommand's parser is a _Parser too (argparse makes them of the parent's class), whatever its parents.
    commands: argparse._SubParsersAction[Any] = parser.add_subparsers(dest="command", metavar="COMMAND")
    reading, plain = [_common(json=True)], [_common(json=False)]

    def add(name: str, run: Callable[[argparse.Namespace], int], text: str,
            parents: list[argparse.ArgumentParser] = reading, when: bool = False) -> argparse.ArgumentParser:
        # The WHEN help goes only under the commands that take a WHEN.
        sub: argparse.ArgumentParser = commands.add_parser(
            name, help=text, description=text, parents=parents, epilog=EPILOG if when else None,
            formatter_class=argparse.RawDescriptionHelpFormatter)
        sub.set_defaults(run=run)
        return sub

    add_views(add)
    add_edits(add)
    add_export(add, plain)
    add_checks(add)
    add_pages(add, plain)
    add_repairs(add)
    add_review(add)
    add_learning(add, plain, [_common(json=False, user_help=SETTINGS_USER_HELP)])
    add_eval(add, plain)
    add_team(add, plain)
    add_org(add, plain)
    return parser


_NO_REGISTRATION = frozenset({"merge-driver", "git-hook", "share", "unshare", "hook", "org"})


def _safe_stdout() -> None:
    """Text the terminal's encoding cannot show comes out as backslash escapes, never as an error."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            try:
                stream.reconfigure(errors="backslashreplace")
            except (ValueError, io.UnsupportedOperation):
                pass


def _report_outside(opened: Opened) -> None:
    """One line each for what the command found outside the log (a playbook.json kept aside, or left in
    place because it holds what the log does not); checking never turns into a second error."""
    from playbook.wiring.diagnostics import report_opened

    try:
        report_opened(opened)
    except (PlaybookError, OSError):
        pass


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _safe_stdout()
    if args.command is None:  # a usage error, as argparse's own: on stderr, exit 2
        parser.print_help(sys.stderr)
        return 2
    from playbook.rendering import terminal

    terminal.full = getattr(args, "full", False)
    if refused(args):
        return 2
    if args.command not in _NO_REGISTRATION and not on_user_level(args):
        from .share import ensure_registered

        try:
            ensure_registered(project_dir(args))
        except PlaybookError:
            pass  # a project that is not there: the command itself says so
    install_stops()
    try:
        with collecting() as opened:
            try:
                code: int = args.run(args)
            finally:
                _report_outside(opened)
        sys.stdout.flush()  # inside the try: a closed pipe is reported here, not at exit
        return code
    except BrokenPipeError:
        # `playbook log | head`: the reader left. Point stdout at /dev/null so the flush at
        # exit does not fail again, and end quietly.
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError, io.UnsupportedOperation):
            pass
        return 0
    except PlaybookError as exc:
        from playbook.errors import UsageError
        from playbook.rendering.safe_text import clean

        print(f"playbook: {clean(str(exc))}", file=sys.stderr)
        return 2 if isinstance(exc, UsageError) else 1
    except OSError as exc:
        # What no command foresaw (a file where a directory must be, a full disk, a permission): one line with
        # the file and the system's reason, never a traceback. The log is written whole or not at all.
        from playbook.rendering.safe_text import clean

        where = f": {clean(str(exc.filename))}" if exc.filename else ""
        print(f"playbook: {clean(exc.strerror or type(exc).__name__)}{where}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as exc:
        from playbook.quick.stops import stopped

        return stopped(args.command, exc)
