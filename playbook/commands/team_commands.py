"""The `playbook` subcommands that share the log through git: share, unshare, merge, merge-driver, git-hook, sync.

`playbook.commands.cli` parses the arguments and dispatches here; the work itself is `playbook.commands.share`'s and
`playbook.commands.merging`'s.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path

from projections.quickroads import LOG_NAME

from .output import out_json
from .sync_commands import add_sync
from playbook.rendering.safe_text import clean
from playbook.wiring.project import playbook_of, project_dir


def add_team(add: Callable[..., argparse.ArgumentParser], plain: list[argparse.ArgumentParser]) -> None:
    """Register share, unshare, merge, merge-driver, git-hook and sync with the parser's `add`."""
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
    add_sync(add)


def cmd_share(args: argparse.Namespace) -> int:
    from .share import share

    project = project_dir(args)
    for line in share(project):
        print(line)
    shown = [clean(_from_here(project / name)) for name in (".gitattributes", ".gitignore", os.path.join(".claude", LOG_NAME))]
    print(f"shared: commit {shown[0]}, {shown[1]} and {shown[2]}; "
          "each teammate's clone registers the driver on its first playbook command (or runs playbook share)")
    return 0


def _from_here(path: Path) -> str:
    """`path` as the user names it from the current directory (absolute when it is on another branch of the tree)."""
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


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
    from .merging import merge_file, summary

    outcome = merge_file(playbook_of(args), Path(args.other))
    if args.json:
        out_json({"brought": outcome.brought, "appended": outcome.appended, "unchanged": outcome.unchanged,
                   "renamed": outcome.renamed, "conflicts": outcome.conflicts, "reverted": outcome.reverted})
    else:
        print(f"{clean(args.other)}: {summary(outcome)}")
    return 0


def cmd_git_hook(args: argparse.Namespace) -> int:
    from .merging import after_git

    try:
        after_git(project_dir(args))
    except Exception as exc:  # a git hook must never get in git's way
        from playbook.rendering.safe_text import clean

        print(f"playbook: could not refresh the playbook after git {clean(args.name)}: {clean(str(exc))}",
              file=sys.stderr)
    return 0
