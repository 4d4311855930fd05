"""The user-level playbook's part of the `playbook` command: which commands take `--user`, and `export`.

Every command that acts on a playbook takes `--user` to act on the user-level one instead
(`playbook.wiring.project.playbook_of`); those in PROJECT_ONLY refuse it in one line.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from playbook.wiring.project import playbook_of

USER_HELP = "act on the user-level playbook ($CLAUDE_CONFIG_DIR/playbook, else ~/.claude/playbook) instead of the project's"
SETTINGS_USER_HELP = "$CLAUDE_CONFIG_DIR/settings.json (~/.claude) instead of the project's"

PROJECT_ONLY = frozenset({"merge-driver", "git-hook", "share", "unshare", "hook", "learn", "review", "bootstrap",
                          "doctor"})
"""Commands that work on a project's playbook only: learning runs per project (what it learns of the user's
preferences goes to the user-level playbook), bootstrap reads a project's sessions, git shares a project's log, and
the doctor checks what a project's hooks need."""


def refused(args: argparse.Namespace) -> bool:
    """True, after one line on stderr, when `--user` is given to a command that works on a project's playbook only."""
    if getattr(args, "user", False) and args.command in PROJECT_ONLY:
        print(f"playbook: {args.command} works on a project's playbook, not with --user", file=sys.stderr)
        return True
    return False


def on_user_level(args: argparse.Namespace) -> bool:
    """True when the command acts on the user-level playbook (and so on no project); `install --user` and
    `uninstall --user` write the user's Claude Code settings, for every project, but are run from one."""
    return bool(getattr(args, "user", False)) and args.command not in ("install", "uninstall")


def add_export(add: Callable[..., argparse.ArgumentParser], parents: list[argparse.ArgumentParser]) -> None:
    """Register `playbook export` with the parser's `add`."""
    export = add("export", cmd_export, "write the playbook as plain text", parents=parents)
    export.add_argument("--claude-md", action="store_true", required=True,
                        help="as a CLAUDE.md section (between two HTML comments; exporting again replaces it)")
    export.add_argument("--output", metavar="FILE", help="put the section into FILE (a directory: its CLAUDE.md), "
                        "keeping the rest of the file; default: stdout")


def cmd_export(args: argparse.Namespace) -> int:
    """The playbook as a CLAUDE.md section: on stdout, or into FILE with --output."""
    from .export import claude_md_section, write_section
    from playbook.rendering.safe_text import clean

    repo = playbook_of(args)
    user = getattr(args, "user", False)
    title = ("Playbook: my own key points, from every project" if user
             else f"Playbook: key points learned in {repo.claude_dir.parent.name or 'this project'}")
    section = claude_md_section(repo.state(), title)
    if args.output is None:
        sys.stdout.write(section)
        return 0
    target = Path(args.output)
    if target.is_dir():
        target = target / "CLAUDE.md"
    done = write_section(target, section)
    print(f"{done} the playbook's section in {clean(str(target))}")
    return 0
