"""The `playbook review` command: list, walk through on a terminal, accept, edit, reject proposals.

`playbook.commands.cli` parses the arguments and dispatches here; the decisions themselves are
`playbook.learner.review`'s.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from projections.repository import PlaybookRepository

from .output import out, out_json, stdout_style
from playbook.rendering.safe_text import clean
from playbook.wiring.project import project_dir, repository



def add_review(add: Callable[..., argparse.ArgumentParser]) -> None:
    """Register review with the parser's `add`."""
    rev = add("review", cmd_review, "the proposals learning recorded with playbook_review on: list them, or (on a "
              "terminal) walk through them to accept, reject or edit; or decide with the options")
    rev.add_argument("--accept-all", action="store_true", help="accept every pending proposal, each learning "
                     "cycle's together as that cycle would have applied them (a changed target is refused)")
    rev.add_argument("--accept", metavar="ID", help="accept one proposal")
    rev.add_argument("--edit", nargs=2, metavar=("ID", "TEXT"), help="accept one proposal with its text replaced")
    rev.add_argument("--reject", metavar="ID", help="reject one proposal")
    rev.add_argument("--reason", metavar="TEXT", help="with --reject: why")


def cmd_review(args: argparse.Namespace) -> int:
    from playbook.rendering import report
    from playbook.learner import review
    from playbook.errors import UsageError

    repo = repository(project_dir(args))
    actions = [args.accept_all, args.accept, args.reject, args.edit]
    if sum(bool(a) for a in actions) > 1:
        raise UsageError("give one of --accept-all, --accept ID, --edit ID TEXT, --reject ID")
    if args.reason is not None and not args.reject:
        raise UsageError("--reason goes with --reject ID")
    decisions: list[review.Decision] = []
    if args.accept_all:
        decisions = review.accept_all(repo)
    elif args.accept:
        decisions = [review.accept(repo, args.accept)]
    elif args.edit:
        decisions = [review.accept(repo, args.edit[0], text=args.edit[1])]
    elif args.reject:
        decisions = [review.reject(repo, args.reject, args.reason or "")]
    elif not args.json and sys.stdin.isatty() and sys.stdout.isatty():
        return _review_walk(repo)
    else:
        proposals = review.pending(repo)
        if args.json:
            out_json({"proposals": proposals})
        else:
            out(report.proposal_lines(proposals, stdout_style()))
        return 0
    if args.json:
        out_json({"decisions": decisions})
    else:
        out(report.decision_lines(decisions, stdout_style()) or ["no pending proposals"])
    # One proposal asked for and not accepted is a failure a script should see; --accept-all reports each.
    return 1 if any(d.outcome in ("refused", "held") for d in decisions) and not args.accept_all else 0


def _review_walk(repo: PlaybookRepository) -> int:
    """Walk through the pending proposals on a terminal: accept, reject with a reason, edit then accept."""
    from playbook.rendering import report
    from playbook.learner import review

    style = stdout_style()
    proposals = review.pending(repo)
    if not proposals:
        out("no pending proposals")
        return 0
    for number, proposal in enumerate(proposals, 1):
        out(report.proposal_lines([proposal], style, heading=f"proposal {number} of {len(proposals)}"))
        while True:
            try:
                answer = input("[a]ccept, [r]eject, [e]dit then accept, [s]kip, [q]uit? ").strip().lower()[:1]
            except EOFError:
                answer = "q"
            try:
                if answer == "a":
                    decision = review.accept(repo, proposal.id)
                elif answer == "r":
                    decision = review.reject(repo, proposal.id, input("reason: "))
                elif answer == "e":
                    out(f"current text: {clean(review.operation_text(proposal.operation))}")
                    decision = review.accept(repo, proposal.id, text=input("new text: "))
                elif answer == "s":
                    break
                elif answer == "q":
                    return 0
                else:
                    continue
            except EOFError:
                return 0
            except review.ReviewError as exc:
                out(f"playbook: {clean(str(exc))}")
                continue
            out(report.decision_lines([decision], style))
            break
    return 0
