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

from .project import get_project_dir, repository

EPILOG = """\
WHEN is an ISO time (2026-11-22T10:00), a time ago (30m, 2h, 3d, 1w), a seq
number, a transaction id or a session id (or a prefix of 6+ characters); a
trailing ^ (or --before) means just before that transaction or session instead
of just after."""


def _project(args: argparse.Namespace) -> Path:
    """The project a command works on; one given with `--project` must be an existing directory."""
    project = getattr(args, "project", None)
    if not project:
        return get_project_dir()
    path = Path(project)
    if not path.is_dir():
        # Reading on would show an empty playbook of a project that is not there, with exit 0.
        what = "is not a directory" if path.exists() else "does not exist"
        raise PlaybookError(f"project {project} {what}")
    return path


def _out(lines: list[str] | str) -> None:
    text = lines if isinstance(lines, str) else "\n".join(lines)
    sys.stdout.write(text + "\n")


def _out_json(document) -> None:
    """`document` as one JSON document on stdout (`report.to_json`)."""
    from .report import to_json

    try:
        text = to_json(document)
    except UnicodeEncodeError:
        # A lone surrogate, which UTF-8 (and so JSON) cannot hold: a --project path or a name
        # given on a command line that is not UTF-8. It is written as the text `\udcff`.
        import msgspec

        text = to_json(_encodable(msgspec.to_builtins(document)))
    _out(text)


def _encodable(value):
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {_encodable(key): _encodable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_encodable(item) for item in value]
    return value


def _style():
    from .report import Style

    return Style.for_stream(sys.stdout)


def _timeline(args: argparse.Namespace):
    from projections.timeline import Timeline

    return Timeline(repository(_project(args)))


# --- read commands ---------------------------------------------------------------------------------------


def cmd_show(args: argparse.Namespace) -> int:
    from . import report
    from .audit import PointState, state_at

    when = getattr(args, "at", None)
    selected = [flag for flag in ("injected", "left_out", "unused") if getattr(args, flag, False)]
    if selected:
        if when is not None or len(selected) > 1:
            from .audit import UsageError

            raise UsageError("--injected, --left-out and --unused show the playbook now, one at a time")
        return _show_injection(args, selected[0])
    if when is None and args.before:
        from .audit import UsageError

        raise UsageError("--before goes with --at WHEN", value="--before")
    if when is None:
        repo = repository(_project(args))
        state, taken_in = repo.take_in()  # a legacy or hand-edited playbook.json first, as the hooks do
        from .diagnostics import report as report_taken_in

        for committed in taken_in:
            report_taken_in(committed.events)
        newest = _timeline(args).newest(1)
        point = PointState(state=state, seq=state.seq, commit=newest[0].commit if newest else None)
    else:
        point = state_at(_timeline(args), when, before=args.before)
    label = None if when is None else f"{when} (just before)" if args.before else when
    if args.json:
        _out_json(report.show_json(point, when))
    else:
        _out(report.show_lines(point, _style(), label))
    return 0


def _show_injection(args: argparse.Namespace, what: str) -> int:
    """`show --injected`: exactly the context the next session receives; `--left-out`: what the budget kept out."""
    from . import report
    from .audit import PointState
    from .lean import injected_context, left_out_state, unused_state

    repo = repository(_project(args))
    if what == "injected":
        injection = injected_context(repo)
        if args.json:
            _out_json({"budget": injection.budget, "tokens": injection.tokens, "included": injection.included,
                       "left_out": injection.left_out, "text": injection.text})
        else:
            from .safe_text import clean

            sys.stdout.write("\n".join(clean(line) for line in injection.text.split("\n")))
        return 0
    state = left_out_state(repo) if what == "left_out" else unused_state(repo)
    point = PointState(state=state, seq=state.seq, commit=None)
    if args.json:
        _out_json(report.show_json(point, None))
    else:
        _out(report.show_lines(point, _style()))
    return 0


def cmd_at(args: argparse.Namespace) -> int:
    args.at = args.when
    return cmd_show(args)


def cmd_log(args: argparse.Namespace) -> int:
    from . import report
    from .audit import event_types, select

    types = event_types(args.type)
    selected = select(_timeline(args), n=args.n or None, session=args.session, entry=args.entry, types=types,
                      since=args.since, until=args.until)
    if args.json:
        _out_json(report.log_json(selected))
    else:
        filtered = any(v is not None for v in (args.session, args.entry, types, args.since, args.until))
        _out(report.log_lines(selected, _style(), verbose=args.verbose, filtered=filtered))
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    from . import report

    items = _timeline(args).history(args.entry)
    if args.json:
        _out_json(report.history_json(args.entry, items))
    else:
        _out(report.history_lines(args.entry, items, _style(), verbose=args.verbose))
    return 0


def cmd_diff(args: argparse.Namespace) -> int:
    from projections.diff import diff

    from . import report_changes as changes
    from .audit import end_of_log, state_at

    timeline = _timeline(args)
    a = state_at(timeline, args.a)
    b = state_at(timeline, args.b) if args.b is not None else end_of_log(timeline)
    b_label = args.b if args.b is not None else "now"
    change = diff(a.state, b.state)
    if args.json:
        _out_json(changes.diff_json(change, a, b, args.a, b_label))
    else:
        _out(changes.diff_lines(change, a, b, args.a, b_label, _style()))
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    from projections.verify import verify

    from . import report_changes as changes

    result = verify(repository(_project(args)))
    if args.json:
        _out_json(changes.verify_json(result))
    else:
        _out(changes.verify_lines(result, _style()))
    return 0 if result.ok else 1


def cmd_stats(args: argparse.Namespace) -> int:
    from . import report_changes as changes
    from .audit import stats

    from .lean import usage_lines, usage_rows

    repo = repository(_project(args))
    result = stats(repo)
    state = repo.current()[0]
    if args.json:
        import msgspec

        _out_json({**changes.stats_json(result), "sessions": state.sessions,
                   "usage": msgspec.to_builtins(usage_rows(state))})
    else:
        style = _style()
        _out(changes.stats_lines(result, style) + usage_lines(state, style.width))
    return 0


def cmd_timeline(args: argparse.Namespace) -> int:
    from .page import write_page

    repo = repository(_project(args))
    target = Path(args.html)
    if target.is_dir():
        raise PlaybookError(f"{args.html} is a directory: give the page's file name")
    size = write_page(repo, target, progress=_progress(repo.log_path))
    print(f"wrote {target} ({size / 1e6:.1f} MB): open it in a browser, no network needed")
    return 0


def _progress(path: Path):
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
        server = make_server(repository(_project(args)), args.port)
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


# --- write commands --------------------------------------------------------------------------------------


def cmd_revert(args: argparse.Namespace) -> int:
    from projections.revert import RevertConflict

    from . import report_changes as changes
    from .audit import revert

    try:
        result = revert(repository(_project(args)), args.target, force=args.force, dry_run=args.dry_run)
    except RevertConflict as exc:
        if args.json:
            _out_json({"transactions": None, "dry_run": args.dry_run, "applied": False, "tx": None,
                       "events": [], "conflicts": exc.conflicts,
                       "error": "later transactions changed the same entries"})
        style = changes.Style.for_stream(sys.stderr)
        lines = [f"playbook: cannot revert {changes.clean(args.target)}: later transactions changed the same entries:",
                 *changes.conflict_lines(exc.conflicts, style),
                 "playbook: nothing was changed; --force reverts the rest and leaves these entries as they are"]
        sys.stderr.write("\n".join(lines) + "\n")
        return 1
    if args.json:
        _out_json(changes.revert_json(result))
    else:
        _out(changes.revert_lines(result, _style()))
    return 0


def cmd_dedup(args: argparse.Namespace) -> int:
    from eventlog import similarity
    from eventlog.decide import MergeDuplicates
    from eventlog.events import Cause

    from .lean import duplicates_in
    from .safe_text import clean

    threshold = args.threshold
    if threshold is not None and not 0 < threshold <= 1:
        from .audit import UsageError

        raise UsageError("--threshold is a similarity between 0 and 1")
    repo = repository(_project(args))
    state = repo.state()
    using = similarity.method()
    chosen = similarity.THRESHOLDS[using] if threshold is None else threshold
    if len(state.where) > 500:
        print(f"playbook: comparing {len(state.where)} key points ({using}, threshold {chosen:g})...", file=sys.stderr)
    pairs = duplicates_in(state, chosen)
    committed = None
    if args.apply and pairs:
        committed = repo.append([MergeDuplicates(pairs=pairs, method=using)],
                                Cause(source="dedup", note=f"near-duplicates at similarity >= {chosen:g} ({using})"))
    if args.json:
        _out_json({"method": using, "threshold": chosen, "applied": committed is not None,
                   "tx": committed.commit.tx if committed is not None else None,
                   "pairs": [{"kept": a, "merged": b, "similarity": round(score, 3)} for a, b, score in pairs]})
        return 0
    lines = []
    for kept, duplicate, score in pairs:
        first, second = state.get(kept), state.get(duplicate)
        lines.append(f"{clean(kept)} ~ {clean(duplicate)}  {score:.2f}  {clean(first.text if first else '')!r} "
                     f"/ {clean(second.text if second else '')!r}")
    verdict = (f"merged {len(pairs)} pair(s) as transaction {committed.commit.tx}" if committed is not None
               else f"{len(pairs)} pair(s) of near-duplicates" + ("; run with --apply to merge them" if pairs else ""))
    _out(lines + [f"{verdict} ({using}, threshold {chosen:g})"])
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from . import report_changes as changes
    from .audit import import_file

    result = import_file(repository(_project(args)), args.file)
    if args.json:
        _out_json(changes.import_json(result))
    else:
        _out(changes.import_lines(result, _style()))
    return 0


def cmd_rebuild(args: argparse.Namespace) -> int:
    from projections.timeline import Timeline

    repo = repository(_project(args))
    removed = Timeline(repo).clear_checkpoints()  # checkpoints and the commit index; rebuild writes new ones
    position = repo.rebuild()
    if args.json:
        _out_json({"snapshot": str(repo.snapshot_path), "seq": position.seq, "lines": position.line,
                   "checkpoints_removed": removed})
        return 0
    print(f"rebuilt {repo.snapshot_path} from {position.line} log lines (seq {position.seq})")
    if removed:
        print(f"removed {removed} checkpoint file(s) (derived data, written again as needed)")
    return 0


def cmd_hook(args: argparse.Namespace) -> int:
    from .hooks import run_hook

    return run_hook(args.event)


def cmd_learn(args: argparse.Namespace) -> int:
    from .learn import learn_pending

    outcomes = learn_pending(_project(args))
    for outcome in outcomes:
        print(f"{outcome.request}: {outcome.status}{': ' + outcome.detail if outcome.detail else ''}")
    if not outcomes:
        print("no pending learning")
    return 0


def cmd_install(args: argparse.Namespace) -> int:
    from .install import install, settings_path

    path = settings_path(args.user, _project(args))
    events = install(path)
    print(f"installed the {', '.join(events)} hooks into {path}")
    return 0


def cmd_uninstall(args: argparse.Namespace) -> int:
    from .install import settings_path, uninstall

    path = settings_path(args.user, _project(args))
    print(f"removed {uninstall(path)} playbook hook(s) from {path}")
    return 0


def cmd_share(args: argparse.Namespace) -> int:
    from .share import share

    project = _project(args)
    for line in share(project):
        print(line)
    print(f"shared: commit .gitattributes, .gitignore and {project.name}/.claude/playbook.events.jsonl; "
          "each teammate's clone registers the driver on its first playbook command (or runs playbook share)")
    return 0


def cmd_unshare(args: argparse.Namespace) -> int:
    from .share import unshare

    done = unshare(_project(args))
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

    outcome = merge_file(repository(_project(args)), Path(args.other))
    if args.json:
        _out_json({"brought": outcome.brought, "appended": outcome.appended, "unchanged": outcome.unchanged,
                   "renamed": outcome.renamed, "conflicts": outcome.conflicts, "reverted": outcome.reverted})
    else:
        print(f"{report.clean(args.other)}: {summary(outcome)}")
    return 0


def cmd_git_hook(args: argparse.Namespace) -> int:
    from .merging import after_git

    try:
        after_git(_project(args))
    except Exception as exc:  # a git hook must never get in git's way
        from .report import clean

        print(f"playbook: could not refresh the playbook after git {clean(args.name)}: {clean(str(exc))}",
              file=sys.stderr)
    return 0


# --- the parser ------------------------------------------------------------------------------------------


def _port(text: str) -> int:
    if not text.isdecimal() or not 0 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (0-65535)")
    return int(text)


def _common(json: bool) -> argparse.ArgumentParser:
    """Options every subcommand accepts after its name too (`playbook log --project X`)."""
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument("--project", metavar="DIR", default=argparse.SUPPRESS,
                        help="project directory (default: $CLAUDE_PROJECT_DIR, else the current directory)")
    if json:
        parent.add_argument("--json", action="store_true", help="one JSON document on stdout")
    return parent


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="playbook", description="The event-sourced playbook of a Claude Code project.", epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--project", metavar="DIR", help="project directory (default: $CLAUDE_PROJECT_DIR, else "
                        "the current directory)")
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
                          "learning-skipped, learning, branches-merged, conflict")
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

    add("verify", cmd_verify, "check the log's hashes, sequence and transactions, and the snapshot; exit 1 on any problem")

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

    hook = add("hook", cmd_hook, "run a Claude Code hook (reads the hook JSON on stdin)", parents=plain)
    hook.add_argument("event", help="SessionStart, SessionEnd, PreCompact or SubagentStop")
    learn = add("learn", cmd_learn, "run pending learning cycles now", parents=plain)
    learn.add_argument("--pending", action="store_true", help="finish every pending request (the default)")
    for name, run, text in (("install", cmd_install, "add the playbook hooks to Claude Code's settings"),
                            ("uninstall", cmd_uninstall, "remove the playbook hooks from Claude Code's settings")):
        sub = add(name, run, text, parents=plain)
        sub.add_argument("--user", action="store_true", help="~/.claude/settings.json instead of the project's")
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


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _safe_stdout()
    if args.command not in _NO_REGISTRATION:
        from .share import ensure_registered

        try:
            ensure_registered(_project(args))
        except PlaybookError:
            pass  # a project that is not there: the command itself says so
    try:
        code = args.run(args)
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
        from .report import clean

        print(f"playbook: {clean(str(exc))}", file=sys.stderr)
        return 2 if isinstance(exc, UsageError) else 1
    except KeyboardInterrupt:
        return 130
