"""The learning benchmark: its labelled sessions, its score, and the learner over them meeting every target."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from benchmarks.learning import run, scripted_model, which_case
from benchmarks.learning_labels import LABELS, Labels, load
from benchmarks.learning_score import LearningReport, Tracker, render
from playbook.learner.transcript import nothing_to_learn, read_transcript
from tests.fake_anthropic import FakeAnthropic, request_texts

LABELLED = load()


def transcript(name: str) -> Path:
    return LABELS.parent / f"{name}.jsonl"


def test_the_labels_cover_every_kind_of_session_and_each_names_a_recorded_transcript():
    kinds = [case.kind for case in LABELLED.cases]
    assert len(kinds) >= 20
    assert {kind: kinds.count(kind) >= 3 for kind in ("preference", "lesson", "repeat", "nothing", "commands")} == {
        "preference": True, "lesson": True, "repeat": True, "nothing": True, "commands": True}
    for case in LABELLED.cases:
        assert transcript(case.name).is_file(), case.name
        assert b'"version":"2.1.328"' in transcript(case.name).read_bytes()  # written by Claude Code itself
    # A repeated lesson comes after the session that taught it first.
    taught: set[str] = set()
    for case in LABELLED.cases:
        assert (case.kind == "repeat") == bool(set(case.teaches) & taught), case.name
        taught |= set(case.teaches)


def test_each_lesson_is_recognised_in_its_own_words_and_in_no_other_lessons():
    lessons = [*LABELLED.lessons, *LABELLED.false_lessons]
    for lesson in lessons:
        assert lesson.found_in(lesson.text), lesson.key
        assert [other.key for other in lessons if other is not lesson and lesson.found_in(other.text)] == []
    for case in LABELLED.cases:
        for key, words in case.wording.items():
            assert LABELLED.lesson(key).found_in(words), (case.name, key)


def test_the_skip_rule_skips_only_the_plugins_own_commands_and_keeps_every_session_with_a_lesson():
    """Item 5's rule, measured on the labelled transcripts: the sessions of only the plugin's slash commands (recorded
    from Claude Code with the plugin loaded) have nothing to learn; every session with a labelled lesson, the short
    preference-only ones included, and every other session the user asked something in, is learned."""
    for case in LABELLED.cases:
        reason = nothing_to_learn(read_transcript(transcript(case.name)))
        if case.kind == "commands":
            assert reason == "only the playbook's own slash commands", case.name
        else:
            assert reason is None, case.name


def test_the_scripted_model_answers_each_session_from_its_labels():
    case = next(case for case in LABELLED.cases if case.name == "repeat_pathlib")
    prompt = "You are the reflector ...\n[pref-001] helpful=0 harmful=0 :: Use pathlib instead of os.path\n\n" + \
        "".join(f"User: {prompt}\n\n" for prompt in case.prompts)
    assert which_case(LABELLED, prompt) == case
    respond = scripted_model(LABELLED)
    reflection = respond({"messages": [{"role": "user", "content": prompt}]}).text
    assert '"name": "pref-001", "tag": "helpful"' in reflection and "Session repeat_pathlib:" in reflection
    curation = respond({"messages": [{"role": "user", "content": "You are the curator\n" + reflection}]}).text
    assert case.wording["pathlib"] in curation and '"USER PREFERENCES"' in curation


def scored_badly() -> LearningReport:
    """The score of a learner that got everything wrong: a lesson missed, one from a session with nothing to learn,
    a false one, a lesson moved to a new id and held twice."""
    labels = Labels(lessons=LABELLED.lessons, false_lessons=LABELLED.false_lessons, cases=[
        case for case in LABELLED.cases if case.name in ("ctx_port", "nothing_hello", "ctx_discount", "ctx_handlers")])
    by_name = {case.name: case for case in labels.cases}
    tracker = Tracker(labels)
    port = "The dev server listens on port 8765"
    size = (100, 10)

    def cycle(name: str, before: dict[str, str], after: dict[str, str], calls: int = 2) -> None:
        tracker.cycle(by_name[name], before, after, status="completed", detail="", size=size, calls=calls, tokens=50,
                      cost=0.0)

    cycle("ctx_port", {}, {"ctx-001": port})
    cycle("nothing_hello", {"ctx-001": port}, {"ctx-001": port, "oth-001": "Say hi back"})
    rounding = "Totals have float rounding bugs"
    cycle("ctx_discount", {"ctx-001": port}, {"ctx-003": port + " (merged)", "mis-001": rounding})
    live = {"ctx-003": port + " (merged)", "ctx-004": "Port 8765, not 8000", "mis-001": rounding}
    cycle("ctx_handlers", {}, live)
    return tracker.report("scripted", "scripted", live, (120, 3000))


def test_the_score_counts_false_lessons_duplicates_id_changes_and_missing_lessons():
    report = scored_badly()
    assert report.missing == ["handlers", "discount_percent"]
    assert [line.split(":")[0] for line in report.false_lessons] == ["oth-001", "mis-001"]
    assert report.duplicates == ["port: ctx-003, ctx-004"]
    assert report.id_changes == ["port: ctx-001 -> ctx-003 (after ctx_discount)"]
    assert {target.what: target.met for target in report.targets} == {
        "labelled lessons captured": False, "false lessons": False, "duplicates left": False,
        "ids changed over the run": False, "sessions with a labelled lesson learned (cycle run, not skipped)": True,
        "model calls for sessions of only the plugin's commands": True}
    assert not report.all_met and "NOT met" in render(report)


def test_the_command_prints_the_table_and_its_targets_and_fails_when_one_is_not_met(monkeypatch, capsys):
    import benchmarks.learning

    report = scored_badly()
    monkeypatch.setattr(benchmarks.learning, "run", lambda mode, model=None, **kwargs: report)
    assert benchmarks.learning.main([]) == 1
    out = capsys.readouterr().out
    assert "session" in out and "sent tk" in out and "ctx_port" in out
    assert "false lessons" in out and "target 0    NOT met" in out and "oth-001: Say hi back" in out
    assert benchmarks.learning.main(["--model", "--json"]) == 1
    assert '"all_met":false' in capsys.readouterr().out


@pytest.mark.slow
def test_the_scripted_run_meets_every_target_and_asks_no_model_about_the_plugins_own_commands():
    asked: list[str] = []
    respond = scripted_model(LABELLED)

    def recording(body: dict) -> object:
        text = request_texts(body)
        if "You are the reflector" in text:
            case = which_case(LABELLED, text)
            asked.append(case.name if case else "?")
        return respond(body)

    before = dict(os.environ)
    report = run("scripted", responder=recording)
    assert dict(os.environ) == before
    assert [target.what for target in report.targets if not target.met] == [], render(report)
    assert asked == [case.name for case in LABELLED.cases if case.kind != "commands"]
    rows = {row.case: row for row in report.cycles}
    for case in LABELLED.cases:
        row = rows[case.name]
        if case.kind == "commands":
            assert (row.status, row.calls, row.tokens) == ("skipped", 0, 0)
        else:
            assert row.status == "completed" and row.calls == 2 and row.tokens > 0
            assert row.learned == case.teaches
        if case.kind in ("repeat", "nothing", "commands"):
            assert row.added == [], case.name  # a reworded lesson is absorbed: no new id
    assert len(report.lessons) == len(LABELLED.lessons) and report.key_points == len(report.lessons)
    assert 0 < report.injected_tokens <= report.injected_budget
    assert report.tokens_spent == sum(row.tokens for row in report.cycles)


@pytest.mark.slow
def test_model_mode_learns_through_the_backend_learning_uses(monkeypatch, tmp_path):
    """`--model` with an API key: the learner's own backend, here pointed at the fake (the table is the real one with
    a real key)."""
    labels = Labels(lessons=LABELLED.lessons, false_lessons=LABELLED.false_lessons, cases=[
        case for case in LABELLED.cases if case.name in ("pref_pathlib", "ctx_port", "cmd_show", "repeat_pathlib")])
    for name in list(os.environ):
        if name.startswith(("ANTHROPIC_", "AGENTIC_CONTEXT_", "PLAYBOOK_")):
            monkeypatch.delenv(name)
    user = tmp_path / "user-playbook"
    monkeypatch.setenv("PLAYBOOK_USER_DIR", str(user))
    with FakeAnthropic(scripted_model(labels)) as api:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-model-mode")
        report = run("model", "claude-test-model", labels=labels)
        assert len(api.message_requests()) == 6
    assert report.mode == "model" and report.model == "claude-test-model"
    assert report.all_met, render(report)
    assert not user.exists()  # the user's own playbooks are never written


@pytest.mark.slow
def test_model_mode_on_a_claude_code_login_leaves_nothing_in_claude_codes_directory(monkeypatch, tmp_path):
    """`--model` with no key: the reflector and curator run through the real Claude Code CLI on the user's login
    (here a stored login and the fake API), which needs Claude Code's own directory; the scratch sessions the
    learner reads from there are gone afterwards."""
    from tests.test_e2e_claude_code import CLAUDE
    from tests.test_learning_cli import login_env

    if CLAUDE is None:
        pytest.skip("Claude Code is not installed (npm install @anthropic-ai/claude-code)")
    labels = Labels(lessons=LABELLED.lessons, false_lessons=LABELLED.false_lessons, cases=[
        case for case in LABELLED.cases if case.name in ("pref_pathlib", "cmd_show", "repeat_pathlib")])
    home = tmp_path / "home"
    with FakeAnthropic(scripted_model(labels)) as api:
        for name in list(os.environ):
            if name.startswith(("ANTHROPIC_", "AGENTIC_CONTEXT_", "CLAUDE", "PLAYBOOK_")):
                monkeypatch.delenv(name)
        for name, value in login_env(home, api).items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("PLAYBOOK_CLAUDE", str(CLAUDE))
        report = run("model", labels=labels)
        assert len(api.message_requests()) == 4
    assert [(row.case, row.status, row.calls) for row in report.cycles] == [
        ("pref_pathlib", "completed", 2), ("cmd_show", "skipped", 0), ("repeat_pathlib", "completed", 2)]
    assert report.all_met, render(report)
    assert report.cost_usd > 0  # Claude Code's own figure for each call
    assert (home / ".claude" / ".credentials.json").exists()  # the login it ran on
    assert list((home / ".claude").glob("projects/*playbook-learning*")) == []
    assert not (home / ".claude" / "playbook").exists()  # nor the user-level playbook


@pytest.mark.slow
def test_a_model_that_fails_is_scored_as_lessons_not_learned():
    from tests.fake_anthropic import reply_error

    labels = Labels(lessons=LABELLED.lessons, false_lessons=LABELLED.false_lessons, cases=[
        case for case in LABELLED.cases if case.name in ("pref_pathlib", "ctx_port", "cmd_show")])
    report = run("scripted", labels=labels, responder=lambda body: reply_error(500))
    assert [(row.case, row.status) for row in report.cycles] == [
        ("pref_pathlib", "given up"), ("cmd_show", "skipped"), ("ctx_port", "given up")]
    assert report.missing == ["pathlib", "port"] and not report.all_met
    assert {target.what for target in report.targets if not target.met} == {
        "labelled lessons captured", "sessions with a labelled lesson learned (cycle run, not skipped)"}
