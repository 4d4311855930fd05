"""How long the Claude Code hooks take, as whole processes, beside the bare interpreter.

    python -m benchmarks.hooks [--runs 40] [--entries 500]

Prints medians (and p90) of: the same interpreter's `-c pass` and `-S -c pass`, the
installed SessionStart command on a playbook of `--entries` entries, the plugin's SessionStart
(its launcher, hooks/playbook-hook, with the environment ready), the Python entry
point `-m playbook hook SessionStart`, and the SessionEnd hook's return time with
learning on (it records the request and starts the background learner). Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from eventlog.decide import ApplyOperations
from eventlog.events import Cause
from playbook.install import hook_command
from projections.repository import PlaybookRepository

SECTIONS = ("PATTERNS & APPROACHES", "MISTAKES TO AVOID", "USER PREFERENCES", "PROJECT CONTEXT", "OTHERS")


def seed(project: Path, entries: int) -> None:
    repo = PlaybookRepository(project / ".claude")
    for start in range(0, entries, 10):
        ops = [{"type": "ADD", "section": SECTIONS[i % 5],
                "text": f"key point {i}: prefer explicit, well-named helpers over clever one-liners"}
               for i in range(start, min(start + 10, entries))]
        repo.append([ApplyOperations(ops)], Cause(source="benchmark"))


def timed(command: str | list[str], stdin: bytes, env: dict[str, str], cwd: Path, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, shell=isinstance(command, str), input=stdin, env=env, cwd=cwd,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - started)
    return times


BARE = "python -c pass (same interpreter)"
BARE_S = "python -S -c pass"
MODULE_START = "python -m playbook hook SessionStart"
SESSION_END = "SessionEnd hook (learning on): time to return"


def session_start_name(entries: int) -> str:
    return f"SessionStart hook as installed ({entries} entries)"


def plugin_start_name(entries: int) -> str:
    return f"SessionStart hook of the plugin ({entries} entries)"


PLUGIN_HOOK = Path(__file__).resolve().parents[1] / "hooks" / "playbook-hook"


def measure(runs: int = 40, entries: int = 500) -> dict[str, list[float]]:
    """Seconds per run of each command (interleaved run by run), by name; the first is the bare interpreter."""
    with tempfile.TemporaryDirectory(prefix="bench-hooks-", ignore_cleanup_errors=True) as tmp:
        project = Path(tmp) / "project"
        project.mkdir()
        seed(project, entries)
        # Learning hooks read transcripts only from Claude Code's configuration directory.
        config = Path(tmp) / "claude"
        transcript = config / "projects" / "bench" / "session.jsonl"
        transcript.parent.mkdir(parents=True)
        transcript.write_text(json.dumps({"type": "user", "message": {"role": "user", "content": "hi"}}) + "\n")
        # PYTHONDONTWRITEBYTECODE is dropped: an installed package runs from cached bytecode, and
        # compiling every module from source on each run would be measured as the hooks' cost.
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("ANTHROPIC_", "AGENTIC_CONTEXT_")) and k != "PYTHONDONTWRITEBYTECODE"}
        # The whole playbook (no injection budget): the hook's worst case, bytes growing with the playbook.
        env |= {"CLAUDE_PROJECT_DIR": str(project), "CLAUDE_CONFIG_DIR": str(config), "PLAYBOOK_INJECTION_BUDGET": "0",
                # No model at all (no key, no Claude Code CLI): each learner records a skip and exits.
                "PLAYBOOK_CLAUDE": ""}
        start_in = json.dumps({"hook_event_name": "SessionStart", "source": "startup", "session_id": "b"}).encode()
        end_in = json.dumps({"hook_event_name": "SessionEnd", "reason": "prompt_input_exit", "session_id": "b",
                             "transcript_path": str(transcript)}).encode()
        python = sys.executable
        output = subprocess.run(hook_command("SessionStart"), shell=True, input=start_in, env=env, cwd=project,
                                capture_output=True, check=True).stdout
        assert len(output) > entries * 50, "the SessionStart hook printed no playbook"
        # Interleave the commands run by run, so the machine's noise hits them alike.
        commands = [
            (BARE, [python, "-c", "pass"], b"", env),
            (BARE_S, [python, "-S", "-c", "pass"], b"", env),
            (session_start_name(entries), hook_command("SessionStart"), start_in, env),
            # PLAYBOOK_PYTHON stands for the plugin's ready environment: the launcher takes the same path.
            (plugin_start_name(entries), f'sh "{PLUGIN_HOOK}" SessionStart', start_in,
             env | {"PLAYBOOK_PYTHON": python, "CLAUDE_PLUGIN_ROOT": str(PLUGIN_HOOK.parents[1])}),
            (MODULE_START, f'"{python}" -m playbook hook SessionStart', start_in, env),
            (SESSION_END, hook_command("SessionEnd"), end_in, env | {"PLAYBOOK_UPDATE_ON_EXIT": "1"}),
        ]
        samples: dict[str, list[float]] = {name: [] for name, *_ in commands}
        for _name, command, stdin, environment in commands:  # warm-up, untimed: caches and bytecode
            timed(command, stdin, environment, project, 1)
        for _ in range(runs):
            for name, command, stdin, environment in commands:
                samples[name] += timed(command, stdin, environment, project, 1)
        wait_for_learners(project)
        return samples


def wait_for_learners(project: Path, timeout: float = 60.0) -> None:
    """Let the learners the SessionEnd runs started finish (without an API key each records a skip
    and exits), so the project can be removed: one still writing makes the removal fail."""
    from playbook.learn import learning_lock
    from projections.repository import PlaybookRepository

    repo = PlaybookRepository(project / ".claude")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with learning_lock(project):  # the learner at work, if any, is done when this is taken
            pending = repo.current()[0].pending
        if not pending:
            time.sleep(0.2)  # a learner started last finds nothing to do and exits
            return
        time.sleep(0.1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--entries", type=int, default=500)
    args = parser.parse_args(argv)
    samples = measure(args.runs, args.entries)
    bare = statistics.median(samples[BARE])
    print(f"python {sys.version.split()[0]} at {sys.executable}; {args.runs} runs each, interleaved")
    for name, times in samples.items():
        median = statistics.median(times)
        p90 = sorted(times)[int(0.9 * (len(times) - 1))]
        print(f"  {name:<52} median {median * 1000:7.1f} ms   p90 {p90 * 1000:7.1f} ms"
              f"   vs -c pass {1000 * (median - bare):+7.1f} ms")
    injection = max(statistics.median(samples[session_start_name(args.entries)]),
                    statistics.median(samples[plugin_start_name(args.entries)])) - bare
    session_end = statistics.median(samples[SESSION_END])
    print(f"  targets: SessionStart at most 10 ms above -c pass: {injection * 1000:+.1f} ms "
          f"({'met' if injection <= 0.010 else 'NOT met'}); SessionEnd under 300 ms: "
          f"{session_end * 1000:.0f} ms ({'met' if session_end < 0.3 else 'NOT met'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
