"""`playbook eval`: what the playbook is worth, measured on the user's own login and recorded in the log.

`playbook.commands.cli` parses the arguments and dispatches here; the work is `playbook.commands.evaluation`'s
and the summary `playbook.rendering.value_report`'s.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from playbook.wiring.project import playbook_of, project_dir
from projections.quickroads import local_dir

EVAL_HELP = ("measure what the playbook is worth: the plugin's eval suite with and without it (claude plugin eval, "
             "on your login, within a cost ceiling) and the learning benchmark when this copy has it; prints one "
             "summary and records it in the log (playbook stats shows the latest)")


def add_eval(add: Callable[..., argparse.ArgumentParser], plain: list[argparse.ArgumentParser]) -> None:
    """Register `eval` with the parser's `add`."""
    from .evaluation import DEFAULT_CAP_USD

    sub = add("eval", cmd_eval, EVAL_HELP, parents=plain)
    sub.add_argument("--max-cost-usd", type=float, default=DEFAULT_CAP_USD, metavar="USD",
                     help=f"stop starting runs once this much is spent (default {DEFAULT_CAP_USD:g})")
    sub.add_argument("--runs", type=int, default=1, metavar="N", help="runs of each case in each arm (default 1)")
    sub.add_argument("--case", metavar="GLOB", help="only the cases whose name matches GLOB")
    sub.add_argument("--tag", nargs="+", metavar="TAG", help="only the cases with one of these tags (a section's "
                     "directory name, lesson, must-not-change, recall)")
    sub.add_argument("--model", metavar="NAME", help="the model of the sessions (default: Claude Code's)")
    sub.add_argument("--plugin", metavar="PATH_OR_ID", help="the plugin to measure: a directory (a clone) or an "
                     "installed plugin's name (default: the copy this command runs from)")
    sub.add_argument("--no-learning", action="store_true", help="leave out the learning benchmark")
    sub.add_argument("--yes", "-y", action="store_true", help="run without asking (the estimate is still shown)")
    sub.add_argument("--json", action="store_true", help="the summary as one JSON document on stdout")


def cmd_eval(args: argparse.Namespace) -> int:
    from eventlog.decide import RecordValue
    from eventlog.events import Cause

    from playbook.errors import UsageError
    from playbook.learner.backend import find_claude
    from playbook.rendering.value_report import plan_line, summary_json, summary_lines

    from . import evaluation as ev
    from .output import out, out_json, stdout_style

    if args.runs < 1 or args.max_cost_usd <= 0:
        raise UsageError("--runs must be 1 or more and --max-cost-usd above 0")
    claude = find_claude()
    if claude is None:
        raise UsageError("Claude Code's CLI is not on PATH (npm install -g @anthropic-ai/claude-code, then "
                         "`claude /login`): the suite runs on it")
    evals, target = ev.find_suite(args.plugin)
    cases = len(ev.suite_cases(evals)) if not (args.case or args.tag) else None
    benchmark = None if args.no_learning else ev.learning_benchmark()
    sessions = ev.benchmark_sessions() if benchmark is not None else 0
    shell = ev.shell_confined()
    print(plan_line(target, cases, args.runs, sessions, args.max_cost_usd, shell), file=sys.stderr)
    if not args.yes and not _confirmed():
        print("playbook: nothing run", file=sys.stderr)
        return 1
    repo = playbook_of(args)
    # The report stays on this machine, beside the project's notice (never in the repository).
    output = Path(local_dir(project_dir(args))) / "evals" / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    with tempfile.TemporaryDirectory(prefix="playbook-eval-") as scratch:
        command = ev.eval_command(claude, target, output, args.runs, args.max_cost_usd, args.model, args.case,
                                  args.tag, shell)
        result = ev.run_suite(command, output, Path(scratch))
    learning = ev.run_learning(benchmark, args.model) if benchmark is not None else None
    summary = ev.summary_of(result, learning, args.model)
    repo.append([RecordValue(ev.measured(summary))], Cause(source="cli:eval", model=args.model))
    if args.json:
        out_json(summary_json(summary) | {"report": str(output / "report.html")})
    else:
        out(summary_lines(summary, stdout_style()) + [f"  report: {output / 'report.html'}"])
    return 0


def _confirmed() -> bool:
    from playbook.errors import UsageError

    if not sys.stdin.isatty():
        raise UsageError("not run: confirm on a terminal, or pass --yes")
    try:
        answer = input("Run it? [y/N] ")
    except EOFError:
        return False
    return answer.strip().lower() in {"y", "yes"}
