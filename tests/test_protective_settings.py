"""A repository's settings file may tighten the user's protective choices, never loosen them.

Real files: the user's `$CLAUDE_CONFIG_DIR/playbook.settings.json` and the project's
`.claude/playbook.settings.json`; the hooks run as Claude Code runs them, learning cycles against the
fake Messages API. Where the user set nothing, the default is the user's choice.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from playbook.commands.cli import main
from playbook.learner.bootstrap import transcripts_dir
from playbook.wiring.settings import lean_settings
from playbook.learner.learn import learn_pending
from playbook.learner.requests import request_learning
from playbook.wiring.project import user_repository
from playbook.wiring.settings import LEAN_PROTECTIVE, Settings, load_settings, resolve_settings
from projections.protective import COMBINE
from projections.repository import PlaybookRepository
from tests.fake_anthropic import FakeAnthropic, reply_text, request_texts
from tests.test_lean_learning import models as curating
from tests.test_lean_learning import seed as seed_lessons
from tests.test_learning import FIXTURES, REFLECTION, use

ROOT = Path(__file__).resolve().parent.parent
CURATION = {"reasoning": "The user wants short answers.",
            "operations": [{"type": "ADD", "text": "Answer in one short paragraph", "section": "USER PREFERENCES"},
                           {"type": "ADD", "text": "Build with make, never by hand", "section": "PROJECT CONTEXT"}]}


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    """A project, and a user config directory holding the user's settings and the project's transcripts; no setting from
    the environment (which would win over both files)."""
    for name in list(os.environ):
        # PLAYBOOK_USER_DIR stays: the conftest's user-level playbook in a temporary directory
        if name.startswith(("PLAYBOOK_", "ANTHROPIC_", "AGENTIC_CONTEXT_", "CLAUDE_CODE_")) \
                and name != "PLAYBOOK_USER_DIR":
            monkeypatch.delenv(name)
    monkeypatch.setenv("PLAYBOOK_CLAUDE", "")
    home = tmp_path / "home"
    config = tmp_path / "config"
    transcripts_dir(tmp_path / "project", config).mkdir(parents=True)
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))
    return project


def settings(project: Path, user: dict, mine: dict) -> None:
    (Path(os.environ["CLAUDE_CONFIG_DIR"]) / "playbook.settings.json").write_text(json.dumps(user))
    (project / ".claude" / "playbook.settings.json").write_text(json.dumps(mine))


def learning_hook(project: Path, event: str, extra: dict) -> subprocess.CompletedProcess:
    """The hook `event` as Claude Code runs it, on a transcript it may learn from."""
    transcript = transcripts_dir(project, Path(os.environ["CLAUDE_CONFIG_DIR"])) / "s.jsonl"
    transcript.write_bytes((FIXTURES / "tool_use_resumed.jsonl").read_bytes())
    stdin = json.dumps({"session_id": "s", "transcript_path": str(transcript), "hook_event_name": event,
                        "cwd": str(project), **extra}).encode()
    env = {**os.environ, "PLAYBOOK_PYTHON": sys.executable}
    return subprocess.run(["sh", str(ROOT / "hooks" / "playbook-hook"), event], input=stdin,
                          capture_output=True, cwd=project, env=env, timeout=60)


def requested(project: Path) -> int:
    log = project / ".claude" / "playbook.events.jsonl"
    return log.read_bytes().count(b'"LearningRequested"') if log.exists() else 0


@pytest.mark.slow
@pytest.mark.parametrize(("switch", "event", "extra"), [
    ("playbook_update_on_exit", "SessionEnd", {"reason": "prompt_input_exit"}),
    ("playbook_update_on_clear", "SessionEnd", {"reason": "clear"}),
    ("playbook_update_on_precompact", "PreCompact", {"trigger": "auto"}),
    ("playbook_update_on_subagent_stop", "SubagentStop", {"stop_hook_active": False}),
])
def test_a_project_cannot_turn_learning_back_on_that_the_user_turned_off(project, switch, event, extra):
    settings(project, {switch: False}, {switch: True})
    done = learning_hook(project, event, extra)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b""), done
    assert requested(project) == 0
    # the user's choice left on (the default), the project may turn it off, or leave it on
    settings(project, {}, {switch: False})
    done = learning_hook(project, event, extra)
    assert (done.returncode, done.stdout, done.stderr, requested(project)) == (0, b"", b"", 0), done
    settings(project, {switch: False}, {switch: False})
    assert getattr(load_settings(project), switch) is False
    settings(project, {}, {switch: True})
    done = learning_hook(project, event, extra)
    assert (done.returncode, requested(project)) == (0, 1), done


def _learn_once(project: Path, monkeypatch) -> list[str]:
    def respond(body: dict):
        text = request_texts(body)
        return reply_text(json.dumps(REFLECTION if "You are the reflector" in text else CURATION))

    transcript = transcripts_dir(project, Path(os.environ["CLAUDE_CONFIG_DIR"])) / "s.jsonl"
    transcript.write_bytes((FIXTURES / "tool_use_resumed.jsonl").read_bytes())
    with FakeAnthropic(respond) as api:
        use(api, monkeypatch)
        request_learning(project, "SessionEnd", str(transcript), "s-1")
        return [o.status for o in learn_pending(project)]


@pytest.mark.slow
def test_a_project_cannot_turn_review_off_and_preferences_wait_for_it(project, monkeypatch):
    """The user's review holds in a project that says false, and the USER PREFERENCES the curator adds
    wait for it too instead of going to the user-level playbook, which every project injects."""
    settings(project, {"playbook_review": True}, {"playbook_review": False, "playbook_preferences_per_project": False})
    assert _learn_once(project, monkeypatch) == ["completed"]
    assert not user_repository().log_path.exists() or list(user_repository().store.read()) == []
    state = PlaybookRepository(project / ".claude").state()
    assert list(state.entries()) == []
    assert sorted(p.operation["text"] for p in state.proposals.values()) == [
        "Answer in one short paragraph", "Build with make, never by hand"]


@pytest.mark.slow
def test_a_project_cannot_send_preferences_to_the_user_level_playbook_the_user_keeps_per_project(project, monkeypatch):
    settings(project, {"playbook_preferences_per_project": True}, {"playbook_preferences_per_project": False})
    assert _learn_once(project, monkeypatch) == ["completed"]
    assert not user_repository().log_path.exists() or list(user_repository().store.read()) == []
    state = PlaybookRepository(project / ".claude").state()
    assert [kp.text for kp in state.sections["USER PREFERENCES"].values()] == ["Answer in one short paragraph"]


@pytest.mark.parametrize(("user", "mine", "in_force"), [
    (None, 0, 500_000.0),  # the default is the user's: the project cannot lift the limit
    (None, 900_000, 500_000.0),
    (None, 1_000, 1_000.0),
    (20_000, 0, 20_000.0),
    (20_000, 50_000, 20_000.0),
    (20_000, 5_000, 5_000.0),
    (0, 0, 0.0),  # no limit only when the user chose none
    (0, 7_000, 7_000.0),
])
def test_a_project_can_only_lower_the_daily_token_budget(project, user, mine, in_force):
    settings(project, {} if user is None else {"playbook_daily_token_budget": user},
             {"playbook_daily_token_budget": mine})
    assert load_settings(project).playbook_daily_token_budget == in_force


def test_settings_that_protect_nothing_are_the_projects(project):
    settings(project, {"playbook_review_expiry_days": 60}, {"playbook_review_expiry_days": 7})
    assert load_settings(project).playbook_review_expiry_days == 7.0
    assert resolve_settings(project)[1] == []
    assert set(COMBINE) <= set(Settings.__struct_fields__) | set(LEAN_PROTECTIVE)


def test_the_environment_wins_over_both_files(project, monkeypatch):
    settings(project, {"playbook_review": True}, {"playbook_review": False})
    monkeypatch.setenv("PLAYBOOK_REVIEW", "0")
    assert load_settings(project).playbook_review is False
    assert resolve_settings(project)[1] == []


def test_stats_names_the_project_values_that_gave_way_in_one_line(project, capsys):
    settings(project, {"playbook_review": True}, {"playbook_review": False, "playbook_daily_token_budget": 0,
                                                  "playbook_update_on_exit": True, "playbook_review_expiry_days": 3})
    assert main(["stats"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if "project" in line and "settings" in line]
    assert lines == ["settings: yours kept over the project's, which may only tighten them: playbook_review true "
                     "(project: false), playbook_daily_token_budget 500000 (project: 0)"]
    assert main(["stats", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["settings_overridden"] == [
        {"key": "playbook_review", "project": False, "in_force": True},
        {"key": "playbook_daily_token_budget", "project": 0.0, "in_force": 500000.0}]
    settings(project, {}, {"playbook_review": True})
    assert main(["stats"]) == 0
    assert "yours kept over" not in capsys.readouterr().out


SHARES = ("playbook_collapse_max_removed_share", "playbook_collapse_max_shrink_share")


@pytest.mark.parametrize(("user", "mine", "in_force"), [
    (None, 0.9, 0.3),  # the default is the user's: the project cannot loosen the guard
    (None, 1, 0.3),
    (None, 0.1, 0.1),
    (0.5, 0.8, 0.5),
    (0.5, 0.2, 0.2),
    (0.5, 0, 0.0),
    (0.9, 0.6, 0.6),
])
def test_a_project_can_only_lower_the_collapse_guards_shares(project, user, mine, in_force):
    for key in SHARES:
        settings(project, {} if user is None else {key: user}, {key: mine})
        assert getattr(lean_settings(project), key.removeprefix("playbook_collapse_")) == in_force, key


def _wipe_cycle(project: Path, monkeypatch, name: str) -> list:
    """One learning cycle whose curator deletes 10 of the 20 key points `seed_lessons` left."""
    wipe = {"reasoning": "start over", "operations": [{"type": "DELETE", "target_id": f"pat-{i + 1:03d}"}
                                                      for i in range(10)]}
    transcript = transcripts_dir(project, Path(os.environ["CLAUDE_CONFIG_DIR"])) / f"{name}.jsonl"
    transcript.write_bytes((FIXTURES / "tool_use_resumed.jsonl").read_bytes())
    with FakeAnthropic(curating([wipe])) as api:
        use(api, monkeypatch)
        request_learning(project, "SessionEnd", str(transcript), name)
        return learn_pending(project)


@pytest.mark.slow
def test_a_project_cannot_loosen_the_collapse_guard_of_a_learning_cycle(project, monkeypatch):
    """A repository that allows a reply to delete everything still has the reply held under the user's
    guard; the user's own looser choice is the user's to make."""
    repo = seed_lessons(project, 20)
    settings(project, {}, dict.fromkeys(SHARES, 1))
    outcomes = _wipe_cycle(project, monkeypatch, "s-1")
    assert [o.status for o in outcomes] == ["completed"] and outcomes[0].detail.startswith("held: "), outcomes
    assert "more than 30%" in outcomes[0].detail and len(repo.state().where) == 20
    settings(project, dict.fromkeys(SHARES, 1), {})
    assert [(o.status, o.detail) for o in _wipe_cycle(project, monkeypatch, "s-2")] == [("completed", "")]
    assert len(repo.state().where) == 10


def test_stats_names_a_collapse_share_that_gave_way(project, capsys, monkeypatch):
    settings(project, {"playbook_collapse_max_shrink_share": 0.2},
             {"playbook_collapse_max_removed_share": 0.9, "playbook_collapse_max_shrink_share": 0.5})
    assert main(["stats"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if "project" in line and "settings" in line]
    assert lines == ["settings: yours kept over the project's, which may only tighten them: "
                     "playbook_collapse_max_removed_share 0.3 (project: 0.9), "
                     "playbook_collapse_max_shrink_share 0.2 (project: 0.5)"]
    assert main(["stats", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["settings_overridden"] == [
        {"key": "playbook_collapse_max_removed_share", "project": 0.9, "in_force": 0.3},
        {"key": "playbook_collapse_max_shrink_share", "project": 0.5, "in_force": 0.2}]
    monkeypatch.setenv("PLAYBOOK_COLLAPSE_MAX_REMOVED_SHARE", "0.9")  # the environment wins over both files
    assert lean_settings(project).max_removed_share == 0.9
    assert [o.key for o in resolve_settings(project)[1]] == ["playbook_collapse_max_shrink_share"]
