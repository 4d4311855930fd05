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
from pathlib import Path

from eventlog.errors import PlaybookError

from .audit_commands import cmd_at, cmd_dedup, cmd_diff, cmd_history, cmd_import, cmd_log, cmd_rebuild, cmd_recover
from .audit_commands import _out_json, cmd_revert, cmd_serve, cmd_show, cmd_stats, cmd_timeline, cmd_verify
from .audit_commands import cmd_anchor, playbook_of, project_dir
from .project import collecting
from .edit_commands import cmd_add, cmd_edit, cmd_rm, cmd_undo
from .user_commands import SETTINGS_USER_HELP, USER_HELP, add_export, on_user_level, refused
from .review_commands import cmd_review

EPILOG = """\
WHEN is an ISO time (2026-11-22T10:00), a time ago (30m, 2h, 3d, 1w), a seq
number, a transaction id or a session id (or a prefix of 6+ characters); a
trailing ^ (or --before) means just before that transaction or session instead
of just after."""


def cmd_purge(args: argparse.Namespace) -> int:
    from .purge import cmd_purge as run

    return run(args)


def cmd_hook(args: argparse.Namespace) -> int:
    from .hooks import run_hook

    return run_hook(args.event)


def cmd_learn(args: argparse.Namespace) -> int:
    from .learn import learn_pending, waiting_for_retry
    from .safe_text import clean

    project = project_dir(args)
    outcomes = learn_pending(project, retry_now=args.retry, ignore_budget=args.ignore_budget)
    for outcome in outcomes:
        print(f"{outcome.request}: {outcome.status}{': ' + clean(outcome.detail) if outcome.detail else ''}")
    waiting = waiting_for_retry(project)
    for pending, due in waiting:
        at = f" at {due:%Y-%m-%d %H:%M} UTC" if due is not None else ""
        print(f"{pending.request}: failed {pending.attempts} time(s), tried again{at} (playbook learn --retry: now)")
    if not outcomes and not waiting:
        print("no pending learning")
    return 0


def cmd_switch(args: argparse.Namespace) -> int:
    from eventlog.decide import SwitchPlaybook
    from eventlog.events import Cause

    from .notice import update_notice

    enabled = args.command == "enable"
    user = getattr(args, "user", False)
    repo = playbook_of(args)
    project = repo.claude_dir if user else project_dir(args)
    committed = repo.append([SwitchPlaybook(enabled=enabled, reason=args.reason or "")],
                            Cause(source=f"cli:{args.command}", note=args.reason or None))
    state = committed.state if committed is not None else repo.state()
    if not user:
        update_notice(project, state)
    word = "enabled" if enabled else "disabled"
    if committed is None:
        print(f"the playbook is already {word} in {project}")
    elif enabled:
        print(f"the playbook is enabled in {project}: sessions get it again and teach it")
    else:
        print(f"the playbook is disabled in {project}: nothing is injected or learned until `playbook enable`")
    return 0


def cmd_bootstrap(args: argparse.Namespace) -> int:
    from .bootstrap import run
    from .when import parse_moment

    since = None
    if args.since is not None:
        since = parse_moment(args.since)
        if since is None:
            from .errors import UsageError

            raise UsageError(f"--since {args.since!r} is neither a time (2026-10-01, 2026-10-01T09:00) nor a "
                             "duration ago (30d, 2w)")
    if args.limit is not None and args.limit < 0:
        from .errors import UsageError

        raise UsageError(f"--limit {args.limit} is negative")
    return run(project_dir(args), dry_run=args.dry_run, limit=args.limit, since=since,
               ignore_budget=args.ignore_budget)


def cmd_install(args: argparse.Namespace) -> int:
    from .install import install, settings_path

    path = settings_path(getattr(args, "user", False), project_dir(args))
    events = install(path)
    print(f"installed the {', '.join(events)} hooks into {path}")
    return 0


def cmd_uninstall(args: argparse.Namespace) -> int:
    from .install import settings_path, uninstall

    path = settings_path(getattr(args, "user", False), project_dir(args))
    print(f"removed {uninstall(path)} playbook hook(s) from {path}")
    return 0


def cmd_share(args: argparse.Namespace) -> int:
    from .share import share

    project = project_dir(args)
    for line in share(project):
        print(line)
    print(f"shared: commit .gitattributes, .gitignore and {project.name}/.claude/playbook.events.jsonl; "
          "each teammate's clone registers the driver on its first playbook command (or runs playbook share)")
    return 0


def cmd_unshare(args: argparse.Namespace) -> int:
    from .share import unshare

    done = unshare(project_dir(args))
    for line in done:
        print(line)
    if not done:
        print("nothing to undo: the playbook was not shared here")
    return 0


def cmd_merge_driver(args: argparse.Namespace) -> int:
    from .merging import merge_driver

    return merge_driver(args.ancestor, args.ours, args.theirs, args.path or "")


def cmd_merge(args: argparse.Namespace) -> int:
    from . import report
    from .merging import merge_file, summary

    outcome = merge_file(playbook_of(args), Path(args.other))
    if args.json:
        _out_json({"brought": outcome.brought, "appended": outcome.appended, "unchanged": outcome.unchanged,
                   "renamed": outcome.renamed, "conflicts": outcome.conflicts, "reverted": outcome.reverted})
    else:
        print(f"{report.clean(args.other)}: {summary(outcome)}")
    return 0


def cmd_git_hook(args: argparse.Namespace) -> int:
    from .merging import after_git

    try:
        after_git(project_dir(args))
    except Exception as exc:  # a git hook must never get in git's way
        from .safe_text import clean

        print(f"playbook: could not refresh the playbook after git {clean(args.name)}: {clean(str(exc))}",
              file=sys.stderr)
    return 0


# --- the parser ------------------------------------------------------------------------------------------


def _port(text: str) -> int:
    if not text.isdecimal() or not 0 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (0-65535)")
    return int(text)


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
    parser = argparse.ArgumentParser(
        prog="playbook", description="The event-sourced playbook of a Claude Code project.", epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--project", metavar="DIR", help="project directory (default: $CLAUDE_PROJECT_DIR, else "
                        "the current directory)")
    parser.add_argument("--user", action="store_true", default=argparse.SUPPRESS, help=USER_HELP)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    reading, plain = [_common(json=True)], [_common(json=False)]

    def add(name: str, run, text: str, parents=reading, when: bool = False) -> argparse.ArgumentParser:
        # The WHEN help goes only under the commands that take a WHEN.
        sub = commands.add_parser(name, help=text, description=text, parents=parents,
                                  epilog=EPILOG if when else None,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
        sub.set_defaults(run=run)
        return sub

    show = add("show", cmd_show, "the playbook as it is injected (or as it was at WHEN), with totals", when=True)
    show.add_argument("--at", metavar="WHEN", help="the playbook as it was at WHEN")
    show.add_argument("--before", action="store_true", help="with --at: just before that transaction or session")
    show.add_argument("--injected", action="store_true", help="exactly the context the next session receives")
    show.add_argument("--left-out", action="store_true", help="the key points the injection budget leaves out")
    show.add_argument("--unused", action="store_true", help="the key points no session ever cited")

    at = add("at", cmd_at, "the playbook as it was at WHEN (same as show --at WHEN)", when=True)
    at.add_argument("when", metavar="WHEN")
    at.add_argument("--before", action="store_true", help="just before that transaction or session")

    log = add("log", cmd_log, "transactions, newest first: when, why, and the events inside", when=True)
    log.add_argument("--session", metavar="ID", help="only transactions of this Claude Code session")
    log.add_argument("--entry", metavar="ID", help="only transactions whose events concern this entry")
    log.add_argument("--type", metavar="T", action="append",
                     help="only these event types (repeatable, comma-separated): a tag like KeyPointDeleted or a "
                          "short form: added, imported, updated, merged, deleted, evaluated, pruned, moved, counters, "
                          "reordered, version, skipped, repaired, set-aside, requested, completed, failed, "
                          "learning-skipped, learning, branches-merged, conflict, proposed, accepted, rejected, "
                          "expired, review")
    log.add_argument("--since", metavar="WHEN", help="only transactions from WHEN on (inclusive)")
    log.add_argument("--until", metavar="WHEN", help="only transactions up to WHEN (inclusive)")
    log.add_argument("-n", type=int, default=20, metavar="N", help="at most N transactions (default 20; 0: all)")
    log.add_argument("-v", "--verbose", action="store_true", help="full analysis, reasoning and texts")

    history = add("history", cmd_history, "everything that happened to one entry, oldest first")
    history.add_argument("entry", metavar="ENTRY")
    history.add_argument("-v", "--verbose", action="store_true", help="full texts")

    diff = add("diff", cmd_diff, "how the playbook at B differs from the playbook at A", when=True)
    diff.add_argument("a", metavar="A", help="a WHEN")
    diff.add_argument("b", metavar="B", nargs="?", help="a WHEN (default: the end of the log)")

    revert = add("revert", cmd_revert, "undo a transaction, or everything a session did, as a new transaction")
    revert.add_argument("target", metavar="TARGET", help="a transaction id (or a 6+ character prefix) or a session id")
    revert.add_argument("--force", action="store_true",
                        help="revert even when later transactions changed the same entries (those stay as they are)")
    revert.add_argument("--dry-run", action="store_true", help="print what would be appended; change nothing")

    add_cmd = add("add", cmd_add, "add a key point by hand (recorded as the user's)")
    add_cmd.add_argument("text", metavar="TEXT")
    add_cmd.add_argument("--section", metavar="S", help="PATTERNS & APPROACHES, MISTAKES TO AVOID, USER PREFERENCES, "
                         "PROJECT CONTEXT or OTHERS (the default), in any case, or the ID prefix (pat, mis, pref, ctx, oth)")
    edit = add("edit", cmd_edit, "re-word a key point by hand (recorded as the user's)")
    edit.add_argument("id", metavar="ID")
    edit.add_argument("text", metavar="TEXT")
    rm = add("rm", cmd_rm, "delete a key point by hand (recorded as the user's, with the reason)")
    rm.add_argument("id", metavar="ID")
    rm.add_argument("--reason", metavar="R", help="why (kept in the log; default: removed by the user)")
    undo = add("undo", cmd_undo, "revert the last learning cycle that changed the playbook (see revert)")
    undo.add_argument("--dry-run", action="store_true", help="show what would be reverted; change nothing")
    undo.add_argument("--force", action="store_true",
                      help="revert even when later transactions changed the same entries (those stay as they are)")

    add_export(add, plain)
    verify = add("verify", cmd_verify,
                 "check the log's hashes, sequence and transactions, and the snapshot; exit 1 on any problem")
    verify.add_argument("--anchor", action="store_true",
                        help="also prove the log extends every head `playbook anchor` recorded (and name the first "
                             "line that differs)")
    add("anchor", cmd_anchor, "record the log's head in .claude/playbook.anchors, a file to commit or keep apart")

    imp = add("import", cmd_import, "append a legacy playbook.json (any format) to the log")
    imp.add_argument("file", metavar="FILE")

    add("stats", cmd_stats, "counts per section and event type, most helpful and harmful entries, learning outcomes, "
        "and each key point's use (sessions injected, cited, rated)")
    dedup = add("dedup", cmd_dedup, "find near-duplicate key points; merge them with --apply (a dry run without)")
    dedup.add_argument("--apply", action="store_true", help="merge the pairs found, as one transaction")
    dedup.add_argument("--threshold", type=float, metavar="T", help="similarity from 0 to 1 (default: the method's)")
    timeline = add("timeline", cmd_timeline, "the playbook's history as one web page (no network needed)",
                   parents=plain)
    timeline.add_argument("--html", metavar="FILE", required=True, help="write the page to FILE")
    serve = add("serve", cmd_serve, "serve the history page on 127.0.0.1 (read-only)", parents=plain)
    serve.add_argument("--port", type=_port, default=0, metavar="N", help="port (default: any free one)")
    serve.add_argument("--open", action="store_true", help="open the page in a browser")
    add("rebuild", cmd_rebuild, "rewrite playbook.json from the log and clear the checkpoints")
    recover = add("recover", cmd_recover, "take back into the log what a playbook.json ahead of it holds, as events "
                  "of a recovery (playbook.json itself when it is ahead, else the newest playbook.json.ahead-*)")
    recover.add_argument("file", metavar="FILE", nargs="?", help="a kept playbook.json (default: see above)")
    purge = add("purge", cmd_purge, "take a secret out of the log's whole history: the lines holding it are "
                "rewritten with a redaction and the rewrite is recorded")
    purge.add_argument("--secrets", action="store_true", help="redact what the secret detector finds anywhere in the log")
    purge.add_argument("--match", metavar="TEXT", help="redact every occurrence of TEXT")
    purge.add_argument("--keep-original", metavar="PATH", help="keep the original log at PATH (default: removed)")

    rev = add("review", cmd_review, "the proposals learning recorded with playbook_review on: list them, or (on a "
              "terminal) walk through them to accept, reject or edit; or decide with the options")
    rev.add_argument("--accept-all", action="store_true", help="accept every pending proposal, each learning "
                     "cycle's together as that cycle would have applied them (a changed target is refused)")
    rev.add_argument("--accept", metavar="ID", help="accept one proposal")
    rev.add_argument("--edit", nargs=2, metavar=("ID", "TEXT"), help="accept one proposal with its text replaced")
    rev.add_argument("--reject", metavar="ID", help="reject one proposal")
    rev.add_argument("--reason", metavar="TEXT", help="with --reject: why")

    hook = add("hook", cmd_hook, "run a Claude Code hook (reads the hook JSON on stdin)", parents=plain)
    hook.add_argument("event", help="SessionStart, SessionEnd, PreCompact or SubagentStop")
    learn = add("learn", cmd_learn, "run pending learning cycles now", parents=plain)
    learn.add_argument("--pending", action="store_true", help="finish every pending request that is due (the default)")
    learn.add_argument("--retry", action="store_true",
                       help="also retry failed requests now, without waiting for their retry delay")
    for name, text in (("disable", "turn injection and learning off for this project (recorded in the log)"),
                       ("enable", "turn injection and learning back on for this project")):
        switch = add(name, cmd_switch, text, parents=plain)
        switch.add_argument("--reason", metavar="TEXT", help="why, kept in the log")
    learn.add_argument("--ignore-budget", action="store_true",
                       help="learn even when today's token budget (playbook_daily_token_budget) is spent")
    boot = add("bootstrap", cmd_bootstrap, "learn from this project's earlier Claude Code sessions, oldest first "
               "(resumable; never learns a transcript twice)", parents=plain)
    boot.add_argument("--dry-run", action="store_true",
                      help="list the sessions it would learn, with size, estimated tokens and cost; send nothing")
    boot.add_argument("--limit", type=int, metavar="N", help="learn at most N sessions")
    boot.add_argument("--since", metavar="WHEN", help="only sessions started from WHEN on (a time, or 30d, 2w ago)")
    boot.add_argument("--ignore-budget", action="store_true",
                      help="go on when today's token budget (playbook_daily_token_budget) is spent")
    settings_level = [_common(json=False, user_help=SETTINGS_USER_HELP)]
    for name, run, text in (("install", cmd_install, "add the playbook hooks to Claude Code's settings"),
                            ("uninstall", cmd_uninstall, "remove the playbook hooks from Claude Code's settings")):
        add(name, run, text, parents=settings_level)
    add("share", cmd_share, "share the playbook through git: .gitattributes, .gitignore, the merge driver, git "
        "hooks", parents=plain)
    add("unshare", cmd_unshare, "undo playbook share", parents=plain)
    merge = add("merge", cmd_merge, "merge another copy of the log (another machine's) into this project's")
    merge.add_argument("other", metavar="OTHER_LOG")
    driver = add("merge-driver", cmd_merge_driver, "git's merge driver for the log (registered by playbook share)",
                 parents=plain)
    driver.add_argument("ancestor", metavar="O")
    driver.add_argument("ours", metavar="A")
    driver.add_argument("theirs", metavar="B")
    driver.add_argument("path", metavar="P", nargs="?")
    git_hook = add("git-hook", cmd_git_hook, "run after git changed the working tree (installed by playbook share)",
                   parents=plain)
    git_hook.add_argument("name", metavar="HOOK")
    git_hook.add_argument("hook_args", nargs="*", help=argparse.SUPPRESS)
    return parser


_NO_REGISTRATION = frozenset({"merge-driver", "git-hook", "share", "unshare", "hook"})


def _safe_stdout() -> None:
    """Text the terminal's encoding cannot show comes out as backslash escapes, never as an error."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            try:
                stream.reconfigure(errors="backslashreplace")
            except (ValueError, io.UnsupportedOperation):
                pass


def _report_outside(opened: list) -> None:
    """One line each for what the command found outside the log (a playbook.json kept aside, or left in
    place because it holds what the log does not); checking never turns into a second error."""
    from .diagnostics import report_opened

    try:
        report_opened(opened)
    except (PlaybookError, OSError):
        pass


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _safe_stdout()
    from . import terminal

    terminal.full = getattr(args, "full", False)
    if refused(args):
        return 2
    if args.command not in _NO_REGISTRATION and not on_user_level(args):
        from .share import ensure_registered

        try:
            ensure_registered(project_dir(args))
        except PlaybookError:
            pass  # a project that is not there: the command itself says so
    try:
        with collecting() as opened:
            try:
                code = args.run(args)
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
        from .audit import UsageError
        from .safe_text import clean

        print(f"playbook: {clean(str(exc))}", file=sys.stderr)
        return 2 if isinstance(exc, UsageError) else 1
    except KeyboardInterrupt:
        return 130
