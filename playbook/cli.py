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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="playbook", description="The event-sourced playbook of a Claude Code project.")
    parser.add_argument("--project", help="project directory (default: $CLAUDE_PROJECT_DIR, else the current directory)")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("show", help="the playbook as it is injected, with totals").set_defaults(run=cmd_show)
    commands.add_parser("rebuild", help="rewrite playbook.json from the log").set_defaults(run=cmd_rebuild)
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
