"""The `playbook` subcommands that show the playbook now and in the past: show, at, log, history, diff.

`playbook.commands.cli` parses the arguments and dispatches here; the views themselves are `playbook.rendering.report`'s.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from playbook.quick import show_text
from .output import out, out_json, stdout_style
from playbook.wiring.project import playbook_of

if TYPE_CHECKING:
    from projections.timeline import Timeline
    from projections.repository import PlaybookRepository

    from .audit import PointState


def _timeline(args: argparse.Namespace) -> Timeline:
    from projections.timeline import Timeline

    return Timeline(playbook_of(args))


def add_views(add: Callable[..., argparse.ArgumentParser]) -> None:
    """Register show, at, log, history and diff with the parser's `add`."""
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


def cmd_show(args: argparse.Namespace) -> int:
    from playbook.rendering import report
    from .audit import PointState, state_at

    when = getattr(args, "at", None)
    selected = [flag for flag in ("injected", "left_out", "unused") if getattr(args, flag, False)]
    if selected:
        if when is not None or len(selected) > 1:
            from playbook.errors import UsageError

            raise UsageError("--injected, --left-out and --unused show the playbook now, one at a time")
        return _show_injection(args, selected[0])
    if when is None and args.before:
        from playbook.errors import UsageError

        raise UsageError("--before goes with --at WHEN", value="--before")
    stamped = None
    if when is None:
        repo = playbook_of(args)
        if not repo.snapshot_path.exists():  # a recover or purge killed mid-way: what it set aside still waits
            _say_waiting(repo)
        if not (args.json or getattr(args, "full", False) or getattr(args, "user", False)):
            stamped = show_text.stamp(str(repo.claude_dir))  # before reading: what the text will be keyed to
        state = repo.state()  # a legacy or hand-edited playbook.json first, as the hooks do; said by cli.main
        point = PointState(state=state, seq=state.seq, commit=_timeline(args).last_commit())
    else:
        point = state_at(_timeline(args), when, before=args.before)
    label = None if when is None else f"{when} (just before)" if args.before else when
    if args.json:
        out_json(report.show_json(point, when))
    elif stamped is not None:
        _show_and_keep(repo, point, stamped)
    else:
        out(report.show_lines(point, stdout_style(), label))
    return 0


def _say_waiting(repo: PlaybookRepository) -> None:
    """One line on stderr when a playbook.json set aside waits to be taken back (`playbook recover`)."""
    from playbook.rendering.safe_text import clean

    from .recover import waiting_line

    line = waiting_line(repo)
    if line is not None:
        print(f"playbook: {clean(line)}", file=sys.stderr)


def _show_and_keep(repo: PlaybookRepository, point: PointState, stamped: bytes) -> None:
    """`show` of the playbook now, its text kept for the next `show` (`playbook.quick.show_text`) when it is the whole
    story: nothing was taken in or found diverging on the way, and the log and playbook.json are still the
    files `stamped` names."""
    from playbook.rendering import report
    from playbook.rendering.terminal import Style

    style = stdout_style()
    painted = ("\n".join(report.show_lines(point, Style(color=True, width=style.width))) + "\n").encode("utf-8")
    sys.stdout.write((painted if style.color else show_text.plain(painted)).decode("utf-8"))
    claude_dir = str(repo.claude_dir)
    if not repo.taken_in and repo.diverged is None and show_text.stamp(claude_dir) == stamped:
        show_text.keep(claude_dir, stamped, painted, str(repo.root))


def _show_injection(args: argparse.Namespace, what: str) -> int:
    """`show --injected`: exactly the context the next session receives; `--left-out`: what the budget kept out."""
    from playbook.rendering import report
    from .audit import PointState
    from playbook.learner.lean import injected_context, left_out_state, unused_state

    repo = playbook_of(args)
    if what == "injected":
        injection = injected_context(repo)
        if args.json:
            out_json({"budget": injection.budget, "tokens": injection.tokens, "included": injection.included,
                       "left_out": injection.left_out, "text": injection.text})
        else:
            from playbook.rendering.safe_text import clean

            sys.stdout.write("\n".join(clean(line) for line in injection.text.split("\n")))
        return 0
    state = left_out_state(repo) if what == "left_out" else unused_state(repo)
    point = PointState(state=state, seq=state.seq, commit=None)
    if args.json:
        out_json(report.show_json(point, None))
    else:
        out(report.show_lines(point, stdout_style()))
    return 0


def cmd_at(args: argparse.Namespace) -> int:
    args.at = args.when
    return cmd_show(args)


def cmd_log(args: argparse.Namespace) -> int:
    from playbook.rendering import report
    from .audit import event_types, select

    types = event_types(args.type)
    selected = select(_timeline(args), n=args.n or None, session=args.session, entry=args.entry, types=types,
                      since=args.since, until=args.until)
    if args.json:
        out_json(report.log_json(selected))
    else:
        filtered = any(v is not None for v in (args.session, args.entry, types, args.since, args.until))
        out(report.log_lines(selected, stdout_style(), verbose=args.verbose, filtered=filtered))
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    from playbook.rendering import report

    timeline = _timeline(args)
    items = timeline.history(args.entry)
    fate = timeline.fate(args.entry, items)
    if args.json:
        out_json(report.history_json(args.entry, items, fate))
    else:
        out(report.history_lines(args.entry, items, stdout_style(), verbose=args.verbose, fate=fate))
    return 0


def cmd_diff(args: argparse.Namespace) -> int:
    from projections.diff import diff

    from playbook.rendering import report_changes as changes
    from .audit import end_of_log, state_at

    timeline = _timeline(args)
    a = state_at(timeline, args.a)
    b = state_at(timeline, args.b) if args.b is not None else end_of_log(timeline)
    b_label = args.b if args.b is not None else "now"
    change = diff(a.state, b.state)
    if args.json:
        out_json(changes.diff_json(change, a, b, args.a, b_label))
    else:
        out(changes.diff_lines(change, a, b, args.a, b_label, stdout_style()))
    return 0
