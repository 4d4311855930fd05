"""The daily token budget: learning pauses when it is spent, and the requests left wait for the next day."""

from __future__ import annotations

import json
import os
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path

from eventlog.events import LearningCompleted, LearningDeferred, ModelCallRecorded
from playbook.commands.cli import main
from playbook.learner.bootstrap import transcripts_dir
from playbook.learner.learn import learn_pending
from playbook.learner.requests import request_learning
from projections import usage
from projections.repository import PlaybookRepository
from tests.fake_anthropic import FakeAnthropic
from tests.test_learning import FIXTURES, models, project, transactions, use  # noqa: F401
import pytest


def requests(project: Path, tmp_path: Path, count: int) -> list[str]:
    made = []
    for index in range(count):
        sessions = transcripts_dir(project, Path(os.environ["CLAUDE_CONFIG_DIR"]))
        path = sessions / f"{tmp_path.name}-session-{index}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(FIXTURES / "tool_use_resumed.jsonl", path)
        made.append(request_learning(project, "SessionEnd", str(path), f"s{index}", "other"))
    return made


def pending(project: Path) -> set[str]:
    return set(PlaybookRepository(project / ".claude").current()[0].pending)


@pytest.mark.slow
def test_the_budget_reached_midway_defers_the_rest_until_the_next_day(project, tmp_path, monkeypatch, capsys):
    with FakeAnthropic(models()) as api:
        use(api, monkeypatch)
        # Measure one cycle, then allow a bit more than one: the second cycle runs, the third waits.
        (tmp_path / "first").mkdir()
        first = requests(project, tmp_path / "first", 1)
        learn_pending(project)
        one_cycle = sum(u["input_tokens"] + u["output_tokens"] for u in api.usage)
        monkeypatch.setenv("PLAYBOOK_DAILY_TOKEN_BUDGET", str(one_cycle * 2 - 1))
        made = requests(project, tmp_path, 3)
        outcomes = learn_pending(project)
        assert [o.status for o in outcomes] == ["completed", "deferred", "deferred"]
        assert "daily token budget reached" in outcomes[1].detail and "--ignore-budget" in outcomes[1].detail
        assert len(api.message_requests()) == 4  # nothing was sent for the deferred ones
        assert pending(project) == set(made[1:])
        last = transactions(project)[-1]
        deferred = [e for e in last.events if isinstance(e, LearningDeferred)]
        assert [e.request for e in deferred] == made[1:]
        assert deferred[0].used_tokens >= deferred[0].budget_tokens == one_cycle * 2 - 1

        # Another learner the same day (the next session's hook): nothing sent, nothing more recorded.
        size = (project / ".claude" / "playbook.events.jsonl").stat().st_size
        assert [o.status for o in learn_pending(project)] == ["deferred", "deferred"]
        assert (project / ".claude" / "playbook.events.jsonl").stat().st_size == size
        assert len(api.message_requests()) == 4

        # The next UTC day the budget is whole again: the oldest waiting request is learned first.
        tomorrow = (datetime.now(timezone.utc) + timedelta(days=1)).strftime("%Y-%m-%d")
        monkeypatch.setattr(usage, "today", lambda: tomorrow)
        outcomes = learn_pending(project)
        assert [o.status for o in outcomes] == ["completed", "completed"]
        assert first and pending(project) == set()
    completed = [e.request for t in transactions(project) for e in t.events if isinstance(e, LearningCompleted)]
    assert completed == [*first, *made]


@pytest.mark.slow
def test_ignore_budget_learns_at_once(project, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PLAYBOOK_DAILY_TOKEN_BUDGET", "1")
    with FakeAnthropic(models()) as api:
        use(api, monkeypatch)
        made = requests(project, tmp_path, 2)
        assert [o.status for o in learn_pending(project)] == ["completed", "deferred"]
        capsys.readouterr()
        assert main(["--project", str(project), "learn"]) == 0
        assert f"{made[1]}: deferred: daily token budget reached" in capsys.readouterr().out
        assert main(["--project", str(project), "learn", "--ignore-budget"]) == 0
        assert f"{made[1]}: completed" in capsys.readouterr().out
    assert pending(project) == set()
    calls = [e for t in transactions(project) for e in t.events if isinstance(e, ModelCallRecorded)]
    assert len(calls) == 4


@pytest.mark.slow
def test_a_budget_of_zero_is_no_budget(project, tmp_path, monkeypatch):
    monkeypatch.setenv("PLAYBOOK_DAILY_TOKEN_BUDGET", "0")
    with FakeAnthropic(models()) as api:
        use(api, monkeypatch)
        requests(project, tmp_path, 3)
        assert [o.status for o in learn_pending(project)] == ["completed"] * 3


def test_the_budget_is_a_setting_of_the_project(project, tmp_path, monkeypatch):
    (project / ".claude" / "playbook.settings.json").write_text(json.dumps({"playbook_daily_token_budget": 10}))
    with FakeAnthropic(models()) as api:
        use(api, monkeypatch)
        requests(project, tmp_path, 2)
        assert [o.status for o in learn_pending(project)] == ["completed", "deferred"]
