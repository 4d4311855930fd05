"""`playbook eval`'s work: the plugin's eval suite run by `claude plugin eval` on the user's login, with the
plugin and without it, the learning benchmark when this copy carries it, and one summary of both.

The suite is the plugin's `evals/` (`plugin/evals/` in a clone; the plugin ships it): each case a small project whose playbook
the plugin's own hooks give the session. Claude Code runs each case in a scratch workspace with the
plugin and again without it, grades both, and writes `aggregate-result.json`, which is read here.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from eventlog.errors import PlaybookError

ROOT = Path(__file__).resolve().parents[2]
"""The directory holding the package: the plugin's root when it runs as the plugin, or a clone."""
SECTIONS = {"patterns-and-approaches": "PATTERNS & APPROACHES", "mistakes-to-avoid": "MISTAKES TO AVOID",
            "user-preferences": "USER PREFERENCES", "project-context": "PROJECT CONTEXT", "others": "OTHERS"}
"""The suite's directory of each section (a case lives in `evals/<section>/<case>/`)."""
DEFAULT_CAP_USD = 5.0
"""`--max-cost-usd` when none is given: Claude Code stops starting runs past it."""
PER_RUN_USD = 0.15
"""A rough list price of one case run (a dozen turns at most, on the default model), for the estimate."""
PER_SESSION_USD = 0.03
"""A rough list price of learning from one recorded session (the reflector's and the curator's call)."""
GRANTS = ("Write", "Edit")
"""The tools the cases' graders watch, granted to every run; and Bash where Claude Code can confine it
(`shell_confined`), since it refuses a run granted a shell it cannot confine."""


def shell_confined() -> bool:
    """Whether Claude Code can confine a shell here: Seatbelt on macOS, bubblewrap on Linux."""
    import shutil

    return sys.platform == "darwin" or (sys.platform.startswith("linux") and shutil.which("bwrap") is not None)


class CaseValue(msgspec.Struct, frozen=True):
    name: str
    section: str
    with_score: float
    without_score: float


class LearningValue(msgspec.Struct, frozen=True):
    """What the learning benchmark measured, in the figures the summary and the log keep."""

    model: str
    lessons: int
    captured: int
    false_lessons: int
    duplicates: int
    id_changes: int
    tokens: int
    cost_usd: float


class Summary(msgspec.Struct, frozen=True):
    cases: list[CaseValue]
    runs: int
    cost_usd: float
    partial: bool
    claude_version: str
    model: str | None = None
    learning: LearningValue | None = None

    @property
    def with_score(self) -> float:
        return _mean([c.with_score for c in self.cases])

    @property
    def without_score(self) -> float:
        return _mean([c.without_score for c in self.cases])

    def sections(self) -> list[tuple[str, list[CaseValue]]]:
        """The cases of each section, in the suite's order of sections."""
        return [(name, [c for c in self.cases if c.section == name]) for name in SECTIONS.values()
                if any(c.section == name for c in self.cases)]


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def suite_cases(evals: Path) -> list[Path]:
    """The suite's case directories (each holds a case.yaml), results and fixtures aside."""
    return sorted(p.parent for p in evals.rglob("case.yaml")
                  if not {"results", ".claude", "project"} & set(p.relative_to(evals).parts[:-1]))


def find_suite(plugin: str | None) -> tuple[Path, str]:
    """The suite's `evals/` directory and the target `claude plugin eval` is given: `plugin` when it is a
    directory, or a plugin's name or id (then the suite read for the estimate is this copy's), else this copy
    (the installed plugin when `playbook` runs as the plugin's)."""
    given = Path(plugin).expanduser() if plugin else None
    root = given if given is not None and given.is_dir() else ROOT
    # A clone carries the plugin Claude Code installs in its `plugin/` directory; an installed copy is the plugin.
    packaged = root / "plugin"
    target = packaged if (packaged / ".claude-plugin" / "plugin.json").is_file() else root
    evals = target / "evals"
    if not evals.is_dir() or not suite_cases(evals):
        raise PlaybookError(f"no eval suite in {target} (evals/**/case.yaml): it ships with the plugin; install the "
                            f"plugin (README: Install), or pass --plugin with a clone of the repository")
    return evals, plugin if plugin and given is not None and not given.is_dir() else str(target)


def estimate(cases: int, runs: int, sessions: int) -> float:
    """A rough cost of the suite (both arms of every case, `runs` times) and of learning `sessions`."""
    return cases * runs * 2 * PER_RUN_USD + sessions * PER_SESSION_USD


def eval_command(claude: str, target: str, output: Path, runs: int, cap: float, model: str | None = None,
                 case: str | None = None, tags: list[str] | None = None, shell: bool = True) -> list[str]:
    """`claude plugin eval` of the suite on `target`, both arms, its report kept in `output` (never published);
    `shell`: Bash granted too."""
    command = [claude, "plugin", "eval", target, "--ablation", "with-without", "--trust-plugin", "--scaffold",
               "--no-publish", "--allow-tools", *(("Bash",) if shell else ()), *GRANTS, "--runs", str(runs), "--max-cost-usd", f"{cap:g}",
               "--threshold", "0", "--output-dir", str(output)]
    if model:
        command += ["--model", model]
    if case:
        command += ["--case", case]
    if tags:
        command += ["--tag", *tags]
    return command


def run_suite(command: list[str], output: Path, cwd: Path) -> dict[str, Any]:
    """Run `command` with its progress on stderr; the aggregate result it wrote. Exit 0, 1 (a case under the
    threshold) and 2 (the cost ceiling: partial results) all leave one."""
    done = subprocess.run(command, cwd=cwd, stdout=sys.stderr, stderr=sys.stderr, stdin=subprocess.DEVNULL)
    found = output / "aggregate-result.json"
    if not found.is_file():
        raise PlaybookError(f"claude plugin eval ended (exit {done.returncode}) without results; its lines above say "
                            f"why (`claude /login` when it is not logged in)")
    data: dict[str, Any] = json.loads(found.read_text(encoding="utf-8"))
    return data


def summary_of(result: dict[str, Any], learning: LearningValue | None = None, model: str | None = None) -> Summary:
    """The summary of `claude plugin eval`'s aggregate result (the shape of its `--json`)."""
    cases = []
    for case in result.get("cases") or []:
        aggregates = case.get("aggregates") or {}
        parts = Path(str(case.get("dir", ""))).parts
        section = next((SECTIONS[p] for p in parts if p in SECTIONS), "OTHERS")
        cases.append(CaseValue(name=str(case.get("name", "?")), section=section,
                               with_score=float(aggregates.get("score") or 0.0),
                               without_score=float(aggregates.get("scoreWithout") or 0.0)))
    runs = max([len((c.get("arms") or {}).get("with") or []) or int(c.get("runsPerCase") or 0)
                for c in result.get("cases") or []], default=0)
    return Summary(cases=cases, runs=runs, cost_usd=float(result.get("costUsd") or 0.0),
                   partial=bool(result.get("partial")), claude_version=str(result.get("claudeVersion") or ""),
                   model=model, learning=learning)


def measured(summary: Summary) -> dict[str, Any]:
    """`ValueMeasured`'s fields for `summary`."""
    fields: dict[str, Any] = {
        "cases": len(summary.cases), "runs": summary.runs, "with_score": round(summary.with_score, 4),
        "without_score": round(summary.without_score, 4), "cost_usd": round(summary.cost_usd, 4),
        "partial": summary.partial, "claude_version": summary.claude_version, "model": summary.model,
        "sections": [{"section": name, "cases": len(cases), "with_score": round(_mean([c.with_score for c in cases]), 4),
                      "without_score": round(_mean([c.without_score for c in cases]), 4)}
                     for name, cases in summary.sections()]}
    if (learning := summary.learning) is not None:
        fields |= {"lessons": learning.lessons, "lessons_captured": learning.captured,
                   "false_lessons": learning.false_lessons, "duplicates": learning.duplicates,
                   "id_changes": learning.id_changes, "learning_tokens": learning.tokens,
                   "learning_cost_usd": round(learning.cost_usd, 4)}
    return fields


# --- the learning benchmark -------------------------------------------------------------------------------------


def learning_benchmark(root: Path = ROOT) -> Callable[..., Any] | None:
    """The learning benchmark's entry point (`benchmarks.learning.run`) when this copy carries it (a clone
    does; the plugin and the tool ship without it), else None."""
    if not (root / "benchmarks" / "learning.py").is_file():
        return None
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    try:
        module = importlib.import_module("benchmarks.learning")
    except ImportError:
        return None
    run = getattr(module, "run", None)
    return run if callable(run) else None


def benchmark_sessions(root: Path = ROOT) -> int:
    """How many recorded sessions the learning benchmark learns (for the estimate): its labels' cases."""
    labels = root / "benchmarks" / "transcripts" / "learning" / "labels.json"
    try:
        data = json.loads(labels.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return 0
    cases = data.get("cases") if isinstance(data, dict) else None
    return len(cases) if isinstance(cases, list | dict) else 0


def run_learning(run: Callable[..., Any], model: str | None) -> LearningValue:
    """The benchmark on the model learning uses (the user's key or Claude Code login)."""
    report = run("model", model, say=lambda text: print(text, file=sys.stderr, flush=True))
    lessons = list(getattr(report, "lessons", []))
    return LearningValue(model=str(getattr(report, "model", model or "")), lessons=len(lessons),
                         captured=len(lessons) - len(getattr(report, "missing", [])),
                         false_lessons=len(getattr(report, "false_lessons", [])),
                         duplicates=len(getattr(report, "duplicates", [])),
                         id_changes=len(getattr(report, "id_changes", [])),
                         tokens=int(getattr(report, "tokens_spent", 0)), cost_usd=float(getattr(report, "cost_usd", 0.0)))
