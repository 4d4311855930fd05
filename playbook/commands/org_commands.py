"""`playbook org`: an organisation's playbook, fetched from a git repository and injected in every project after
the user's and before the project's: add, fetch, list, remove, propose.

`playbook.commands.org_layer` does the fetching and checking, `playbook.commands.org_propose` the proposals.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from .output import out_json
from playbook.rendering.safe_text import clean


def add_org(add: Callable[..., argparse.ArgumentParser], plain: list[argparse.ArgumentParser]) -> None:
    """Register `org` and its actions with the parser's `add`."""
    org = add("org", cmd_org, "an organisation's playbook from a git repository, read-only, injected in every "
              "project: org add URL, fetch, list, remove NAME, propose ID", parents=plain)
    actions = org.add_subparsers(dest="org_command", metavar="ACTION", required=True)
    added = actions.add_parser("add", help="add an org repository (a path, ssh or https URL) and fetch it",
                               description="add an org repository (a path, ssh or https URL) and fetch it")
    added.add_argument("url", metavar="URL")
    added.add_argument("--name", metavar="N", help="the org's name in ids ([org:N/ctx-001]); default: from the URL")
    fetched = actions.add_parser("fetch", help="fetch the orgs now (verified; a refused copy is kept aside)",
                                 description="fetch the orgs now (verified; a refused copy is kept aside)")
    fetched.add_argument("names", metavar="NAME", nargs="*")
    fetched.add_argument("--due", action="store_true", help="only the orgs not tried in the last day")
    fetched.add_argument("--quiet", action="store_true", help="never ask for credentials; print nothing")
    listed = actions.add_parser("list", help="the orgs configured and their last fetch",
                                description="the orgs configured and their last fetch")
    listed.add_argument("--json", action="store_true", help="one JSON document on stdout")
    removed = actions.add_parser("remove", help="stop injecting an org and delete its copy",
                                 description="stop injecting an org and delete its copy")
    removed.add_argument("org", metavar="NAME")
    proposed = actions.add_parser("propose", help="propose a key point of this project's playbook to an org: a "
                                  "branch pushed to its repository, else a patch file here",
                                  description="propose a key point of this project's playbook to an org: a branch "
                                  "pushed to its repository, else a patch file in the current directory")
    proposed.add_argument("id", metavar="ID")
    proposed.add_argument("--org", metavar="NAME", help="the org (needed when more than one is configured)")


def cmd_org(args: argparse.Namespace) -> int:
    from . import org_layer

    action = args.org_command
    if action == "add":
        print(clean(org_layer.add(args.url, args.name)))
        return 0
    if action == "remove":
        print(clean(org_layer.remove(args.org)))
        return 0
    if action == "fetch":
        results = org_layer.fetch(args.names or None, quiet=args.quiet, due_only=args.due)
        if not args.quiet:
            for accepted, line in results:
                print(clean(line), file=sys.stdout if accepted else sys.stderr)
            if not results:
                print("no org to fetch" + (" (each was tried in the last day)" if args.due else
                                          " (`playbook org add URL`)"))
        return 0 if all(accepted for accepted, _line in results) else 1
    if action == "list":
        return _list(args)
    from .org_propose import propose

    print(clean(propose(args, args.id, args.org)))
    return 0


def _list(args: argparse.Namespace) -> int:
    import msgspec

    from .org_layer import _shown_url, settings

    found = settings()
    if args.json:
        out_json([{**msgspec.to_builtins(org), "url": _shown_url(org.url)} for org in found.orgs])
        return 0
    if not found.orgs:
        print("no org configured (`playbook org add URL`)")
    for org in found.orgs:
        state = f"seq {org.seq}, fetched {org.fetched}" if org.fetched else "never fetched"
        line = f"{org.name}  {_shown_url(org.url)}  {state}"
        if org.error:
            line += f"; last fetch ({org.attempted}): {org.error}"
        print(clean(line))
    return 0
