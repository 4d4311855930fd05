"""The `playbook` subcommands that change the playbook by hand: add, edit, rm, undo.

`playbook.cli` parses the arguments and dispatches here; the changes themselves are `playbook.edits`'.
"""

from __future__ import annotations

import argparse

from eventlog.store import Committed

from .audit_commands import _out, _out_json, _style, cmd_revert, playbook_of


def _report(args: argparse.Namespace, committed: Committed, verb: str) -> int:
    from .report import event_lines

    if args.json:
        import msgspec

        _out_json({"tx": committed.commit.tx, "source": committed.commit.source, "session": committed.commit.session,
                   "events": msgspec.to_builtins(committed.events)})
        return 0
    style = _style()
    lines = [f"{verb} as transaction {committed.commit.tx}:"]
    lines += [line for event in committed.events for line in event_lines(event, style, True)]
    _out(lines)
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
    from .safe_text import clean

    last = last_learning(playbook_of(args))
    if last is None:
        if args.json:
            _out_json({"transactions": [], "dry_run": args.dry_run, "applied": False, "tx": None, "events": [],
                       "conflicts": {}, "learning": None})
        else:
            _out("nothing to undo: no learning cycle has changed the playbook (or each was reverted already)")
        return 0
    if not args.json:
        session = f", session {clean(last.session)}" if last.session else ""
        _out(f"the last learning cycle: transaction {clean(last.tx)} at {clean(last.at)} ({clean(last.source)}{session})")
    args.target = last.tx
    code = cmd_revert(args)
    if code == 0 and args.dry_run and not args.json:
        _out(f"to undo it: playbook revert {clean(last.tx)}")
    return code

