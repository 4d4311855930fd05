"""The `playbook` command: show, at, log, history, diff, revert, verify, import, stats, rebuild.

Logs are built through the real write path (PlaybookRepository.append with the commands
the learner and the importer use), then the commands run in-process through
`playbook.commands.cli.main(argv)` (and a few as real subprocesses).

Golden files (tests/golden/*.txt) hold human output. Transaction ids and commit times
differ on every run, so `normalise` rewrites them before comparing: each distinct
16-hex transaction id becomes `<tx1>___________` (same width, numbered in order of first
appearance) and each `2026-11-22 02:29:00` time becomes `YYYY-MM-DD hh:mm:ss` (same
width). Both are fixed-width in the real output, so every truncation point and column
stays where it was. The project's temporary path becomes `<project>`.
Set UPDATE_GOLDEN=1 to rewrite the files after an intended change.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

import projections.revert
import eventlog.store
import eventlog.storage
from eventlog.decide import ApplyOperations, CompleteLearning, Evaluate, FailLearning, ImportLegacy, Prune
from eventlog.decide import ReplaceContent, RequestLearning
from eventlog.events import Cause
from playbook.commands.cli import main
from projections.repository import PlaybookRepository
from projections.snapshot import playbook_dict
from projections.timeline import Timeline

GOLDEN = Path(__file__).parent / "golden"
ROOT = Path(__file__).resolve().parent.parent
MODEL = "claude-sonnet-4-5"


# --- building logs --------------------------------------------------------------------------------------


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(tmp_path))
    monkeypatch.delenv("NO_COLOR", raising=False)
    return tmp_path


@pytest.fixture
def repo(project) -> PlaybookRepository:
    return PlaybookRepository(project / ".claude")


def hook(session: str, analysis: str | None = None, reasoning: str | None = None, name: str = "SessionEnd") -> Cause:
    return Cause(source=f"hook:{name}", session=session, model=MODEL, analysis=analysis, reasoning=reasoning)


def build_demo(repo: PlaybookRepository) -> dict[str, str]:
    """A small history touching every kind of change; returns tx ids by label."""
    tx: dict[str, str] = {}

    def append(label, commands, cause):
        committed = repo.append(commands, cause)
        assert committed is not None
        tx[label] = committed.commit.tx

    append("import", [ImportLegacy(data={"version": "1.0", "last_updated": "2026-01-15T10:00:00", "key_points": [
        "Run the tests before committing", {"name": "kpt_002", "text": "Prefer small commits", "score": 2}]},
        path="old/playbook.json")], Cause(source="import"))
    append("request", [RequestLearning(request="req-1", hook="SessionEnd", transcript="/t/s-1.jsonl", session="s-1")],
           Cause(source="hook:SessionEnd", session="s-1"))
    append("s-1", [
        Evaluate([{"name": "kpt_001", "rating": "helpful", "rationale": "the tests caught a typo"}]),
        ApplyOperations([
            {"type": "ADD", "section": "patterns & approaches", "text": "Use pathlib for file paths"},
            {"type": "ADD", "section": "USER PREFERENCES", "text": "Answer in British English"},
            {"type": "ADD", "section": "MISTAKES TO AVOID", "text": "Do not mock the store in tests"}]),
        CompleteLearning(request="req-1", transcript="/t/s-1.jsonl", from_line=0, through_line=12, cited=["kpt_001"]),
    ], hook("s-1", analysis="The user asked for paths\nto be handled with pathlib; kpt_001 was followed and the "
                            "tests caught a typo before the commit.",
            reasoning="Three new lessons worth keeping: pathlib, British English, real stores in tests."))
    append("s-2", [
        Evaluate([{"name": "pat-001", "rating": "helpful", "rationale": "followed it"},
                  {"name": "mis-001", "rating": "harmful", "rationale": "wrong here"}]),
        ApplyOperations([{"type": "UPDATE", "target_id": "pat-001", "text": "Use pathlib, never os.path"},
                         {"type": "DELETE", "target_id": "nope-9"}]),
    ], hook("s-2", analysis="pat-001 helped.", reasoning="Sharpen pat-001."))
    append("s-3", [
        ApplyOperations([{"type": "ADD", "section": "PATTERNS & APPROACHES", "text": "Use pathlib.Path.read_text"}]),
        ApplyOperations([{"type": "MERGE", "source_ids": ["pat-001", "pat-002"],
                          "merged_text": "Use pathlib (Path.read_text, never os.path)"}]),
    ], hook("s-3", reasoning="Two pathlib points say the same.", name="PreCompact"))
    append("s-4", [
        Evaluate([{"name": "mis-001", "rating": "harmful"}]),
        ApplyOperations([{"type": "DELETE", "target_id": "pref-001", "reason": "the user writes US English"},
                         {"type": "UPDATE", "target_id": "kpt_001", "text": "Run the full test suite before committing"}]),
    ], hook("s-4"))
    append("s-5", [Evaluate([{"name": "mis-001", "rating": "harmful"}]), Prune()], hook("s-5"))
    base = repo.current()[0]
    edited = playbook_dict(base)
    moved = edited["sections"]["OTHERS"].pop(1)
    moved["helpful"] = 3
    edited["sections"]["PROJECT CONTEXT"].append(moved)
    edited["version"] = "1.1"
    append("save", [ReplaceContent(target=edited, origin="save", base=base)], Cause(source="save_playbook"))
    append("request-2", [RequestLearning(request="req-2", hook="SubagentStop", transcript="/t/s-6.jsonl",
                                         session="s-6")], Cause(source="hook:SubagentStop", session="s-6"))
    append("s-6", [FailLearning(request="req-2", error="model unreachable after 3 tries", transcript="/t/s-6.jsonl")],
           Cause(source="hook:SubagentStop", session="s-6", model=MODEL))
    return tx


@pytest.fixture
def demo(repo) -> dict[str, str]:
    return build_demo(repo)


def log_lines(repo: PlaybookRepository) -> int:
    return len(repo.store.path.read_bytes().splitlines())


# --- running the command --------------------------------------------------------------------------------


class Run:
    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err

    def json(self):
        return json.loads(self.out)


@pytest.fixture
def run(project, capsys):
    def call(*argv: str) -> Run:
        capsys.readouterr()
        code = main(["--project", str(project), *argv])
        captured = capsys.readouterr()
        return Run(code, captured.out, captured.err)
    return call


def normalise(text: str, project: Path) -> str:
    text = text.replace(str(project), "<project>")
    text = re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", "YYYY-MM-DD hh:mm:ss", text)
    seen: dict[str, str] = {}

    def tx(match: re.Match) -> str:
        return seen.setdefault(match.group(), f"<tx{len(seen) + 1}>".ljust(16, "_"))

    return re.sub(r"\b[0-9a-f]{16}\b", tx, text)


def check_golden(name: str, text: str, project: Path) -> None:
    path = GOLDEN / name
    text = normalise(text, project)
    if os.environ.get("UPDATE_GOLDEN"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert text == path.read_text(), f"{name} differs (UPDATE_GOLDEN=1 rewrites it after an intended change)"


def assert_fits(text: str, width: int = 80) -> None:
    for line in text.splitlines():
        assert len(line) <= width, line


# --- golden human output --------------------------------------------------------------------------------


@pytest.mark.slow
def test_log_golden(run, demo, project):
    result = run("log")
    assert result.code == 0 and result.err == ""
    assert_fits(result.out)
    check_golden("log.txt", result.out, project)


def test_history_with_a_merge_golden(run, demo, project):
    result = run("history", "pat-003")
    assert result.code == 0
    assert_fits(result.out)
    check_golden("history_merge.txt", result.out, project)
    lines = result.out.splitlines()
    # the sources' items come first, marked with their own names; the merge closes the history
    assert lines[-1].lstrip().startswith("pat-003  merged from pat-001, pat-002")
    assert [line.split()[0] for line in lines if line.startswith("  ")] == [
        "pat-001", "pat-001", "pat-001", "pat-001", "pat-002", "pat-002", "pat-003"]


def test_diff_golden(run, demo, project):
    result = run("diff", "s-2", demo["save"])
    assert result.code == 0
    assert_fits(result.out)
    check_golden("diff.txt", result.out, project)
    for heading in ("added (1)", "removed (3)", "re-worded (1)", "moved (1)", "counters (1)", "version 1.0 -> 1.1"):
        assert heading in result.out


def test_revert_dry_run_golden(run, demo, repo, project):
    before = repo.store.path.read_bytes()
    result = run("revert", demo["s-3"], "--dry-run")
    assert result.code == 0
    check_golden("revert_dry_run.txt", result.out, project)
    assert repo.store.path.read_bytes() == before


def test_verify_with_a_problem_golden(run, demo, repo, project):
    data = repo.store.path.read_bytes()
    repo.store.path.write_bytes(data.replace(b"British", b"Irish!!", 1))
    result = run("verify")
    assert result.code == 1
    check_golden("verify_problem.txt", result.out, project)
    first = result.out.splitlines()[0]
    assert re.match(r"^.+playbook\.events\.jsonl:\d+: hash does not match .* \(byte \d+\)$", first)


# --- show / at ------------------------------------------------------------------------------------------


def test_show_prints_the_injected_lines_and_totals(run, demo):
    result = run("show")
    assert result.code == 0
    assert "## PATTERNS & APPROACHES\n[pat-003] helpful=1 harmful=0 :: Use pathlib (Path.read_text, never os.path)" \
        in result.out
    assert re.search(r"^all\s+3$", result.out, re.M)
    assert re.search(r"^PROJECT CONTEXT\s+1$", result.out, re.M)
    assert "log at seq " in result.out and "last updated " in result.out
    doc = run("show", "--json").json()
    assert doc["total"] == 3 and doc["counts"]["PROJECT CONTEXT"] == 1 and doc["version"] == "1.1"
    assert doc["tx"] == demo["s-6"] and doc["at"] is None
    assert doc["sections"]["PROJECT CONTEXT"] == [{"name": "kpt_002", "text": "Prefer small commits",
                                                   "helpful": 3, "harmful": 0}]


def names(doc: dict) -> list[str]:
    return [e["name"] for entries in doc["sections"].values() for e in entries]


@pytest.mark.slow
def test_show_at_seq_transaction_prefix_session_and_before(run, demo, repo):
    after_s2 = run("show", "--at", demo["s-2"], "--json").json()
    assert sorted(names(after_s2)) == ["kpt_001", "kpt_002", "mis-001", "pat-001", "pref-001"]
    assert after_s2["tx"] == demo["s-2"]
    assert run("show", "--at", demo["s-2"][:8], "--json").json() == {**after_s2, "at": demo["s-2"][:8]}
    assert run("show", "--at", "s-2", "--json").json()["sections"] == after_s2["sections"]
    assert run("show", "--at", str(after_s2["seq"]), "--json").json()["sections"] == after_s2["sections"]
    assert run("show", "--at", str(after_s2["seq"] + 1), "--json").json()["sections"] == after_s2["sections"]
    before_s3 = run("show", "--at", "s-3", "--before", "--json").json()
    assert before_s3["sections"] == after_s2["sections"]
    assert run("show", "--at", "s-3^", "--json").json()["sections"] == after_s2["sections"]
    # `at` is `show --at`
    assert run("at", "s-3", "--before", "--json").json()["sections"] == after_s2["sections"]
    human = run("at", "s-2")
    assert human.code == 0 and human.out == run("show", "--at", "s-2").out
    assert f"after transaction {demo['s-2']}" in human.out
    empty = run("show", "--at", "0", "--json").json()
    assert empty["total"] == 0 and empty["seq"] == 0


@pytest.mark.slow
def test_show_at_relative_and_iso_times(run, repo, monkeypatch):
    now = datetime.now(timezone.utc)
    clock = iter([now - timedelta(hours=5), now - timedelta(hours=3), now - timedelta(hours=1)])
    monkeypatch.setattr(eventlog.storage, "utc_now", lambda: next(clock).isoformat(timespec="microseconds"))
    for text in ("five hours ago", "three hours ago", "one hour ago"):
        repo.append([ApplyOperations([{"type": "ADD", "text": text}])], Cause(source="test"))

    def texts(*argv):
        doc = run("show", *argv, "--json").json()
        return [e["text"] for e in doc["sections"]["OTHERS"]]

    assert texts("--at", "4h") == ["five hours ago"]
    assert texts("--at", "2h") == ["five hours ago", "three hours ago"]
    assert texts("--at", "30m") == ["five hours ago", "three hours ago", "one hour ago"]
    assert texts("--at", "1d") == []
    assert texts("--at", (now - timedelta(hours=2)).isoformat()) == ["five hours ago", "three hours ago"]
    logged = run("log", "--since", "4h", "--json").json()["transactions"]
    assert [t["events"][0]["text"] for t in logged] == ["one hour ago", "three hours ago"]
    logged = run("log", "--until", "2h", "--json").json()["transactions"]
    assert [t["events"][0]["text"] for t in logged] == ["three hours ago", "five hours ago"]


def test_unknown_points_are_one_line_errors(run, demo):
    for argv in (["at", "not-a-thing"], ["show", "--at", "zzzzzzzz"], ["diff", "s-1", "s-99"]):
        result = run(*argv)
        assert result.code == 1 and result.out == ""
        assert result.err.count("\n") == 1 and result.err.startswith("playbook: "), result.err


def assert_one_line_error(result: Run, code: int = 1) -> None:
    assert result.code == code and result.out == "", (result.code, result.out)
    assert result.err.count("\n") == 1 and result.err.startswith("playbook: "), result.err
    assert "Traceback" not in result.err


@pytest.mark.slow
@pytest.mark.parametrize("argv", [
    ["at", "999999999d"], ["at", "99999999999w"], ["at", "9" * 20 + "s"], ["show", "--at", "999999999d"],
    ["diff", "999999999d"], ["diff", "0", "99999999999w"],
    ["log", "--since", "999999999d"], ["log", "--until", "99999999999w"],
], ids=" ".join)
def test_a_time_ago_before_the_year_1_is_a_one_line_error(run, demo, argv):
    result = run(*argv)
    assert_one_line_error(result)
    assert "is too long ago: it reaches before the year 1" in result.err


@pytest.mark.slow
@pytest.mark.parametrize("argv", [
    ["at", "³"], ["show", "--at", "²"], ["at", "³^"], ["diff", "³"], ["diff", "0", "²²²²²²"],
    ["log", "--since", "³"], ["log", "--until", "³³³³³³"],
], ids=" ".join)
def test_a_digit_int_does_not_read_is_an_unknown_when(run, demo, argv):
    # "³".isdigit() is true but int("³") fails: a seq is what isdecimal (and int) accept
    result = run(*argv)
    assert_one_line_error(result)
    assert "is neither a time, a duration ago, a seq, a transaction nor a session" in result.err


def test_a_decimal_digit_of_another_script_is_a_seq(run, demo):
    # "٣" (ARABIC-INDIC DIGIT THREE) is decimal: int() reads it, so it names seq 3 like "3"
    arabic, ascii = run("at", "٣", "--json").json(), run("at", "3", "--json").json()
    assert (arabic.pop("at"), ascii.pop("at")) == ("٣", "3")
    assert arabic == ascii and arabic["seq"] <= 3


def test_a_stray_file_in_the_checkpoint_directory_is_ignored(run, demo, repo):
    expected = [run("at", "3", "--json").out, run("diff", "0", "3", "--json").out]
    directory = repo.claude_dir / "playbook.checkpoints"
    directory.mkdir(exist_ok=True)
    for name in ("².msgpack", "³³.msgpack", "x.msgpack", "2.tmp.msgpack", "2.msgpack.tmp"):
        (directory / name).write_bytes(b"not a checkpoint")
    results = [run("at", "3", "--json"), run("diff", "0", "3", "--json"), run("show", "--at", "²")]
    assert [r.code for r in results[:2]] == [0, 0] and [r.err for r in results[:2]] == ["", ""]
    assert [r.out for r in results[:2]] == expected
    assert_one_line_error(results[2])


def test_a_checkpoint_whose_name_is_not_its_seq_is_not_used(run, demo, repo):
    from projections import checkpoints

    expected = run("at", "3", "--json").out
    timeline = Timeline(repo)
    end = timeline.refs[-1].end
    directory = repo.claude_dir / "playbook.checkpoints"
    checkpoints.save(directory, timeline.state_at(end), end)
    (directory / f"{end.seq}.msgpack").rename(directory / "3.msgpack")  # the state at the end, named seq 3
    result = run("at", "3", "--json")
    assert result.code == 0 and result.out == expected


def test_history_of_a_name_that_is_not_utf8_is_an_unknown_entry(run, demo):
    # a byte that is not UTF-8 in argv reaches Python as a lone surrogate (surrogateescape)
    for argv in (["history", "\udcff"], ["history", "\udcff", "--json"], ["history", "pat-\udcff01", "-v"]):
        result = run(*argv)
        assert_one_line_error(result)
        assert result.err.startswith("playbook: no entry '") and "\\udcff" in result.err


def test_log_entry_that_is_not_utf8_matches_nothing(run, demo):
    result = run("log", "--entry", "\udcff")
    assert (result.code, result.out, result.err) == (0, "(no transactions match)\n", "")
    result = run("log", "--entry", "\udcff", "--type", "skipped", "--json", "-n", "0")
    assert (result.code, result.json(), result.err) == (0, {"transactions": []}, "")


# --- log ------------------------------------------------------------------------------------------------


def test_log_json_fields(run, demo):
    doc = run("log", "--json").json()
    transactions = doc["transactions"]
    assert [t["tx"] for t in transactions] == [demo[k] for k in (
        "s-6", "request-2", "save", "s-5", "s-4", "s-3", "s-2", "s-1", "request", "import")]
    s1 = transactions[-3]
    assert set(s1) == {"tx", "seq", "first_seq", "at", "source", "session", "model", "analysis", "reasoning", "note",
                       "events_total", "events"}
    assert s1["source"] == "hook:SessionEnd" and s1["session"] == "s-1" and s1["model"] == MODEL
    assert s1["analysis"].startswith("The user asked for paths\nto be handled") and s1["note"] is None
    assert s1["reasoning"].startswith("Three new lessons") and s1["events_total"] == 5 == len(s1["events"])
    assert s1["seq"] == s1["first_seq"] + 5
    rated, added = s1["events"][0], s1["events"][1]
    assert rated == {"type": "KeyPointEvaluated", "seq": s1["first_seq"], "tx": s1["tx"], "at": s1["at"],
                     "name": "kpt_001", "rating": "helpful", "helpful": 1, "harmful": 0,
                     "rationale": "the tests caught a typo"}
    assert added["type"] == "KeyPointAdded" and added["name"] == "pat-001"
    assert added["section"] == "PATTERNS & APPROACHES" and added["requested_section"] is None  # defaults present
    assert s1["events"][-1]["type"] == "LearningCompleted" and s1["events"][-1]["cited"] == ["kpt_001"]
    skipped = transactions[-4]["events"][-1]
    assert skipped["type"] == "OperationSkipped" and skipped["reason"] == "unknown_id"
    assert skipped["operation"] == {"type": "DELETE", "target_id": "nope-9"}


@pytest.mark.slow
def test_log_filters(run, demo):
    def txs(*argv):
        return [t["tx"] for t in run("log", *argv, "--json").json()["transactions"]]

    assert txs("-n", "2") == [demo["s-6"], demo["request-2"]]
    assert len(txs("-n", "0")) == 10
    assert txs("--session", "s-2") == [demo["s-2"]]
    assert txs("--entry", "pat-001") == [demo["s-3"], demo["s-2"], demo["s-1"]]
    assert txs("--entry", "kpt_001") == [demo["s-4"], demo["s-1"], demo["import"]]
    for spelling in ("deleted", "KeyPointDeleted", "keypointdeleted", "DELETED"):
        assert txs("--type", spelling) == [demo["s-4"]]
    assert txs("--type", "pruned,merged") == [demo["s-5"], demo["s-3"]]
    assert txs("--type", "skipped") == [demo["s-2"]]
    assert txs("--type", "learning") == [demo["s-6"], demo["request-2"], demo["s-1"], demo["request"]]
    assert txs("--type", "failed", "--type", "moved") == [demo["s-6"], demo["save"]]
    assert txs("--since", "s-4", "--until", demo["save"]) == [demo["save"], demo["s-5"], demo["s-4"]]
    assert txs("--since", "s-4", "-n", "1") == [demo["s-6"]]
    # only the matching events are listed, with how many others the transaction holds
    doc = run("log", "--type", "evaluated", "--session", "s-2", "--json").json()["transactions"][0]
    assert [e["type"] for e in doc["events"]] == ["KeyPointEvaluated", "KeyPointEvaluated"]
    assert doc["events_total"] == 4
    human = run("log", "--type", "evaluated", "--session", "s-2")
    assert "… and 2 other events" in human.out
    assert run("log", "--session", "nobody").out == "(no transactions match)\n"


def test_log_human_shortens_and_verbose_shows_everything(run, demo):
    short = run("log", "--session", "s-1").out
    assert_fits(short)
    assert "analysis  The user asked for paths to be handled with pathlib; kpt_001" in short
    assert "…" in short
    full = run("log", "--session", "s-1", "-v").out
    assert_fits(full)
    assert "a typo before the commit." in full and "real stores\n          in tests." in full
    assert "analysis  The user asked for paths\n          to be handled" in full


def test_log_type_unknown_is_a_usage_error(run, demo):
    result = run("log", "--type", "bogus")
    assert result.code == 2 and "unknown event type 'bogus'" in result.err and result.out == ""


def test_log_of_an_empty_project(run):
    assert run("log").out == "(the log is empty)\n"
    assert run("log", "--json").json() == {"transactions": []}


# --- history --------------------------------------------------------------------------------------------


def test_history_json_and_kinds(run, demo):
    doc = run("history", "kpt_001", "--json").json()
    assert doc["entry"] == "kpt_001"
    assert doc["now"] == {"name": "kpt_001", "section": "OTHERS", "text": "Run the full test suite before committing",
                          "helpful": 1, "harmful": 0}
    assert [i["kind"] for i in doc["items"]] == ["imported", "rated", "cited", "reworded"]
    cited = doc["items"][2]
    assert cited["session"] == "s-1" and cited["event"]["type"] == "LearningCompleted" and cited["tx"] == demo["s-1"]
    assert doc["items"][1]["after"] == {"name": "kpt_001", "text": "Run the tests before committing",
                                        "helpful": 1, "harmful": 0}
    human = run("history", "kpt_001").out
    assert "cited by session s-1" in human and 're-worded "Run the tests before committing" -> "Run the full' in human
    gone = run("history", "mis-001", "--json").json()
    assert gone["now"] is None and gone["items"][-1]["kind"] == "pruned" and gone["items"][-1]["after"] is None
    moved = run("history", "kpt_002").out
    assert "moved OTHERS -> PROJECT CONTEXT" in moved and "counters set 2/0 -> 3/0" in moved
    assert "skipped operation aimed at it: unknown_id" in run("history", "nope-9").out


def test_the_first_line_of_a_history_says_where_the_lesson_lives_now(run, demo):
    def first(name: str) -> str:
        """The history's first line, with the lines it wraps onto."""
        result = run("history", name)
        assert result.code == 0
        lines = result.out.splitlines()
        now = next(at for at, line in enumerate(lines) if line.startswith("now"))
        return " ".join([lines[0], *(line.strip() for line in lines[1:now])])

    assert first("kpt_001") == "history of kpt_001: in the playbook now"
    assert first("pat-001") == "history of pat-001: lives on as pat-003 (merged into pat-003)"
    assert first("pref-001").startswith(f"history of pref-001: deleted (the user writes US English) by "
                                        f"hook:SessionEnd in tx {demo['s-4']}, 20")
    assert first("mis-001").startswith(f"history of mis-001: pruned (harmful >= 3 and harmful > helpful) by "
                                       f"hook:SessionEnd in tx {demo['s-5']}, 20")
    assert first("nope-9") == "history of nope-9: never in the playbook, only named"
    lives = run("history", "pat-002", "--json").json()["lives"]
    assert (lives["live"], lives["merged_into"], lives["removed"]) == ("pat-003", ["pat-003"], None)
    gone = run("history", "pref-001", "--json").json()["lives"]
    assert gone["live"] is None and gone["removed"]["type"] == "KeyPointDeleted" and gone["tx"] == demo["s-4"]


def test_history_of_an_unknown_entry(run, demo):
    result = run("history", "pat-999")
    assert result.code == 1 and result.out == ""
    assert result.err == "playbook: no entry 'pat-999' in the log\n"


# --- diff -----------------------------------------------------------------------------------------------


def test_diff_json_is_the_diff_struct(run, demo):
    doc = run("diff", "s-2", demo["save"], "--json").json()
    assert set(doc) == {"added", "removed", "reworded", "moved", "counters", "order", "version", "from", "to"}
    assert [c["name"] for c in doc["added"]] == ["pat-003"]
    assert sorted(c["name"] for c in doc["removed"]) == ["mis-001", "pat-001", "pref-001"]
    assert doc["reworded"] == [{"name": "kpt_001", "section": "OTHERS", "text": "Run the full test suite before committing",
                                "helpful": 1, "harmful": 0, "before_section": "OTHERS",
                                "before_text": "Run the tests before committing", "before_helpful": 1,
                                "before_harmful": 0}]
    assert doc["moved"][0]["name"] == "kpt_002" and doc["moved"][0]["before_section"] == "OTHERS"
    assert doc["moved"][0]["section"] == "PROJECT CONTEXT"
    assert [(c["name"], c["before_helpful"], c["helpful"]) for c in doc["counters"]] == [("kpt_002", 2, 3)]
    assert doc["version"] == ["1.0", "1.1"]
    assert doc["from"]["tx"] == demo["s-2"] and doc["to"]["tx"] == demo["save"]
    same = run("diff", "s-6", "--json").json()  # B defaults to the end of the log
    assert not any(same[k] for k in ("added", "removed", "reworded", "moved", "counters")) and same["version"] is None
    assert run("diff", "s-6").out.endswith("no differences\n")


# --- revert ---------------------------------------------------------------------------------------------


def content(repo: PlaybookRepository):
    state = repo.current()[0]
    return state.version, {s: [(kp.name, kp.text, kp.helpful, kp.harmful) for kp in e.values()]
                           for s, e in state.sections.items()}


def test_revert_then_revert_of_the_revert_restores(run, demo, repo):
    original = content(repo)
    lines = log_lines(repo)
    result = run("revert", demo["s-6"])  # a transaction that changed nothing in the playbook
    assert result.code == 0 and result.out.startswith("nothing to revert") and log_lines(repo) == lines
    result = run("revert", demo["save"], "--json")
    doc = result.json()
    assert result.code == 0 and doc["applied"] and doc["transactions"] == [demo["save"]] and doc["conflicts"] == {}
    assert {e["type"] for e in doc["events"]} == {"CountersSet", "KeyPointMoved", "VersionSet"}
    reverted = content(repo)
    assert reverted != original and reverted[0] == "1.0"
    assert ("kpt_002", "Prefer small commits", 2, 0) in reverted[1]["OTHERS"]
    newest = run("log", "-n", "1", "--json").json()["transactions"][0]
    assert newest["tx"] == doc["tx"] and newest["source"] == "revert" and newest["note"] == f"revert of {demo['save']}"
    back = run("revert", doc["tx"])
    assert back.code == 0 and back.out.startswith(f"reverted 1 transaction: {doc['tx']}\nas new transaction ")
    assert content(repo) == original
    assert run("verify").code == 0


def test_revert_of_a_session_with_a_merge(run, demo, repo):
    # s-3 added pat-002 and merged pat-001 + pat-002 into pat-003; nothing touched them later
    result = run("revert", "s-3")
    assert result.code == 0, result.err
    state = repo.current()[0]
    assert state.get("pat-003") is None
    assert state.get("pat-001").text == "Use pathlib, never os.path" and state.get("pat-002") is None
    assert state.get("pat-001").helpful == 1


@pytest.mark.slow
def test_revert_refused_on_conflict_then_forced(run, demo, repo):
    lines = log_lines(repo)
    before = repo.store.path.read_bytes()
    refused = run("revert", "s-2")
    assert refused.code == 1 and refused.out == ""
    assert refused.err.startswith("playbook: cannot revert s-2: later transactions changed the same entries:")
    assert f"mis-001  changed later by {demo['s-4']}, {demo['s-5']}" in refused.err
    assert f"pat-001  changed later by {demo['s-3']}" in refused.err
    assert "--force" in refused.err and "Traceback" not in refused.err
    assert repo.store.path.read_bytes() == before
    dry = run("revert", "s-2", "--dry-run")
    assert dry.code == 1 and log_lines(repo) == lines
    # s-4 deleted pref-001 and re-worded kpt_001 (both untouched since) and rated mis-001 (pruned later by s-5)
    refused = run("revert", "s-4", "--json")
    assert refused.code == 1 and refused.json()["conflicts"] == {"mis-001": [demo["s-5"]]}
    assert log_lines(repo) == lines
    forced = run("revert", "s-4", "--force")
    assert forced.code == 0, forced.err
    assert "left as they are (changed by later transactions):" in forced.out
    assert f"mis-001  changed later by {demo['s-5']}" in forced.out
    state = repo.current()[0]
    assert state.get("pref-001").text == "Answer in British English"
    assert state.get("kpt_001").text == "Run the tests before committing"
    assert state.get("mis-001") is None  # left as it is now: pruned
    assert log_lines(repo) > lines


def test_a_transaction_written_while_a_revert_is_planned_stays(run, repo, monkeypatch):
    first = repo.append([ApplyOperations([{"type": "ADD", "text": "first"}])], Cause(source="test"))
    plan_revert = projections.revert.plan_revert

    def racing(timeline, target, force=False):
        assert timeline.refs  # the commit index is read; then another writer appends
        repo.append([ApplyOperations([{"type": "ADD", "text": "written meanwhile"}])], Cause(source="other"))
        return plan_revert(timeline, target, force)

    monkeypatch.setattr(projections.revert, "plan_revert", racing)
    result = run("revert", first.commit.tx)
    assert result.code == 0, result.err
    assert [kp.text for _, kp in repo.current()[0].entries()] == ["written meanwhile"]


def test_a_transaction_prefix_shared_by_two_transactions_is_refused(run, repo, monkeypatch):
    ids = iter(["abcdef01" + "0" * 24, "12345678" + "0" * 24, "abcdef02" + "0" * 24])
    monkeypatch.setattr(eventlog.storage.uuid, "uuid4", lambda: uuid.UUID(next(ids)))
    for text in ("one", "two", "three"):
        repo.append([ApplyOperations([{"type": "ADD", "text": text}])], Cause(source="test"))
    lines = log_lines(repo)
    for argv in (["revert", "abcdef"], ["at", "abcdef"], ["log", "--since", "abcdef"]):
        result = run(*argv)
        assert result.code == 1 and result.err == ("playbook: 'abcdef' is ambiguous: it begins transactions "
                                                   "abcdef0100000000, abcdef0200000000\n")
    assert log_lines(repo) == lines
    assert run("at", "abcdef01", "--json").json()["tx"] == "abcdef0100000000"
    # all digits: a seq number while the log reaches it, with a note when it also begins a transaction;
    # past the end of the log it can only be the transaction it begins
    result = run("at", "000004", "--json")
    assert result.code == 0 and result.json()["seq"] == 4 and result.err == ""
    result = run("at", "123456", "--json")
    assert result.code == 0 and result.json()["tx"] == "1234567800000000" and result.err == ""
    ids = iter(["00000600" + "0" * 24])
    repo.append([ApplyOperations([{"type": "ADD", "text": "four"}])], Cause(source="test"))
    result = run("at", "000006", "--json")
    assert result.code == 0 and result.json()["seq"] == 6
    assert result.err.startswith("playbook: note: 000006 is read as a seq number; it also begins transaction(s) "
                                 "0000060000000000")
    assert run("revert", "123456", "--dry-run").out.startswith("would revert 1 transaction: 1234567800000000")


def test_before_without_at_is_a_usage_error(run):
    result = run("show", "--before")
    assert result.code == 2 and result.err == "playbook: --before goes with --at WHEN\n"


def test_revert_of_an_unknown_target(run, demo, repo):
    result = run("revert", "no-such-session")
    assert result.code == 1 and result.err == "playbook: no transaction or session 'no-such-session' in the log\n"


# --- import ---------------------------------------------------------------------------------------------


def write_json(path: Path, data) -> Path:
    path.write_text(json.dumps(data))
    return path


def test_import_flat_then_sections(run, repo, tmp_path):
    flat = write_json(tmp_path / "flat.json", {"version": "1.0", "last_updated": "2026-01-15T10:00:00", "key_points": [
        "bare string", {"name": "kpt_002", "text": "no score"}, {"name": "kpt_003", "text": "scored", "score": -2},
        {"text": ""}]})
    result = run("import", str(flat))
    assert result.code == 0, result.err
    assert result.out.startswith(f"imported 3 entries from {flat}\nformat flat; transaction ")
    assert "empty_text" in result.out
    state = repo.current()[0]
    assert [kp.name for kp in state.sections["OTHERS"].values()] == ["kpt_001", "kpt_002", "kpt_003"]
    assert state.last_updated == "2026-01-15T10:00:00"  # genesis: the file's own time
    sections = write_json(tmp_path / "sections.json", {"version": "1.0", "sections": {
        "patterns & approaches": [{"name": "pat-001", "text": "keep functions small", "helpful": 2, "harmful": 1}],
        "MISTAKES TO AVOID": ["never force-push main"],
        "OTHERS": [{"name": "kpt_002", "text": "a different entry, same name"}]}})
    doc = run("import", str(sections), "--json").json()
    assert doc["file_format"] == "sections" and doc["entries"] == 3 and doc["genesis"] is False
    assert doc["path"] == str(sections)
    renamed = [e for e in doc["imported"] if e["original_name"] == "kpt_002"]
    assert len(renamed) == 1 and renamed[0]["name"] != "kpt_002"  # a live log keeps names unique
    state = repo.current()[0]
    assert state.get("pat-001").helpful == 2 and state.get("kpt_002").text == "no score"
    assert len(state.where) == 6
    logged = run("log", "-n", "1", "--json").json()["transactions"][0]
    assert logged["source"] == "import" and logged["tx"] == doc["tx"]


def test_import_of_a_file_that_is_not_json(run, repo, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    result = run("import", str(bad))
    assert result.code == 1 and result.out == ""
    assert result.err.startswith(f"playbook: {bad} is not JSON") and result.err.count("\n") == 1
    assert not repo.store.exists()
    missing = run("import", str(tmp_path / "missing.json"))
    assert missing.code == 1 and "cannot read" in missing.err and not repo.store.exists()


# --- verify / stats / rebuild -------------------------------------------------------------------------------


def test_verify_ok_and_json(run, demo, repo):
    result = run("verify")
    assert result.code == 0 and result.out.startswith("OK  10 transactions, ")
    doc = run("verify", "--json").json()
    assert doc["ok"] is True and doc["problems"] == [] and doc["transactions"] == 10
    assert doc["log"] == str(repo.store.path) and doc["snapshot"] == str(repo.snapshot_path)
    # a snapshot edited by hand is a problem of the snapshot file, with its line
    text = repo.snapshot_path.read_text().replace("Prefer small commits", "Prefer tiny commits")
    repo.snapshot_path.write_text(text)
    result = run("verify", "--json")
    doc = result.json()
    assert result.code == 1 and doc["ok"] is False
    assert doc["problems"][0]["file"] == str(repo.snapshot_path) and doc["problems"][0]["line"] > 1
    human = run("verify")
    assert human.code == 1
    assert human.out.splitlines()[0] == f"{repo.snapshot_path}:{doc['problems'][0]['line']}: " \
                                        "edited by hand: its content does not match its digest"


def test_verify_of_a_corrupt_log_json(run, demo, repo):
    data = repo.store.path.read_bytes()
    repo.store.path.write_bytes(data.replace(b"British", b"Irish!!", 1))
    result = run("verify", "--json")
    doc = result.json()
    assert result.code == 1 and doc["ok"] is False and len(doc["problems"]) == 1
    problem = doc["problems"][0]
    assert problem["file"] == str(repo.store.path) and problem["line"] >= 1
    assert data.splitlines()[problem["line"] - 1].find(b"British") >= 0
    assert problem["offset"] == len(b"".join(line + b"\n" for line in data.splitlines()[:problem["line"] - 1]))
    # other commands meet the damage as one line, no traceback
    stats = run("stats")
    assert stats.code == 1 and stats.err.startswith("playbook: ") and stats.err.count("\n") == 1


def test_stats(run, demo):
    doc = run("stats", "--json").json()
    assert doc["sections"] == {"PATTERNS & APPROACHES": 1, "MISTAKES TO AVOID": 0, "USER PREFERENCES": 0,
                               "PROJECT CONTEXT": 1, "OTHERS": 1}
    assert doc["entries"] == 3
    assert doc["transactions"] == 10
    assert doc["events"]["KeyPointEvaluated"] == 5 and doc["events"]["KeyPointsMerged"] == 1
    assert doc["events"]["LearningFailed"] == 1 and doc["events"]["OperationSkipped"] == 1
    assert [e["name"] for e in doc["most_helpful"]] == ["kpt_002", "kpt_001", "pat-003"]
    assert doc["most_harmful"] == []
    assert doc["learning"] == {"requested": 2, "completed": 1, "failed": 1, "skipped": 0, "given_up": 0, "pending": 0,
                               "waiting_for_retry": 0}
    assert list(doc["per_day"].values()) == [{"completed": 1, "failed": 1, "skipped": 0}]
    human = run("stats").out
    assert_fits(human)
    assert "most helpful\n  kpt_002      3/0  Prefer small commits" in human


def test_rebuild_clears_checkpoints(run, demo, repo):
    checkpoints = repo.claude_dir / "playbook.checkpoints"
    checkpoints.mkdir()
    (checkpoints / "5.msgpack").write_bytes(b"stale")
    repo.snapshot_path.unlink()
    result = run("rebuild")
    assert result.code == 0 and "removed 1 checkpoint" in result.out
    assert repo.snapshot_path.exists() and not list(checkpoints.iterdir())
    assert run("verify").code == 0


# --- what reaches the terminal -------------------------------------------------------------------------------

HOSTILE = "red \x1b[31mALERT\x1b[0m bell\x07 \x9b2J bidi\u202e end"


@pytest.mark.slow
def test_control_characters_never_reach_stdout(run, repo):
    repo.append([ApplyOperations([{"type": "ADD", "text": HOSTILE, "section": "\x1b]0;title\x07"}])],
                Cause(source="hook:\x1b[2J", session="s\x1b[1m", model="m\x07", analysis="a\x1b[31m\nb",
                      reasoning="r\x07"))
    repo.append([Evaluate([{"name": "oth-001", "rating": "harmful", "rationale": "bad \x1b[5m blink"}]),
                 ApplyOperations([{"type": "UPDATE", "target_id": "oth-001", "text": HOSTILE + "!"}])],
                Cause(source="test"))
    runs = [run(*argv) for argv in (["show"], ["log"], ["log", "-v"], ["history", "oth-001"],
                                     ["history", "oth-001", "-v"], ["diff", "0"], ["at", "2"], ["stats"],
                                     ["revert", "s\x1b[1m", "--dry-run"], ["verify"], ["history", "x\x1b[31m"])]
    for result in runs:
        for text in (result.out, result.err):
            assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202e]", text), repr(text)
    log, full = runs[1].out, runs[2].out
    assert '"red \\x1b[31mALERT\\x1b[0m bell\\x07 \\x9b2J bidi\\u202e end"' in full.replace("\n               ", " ")
    assert "(asked for section \"\\x1b]0;title\\x07\")" in full
    assert "session   s\\x1b[1m" in log and "a\\x1b[31m b" in log and "analysis  a\\x1b[31m\n          b" in full
    assert "x\\x1b[31m" in runs[-1].err
    outputs = [run(*argv).out for argv in (["log", "--json"], ["show", "--json"], ["history", "oth-001", "--json"])]
    for out in outputs:
        assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202e]", out)
    log, show, history = (json.loads(out) for out in outputs)
    assert log["transactions"][-1]["events"][0]["text"] == HOSTILE  # JSON escapes; the value is intact
    assert log["transactions"][-1]["session"] == "s\x1b[1m"
    assert show["sections"]["OTHERS"][0]["text"] == HOSTILE + "!"
    assert history["items"][0]["event"]["text"] == HOSTILE


# --- real processes ------------------------------------------------------------------------------------


def subprocess_env(project: Path, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "CLAUDE_PROJECT_DIR")}
    env["CLAUDE_PROJECT_DIR"] = str(project)
    env.update(extra)
    return env


def console_script() -> str:
    return str(Path(sys.executable).with_name("playbook"))


@pytest.mark.slow
def test_console_script_and_module(demo, project):
    env = subprocess_env(project)
    shown = subprocess.run([console_script(), "show"], capture_output=True, text=True, env=env, timeout=60)
    assert shown.returncode == 0 and "[pat-003] helpful=1 harmful=0" in shown.stdout
    assert "\x1b[" not in shown.stdout  # not a terminal: no colour
    logged = subprocess.run([sys.executable, "-m", "playbook", "log", "--json", "-n", "1"], capture_output=True,
                            text=True, env=env, timeout=60, cwd=ROOT)
    assert logged.returncode == 0 and json.loads(logged.stdout)["transactions"][0]["tx"] == demo["s-6"]
    missing = subprocess.run([console_script(), "--project", str(project), "history", "nope"], capture_output=True,
                             text=True, env=env, timeout=60)
    assert missing.returncode == 1 and missing.stderr == "playbook: no entry 'nope' in the log\n"


@pytest.mark.slow
@pytest.mark.parametrize("argv", [
    [b"history", b"\xff"], [b"history", b"\xff", b"--json"], [b"at", b"999999999d"], [b"at", "³".encode()],
    [b"log", b"--since", b"99999999999w"],
], ids=lambda argv: " ".join(map(repr, argv)))
def test_bad_when_or_name_from_a_real_command_line_is_one_line(demo, project, argv):
    result = subprocess.run([console_script(), *argv], capture_output=True, env=subprocess_env(project), timeout=60)
    assert result.returncode == 1 and result.stdout == b""
    assert result.stderr.count(b"\n") == 1 and result.stderr.startswith(b"playbook: "), result.stderr
    assert b"Traceback" not in result.stderr


@pytest.mark.slow
def test_log_entry_not_utf8_from_a_real_command_line_matches_nothing(demo, project):
    result = subprocess.run([console_script(), "log", "--entry", b"\xff"], capture_output=True,
                            env=subprocess_env(project), timeout=60)
    assert (result.returncode, result.stdout, result.stderr) == (0, b"(no transactions match)\n", b"")


def test_json_of_a_project_path_that_is_not_utf8(tmp_path, capsys):
    project = tmp_path / "project-\udcff"  # the bytes b"project-\xff" on disk
    project.mkdir()
    documents = {}
    for command in ("verify", "rebuild", "stats", "show"):
        code = main(["--project", str(project), command, "--json"])
        captured = capsys.readouterr()
        assert code == 0 and captured.err == "", captured.err
        documents[command] = json.loads(captured.out)
    claude = str(project / ".claude").replace("\udcff", "\\udcff")  # written as the text \udcff
    assert documents["verify"]["log"] == claude + "/playbook.events.jsonl"
    assert documents["rebuild"]["snapshot"] == claude + "/playbook.json"


def test_import_of_a_file_whose_name_is_not_utf8(run, tmp_path):
    legacy = write_json(tmp_path / "legacy-\udcff.json", {"version": "1.0", "key_points": ["Keep it short"]})
    result = run("import", str(legacy), "--json")
    assert result.code == 0 and result.err == "", result.err
    recorded = str(legacy.resolve()).replace("\udcff", "\\xff")  # the byte, as a backslash escape
    assert result.json()["path"] == recorded
    logged = run("log", "--json").json()["transactions"][0]
    assert logged["note"] == f"playbook import {recorded}" and logged["events"][0]["path"] == recorded


@pytest.mark.slow
def test_broken_pipe_prints_no_traceback(repo, project):
    for number in range(150):
        repo.append([ApplyOperations([{"type": "ADD", "text": f"entry {number} " + "x" * 60}])],
                    Cause(source="test", analysis="words " * 200))  # far more than a pipe buffer
    process = subprocess.Popen([console_script(), "log", "-n", "0", "-v"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env=subprocess_env(project))
    assert process.stdout.readline().startswith(b"tx ")
    process.stdout.close()  # like `| head -1`
    stderr = process.stderr.read()
    process.wait(timeout=60)
    assert stderr == b"" and process.returncode == 0


@pytest.mark.slow
def test_colour_only_on_a_terminal_and_never_with_no_color(demo, project):
    pty = pytest.importorskip("pty")

    def on_terminal(**extra: str) -> bytes:
        master, slave = pty.openpty()
        process = subprocess.Popen([console_script(), "log", "-n", "1"], stdout=slave, stderr=slave,
                                   env=subprocess_env(project, TERM="xterm", **extra))
        os.close(slave)
        out = b""
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        process.wait(timeout=60)
        os.close(master)
        return out

    assert b"\x1b[33mtx " in on_terminal()
    plain = on_terminal(NO_COLOR="1")
    assert b"\x1b" not in plain and plain.startswith(b"tx ")
