"""`playbook sync`: the user-level playbook merged with a git remote of the user's, and pushed back.

`playbook sync --user --remote URL` names the remote once; `playbook sync` then fetches, merges
and pushes (`playbook.sync.cycle`), and the learner starts one in the background after it
learned (`playbook.sync.background`). A project's playbook travels with its own repository
(`playbook share`), so sync acts on the user-level playbook whether or not `--user` is given.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from .output import out_json
from playbook.rendering.safe_text import clean


def add_sync(add: Callable[..., argparse.ArgumentParser]) -> None:
    """Register `playbook sync` with the parser's `add`."""
    sync = add("sync", cmd_sync, "merge the user-level playbook with your git remote and push it (set it once with "
               "--user --remote URL)")
    sync.add_argument("--remote", metavar="URL", help="the git remote to sync with from now on: a path, an ssh or "
                      "https URL (credentials stay git's)")
    sync.add_argument("--background", action="store_true", help=argparse.SUPPRESS)


def cmd_sync(args: argparse.Namespace) -> int:
    from playbook.sync.cycle import set_remote, sync
    from playbook.sync.place import Busy

    if args.remote is not None:
        print(clean(set_remote(args.remote)))
    try:
        result = sync(background=args.background)
    except Busy:
        if args.background:
            return 0  # the sync running now does the work
        raise
    if args.json:
        out_json({"remote": result.remote, "brought": result.brought, "pushed": result.pushed,
                  "offline": result.offline, "refused": result.refused, "ok": result.ok})
    elif result.ok:
        print(clean(result.line))
    else:
        print(f"playbook: {clean(result.line)}", file=sys.stderr)
    return 0 if result.ok or args.background else 1
