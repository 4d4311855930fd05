"""`playbook eval`: the eval suite with and without the playbook (and the learning benchmark), one summary,
recorded in the log as `ValueMeasured` so `playbook stats` and the history page show the value over time.

In process: `claude plugin eval` itself is replaced by the aggregate result it writes (its own run against the
fake API is tests/test_evals.py's)."""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from eventlog.events import ValueMeasured
from playbook.commands import evaluation
from playbook.commands.cli import main
from projections.pagedata import build as build_page
from projections.pageops import op_of
from projections.repository import PlaybookRepository


def result(with_scores: dict[str, float], without: dict[str, float], cost: float = 1.25, partial: bool = False
           ) -> dict[str, Any]:
    """`claude plugin eval`'s aggregate-result.json, as it writes it, for cases named `section/case`."""
    return {"schemaVersion": 1, "claudeVersion": "2.1.328", "costUsd": cost, "partial": partial,
            "cases": [{"name": key.split("/")[1], "dir": f"evals/{key}", "runsPerCase": 1,
                       "aggregates": {"score": with_scores[key], "scoreWithout": without[key],
                                      "delta": with_scores[key] - without[key]}} for key in with_scores]}


SAMPLE = result({"project-context/test-command": 1.0, "project-context/staging-host": 1.0,
                 "user-preferences/pathlib": 0.5, "others/irrelevant-lesson": 1.0},
                {"project-context/test-command": 0.0, "project-context/staging-host": 0.5,
                 "user-preferences/pathlib": 0.5, "others/irrelevant-lesson": 1.0})


def test_the_summary_averages_cases_per_section_and_over_all():
    summary = evaluation.summary_of(SAMPLE)
    sections = {name: [c.name for c in cases] for name, cases in summary.sections()}
    assert sections == {"USER PREFERENCES": ["pathlib"], "PROJECT CONTEXT": ["test-command", "staging-host"],
                        "OTHERS": ["irrelevant-lesson"]}
    assert (summary.with_score, summary.without_score) == (0.875, 0.5)
    fields = evaluation.measured(summary)
    assert fields["cases"] == 4 and fields["cost_usd"] == 1.25 and fields["claude_version"] == "2.1.328"
    assert {s["section"]: (s["with_score"], s["without_score"]) for s in fields["sections"]}["PROJECT CONTEXT"] == (
        1.0, 0.25)


class Recorded:
    """What the command gave `claude plugin eval`, and the result it answers with."""

    def __init__(self, answer: dict[str, Any]) -> None:
        self.answer, self.commands = answer, []

    def __call__(self, command: list[str], output: Path, cwd: Path) -> dict[str, Any]:
        self.commands.append(command)
        return self.answer


@pytest.fixture
def eval_env(tmp_path, monkeypatch):
    (tmp_path / "project" / ".claude").mkdir(parents=True)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    monkeypatch.setattr("playbook.learner.backend.find_claude", lambda env=None: "/opt/claude/bin/claude")
    monkeypatch.setattr(evaluation, "learning_benchmark", lambda root=evaluation.ROOT: None)
    monkeypatch.setattr(evaluation, "shell_confined", lambda: False)
    return tmp_path / "project"


def run(args: list[str], capsys) -> tuple[int, str, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_eval_runs_the_suite_capped_prints_one_summary_and_records_it(eval_env, monkeypatch, capsys):
    suite = Recorded(SAMPLE)
    monkeypatch.setattr(evaluation, "run_suite", suite)
    code, out, err = run(["eval", "--yes", "--project", str(eval_env)], capsys)
    assert code == 0, err
    [command] = suite.commands
    assert command[:4] == ["/opt/claude/bin/claude", "plugin", "eval", str(evaluation.ROOT / "plugin")]
    assert "report: " in out and "/evals/" in out
    joined = " ".join(command)
    for option in ("--ablation with-without", "--scaffold", "--no-publish", "--trust-plugin",
                   "--allow-tools Write Edit", "--max-cost-usd 5", "--runs 1", "--threshold 0"):
        assert option in joined
    cases = len(evaluation.suite_cases(evaluation.ROOT / "plugin" / "evals"))
    assert f"{cases} cases of the eval suite" in err and "never more than $5" in err, "the estimate is shown first"
    assert "The shell (Bash) is not granted" in err
    assert "PROJECT CONTEXT" in out and "all cases" in out and "+0.38" in out and "cost $1.25" in out, out

    [event] = [e for t in PlaybookRepository(eval_env / ".claude").store.read() for e in t.events]
    assert isinstance(event, ValueMeasured)
    assert (event.cases, event.with_score, event.without_score, event.cost_usd) == (4, 0.875, 0.5, 1.25)
    assert event.lessons is None, "no learning benchmark in this copy"
    strings: list[str | None] = []
    op, _sections = op_of(event, lambda text: strings.append(text) or len(strings) - 1, {})
    assert op[0] == "x" and strings[op[1]] == "value" and "delta +0.38" in str(strings[op[3]]), "the page tells it"


def test_stats_show_the_latest_value_and_how_it_moved(eval_env, monkeypatch, capsys):
    monkeypatch.setattr(evaluation, "run_suite", Recorded(result({"others/a": 0.5}, {"others/a": 0.5})))
    assert run(["eval", "--yes", "--project", str(eval_env)], capsys)[0] == 0
    monkeypatch.setattr(evaluation, "run_suite", Recorded(SAMPLE))
    assert run(["eval", "--yes", "--project", str(eval_env)], capsys)[0] == 0
    code, out, err = run(["stats", "--project", str(eval_env)], capsys)
    assert code == 0, err
    block = out[out.index("value (playbook eval"):]
    assert "with the playbook 0.88, without 0.50 (delta +0.38) over 4 cases" in block
    assert "PROJECT CONTEXT        1.00 vs 0.25 (2 cases)" in block, block
    assert re.search(r"delta over time: \S+ \+0\.00, \S+ \+0\.38\n", block), block
    code, out, err = run(["stats", "--json", "--project", str(eval_env)], capsys)
    assert [v["with_score"] for v in json.loads(out)["value"]] == [0.5, 0.875]
    code, out, err = run(["log", "--project", str(eval_env)], capsys)
    assert "value" in out and "delta +0.38" in out
    head = build_page(eval_env / ".claude" / "playbook.events.jsonl").head
    assert [(p.cases, p.with_score, p.without_score) for p in head.value] == [(1, 0.5, 0.5), (4, 0.875, 0.5)]


def test_the_learning_benchmark_runs_after_the_suite_when_this_copy_has_it(eval_env, monkeypatch, capsys):
    report = SimpleNamespace(model="claude-sonnet-4-5", lessons=["a", "b", "c"], missing=["c"],
                             false_lessons=[], duplicates=[], id_changes=[], tokens_spent=12_000, cost_usd=0.4)
    calls = []

    def benchmark(mode: str, model: str | None, *, say: Any) -> SimpleNamespace:
        calls.append((mode, model))
        return report

    monkeypatch.setattr(evaluation, "learning_benchmark", lambda root=evaluation.ROOT: benchmark)
    monkeypatch.setattr(evaluation, "run_suite", Recorded(SAMPLE))
    code, out, err = run(["eval", "--yes", "--json", "--project", str(eval_env)], capsys)
    assert code == 0, err
    assert calls == [("model", None)]
    document = json.loads(out)
    assert document["learning"]["captured"] == 2 and document["delta"] == 0.375
    [event] = [e for t in PlaybookRepository(eval_env / ".claude").store.read() for e in t.events]
    assert (event.lessons, event.lessons_captured, event.learning_tokens) == (3, 2, 12_000)


def test_eval_asks_before_spending_and_runs_nothing_unconfirmed(eval_env, monkeypatch, capsys):
    suite = Recorded(SAMPLE)
    monkeypatch.setattr(evaluation, "run_suite", suite)
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    code, out, err = run(["eval", "--project", str(eval_env)], capsys)
    assert code == 2 and err.strip().splitlines()[-1] == "playbook: not run: confirm on a terminal, or pass --yes"
    assert suite.commands == [] and not (eval_env / ".claude" / "playbook.events.jsonl").exists()


def test_eval_without_claude_code_says_so_in_one_line(eval_env, monkeypatch, capsys):
    monkeypatch.setattr("playbook.learner.backend.find_claude", lambda env=None: None)
    code, out, err = run(["eval", "--yes", "--project", str(eval_env)], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Claude Code's CLI is not on PATH" in err


def test_the_learning_benchmark_is_found_where_a_copy_carries_it(tmp_path, monkeypatch):
    assert evaluation.learning_benchmark(tmp_path) is None, "the plugin and the tool ship without it"
    (tmp_path / "benchmarks" / "transcripts" / "learning").mkdir(parents=True)
    (tmp_path / "benchmarks" / "__init__.py").write_text("")
    (tmp_path / "benchmarks" / "learning.py").write_text("def run(mode, model=None, *, say=print):\n    return mode\n")
    (tmp_path / "benchmarks" / "transcripts" / "learning" / "labels.json").write_text(
        json.dumps({"lessons": {}, "cases": [{"name": "a"}, {"name": "b"}]}))
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    monkeypatch.delitem(sys.modules, "benchmarks", raising=False)
    monkeypatch.delitem(sys.modules, "benchmarks.learning", raising=False)
    found = evaluation.learning_benchmark(tmp_path)
    assert found is not None and found("model") == "model"
    assert evaluation.benchmark_sessions(tmp_path) == 2


def test_a_copy_without_the_suite_says_where_it_ships(eval_env, monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(evaluation, "ROOT", tmp_path / "site-packages")
    code, out, err = run(["eval", "--yes", "--project", str(eval_env)], capsys)
    assert code == 1 and len(err.strip().splitlines()) == 1 and "it ships with the plugin" in err, err
