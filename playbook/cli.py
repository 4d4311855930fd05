"""The `playbook` command."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from eventlog.errors import PlaybookError
from projections.render import format_state

from .project import get_project_dir, repository


def _project(args: argparse.Namespace) -> Path:
    return Path(args.project) if args.project else get_project_dir()


def cmd_show(args: argparse.Namespace) -> int:
    state = repository(_project(args)).state()
    text = format_state(state)
    total = sum(len(entries) for entries in state.sections.values())
    print(text if text else "(the playbook is empty)")
    print(f"\n{total} key points; log at seq {state.seq}; last updated {state.last_updated or 'never'}")
    return 0


def cmd_rebuild(args: argparse.Namespace) -> int:
    repo = repository(_project(args))
    position = repo.rebuild()
    print(f"rebuilt {repo.snapshot_path} from {position.line} log lines (seq {position.seq})")
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="playbook", description="The event-sourced playbook of a Claude Code project.")
    parser.add_argument("--project", help="project directory (default: $CLAUDE_PROJECT_DIR, else the current directory)")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("show", help="the playbook as it is injected, with totals").set_defaults(run=cmd_show)
    commands.add_parser("rebuild", help="rewrite playbook.json from the log").set_defaults(run=cmd_rebuild)
    hook = commands.add_parser("hook", help="run a Claude Code hook (reads the hook JSON on stdin)")
    hook.add_argument("event", help="SessionStart, SessionEnd, PreCompact or SubagentStop")
    hook.set_defaults(run=cmd_hook)
    learn = commands.add_parser("learn", help="run pending learning cycles now")
    learn.add_argument("--pending", action="store_true", help="finish every pending request (the default)")
    learn.set_defaults(run=cmd_learn)
    for name, run, text in (("install", cmd_install, "add the playbook hooks to Claude Code's settings"),
                            ("uninstall", cmd_uninstall, "remove the playbook hooks from Claude Code's settings")):
        sub = commands.add_parser(name, help=text)
        sub.add_argument("--user", action="store_true", help="~/.claude/settings.json instead of the project's")
        sub.set_defaults(run=run)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except PlaybookError as exc:
        print(f"playbook: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
