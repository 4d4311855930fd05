"""A lean context: the injection budget, `show --injected` / `--left-out`, and the hook that serves it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from eventlog.decide import ImportLegacy, decide
from eventlog.domain import SECTION_SLUGS
from eventlog.events import Cause
from eventlog.evolve import fold
from projections.injection import estimate_tokens, plan
from projections.repository import PlaybookRepository

ROOT = Path(__file__).resolve().parent.parent
INJECT = ROOT / "playbook" / "quick" / "inject.py"


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch) -> Path:
    """A HOME of its own, so the user's playbook.settings.json stays out of it."""
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    for name in ("PLAYBOOK_INJECTION_BUDGET", "PLAYBOOK_RECALL", "PLAYBOOK_RECALL_MAX_CHARS"):
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture
def project(tmp_path) -> Path:
    (tmp_path / "proj").mkdir()
    return tmp_path / "proj"


def playbook_data(per_section: int, helpful=lambda section, i: 0, harmful=lambda section, i: 0) -> dict:
    return {"version": "1.0", "sections": {
        section: [{"name": f"{slug}-{i + 1:03d}", "text": f"{section.lower()} lesson number {i} about topic {i * 7 % 13}",
                   "helpful": helpful(section, i), "harmful": harmful(section, i)} for i in range(per_section)]
        for section, slug in SECTION_SLUGS.items()}}


def state_of(data: dict):
    return fold(decide(fold([]), ImportLegacy(data=data, path="test")))


def seeded(project: Path, data: dict) -> PlaybookRepository:
    repo = PlaybookRepository(project / ".claude")
    repo.append([ImportLegacy(data=data, path="test", genesis=False)], Cause(source="test"))
    return repo


def run_inject(project: Path, **env: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "CLAUDE_PROJECT_DIR": str(project), **env}
    return subprocess.run([sys.executable, "-S", str(INJECT)], input=b"{}", capture_output=True, env=environment,
                          cwd=project, timeout=60)


def cli(project: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "playbook", "--project", str(project), *args], capture_output=True,
                          text=True, timeout=60, cwd=ROOT)


# --- the budget -----------------------------------------------------------------------------------


def test_a_playbook_within_the_budget_is_injected_whole_without_a_closing_line():
    state = state_of(playbook_data(3))
    injection = plan(state, 3000)
    assert injection.left_out == [] and len(injection.included) == 15
    assert "left out" not in injection.text
    assert plan(state, 0).text == injection.text  # 0: no budget at all


@pytest.mark.parametrize("budget", [400, 1000, 3000])
def test_the_injection_stays_within_the_budget_and_says_how_many_were_left_out(budget):
    state = state_of(playbook_data(200))
    injection = plan(state, budget)
    assert estimate_tokens(injection.text) <= budget
    assert injection.left_out and sorted(injection.included + injection.left_out) == sorted(state.where)
    last = injection.text.rstrip("\n").splitlines()[-1]
    assert last == (f"({len(injection.left_out)} more key points left out to keep this within {budget} tokens: "
                    "`playbook show --left-out` lists them.)")
    for name in injection.included:
        assert f"\n[{name}] " in injection.text
    for name in injection.left_out:
        assert f"\n[{name}] " not in injection.text


def test_user_preferences_are_taken_before_better_rated_key_points_of_other_sections():
    data = playbook_data(100, helpful=lambda section, i: 0 if section == "USER PREFERENCES" else 50)
    injection = plan(state_of(data), 3000)
    preferences = [n for n in injection.included if n.startswith("pref-")]
    others = [n for n in injection.included if not n.startswith("pref-")]
    assert len(preferences) == 100 and others  # every preference, and the rest of the room to the others


def test_preferences_alone_over_the_budget_keep_the_best_preferences():
    data = playbook_data(200, helpful=lambda section, i: i)
    injection = plan(state_of(data), 800)
    assert injection.included and all(n.startswith("pref-") for n in injection.included)
    kept = sorted(int(n.split("-")[1]) for n in injection.included)
    assert kept[0] > 100  # the best-rated ones (helpful grows with the number)


def test_the_track_record_decides_among_other_sections_and_harm_counts_against():
    def helpful(section, i):
        return 10 if i % 2 == 0 else 0

    def harmful(section, i):
        return 0 if i % 2 == 0 else 5

    data = playbook_data(60, helpful=helpful, harmful=harmful)
    data["sections"]["USER PREFERENCES"] = []
    injection = plan(state_of(data), 1200)
    numbers = [int(n.split("-")[1]) - 1 for n in injection.included]
    assert numbers and all(number % 2 == 0 for number in numbers)
    sections = {n.split("-")[0] for n in injection.included}
    assert sections == {"pat", "mis", "ctx", "oth"}  # equal records are taken from every section in turn


def test_kept_key_points_appear_in_their_playbook_order():
    data = playbook_data(80, helpful=lambda section, i: i % 5)
    state = state_of(data)
    injection = plan(state, 1500)
    order = [kp.name for _section, kp in state.entries()]
    assert injection.included == [name for name in order if name in set(injection.included)]
    positions = [injection.text.index(f"[{name}]") for name in injection.included]
    assert positions == sorted(positions)


def test_stale_key_points_come_last_and_citations_count_as_track_record():
    from eventlog.domain import Usage

    data = playbook_data(40)
    data["sections"]["USER PREFERENCES"] = []
    state = state_of(data)
    for name in state.where:
        state.usage[name] = Usage(last_used=0)
    stale = [name for name in state.where if name.startswith("pat-")]
    for name in stale:
        state.usage[name].stale = True
    state.usage["mis-040"].cited = 3  # cited in three sessions: ahead of every uncited one
    injection = plan(state, 900)
    assert "mis-040" in injection.included
    assert injection.included and not set(stale) & set(injection.included)
    assert set(stale) <= set(injection.left_out)


# --- the hook and the command ---------------------------------------------------------------------


@pytest.mark.slow
def test_the_hook_prints_exactly_what_show_injected_prints(project):
    seeded(project, playbook_data(300))
    hook = run_inject(project)
    assert hook.returncode == 0 and hook.stderr == b""
    context = json.loads(hook.stdout)["hookSpecificOutput"]["additionalContext"]
    shown = cli(project, "show", "--injected")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == context
    assert estimate_tokens(context) <= 3000 and "left out" in context
    document = json.loads(cli(project, "show", "--injected", "--json").stdout)
    assert document["text"] == context and document["budget"] == 3000 and document["tokens"] <= 3000
    left_out = json.loads(cli(project, "show", "--left-out", "--json").stdout)
    names = [entry["name"] for entries in left_out["sections"].values() for entry in entries]
    assert names == document["left_out"] and len(names) + len(document["included"]) == 1500
    assert f"({len(names)} more key points left out" in context


@pytest.mark.slow
def test_a_new_budget_in_the_settings_takes_effect_at_the_next_session_start(project, home):
    seeded(project, playbook_data(300))
    before = json.loads(run_inject(project).stdout)["hookSpecificOutput"]["additionalContext"]
    (project / ".claude" / "playbook.settings.json").write_text(json.dumps({"playbook_injection_budget": 500}))
    after = json.loads(run_inject(project).stdout)["hookSpecificOutput"]["additionalContext"]
    assert estimate_tokens(after) <= 500 < estimate_tokens(before)
    (home / ".claude" / "playbook.settings.json").write_text(json.dumps({"playbook_injection_budget": 0}))
    # the project's setting wins over the user's
    assert json.loads(run_inject(project).stdout)["hookSpecificOutput"]["additionalContext"] == after
    whole = json.loads(run_inject(project, PLAYBOOK_INJECTION_BUDGET="0").stdout)
    assert "left out" not in whole["hookSpecificOutput"]["additionalContext"]  # the environment wins over both
    assert cli(project, "show", "--injected").stdout == after  # the projection follows the settings again


@pytest.mark.slow
def test_the_projected_output_is_served_without_the_slow_path(project):
    seeded(project, playbook_data(300))
    run_inject(project)
    projection = project / ".claude" / "playbook.hook.json"
    header, _, output = projection.read_bytes().partition(b"\n")
    # A projection whose output differs but whose header still matches is what the hook prints: the fast
    # path copies bytes and never renders.
    projection.write_bytes(header + b"\n" + output.replace(b"lesson", b"LESSON"))
    assert b"LESSON" in run_inject(project).stdout


@pytest.mark.slow
def test_show_injected_and_left_out_refuse_at_and_each_other(project):
    seeded(project, playbook_data(2))
    for args in (("--injected", "--left-out"), ("--injected", "--at", "1")):
        done = cli(project, "show", *args)
        assert done.returncode == 2 and done.stderr.startswith("playbook: ") and "Traceback" not in done.stderr
