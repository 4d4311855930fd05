"""What `playbook eval` says: the plan and its estimate before anything runs, the summary after (with vs
without the playbook, per section, cost), and the measurements `playbook stats` lists."""

from __future__ import annotations

from typing import Any

from eventlog.events import ValueMeasured
from playbook.commands.evaluation import PER_RUN_USD, PER_SESSION_USD, Summary, estimate

from .safe_text import clean
from .terminal import Style


def plan_line(target: str, cases: int | None, runs: int, sessions: int, cap: float, shell: bool = True) -> str:
    """What is about to run and what it may cost."""
    if cases is None:
        suite = f"the matching cases of the eval suite, {runs} run(s) each, with and without the plugin"
        cost = f"about ${2 * runs * PER_RUN_USD:.2f} a case"
    else:
        suite = f"{cases} cases of the eval suite, {runs} run(s) each, with and without the plugin"
        cost = f"about ${estimate(cases, runs, 0):.2f}"
    line = (f"playbook eval: {suite} (claude plugin eval on {clean(target)}, on your Claude Code login): {cost}, "
            f"never more than ${cap:g} (--max-cost-usd)")
    if sessions:
        line += (f"; then the learning benchmark, {sessions} recorded sessions learned on your backend: about "
                 f"${sessions * PER_SESSION_USD:.2f}")
    line += ". Estimates are list prices, rough."
    if not shell:
        line += (" The shell (Bash) is not granted: Claude Code cannot confine it here (install bubblewrap), so the "
                 "cases graded on the commands run score 0 in both arms.")
    return line


def _score_row(label: str, width: int, with_score: float, without: float, cases: int) -> str:
    return f"  {label:<{width}}  {with_score:>5.2f}  {without:>6.2f}  {with_score - without:>+6.2f}  {cases:>5}"


def summary_lines(summary: Summary, style: Style) -> list[str]:
    width = max([len("all cases"), *(len(name) for name, _ in summary.sections())])
    lines = [style.paint("what the playbook is worth", "bold"),
             f"  {'':<{width}}  {'with':>5}  {'without':>6}  {'delta':>6}  {'cases':>5}"]
    for name, cases in summary.sections():
        lines.append(_score_row(name, width, sum(c.with_score for c in cases) / len(cases),
                                sum(c.without_score for c in cases) / len(cases), len(cases)))
    lines.append(_score_row("all cases", width, summary.with_score, summary.without_score, len(summary.cases)))
    spent = f"  cost ${summary.cost_usd:.2f} (claude plugin eval, {summary.runs} run(s) a case and arm"
    spent += f", Claude Code {clean(summary.claude_version)})" if summary.claude_version else ")"
    if summary.partial:
        spent += "; stopped at the cost ceiling: the scores are of the runs that were done"
    lines.append(spent)
    if (learning := summary.learning) is not None:
        lines += ["", style.paint("learning benchmark", "bold"),
                  f"  {learning.captured}/{learning.lessons} lessons captured, {learning.false_lessons} false lessons, "
                  f"{learning.duplicates} duplicates, {learning.id_changes} id changes; {learning.tokens} tokens, "
                  f"${learning.cost_usd:.2f} ({clean(learning.model)})"]
    lines.append("  recorded in the log: `playbook stats` shows it beside the earlier measurements")
    return lines


def summary_json(summary: Summary) -> dict[str, Any]:
    import msgspec

    document: dict[str, Any] = msgspec.to_builtins(summary)
    document |= {"with_score": summary.with_score, "without_score": summary.without_score,
                 "delta": summary.with_score - summary.without_score}
    return document


def value_lines(measurements: list[tuple[str, ValueMeasured]], style: Style) -> list[str]:
    """`playbook stats`' block: the latest measurement per section, then how the delta moved (newest last)."""
    if not measurements:
        return ["  (none: `playbook eval` measures it)"]
    at, latest = measurements[-1]
    lines = [f"  latest {clean(at[:16])}: with the playbook {latest.with_score:.2f}, without {latest.without_score:.2f}"
             f" (delta {latest.with_score - latest.without_score:+.2f}) over {latest.cases} cases, "
             f"${latest.cost_usd:.2f}" + (" (partial)" if latest.partial else "")]
    for section in latest.sections:
        lines.append(f"    {clean(section.section):<22} {section.with_score:.2f} vs {section.without_score:.2f} "
                     f"({section.cases} case{'s' if section.cases != 1 else ''})")
    if latest.lessons is not None:
        lines.append(f"  learning: {latest.lessons_captured}/{latest.lessons} lessons captured, "
                     f"{latest.false_lessons} false, {latest.duplicates} duplicates, {latest.id_changes} id changes")
    if len(measurements) > 1:
        lines.append("  delta over time: " + ", ".join(f"{clean(when[:10])} {e.with_score - e.without_score:+.2f}"
                                                       for when, e in measurements[-8:]))
    return lines
