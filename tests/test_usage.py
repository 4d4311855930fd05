"""Model usage: every attempt of every model call is recorded in its cycle's transaction, and `stats` sums it."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from eventlog.events import LearningCompleted, LearningFailed, ModelCallRecorded
from playbook.commands.cli import main
from playbook.learner.bootstrap import transcripts_dir
from playbook.learner.learn import learn_pending
from playbook.learner.requests import request_learning
from projections.prices import PRICES_AS_OF, estimate
from tests.fake_anthropic import FakeAnthropic, Reply, reply_error, reply_text, request_texts
from tests.test_learning import CURATION, FIXTURES, REFLECTION, project, transactions, use  # noqa: F401

CACHED = {"cache_creation_input_tokens": 1500, "cache_read_input_tokens": 700}


def scripted(replies: dict[str, list[Reply]]):
    """A responder giving the reflector and the curator their next scripted reply (the last one repeats)."""
    def respond(body: dict) -> Reply:
        text = request_texts(body)
        role = "reflector" if "You are the reflector" in text else "curator"
        queue = replies[role]
        return queue.pop(0) if len(queue) > 1 else queue[0]
    return respond


def stats_json(project: Path, capsys) -> dict:
    capsys.readouterr()
    assert main(["--project", str(project), "stats", "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def sessions(project: Path) -> Path:
    """The project's own sessions in Claude Code's directory: the only transcripts the learner reads."""
    directory = transcripts_dir(project, Path(os.environ["CLAUDE_CONFIG_DIR"]))
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def copy_transcript(directory: Path, name: str) -> Path:
    path = directory / f"{name}.jsonl"
    shutil.copy(FIXTURES / "tool_use_resumed.jsonl", path)
    return path


@pytest.mark.slow
def test_usage_summed_by_stats_equals_what_the_server_counted(project, tmp_path, monkeypatch, capsys):
    replies = {
        # cycle 1: an overloaded reflector, retried, then answers with cache tokens; the curator answers
        # cycle 2: the curator answers prose without JSON: the cycle fails, and what it used still counts
        "reflector": [reply_error(529), Reply(text=json.dumps(REFLECTION), usage=CACHED),
                      reply_text(json.dumps(REFLECTION))],
        "curator": [reply_text(json.dumps(CURATION)), reply_text("I have no operations to suggest.")],
    }
    with FakeAnthropic(scripted(replies)) as api:
        use(api, monkeypatch)
        request_learning(project, "SessionEnd", str(copy_transcript(sessions(project), "one")), "s1", "other")
        request_learning(project, "SessionEnd", str(copy_transcript(sessions(project), "two")), "s2", "other")
        outcomes = learn_pending(project)
        served = api.usage_totals()
        attempts = len(api.message_requests())
    assert [o.status for o in outcomes] == ["completed", "failed"]
    assert served["calls"] == 4 and attempts == 5 and served["cache_read_input_tokens"] == 700

    report = stats_json(project, capsys)["model_usage"]
    total = report["total"]
    assert total["calls"] == attempts and total["failed"] == 1
    for field in ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
        assert total[field] == served[field], field
    assert total["tokens"] == sum(served[f] for f in served if f != "calls")
    model = transactions(project)[-1].commit.model
    assert report["prices_as_of"] == PRICES_AS_OF
    assert total["cost_usd"] == pytest.approx(estimate(model, served["input_tokens"], served["output_tokens"],
                                                       served["cache_creation_input_tokens"],
                                                       served["cache_read_input_tokens"]))
    # per cycle, per day and per model add up to the total
    assert len(report["cycles"]) == 2
    for rows in (report["cycles"], report["per_day"].values(), report["per_model"].values()):
        rows = [row.get("totals", row) for row in rows]
        assert sum(row["tokens"] for row in rows) == total["tokens"]
        assert sum(row["calls"] for row in rows) == total["calls"]
    assert list(report["per_model"]) == [model]


@pytest.mark.slow
def test_each_attempt_is_recorded_in_its_cycles_own_transaction(project, tmp_path, monkeypatch):
    replies = {"reflector": [reply_error(529), reply_text(json.dumps(REFLECTION))],
               "curator": [reply_error(400)]}
    with FakeAnthropic(scripted(replies)) as api:
        use(api, monkeypatch)
        request_learning(project, "SessionEnd", str(copy_transcript(sessions(project), "one")), "s1", "other")
        learn_pending(project)
        replies["curator"] = [reply_text(json.dumps(CURATION))]
        request_learning(project, "SessionEnd", str(copy_transcript(sessions(project), "two")), "s2", "other")
        learn_pending(project)
    failed, completed = transactions(project)[-3], transactions(project)[-1]
    calls = [e for e in failed.events if isinstance(e, ModelCallRecorded)]
    assert any(isinstance(e, LearningFailed) for e in failed.events)
    assert [(c.role, c.attempt, c.outcome, c.error) for c in calls] == [
        ("reflector", 1, "error", "OverloadedError (HTTP 529)"), ("reflector", 2, "ok", None),
        ("curator", 1, "error", "BadRequestError (HTTP 400)")]
    assert calls[0].input_tokens == 0 and calls[1].input_tokens > 0 and calls[1].output_tokens > 0
    assert all(c.backend == "api" and c.model == failed.commit.model and c.latency_ms >= 0 for c in calls)
    calls = [e for e in completed.events if isinstance(e, ModelCallRecorded)]
    assert any(isinstance(e, LearningCompleted) for e in completed.events)
    assert [(c.role, c.outcome) for c in calls] == [("reflector", "ok"), ("curator", "ok")]


def test_stats_shows_tokens_and_cost_per_cycle_day_and_model(project, tmp_path, monkeypatch, capsys):
    with FakeAnthropic(scripted({"reflector": [reply_text(json.dumps(REFLECTION))],
                                 "curator": [reply_text(json.dumps(CURATION))]})) as api:
        use(api, monkeypatch)
        request_learning(project, "SessionEnd", str(copy_transcript(sessions(project), "one")), "s1", "other")
        learn_pending(project)
        served = api.usage_totals()
    capsys.readouterr()
    assert main(["--project", str(project), "stats"]) == 0
    out = capsys.readouterr().out
    usage = out[out.index("model usage"):]
    assert f"prices of {PRICES_AS_OF}" in usage
    assert "newest cycles" in usage and "per day (UTC)" in usage and "per model" in usage
    assert f"{served['input_tokens']:,}" in usage and "$" in usage


def test_a_model_of_unknown_price_counts_its_tokens_and_no_guessed_cost(project, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ANTHROPIC_MODEL", "someone-elses-model")
    with FakeAnthropic(scripted({"reflector": [reply_text(json.dumps(REFLECTION))],
                                 "curator": [reply_text(json.dumps(CURATION))]})) as api:
        use(api, monkeypatch)
        request_learning(project, "SessionEnd", str(copy_transcript(sessions(project), "one")), "s1", "other")
        learn_pending(project)
        served = api.usage_totals()
    total = stats_json(project, capsys)["model_usage"]["total"]
    assert total["input_tokens"] == served["input_tokens"] and total["unpriced"] == 2 and total["cost_usd"] == 0


@pytest.mark.slow
def test_calls_through_the_claude_code_cli_record_the_usage_and_cost_its_json_reports(project, tmp_path, monkeypatch,
                                                                                     capsys):
    from tests.test_e2e_claude_code import CLAUDE
    from tests.test_learning_cli import login_env

    if CLAUDE is None:
        pytest.skip("Claude Code is not installed (npm install @anthropic-ai/claude-code)")
    home = tmp_path / "home"
    with FakeAnthropic(scripted({"reflector": [Reply(text=json.dumps(REFLECTION), usage=CACHED)],
                                 "curator": [reply_text(json.dumps(CURATION))]})) as api:
        for name, value in login_env(home, api).items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("PLAYBOOK_CLAUDE", str(CLAUDE))
        # Claude Code's directory is where its login is stored, and where it keeps its transcripts: the only
        # place the learner reads them from.
        monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / ".claude"))
        transcripts = transcripts_dir(project, home / ".claude")
        transcripts.mkdir(parents=True, exist_ok=True)
        request_learning(project, "SessionEnd", str(copy_transcript(transcripts, "one")), "s1", "other")
        assert [o.status for o in learn_pending(project)] == ["completed"]
        served = [r.usage for r in api.message_requests() if r.usage is not None]
    calls = [e for e in transactions(project)[-1].events if isinstance(e, ModelCallRecorded)]
    assert [(c.role, c.backend, c.outcome) for c in calls] == [("reflector", "cli", "ok"), ("curator", "cli", "ok")]
    assert all(c.cost_usd is not None and c.cost_usd > 0 for c in calls)  # Claude Code's own figure
    total = stats_json(project, capsys)["model_usage"]["total"]
    for field in ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
        assert total[field] == sum(u[field] for u in served), field
    assert total["cost_usd"] == pytest.approx(sum(c.cost_usd for c in calls))
