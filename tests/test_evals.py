"""The plugin's eval suite (`evals/`, run by `claude plugin eval`): its cases, their playbook fixtures, and
the suite run with the real Claude Code CLI against the fake Messages API.

Each case is a small project whose `.claude/` holds a playbook written by the product itself
(`plugin/evals/build.py`); the case's scaffold puts it in the run's workspace, and the plugin's hooks give it to the
session as they would in a real project. The lesson is never in the prompt.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from playbook.quick.recall import recall
from projections.quickroads import INJECTION_NAME, MAX_PROJECTION_BYTES, RECALL_NAME, current_body
from projections.repository import PlaybookRepository
from projections.verify import verify
from tests.fake_anthropic import FakeAnthropic, Reply, reply_text, reply_tool_use, request_texts

ROOT = Path(__file__).resolve().parent.parent
EVALS = ROOT / "plugin" / "evals"
SECTIONS = {"patterns-and-approaches": "PATTERNS & APPROACHES", "mistakes-to-avoid": "MISTAKES TO AVOID",
            "user-preferences": "USER PREFERENCES", "project-context": "PROJECT CONTEXT", "others": "OTHERS"}
FIXED_MTIME_NS = 1767225600 * 1_000_000_000
CASES = sorted(path.parent for path in EVALS.rglob("case.yaml") if "results" not in path.parts)


def case_yaml(case: Path) -> dict:
    return yaml.safe_load((case / "case.yaml").read_text(encoding="utf-8"))


def lessons(case: Path) -> dict:
    return json.loads((case / "lessons.json").read_text(encoding="utf-8"))


def test_the_suite_covers_every_section_with_cases_the_playbook_must_not_change():
    assert len(CASES) >= 12
    assert {case.parent.name for case in CASES} == set(SECTIONS)
    unchanged = [case for case in CASES if "must-not-change" in case_yaml(case)["tags"]]
    assert {c.name for c in unchanged} >= {"irrelevant-lesson", "pruned-harmful"}
    assert any(lessons(c).get("pruned") for c in unchanged), "a harmful lesson that was pruned"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_a_case_is_a_scaffolded_project_whose_lesson_is_not_in_its_prompt(case):
    spec = case_yaml(case)
    assert spec["schema_version"] == "1.1" and spec["name"] == case.name
    assert spec["tags"][0] == case.parent.name
    assert spec["context"]["scaffold_script"] == "scaffold.sh" and os.access(case / "scaffold.sh", os.X_OK)
    assert spec["graders"] and not [g for g in spec["graders"] if g["type"] in ("llm", "baseline")]
    assert set(spec["execution"].get("env", {})) <= {k for k in spec["execution"].get("env", {}) if k.startswith("EVAL_")}
    prompt = " ".join(re.findall(r"[a-z0-9_.]+", spec["execution"]["prompt"].lower()))
    for lesson in [*lessons(case).get("lessons", []), *lessons(case).get("pruned", [])]:
        words = re.findall(r"[a-z0-9_.]+", lesson["text"].lower())
        runs = {" ".join(words[i:i + 4]) for i in range(len(words) - 3)}
        assert not [run for run in runs if run in prompt], (case.name, lesson["text"])


def workspace(case: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The case's project as its scaffold lays it out, on a machine like an eval run's."""
    project = tmp_path / "workspace"
    shutil.copytree(case / "project", project)
    for name in ("playbook.json", "playbook.settings.json"):
        os.utime(project / ".claude" / name, ns=(FIXED_MTIME_NS, FIXED_MTIME_NS))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "config"))
    for name in ("PLAYBOOK_USER_DIR", "PLAYBOOK_INJECTION_BUDGET", "PLAYBOOK_RECALL", "PLAYBOOK_RECALL_MAX_CHARS"):
        monkeypatch.delenv(name, raising=False)
    return project


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_fixture_reaches_a_session_as_is_and_holds_no_pruned_lesson(case, tmp_path, monkeypatch):
    project = workspace(case, tmp_path, monkeypatch)
    claude_dir = str(project / ".claude")
    injected = current_body(claude_dir, INJECTION_NAME, MAX_PROJECTION_BYTES, user=True)
    assert injected is not None, "the SessionStart projection names the workspace's files: injected as is"
    context = json.loads(injected)["hookSpecificOutput"]["additionalContext"]
    index = current_body(claude_dir, RECALL_NAME, MAX_PROJECTION_BYTES)
    assert index is not None
    recalled = "\n".join(recall(case_yaml(case)["execution"]["prompt"], index))
    spec = lessons(case)
    for lesson in spec.get("lessons", []):
        if "recall" in case_yaml(case)["tags"]:
            assert lesson["text"] not in context and lesson["text"] in recalled, "left out, then recalled"
        else:
            assert lesson["text"] in context
    for lesson in spec.get("pruned", []):
        assert lesson["text"] not in context + recalled
    repo = PlaybookRepository(project / ".claude")
    assert verify(repo).ok
    assert not repo.state().texts() & {lesson["text"] for lesson in spec.get("pruned", [])}
    settings = json.loads((project / ".claude" / "playbook.settings.json").read_text())
    assert not any(settings[k] for k in settings if k.startswith("playbook_update_on_")), "eval runs never learn"


CLAUDE = next((c for c in (os.environ.get("PLAYBOOK_CLAUDE_BIN"), shutil.which("claude"),
                           str(ROOT / ".ci-node" / "node_modules" / ".bin" / "claude")) if c and os.access(c, os.X_OK)),
              None)
needs_claude = pytest.mark.skipif(CLAUDE is None and os.environ.get("CI") != "true",
                                  reason="Claude Code is not installed (npm install @anthropic-ai/claude-code)")
# Bash is granted only where the machine can confine it (bubblewrap on Linux); the cases run here need none.
GRANTS = ["--allow-tools", "Write", "Edit"]


def eval_env(tmp_path: Path, api: FakeAnthropic) -> dict[str, str]:
    """A scratch HOME, a PATH with Claude Code and a python3 (the interpreter this venv was made from, with
    nothing of this project installed: the plugin's hooks run on their own), and the fake API."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    assert CLAUDE is not None, "Claude Code must be installed in CI"
    (bin_dir / "claude").symlink_to(CLAUDE)
    (bin_dir / "python3").symlink_to(getattr(sys, "_base_executable", sys.executable))
    (tmp_path / "home").mkdir()
    (tmp_path / "tmp").mkdir()  # the runs' scratch directories, any kept, stay in the test's own
    return {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path / "home"), "TMPDIR": str(tmp_path / "tmp"),
            "LANG": "C.UTF-8",
            "ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "sk-test-evals",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
            # the plugin's background set-up of its own environment fails at once instead of reaching PyPI
            "https_proxy": "http://127.0.0.1:9", "no_proxy": "127.0.0.1,localhost"}


def plugin_eval(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["claude", "plugin", "eval", str(ROOT / "plugin"), "--trust-plugin", "--no-publish", "--scaffold",
                           *GRANTS, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
@needs_claude
def test_claude_plugin_validate_is_clean_with_the_suite(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    assert CLAUDE is not None
    for target in (ROOT, ROOT / "plugin"):  # the marketplace, and the plugin with its suite
        result = subprocess.run([CLAUDE, "plugin", "validate", str(target)], env=env, capture_output=True, text=True,
                                timeout=120)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "Validation passed" in result.stdout and "warning" not in result.stdout.lower()


@pytest.mark.slow
@needs_claude
def test_every_case_loads(tmp_path):
    """The whole suite is read and checked before any run; a ceiling below one run's cost stops it after the
    first run (exit 2, partial results)."""
    with FakeAnthropic(lambda body: reply_text("Done.")) as api:
        result = plugin_eval(eval_env(tmp_path, api), tmp_path, "--runs", "1", "--max-cost-usd", "0.0001",
                             "--output-dir", str(tmp_path / "out"))
    output = result.stdout + result.stderr
    assert "Couldn't load" not in output and "invalid case.yaml" not in output, output
    assert f"Ablation: 2 arms × {len(CASES)} cases" in output, output
    assert result.returncode == 2, output


# The cases run in CI (`--tag recall must-not-change`): a lesson recalled for the prompt, lessons injected at the
# session start that must not change the outcome, and a pruned one that must never be injected.
# What the scripted model does in each: with the lesson in its request, what the lesson says;
# without it, what a model that does not know the project would. Both arms alike where the playbook must not
# change the outcome.
SCRIPTS: dict[str, tuple[str, Reply, Reply]] = {
    "recalled-port": ("port 8731",
                      reply_tool_use("Write", {"file_path": "{cwd}/.env", "content": "PORT=8731\n"}),
                      reply_tool_use("Write", {"file_path": "{cwd}/.env", "content": "PORT=8000\n"})),
    "pruned-harmful": ("\x00never", reply_text(""),
                       reply_tool_use("Bash", {"command": "python3 -m pytest -q", "description": "Run the tests"})),
    "irrelevant-lesson": ("\x00never", reply_text(""),
                          reply_tool_use("Write", {"file_path": "{cwd}/mathx.py",
                                                   "content": "def add(a, b):\n    return a + b\n"})),
}


def has_tool_result(body: dict) -> bool:
    return any(isinstance(block, dict) and block.get("type") == "tool_result"
               for message in body.get("messages") or [] for block in message.get("content") or [])


def scripted(body: dict) -> Reply:
    text = request_texts(body)
    messages = body.get("messages") or []
    last = messages[-1] if messages else {}
    if any(isinstance(b, dict) and b.get("type") == "tool_result" for b in last.get("content") or []):
        return reply_text("Done.")
    for name, (marker, with_lesson, without) in SCRIPTS.items():
        if case_yaml(next(c for c in CASES if c.name == name))["execution"]["prompt"] in text:
            reply = with_lesson if marker in text else without
            cwd = re.search(r"Primary working directory: (\S+)", text) or re.search(r"working directory: (\S+)", text)
            if reply.content and cwd:
                return Reply(content=json.loads(json.dumps(reply.content).replace("{cwd}", cwd.group(1))))
            return reply
    return reply_text("Done.")


@pytest.mark.slow
@needs_claude
def test_the_suite_runs_both_arms_and_only_the_with_arm_gets_the_playbook(tmp_path):
    report = tmp_path / "out" / "aggregate-result.json"
    with FakeAnthropic(scripted) as api:
        result = plugin_eval(eval_env(tmp_path, api), tmp_path, "--runs", "1", "-j", "2",
                             "--tag", "recall", "must-not-change", "--threshold", "0",
                             "--output-dir", str(tmp_path / "out"))
        bodies = api.message_bodies()
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    table = result.stdout
    assert re.search(r"CASE\s+WITH\s+W/OUT\s+Δ", table), table
    assert all(re.search(rf"^{name}\s+\d", table, re.M) for name in SCRIPTS), table
    cases = {case["name"]: case for case in json.loads(report.read_text())["cases"]}
    assert set(cases) == set(SCRIPTS)
    for name, case in cases.items():
        assert [len(case["arms"][arm]) for arm in ("with", "without")] == [1, 1], name
        assert not [run["error"] for arm in case["arms"].values() for run in arm if run["error"]], name
    # The lesson reached the with arm's requests and none of the without arm's; the pruned one reached none.
    for name in SCRIPTS:
        case = next(c for c in CASES if c.name == name)
        prompt = case_yaml(case)["execution"]["prompt"]
        first = [request_texts(b) for b in bodies if prompt in request_texts(b) and not has_tool_result(b)]
        assert len(first) == 2, (name, len(first))
        for lesson in lessons(case).get("lessons", []):
            assert sorted(lesson["text"] in t for t in first) == [False, True], (name, lesson["text"])
        for lesson in lessons(case).get("pruned", []):
            assert not [t for t in first if lesson["text"] in t], name
    scores = {name: (case["aggregates"]["score"], case["aggregates"]["scoreWithout"]) for name, case in cases.items()}
    assert scores["recalled-port"] == (1, 0), scores
    assert scores["irrelevant-lesson"] == (1, 1), scores
    assert scores["pruned-harmful"][0] == scores["pruned-harmful"][1], scores  # its Bash graders need a sandbox


@pytest.mark.slow
@needs_claude
def test_playbook_eval_runs_the_suite_on_claude_code_and_records_what_it_measured(tmp_path):
    """`playbook eval` as a user runs it (here on the fake API): the real `claude plugin eval`, its result read
    back, one summary, and the measurement in the project's log."""
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    with FakeAnthropic(scripted) as api:
        env = eval_env(tmp_path, api)
        result = subprocess.run([sys.executable, "-m", "playbook", "--project", str(project), "eval", "--yes",
                                 "--no-learning", "--tag", "recall", "--max-cost-usd", "1"],
                                cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "never more than $1" in result.stderr and "recalled-port" in result.stderr, result.stderr
    assert re.search(r"PROJECT CONTEXT\s+1\.00\s+0\.00\s+\+1\.00\s+1\n", result.stdout), result.stdout
    [event] = [e for t in PlaybookRepository(project / ".claude").store.read() for e in t.events]
    assert (type(event).__name__, event.cases, event.with_score, event.without_score) == ("ValueMeasured", 1, 1.0, 0.0)
    assert event.cost_usd > 0 and event.claude_version


def test_the_builder_writes_a_fixture_the_hooks_inject_as_is(tmp_path, monkeypatch):
    """`python plugin/evals/build.py` (here in process, on a copy of a case): the product's own log and projections."""
    sys.path.insert(0, str(EVALS))
    try:
        import build
    finally:
        sys.path.remove(str(EVALS))
    case = tmp_path / "others" / "irrelevant-lesson"
    shutil.copytree(EVALS / "others" / "irrelevant-lesson", case)
    shutil.rmtree(case / "project" / ".claude")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "elsewhere"))
    written = build.build(case)
    assert sorted(p.name for p in written.iterdir()) == sorted(build.KEPT)
    project = workspace(case, tmp_path / "run", monkeypatch)
    injected = current_body(str(project / ".claude"), INJECTION_NAME, MAX_PROJECTION_BYTES, user=True)
    assert injected is not None and all(lesson["text"] in injected.decode() for lesson in lessons(case)["lessons"])
    sources = {t.commit.source for t in PlaybookRepository(project / ".claude").store.read()}
    assert sources == {"hook:SessionEnd"}, "written as learning writes it"
