"""The `playbook` subcommands that change the playbook by hand or take changes back: revert, add, edit, rm, undo.

`playbook.commands.cli` parses the arguments and dispatches here; the changes themselves are `playbook.commands.edits`'.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from eventlog.store import Committed

from .output import out, out_json, stdout_style
from playbook.rendering.safe_text import clean
from playbook.rendering.terminal import Style
from playbook.wiring.project import playbook_of



def add_edits(add: Callable[..., argparse.ArgumentParser]) -> None:
    """Register revert, add, edit, rm and undo with the parser's `add`."""
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


def _report(args: argparse.Namespace, committed: Committed, verb: str) -> int:
    from playbook.rendering.report import event_lines

    if args.json:
        import msgspec

        out_json({"tx": committed.commit.tx, "source": committed.commit.source, "session": committed.commit.session,
                   "events": msgspec.to_builtins(committed.events)})
        return 0
    style = stdout_style()
    lines = [f"{verb} as transaction {committed.commit.tx}:"]
    lines += [line for event in committed.events for line in event_lines(event, style, True)]
    out(lines)
    return 0


def cmd_add(args: argparse.Namespace) -> int:
    from .edits import add

    return _report(args, add(playbook_of(args), args.text, args.section), "added")


def cmd_edit(args: argparse.Namespace) -> int:
    from .edits import edit

    return _report(args, edit(playbook_of(args), args.id, args.text), "edited")


def cmd_rm(args: argparse.Namespace) -> int:
    from .edits import remove

    return _report(args, remove(playbook_of(args), args.id, args.reason), "removed")


def cmd_undo(args: argparse.Namespace) -> int:
    """Revert the last learning cycle (a preview with --dry-run), through `playbook revert`."""
    from .edits import last_learning
    from playbook.rendering.safe_text import clean

    last = last_learning(playbook_of(args))
    if last is None:
        if args.json:
            out_json({"transactions": [], "dry_run": args.dry_run, "applied": False, "tx": None, "events": [],
                       "conflicts": {}, "learning": None})
        else:
            out("nothing to undo: no learning cycle has changed the playbook (or each was reverted already)")
        return 0
    if not args.json:
        session = f", session {clean(last.session)}" if last.session else ""
        out(f"the last learning cycle: transaction {clean(last.tx)} at {clean(last.at)} ({clean(last.source)}{session})")
    args.target = last.tx
    code = cmd_revert(args)
    if code == 0 and args.dry_run and not args.json:
        out(f"to undo it: playbook revert {clean(last.tx)}")
    return code


def cmd_revert(args: argparse.Namespace) -> int:
    from projections.revert import RevertConflict

    from playbook.rendering import report_changes as changes
    from .audit import revert

    try:
        result = revert(playbook_of(args), args.target, force=args.force, dry_run=args.dry_run)
    except RevertConflict as exc:
        if args.json:
            out_json({"transactions": None, "dry_run": args.dry_run, "applied": False, "tx": None,
                       "events": [], "conflicts": exc.conflicts,
                       "error": "later transactions changed the same entries"})
        style = Style.for_stream(sys.stderr)
        lines = [f"playbook: cannot revert {clean(args.target)}: later transactions changed the same entries:",
                 *changes.conflict_lines(exc.conflicts, style),
                 "playbook: nothing was changed; --force reverts the rest and leaves these entries as they are"]
        sys.stderr.write("\n".join(lines) + "\n")
        return 1
    if args.json:
        out_json(changes.revert_json(result))
    else:
        out(changes.revert_lines(result, stdout_style()))
    return 0
