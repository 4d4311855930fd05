"""Record the transcripts `benchmarks.condense` measures: real Claude Code sessions against the fake API.

    python -m benchmarks.record_transcripts [KIND...]   # needs the `claude` CLI on PATH; rewrites benchmarks/transcripts/
    python -m benchmarks.record_transcripts learning [NAME...]   # the learning benchmark's sessions

Three sessions of `claude -p` (resumed for the long one) in a scratch project holding copies of
some of this repository's modules; the fake plays the model with a fixed script of tool calls,
which Claude Code really runs (Read, Grep, Bash), so every record is what Claude Code writes:

- short: one question, one file read, one answer;
- tool_heavy: one task worked through 28 tool calls: the same files read again and again, long
  command outputs, a failing test with its traceback, a grep over the tree;
- long: twelve prompts over one resumed session, each a few tool calls and a conclusion.

The learning benchmark's sessions (`learning`: the cases of benchmarks/transcripts/learning/labels.json,
scripted in benchmarks/learning_sessions.py) are recorded the same way, into benchmarks/transcripts/learning/.

Paths are replaced by /HOME, /PROJECT and -PROJECT as in tests/fixtures/transcripts, and this
repository's by /PLUGIN.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from collections.abc import Callable
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = Path(__file__).resolve().parent / "transcripts"
sys.path.insert(0, str(ROOT))

from playbook.learner.sessions import project_slugs  # noqa: E402
from tests.fake_anthropic import FakeAnthropic, Reply, reply_text, reply_tool_use  # noqa: E402

SOURCES = ["playbook/learner/transcript.py", "eventlog/store.py", "playbook/learner/models.py", "projections/pagedata.py",
           "eventlog/decide.py"]
FAILING_TEST = '''\
from transcript import read_transcript


def test_reads_the_resumed_session():
    transcript = read_transcript("missing.jsonl")
    assert transcript.lines == 64
'''


def read(path: str) -> Reply:
    return reply_tool_use("Read", {"file_path": f"{{project}}/{path}"})


def bash(command: str, description: str = "") -> Reply:
    return reply_tool_use("Bash", {"command": command, "description": description or command[:40]})


def grep(pattern: str) -> Reply:
    return reply_tool_use("Grep", {"pattern": pattern, "output_mode": "content", "-n": True})


SCRIPTS: dict[str, list[list[Reply]]] = {
    "short": [[
        read("src/transcript.py"),
        reply_text("`read_transcript` keeps only user and assistant records and merges consecutive records of "
                   "one role. Conclusion: the subagent case is handled by the `agent-` file name check."),
    ]],
    "tool_heavy": [[
        bash("ls -la {project}/src {project}/tests", "List the project"),
        read("src/transcript.py"),
        read("src/store.py"),
        grep("def read_transcript"),
        bash("cd {project}/src && python -m pytest ../tests -q 2>&1 | tail -40", "Run the tests"),
        read("src/transcript.py"),
        bash("cat {project}/src/models.py", "Show models.py"),
        read("src/pagedata.py"),
        bash("seq 1 4000 | sed 's/^/line /'", "Print a long listing"),
        read("src/store.py"),
        bash("cd {project}/src && python -c 'import transcript; transcript.read_transcript(\"nope.jsonl\")'",
             "Reproduce the error"),
        read("src/transcript.py"),
        grep("TranscriptError"),
        bash("cat {project}/src/transcript.py | head -200", "Show the head of transcript.py"),
        read("src/decide.py"),
        bash("cat {project}/tests/test_transcript.py {project}/src/*.py | head -600", "Look at everything"),
        read("src/models.py"),
        read("src/store.py"),
        bash("cd {project}/src && python -m pytest ../tests -q 2>&1 | tail -40", "Run the tests again"),
        read("src/pagedata.py"),
        bash("cat {project}/src/store.py", "Show store.py"),
        read("src/transcript.py"),
        bash("wc -l {project}/src/*.py", "Count lines"),
        read("src/decide.py"),
        bash("ls /definitely/not/here", "Check the fixtures directory"),
        grep("start_line"),
        read("src/transcript.py"),
        bash("cd {project}/src && python -m pytest ../tests -q 2>&1 | tail -40", "Run the tests a third time"),
        reply_text("Conclusion: the test fails because `missing.jsonl` does not exist: `read_transcript` raises "
                   "TranscriptError (No such file or directory). The fixture must be copied into the test's "
                   "directory first; nothing in `read_transcript` itself is wrong."),
    ]],
    "long": [
        [read(f"src/{Path(SOURCES[i % len(SOURCES)]).name}"),
         grep(["def ", "class ", "raise ", "return None", "msgspec"][i % 5]),
         bash(f"cd {{project}}/src && python -m pytest ../tests -q 2>&1 | tail -{10 + i}", "Run the tests"),
         reply_text(f"Step {i + 1} done. Conclusion: the module keeps its promise here; the failing test still "
                    f"needs its fixture, and [pat-00{i % 3 + 1}] applied.")]
        for i in range(12)
    ],
}
PROMPTS: dict[str, list[str]] = {
    "short": ["How does read_transcript treat subagent transcripts?"],
    "tool_heavy": ["The test in tests/ fails. Find out why, and read whatever you need to."],
    "long": [f"Part {i + 1}: look at the next module and tell me whether its tests hold; keep it short."
             for i in range(12)],
}


def _steps(body: dict[str, Any]) -> int:
    """How many assistant turns the conversation already holds (the script's position)."""
    count = 0
    for message in body.get("messages") or []:
        if isinstance(message, dict) and message.get("role") == "assistant":
            content = message.get("content")
            # one assistant message per reply: text, then a tool_use
            count += 1 if not isinstance(content, list) or content else 0
    return count


def _scratch(project: Path) -> None:
    """The project the condense benchmark's sessions work in: copies of some of this repository's modules."""
    (project / "src").mkdir(parents=True)
    (project / "tests").mkdir()
    for source in SOURCES:
        shutil.copy(ROOT / source, project / "src" / Path(source).name)
    (project / "tests" / "test_transcript.py").write_text(FAILING_TEST)


def session(claude: str, prompts: list[str], turns: list[list[Reply]], setup: Callable[[Path], None],
            tools: tuple[str, ...] = ("Bash", "Read", "Grep"), plugin: bool = False) -> bytes:
    """The transcript Claude Code writes for `prompts` (one `claude -p` each, resumed after the first) in a
    scratch project `setup` fills, the fake answering each turn from `turns`; with `plugin`, this repository is
    loaded as a plugin (`--plugin-dir`), its hooks run by this interpreter."""
    script = [reply for turn in turns for reply in turn]
    with tempfile.TemporaryDirectory() as scratch:
        home, project = Path(scratch) / "home", Path(scratch) / "project"
        project.mkdir()
        home.mkdir()
        setup(project)
        (home / ".claude.json").write_text(json.dumps({
            "hasCompletedOnboarding": True, "lastOnboardingVersion": "2.1.328",
            "projects": {str(project): {"hasTrustDialogAccepted": True}}}))

        def respond(body: dict[str, Any]) -> Reply:
            step = _steps(body)
            reply = script[min(step, len(script) - 1)]
            if reply.content is not None:
                text = json.dumps(reply.content).replace("{project}", str(project))
                return Reply(content=json.loads(text))
            return reply

        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE", "PLAYBOOK_"))}
        # This interpreter's scripts (pytest, playbook) are on the PATH the session's tools and commands run with.
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", os.defpath)])
        extra = ["--plugin-dir", str(ROOT)] if plugin else []
        session_id = None
        with FakeAnthropic(respond) as api:
            env |= {"HOME": str(home), "ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "sk-test-123",
                    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
                    "PLAYBOOK_PYTHON": sys.executable}
            for prompt in prompts:
                resume = ["--resume", session_id] if session_id else []
                result = subprocess.run(
                    [claude, *extra, "-p", prompt, "--output-format", "json", "--allowedTools", *tools, *resume],
                    cwd=project, env=env, capture_output=True, text=True, timeout=300)
                if result.returncode != 0:
                    raise SystemExit(f"claude failed for {prompt!r}: {result.stdout[-500:]} {result.stderr[-500:]}")
                session_id = json.loads(result.stdout)["session_id"]
        slug = next(slug for slug in project_slugs(str(project))
                    if (home / ".claude" / "projects" / slug / f"{session_id}.jsonl").exists())
        data = (home / ".claude" / "projects" / slug / f"{session_id}.jsonl").read_bytes()
        names = ((slug, "-PROJECT"), (str(project), "/PROJECT"), (str(home), "/HOME"), (str(ROOT), "/PLUGIN"))
        for old, new in names:
            data = data.replace(old.encode(), new.encode())
        return data


def record(kind: str, claude: str) -> bytes:
    return session(claude, PROMPTS[kind], SCRIPTS[kind], _scratch)


def record_learning(names: list[str], claude: str) -> None:
    """Record the learning benchmark's sessions (`benchmarks/learning_sessions.py`) named, or all of them."""
    from benchmarks.learning_labels import LABELS, load
    from benchmarks.learning_sessions import FILES, PLAYBOOK, SCRIPTS as LEARNING

    def shop(project: Path) -> None:
        for name, text in FILES.items():
            (project / name).parent.mkdir(parents=True, exist_ok=True)
            (project / name).write_text(text)
        (project / ".claude").mkdir()
        (project / ".claude" / "playbook.json").write_text(PLAYBOOK)

    cases = {case.name: case for case in load().cases}
    for name in names or list(cases):
        case = cases[name]
        data = session(claude, case.prompts, LEARNING[name], shop, ("Bash", "Read", "Grep", "Edit"),
                       plugin=case.kind == "commands")
        (LABELS.parent / f"{name}.jsonl").write_bytes(data)
        print(f"learning/{name}: {len(data):,} bytes, {data.count(bytes([10]))} lines", flush=True)


def main() -> int:
    claude = shutil.which("claude")
    if claude is None:
        print("record_transcripts: the claude CLI is not on PATH", file=sys.stderr)
        return 1
    OUT.mkdir(exist_ok=True)
    if sys.argv[1:2] == ["learning"]:
        record_learning(sys.argv[2:], claude)
        return 0
    for kind in sys.argv[1:] or SCRIPTS:
        data = record(kind, claude)
        (OUT / f"{kind}.jsonl").write_bytes(data)
        lines = data.count(b"\n")
        print(f"{kind}: {len(data):,} bytes, {lines} lines")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
