"""How long the Claude Code hooks take, as whole processes, beside the bare interpreter.

    python -m benchmarks.hooks [--runs 40] [--entries 500]

"Bare" is the same interpreter doing nothing with the flags the hooks run with: `python -I -S
-c pass`. Beside it, interleaved run by run, each hook as `playbook install` writes it
(SessionStart, UserPromptSubmit, PreCompact, SessionEnd) on a playbook of `--entries` entries,
the plugin's SessionStart (its launcher, hooks/playbook-hook, with the environment ready), and
for context `python -c pass` (with site: what an installation's `.pth` files cost) and `-m
playbook hook SessionEnd` (the module run through site). SessionEnd is measured with learning
off and on (on, it records the request and starts the background learner, in a project of its
own so that its appends leave the others' projections current). Then the first prompt after an
append, which builds the recall index the append left stale. Prints medians and p90; asserts
nothing.
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
from playbook.wiring.install import hook_command
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


BARE = "python -I -S -c pass (same interpreter)"
WITH_SITE = "python -c pass (site and the .pth files)"
MODULE_END = "python -m playbook hook SessionEnd (through site)"
SESSION_END = "SessionEnd hook (learning on): time to return"
PROMPT = "UserPromptSubmit hook as installed"
PRE_COMPACT = "PreCompact hook as installed (learning off)"
SESSION_END_OFF = "SessionEnd hook as installed (learning off)"
PROMPT_AFTER_APPEND = "UserPromptSubmit hook, the first prompt after an append"


def session_start_name(entries: int) -> str:
    return f"SessionStart hook as installed ({entries} entries)"


def plugin_start_name(entries: int) -> str:
    return f"SessionStart hook of the plugin ({entries} entries)"


def hook_names(entries: int) -> tuple[str, ...]:
    """Every hook as Claude Code runs it, each held to the bare interpreter plus a few milliseconds."""
    return (session_start_name(entries), plugin_start_name(entries), PROMPT, PRE_COMPACT, SESSION_END_OFF)


PLUGIN_HOOK = Path(__file__).resolve().parents[1] / "hooks" / "playbook-hook"


def measure(runs: int = 40, entries: int = 500) -> dict[str, list[float]]:
    """Seconds per run of each command (interleaved run by run), by name; the first is the bare interpreter."""
    with tempfile.TemporaryDirectory(prefix="bench-hooks-", ignore_cleanup_errors=True) as tmp:
        project, learning = Path(tmp) / "project", Path(tmp) / "learning"
        for directory in (project, learning):  # learning on appends: its own project, so the others stay steady
            directory.mkdir()
            seed(directory, entries)
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
        compact_in = json.dumps({"hook_event_name": "PreCompact", "trigger": "auto", "session_id": "b",
                                 "transcript_path": str(transcript)}).encode()
        prompt_in = json.dumps({"hook_event_name": "UserPromptSubmit", "session_id": "b",
                                "prompt": "how do the helpers name things?"}).encode()
        python = sys.executable
        output = subprocess.run(hook_command("SessionStart"), shell=True, input=start_in, env=env, cwd=project,
                                capture_output=True, check=True).stdout
        assert len(output) > entries * 50, "the SessionStart hook printed no playbook"
        # Interleave the commands run by run, so the machine's noise hits them alike.
        off = env | {"PLAYBOOK_UPDATE_ON_EXIT": "0", "PLAYBOOK_UPDATE_ON_PRECOMPACT": "0"}
        commands = [
            (BARE, [python, "-I", "-S", "-c", "pass"], b"", env),
            (WITH_SITE, [python, "-c", "pass"], b"", env),
            (session_start_name(entries), hook_command("SessionStart"), start_in, env),
            # PLAYBOOK_PYTHON stands for the plugin's ready environment: the launcher takes the same path.
            (plugin_start_name(entries), f'sh "{PLUGIN_HOOK}" SessionStart', start_in,
             env | {"PLAYBOOK_PYTHON": python, "CLAUDE_PLUGIN_ROOT": str(PLUGIN_HOOK.parents[1])}),
            (PROMPT, hook_command("UserPromptSubmit"), prompt_in, env),
            (PRE_COMPACT, hook_command("PreCompact"), compact_in, off),
            (SESSION_END_OFF, hook_command("SessionEnd"), end_in, off),
            (MODULE_END, f'"{python}" -m playbook hook SessionEnd', end_in, off),
            (SESSION_END, hook_command("SessionEnd"), end_in,
             env | {"PLAYBOOK_UPDATE_ON_EXIT": "1", "CLAUDE_PROJECT_DIR": str(learning)}),
        ]
        samples: dict[str, list[float]] = {name: [] for name, *_ in commands}
        for _name, command, stdin, environment in commands:  # warm-up, untimed: caches and bytecode
            timed(command, stdin, environment, Path(environment["CLAUDE_PROJECT_DIR"]), 1)
        for _ in range(runs):
            for name, command, stdin, environment in commands:
                samples[name] += timed(command, stdin, environment, Path(environment["CLAUDE_PROJECT_DIR"]), 1)
        # The first prompt after an append: the recall index of what the injection leaves out is built then.
        repo, samples[PROMPT_AFTER_APPEND] = PlaybookRepository(project / ".claude"), []
        for number in range(max(runs // 4, 1)):
            repo.append([ApplyOperations([{"type": "ADD", "section": SECTIONS[0], "text": f"one more {number}"}])],
                        Cause(source="benchmark"))
            samples[PROMPT_AFTER_APPEND] += timed(hook_command("UserPromptSubmit"), prompt_in, env, project, 1)
        wait_for_learners(learning)
        return samples


def wait_for_learners(project: Path, timeout: float = 60.0) -> None:
    """Let the learners the SessionEnd runs started finish (without an API key each records a skip
    and exits), so the project can be removed: one still writing makes the removal fail."""
    from playbook.learner.requests import learning_lock
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
    above = {name: statistics.median(samples[name]) - bare for name in hook_names(args.entries)}
    session_end = statistics.median(samples[SESSION_END])
    worst = max(above, key=lambda name: above[name])
    print(f"  targets: every hook at most 10 ms above `-I -S -c pass`: worst {worst}, {above[worst] * 1000:+.1f} ms "
          f"({'met' if above[worst] <= 0.010 else 'NOT met'}); SessionEnd (learning on) under 300 ms: "
          f"{session_end * 1000:.0f} ms ({'met' if session_end < 0.3 else 'NOT met'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
