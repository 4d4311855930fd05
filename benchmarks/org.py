"""What an organisation's playbook costs: the SessionStart hook's fast path with and without one, a project's
append (which projects the injection again, the orgs' key points included), and `playbook org fetch` of an org
repository (a bare one on this machine) whose log grew, verified before use.

    python -m benchmarks.org [--runs 30] [--org-entries 0,200,2000]

Prints medians; asserts nothing.
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

ENV = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.com", "GIT_COMMITTER_NAME": "b",
       "GIT_COMMITTER_EMAIL": "b@example.com", "GIT_CONFIG_NOSYSTEM": "1"}


def seed(claude_dir: Path, entries: int, word: str) -> PlaybookRepository:
    repo = PlaybookRepository(claude_dir)
    for start in range(0, entries, 10):
        repo.append([ApplyOperations([{"type": "ADD", "section": "PATTERNS & APPROACHES",
                                       "text": f"{word} rule {i}: keep the {word} thing number {i} in order"}
                                      for i in range(start, min(start + 10, entries))])], Cause(source="bench"))
    return repo


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, env={**os.environ, **ENV}, check=True, capture_output=True)


def playbook(project: Path, *args: str) -> float:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "playbook", "--project", str(project), *args], cwd=project,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"playbook {' '.join(args)}: {done.stderr.strip()}")
    return time.perf_counter() - started


def session_start_ms(project: Path, runs: int) -> float:
    command = hook_command("SessionStart")
    stdin = json.dumps({"hook_event_name": "SessionStart", "source": "startup", "session_id": "b"}).encode()
    env = {**os.environ, "CLAUDE_PROJECT_DIR": str(project)}
    subprocess.run(command, shell=True, input=stdin, capture_output=True, env=env, cwd=project)  # projects once
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, shell=True, input=stdin, capture_output=True, env=env, cwd=project)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def append_ms(repo: PlaybookRepository, runs: int) -> float:
    times = []
    for i in range(runs):
        started = time.perf_counter()
        repo.append([ApplyOperations([{"type": "ADD", "section": "OTHERS", "text": f"bench note {time.time()} {i}"}])],
                    Cause(source="bench"))
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--org-entries", default="0,200,2000")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ["PLAYBOOK_USER_DIR"] = str(root / "user")
        project = root / "project"
        repo = seed(project / ".claude", 100, "project")
        for entries in [int(n) for n in args.org_entries.split(",")]:
            if entries:
                work, bare = root / f"org{entries}", root / f"org{entries}.git"
                seed(work / ".claude", entries - 10, "org")
                git(root, "init", "--quiet", "--bare", str(bare))
                git(work, "init", "--quiet")
                git(work, "add", ".claude/playbook.events.jsonl")
                git(work, "commit", "--quiet", "-m", "org")
                git(work, "push", "--quiet", str(bare), "HEAD:refs/heads/main")
                git(bare, "symbolic-ref", "HEAD", "refs/heads/main")
                added = playbook(project, "org", "add", str(bare), "--name", f"org{entries}")
                seed(work / ".claude", 10, "later")
                git(work, "commit", "--quiet", "-am", "more")
                git(work, "push", "--quiet", str(bare), "HEAD:refs/heads/main")
                fetched = playbook(project, "org", "fetch", f"org{entries}")
                rows.append((f"org add, {entries - 10} key points (fetch, verify, project)", f"{added:.2f} s"))
                rows.append((f"org fetch, {entries} key points after 10 more", f"{fetched:.2f} s"))
            rows.append((f"SessionStart hook, fast path, org of {entries}", f"{session_start_ms(project, args.runs):.1f} ms"))
            rows.append((f"project append (projection included), org of {entries}", f"{append_ms(repo, args.runs):.1f} ms"))
            if entries:
                playbook(project, "org", "remove", f"org{entries}")
    width = max(len(what) for what, _ in rows)
    for what, figure in rows:
        print(f"{what:<{width}}  {figure:>9}")


if __name__ == "__main__":
    main()
