"""The learning benchmark: the real reflector and curator over labelled sessions, in order, scored.

    python -m benchmarks.learning                 # the scripted model: deterministic, no key needed (CI)
    python -m benchmarks.learning --model [NAME]  # your API key or Claude Code login (what learning uses)
    python -m benchmarks.learning --json          # the report as JSON (LearningReport)

The sessions are real Claude Code transcripts (benchmarks/transcripts/learning/, recorded by
`python -m benchmarks.record_transcripts learning`), each labelled in labels.json beside them with
the lessons it should teach and those it must not: short preference-only sessions, sessions that
teach a project fact or a mistake, sessions with nothing to learn, sessions of only the plugin's own
slash commands, and sessions that teach again, reworded, a lesson an earlier one taught.

Each is learned in turn in a fresh scratch project by the project's own learner
(`playbook.learner.learn`: request, reflector, curator, operations, prune, exactly as after a
session), its user-level playbook in the scratch directory too. The score (benchmarks/learning_score.py)
counts lessons captured, false lessons, duplicates left and id changes, with the tokens each cycle
spent beside its transcript's size, and the tokens injected at the end.

The scripted model answers the reflector and curator from the labels (each session's lessons, a
repeated one in its own new words), so it checks the plumbing and the scoring, not a model's
judgement; `--model` asks the model learning would ask, and its table is the real one. Exit status
0 when every target is met.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import msgspec

from benchmarks.learning_labels import LABELS, Case, Labels, load
from benchmarks.learning_score import LearningReport, Live, Tracker, render

Mode = Literal["scripted", "model"]
TRANSCRIPTS = LABELS.parent
_OURS = ("ANTHROPIC_", "AGENTIC_CONTEXT_", "PLAYBOOK_", "CLAUDE_CONFIG_DIR", "CLAUDE_PROJECT_DIR")


class BenchmarkError(Exception):
    """The benchmark cannot run (no model to ask, labels unreadable): one line, with what to do."""


# --- the scripted model --------------------------------------------------------------------------------------


def which_case(labels: Labels, text: str) -> Case | None:
    """The case whose prompts a reflector prompt holds (each as the `User:` turn it is rendered as), the one with
    the most text when several would do."""
    fitting = [case for case in labels.cases if all(f"User: {prompt}" in text for prompt in case.prompts)]
    return max(fitting, key=lambda case: sum(map(len, case.prompts)), default=None)


_SHOWN = re.compile(r"\[((?:pat|mis|pref|ctx|oth)-\d{3})\] helpful=\d+ harmful=\d+ :: (.*)")
_MARK = re.compile(r"Session ([a-z0-9_]+):")


def scripted_model(labels: Labels) -> Callable[[dict[str, Any]], Any]:
    """A fake Messages API responder that answers as a careful learner would, from the labels: the reflector rates
    helpful each key point the session's lessons are in; the curator adds each lesson the session teaches, in the
    session's own words (so a repeated lesson comes back reworded, and must be absorbed)."""
    from tests.fake_anthropic import reply_text, request_texts

    def respond(body: dict[str, Any]) -> Any:
        text = request_texts(body)
        if "You are the reflector" in text:
            case = which_case(labels, text)
            if case is None:
                return reply_text(json.dumps({"analysis": "Session unknown: nothing to learn", "bullet_tags": []}))
            lessons = [labels.lesson(key) for key in case.teaches]
            tags = [{"name": name, "tag": "helpful", "rationale": "the session followed it"}
                    for name, shown in _SHOWN.findall(text) if any(lesson.found_in(shown) for lesson in lessons)]
            said = "; ".join(case.wording.get(lesson.key, lesson.text) for lesson in lessons) or "nothing to learn"
            return reply_text(json.dumps({"analysis": f"Session {case.name}: {said}", "bullet_tags": tags}))
        if "You are the curator" in text:
            mark = _MARK.search(text)
            case = next((case for case in labels.cases if mark and case.name == mark.group(1)), None)
            taught = case.teaches if case else []
            operations = [{"type": "ADD", "section": labels.lesson(key).section,
                           "text": case.wording.get(key, labels.lesson(key).text) if case else ""} for key in taught]
            return reply_text(json.dumps({"reasoning": "the session's lessons", "operations": operations}))
        return reply_text("{}")

    return respond


# --- the run -------------------------------------------------------------------------------------------------


@contextmanager
def _environment(values: dict[str, str], drop: tuple[str, ...] = ()) -> Iterator[None]:
    """os.environ with `values` set and the variables starting with `drop` removed, restored afterwards."""
    saved = dict(os.environ)
    try:
        for name in [name for name in os.environ if name.startswith(drop)]:
            del os.environ[name]
        os.environ.update(values)
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _live(project: Path) -> Live:
    from playbook.wiring.project import repository, user_repository

    live = {kp.name: kp.text for _section, kp in repository(project).state().entries()}
    live |= {f"user:{kp.name}": kp.text for _section, kp in user_repository().state().entries()}
    return live


def _spent(project: Path, after: int) -> tuple[int, int, float, int]:
    """(calls, tokens, cost in USD, transactions) of the project's log past its first `after` transactions."""
    from projections.usage import usage_report
    from playbook.wiring.project import repository

    transactions = list(repository(project).store.read())
    totals = usage_report((t.events, t.commit) for t in transactions[after:]).total
    return totals.calls, totals.tokens, totals.cost_usd, len(transactions)


def _size(path: Path) -> tuple[int, int]:
    """The transcript's bytes, and the estimated tokens of its turns as the reflector is sent them."""
    from playbook.learner.prompting import render_messages
    from playbook.learner.transcript import read_transcript
    from projections.injection import estimate_tokens

    return path.stat().st_size, estimate_tokens(render_messages(read_transcript(path).messages))


def _learn(labels: Labels, project: Path, sessions: Path, directory: Path, mode: str, model: str,
           say: Callable[[str], None]) -> LearningReport:
    from playbook.learner.lean import current_plan
    from playbook.learner.learn import learn_pending
    from playbook.learner.requests import request_learning
    from playbook.wiring.project import repository

    tracker, seen = Tracker(labels), 0
    sessions.mkdir(parents=True, exist_ok=True)
    for number, case in enumerate(labels.cases, 1):
        source, path = directory / f"{case.name}.jsonl", sessions / f"{case.name}.jsonl"
        shutil.copyfile(source, path)
        before = _live(project)
        request = request_learning(project, "SessionEnd", str(path), f"bench-{case.name}", "other")
        outcome = next((o for o in learn_pending(project, ignore_budget=True) if o.request == request), None)
        status, detail = (outcome.status, outcome.detail) if outcome else ("not run", "the request is still pending")
        calls, tokens, cost, seen = _spent(project, seen)
        row = tracker.cycle(case, before, _live(project), status=status, detail=detail, size=_size(source),
                            calls=calls, tokens=tokens, cost=cost)
        say(f"  {number:>2}/{len(labels.cases)} {case.name}: {status}, {calls} calls, {tokens:,} tokens, "
            f"added {', '.join(row.added) or 'nothing'}")
    plan = current_plan(repository(project))
    return tracker.report(mode, model, _live(project), (plan.tokens, plan.budget))


def run(mode: Mode = "scripted", model: str | None = None, *, labels: Labels | None = None,
        directory: Path = TRANSCRIPTS, responder: Callable[[dict[str, Any]], Any] | None = None,
        say: Callable[[str], None] = lambda text: None) -> LearningReport:
    """Learn every labelled session in order in a scratch project and score the result.

    `scripted`: a fake Messages API on 127.0.0.1 answers (`responder`, by default `scripted_model`); nothing
    of the user's is read or written. `model`: the backend learning itself would use (an API key, else the
    Claude Code CLI on the user's login), with `model` as the model when given; raises BenchmarkError when
    there is none. Both keep the playbooks they write (project and user-level) in a temporary directory."""
    labels = labels or load(directory / LABELS.name)
    with tempfile.TemporaryDirectory(prefix="playbook-learning-") as scratch:
        root = Path(scratch)
        project = root / "project"
        (project / ".claude").mkdir(parents=True)
        # A cycle that fails is given up at once, and scored so, rather than tried again in a later session's turn.
        common = {"PLAYBOOK_USER_DIR": str(root / "user"), "CLAUDE_PROJECT_DIR": str(project),
                  "PLAYBOOK_LEARN_ATTEMPTS": "1"}
        if mode == "scripted":
            from tests.fake_anthropic import FakeAnthropic

            with FakeAnthropic(responder or scripted_model(labels)) as api, _environment(
                    {**common, "HOME": str(root / "home"), "CLAUDE_CONFIG_DIR": str(root / "config"),
                     "ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "sk-bench-scripted",
                     "PLAYBOOK_CLAUDE": "", "PLAYBOOK_RETRY_BASE_DELAY": "0.01"}, drop=_OURS):
                return _learn(labels, project, _sessions(project), directory, mode, "scripted", say)
        return _with_model(labels, project, root, common, model, directory, say)


def _sessions(project: Path) -> Path:
    from playbook.learner.bootstrap import transcripts_dir
    from playbook.learner.sessions import claude_config_dir

    return transcripts_dir(project, Path(claude_config_dir()))


def _with_model(labels: Labels, project: Path, root: Path, common: dict[str, str], model: str | None,
                directory: Path, say: Callable[[str], None]) -> LearningReport:
    from playbook.learner.backend import describe, model_config

    chosen = {"AGENTIC_CONTEXT_MODEL": model} if model else {}
    with _environment({**chosen, **common}):
        config = model_config()
        if config is None:
            raise BenchmarkError("no model to ask: set ANTHROPIC_API_KEY (or AGENTIC_CONTEXT_API_KEY), or install "
                                 "Claude Code and log in (claude), then run again")
        say(f"model: {describe(config)}")
        if config.backend == "api":
            with _environment({"CLAUDE_CONFIG_DIR": str(root / "config")}):
                return _learn(labels, project, _sessions(project), directory, "model", config.model, say)
        # The CLI child needs the user's own Claude Code directory (its login), and the learner reads sessions
        # only in it: the scratch project's sessions go there, under the scratch project's name, and go again.
        sessions = _sessions(project)
        try:
            return _learn(labels, project, sessions, directory, "model", config.model, say)
        finally:
            shutil.rmtree(sessions, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.learning", description=__doc__.splitlines()[0])
    parser.add_argument("--model", nargs="?", const="", default=None, metavar="NAME",
                        help="ask the model learning uses (API key or Claude Code login), NAME if given")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    root = str(Path(__file__).resolve().parents[1])
    if root not in sys.path:
        sys.path.insert(0, root)
    mode: Mode = "scripted" if args.model is None else "model"
    try:
        report = run(mode, args.model or None, say=lambda text: print(text, file=sys.stderr, flush=True))
    except (BenchmarkError, ValueError, msgspec.ValidationError) as exc:
        print(f"benchmarks.learning: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(msgspec.json.encode({**msgspec.structs.asdict(report), "all_met": report.all_met}).decode())
    else:
        print(f"python -m benchmarks.learning{'' if mode == 'scripted' else ' --model'}: {len(report.cycles)} "
              f"recorded sessions learned in order, model: {report.model}")
        print()
        print(render(report))
    return 0 if report.all_met else 1


if __name__ == "__main__":
    raise SystemExit(main())
