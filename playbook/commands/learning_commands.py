"""The `playbook` subcommands that wire the playbook into Claude Code and run its learning: hook, learn,
disable, enable, bootstrap, install, uninstall, doctor.

`playbook.commands.cli` parses the arguments and dispatches here; the work itself is `playbook.wiring.hooks`',
`playbook.learner.learn`'s, `playbook.learner.bootstrap`'s, `playbook.wiring.install`'s and
`playbook.wiring.doctor_project`'s.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from playbook.wiring.project import playbook_of, project_dir


def add_learning(add: Callable[..., argparse.ArgumentParser], plain: list[argparse.ArgumentParser],
                 settings: list[argparse.ArgumentParser]) -> None:
    """Register hook, learn, disable, enable, bootstrap, install, uninstall and doctor with the parser's `add`."""
    hook = add("hook", cmd_hook, "run a Claude Code hook (reads the hook JSON on stdin)", parents=plain)
    hook.add_argument("event", help="SessionStart, SessionEnd, PreCompact or SubagentStop")
    learn = add("learn", cmd_learn, "run pending learning cycles now", parents=plain)
    learn.add_argument("--pending", action="store_true", help="finish every pending request that is due (the default)")
    learn.add_argument("--retry", action="store_true",
                       help="also retry failed requests now, without waiting for their retry delay")
    learn.add_argument("--ignore-budget", action="store_true",
                       help="learn even when today's token budget (playbook_daily_token_budget) is spent")
    for name, text in (("disable", "turn injection and learning off for this project (recorded in the log)"),
                       ("enable", "turn injection and learning back on for this project")):
        switch = add(name, cmd_switch, text, parents=plain)
        switch.add_argument("--reason", metavar="TEXT", help="why, kept in the log")
    boot = add("bootstrap", cmd_bootstrap, "learn from this project's earlier Claude Code sessions, oldest first "
               "(resumable; never learns a transcript twice)", parents=plain)
    boot.add_argument("--dry-run", action="store_true",
                      help="list the sessions it would learn, with size, estimated tokens and cost; send nothing")
    boot.add_argument("--limit", type=int, metavar="N", help="learn at most N sessions")
    boot.add_argument("--since", metavar="WHEN", help="only sessions started from WHEN on (a time, or 30d, 2w ago)")
    boot.add_argument("--ignore-budget", action="store_true",
                      help="go on when today's token budget (playbook_daily_token_budget) is spent")
    for name, run, text in (("install", cmd_install, "add the playbook hooks to Claude Code's settings"),
                            ("uninstall", cmd_uninstall, "remove the playbook hooks from Claude Code's settings")):
        add(name, run, text, parents=settings)
    doctor = add("doctor", cmd_doctor, "check what the hooks need (their Python, how they are wired, the backend, "
                 "learning, the budget, the files, the log, the injection): one line each with its fix; exit 1 when "
                 "something keeps learning or injection from working")
    doctor.add_argument("--offline", action="store_true",
                        help="skip the check that asks the API (its models endpoint, which costs no tokens) or the "
                             "Claude Code CLI whether it is logged in")


def cmd_hook(args: argparse.Namespace) -> int:
    from playbook.wiring.hooks import run_hook

    return run_hook(args.event)


def cmd_learn(args: argparse.Namespace) -> int:
    from playbook.learner.learn import learn_pending, waiting_for_retry
    from playbook.rendering.safe_text import clean

    project = project_dir(args)
    outcomes = learn_pending(project, retry_now=args.retry, ignore_budget=args.ignore_budget)
    for outcome in outcomes:
        print(f"{outcome.request}: {outcome.status}{': ' + clean(outcome.detail) if outcome.detail else ''}")
    waiting = waiting_for_retry(project)
    for pending, due in waiting:
        at = f" at {due:%Y-%m-%d %H:%M} UTC" if due is not None else ""
        print(f"{pending.request}: failed {pending.attempts} time(s), tried again{at} (playbook learn --retry: now)")
    if not outcomes and not waiting:
        print("no pending learning")
    if outcomes:
        from .org_layer import fetch_due

        for line in fetch_due():  # the orgs not fetched for a day, after learning: never on a hook's path
            print(clean(line))

        from playbook.sync.background import after_learning

        after_learning(project)
    return 0


def cmd_switch(args: argparse.Namespace) -> int:
    from eventlog.decide import SwitchPlaybook
    from eventlog.events import Cause

    from playbook.wiring.notice import update_notice

    enabled = args.command == "enable"
    user = getattr(args, "user", False)
    repo = playbook_of(args)
    project = repo.claude_dir if user else project_dir(args)
    committed = repo.append([SwitchPlaybook(enabled=enabled, reason=args.reason or "")],
                            Cause(source=f"cli:{args.command}", note=args.reason or None))
    state = committed.state if committed is not None else repo.state()
    if not user:
        update_notice(project, state)
    word = "enabled" if enabled else "disabled"
    if committed is None:
        print(f"the playbook is already {word} in {project}")
    elif enabled:
        print(f"the playbook is enabled in {project}: sessions get it again and teach it")
    else:
        print(f"the playbook is disabled in {project}: nothing is injected or learned until `playbook enable`")
    return 0


def cmd_bootstrap(args: argparse.Namespace) -> int:
    from playbook.learner.bootstrap import run
    from .when import parse_moment

    since = None
    if args.since is not None:
        since = parse_moment(args.since)
        if since is None:
            from playbook.errors import UsageError

            raise UsageError(f"--since {args.since!r} is neither a time (2026-10-01, 2026-10-01T09:00) nor a "
                             "duration ago (30d, 2w)")
    if args.limit is not None and args.limit < 0:
        from playbook.errors import UsageError

        raise UsageError(f"--limit {args.limit} is negative")
    return run(project_dir(args), dry_run=args.dry_run, limit=args.limit, since=since,
               ignore_budget=args.ignore_budget)


def cmd_install(args: argparse.Namespace) -> int:
    from playbook.wiring.install import install, settings_path, settings_root

    user, project = getattr(args, "user", False), project_dir(args)
    path = settings_path(user, project)
    events = install(path, root=settings_root(user, project))
    print(f"installed the {', '.join(events)} hooks into {path}")
    return 0


def cmd_uninstall(args: argparse.Namespace) -> int:
    from playbook.wiring.install import settings_path, settings_root, uninstall

    user, project = getattr(args, "user", False), project_dir(args)
    path = settings_path(user, project)
    print(f"removed {uninstall(path, settings_root(user, project))} playbook hook(s) from {path}")
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from playbook.rendering.safe_text import clean
    from playbook.wiring.doctor_project import as_json, blocking, diagnose

    from .output import out, out_json

    found = diagnose(project_dir(args), offline=args.offline)
    if args.json:
        out_json(as_json(found))
    else:
        out([f"{'✔' if check.ok else '✘'} {check.name}: {clean(check.detail)}"
             + ("" if check.ok else f" — fix: {clean(check.fix)}") for check in found])
    return 1 if blocking(found) else 0
