"""Twenty machines syncing one user-level playbook through a bare git repository: convergence and time per sync.

    python -m benchmarks.sync [--clones 20] [--events 10000] [--rounds 3] [--seed 27] [--keep DIR]

Writes a user-level log of `--events` events in the real line format (sessions drawn by
`benchmarks.fold`'s generator) and gives a copy to each of `--clones` machines (each its own
Claude Code directory). Every round, in a random order, each machine learns one to three
lessons of its own (one transaction each, through the library), then runs `playbook sync`'s cycle
(in this process, each machine in turn). A last pass syncs every machine once more. Then it
checks that every machine and the remote hold the same log byte for byte, that every lesson is
in it once (none lost, none doubled), and that it verifies clean; and prints the time per sync:
the whole sync, git's fetch and push, and the merge part (the fetched log checked whole, merged
into ours under the lock and written), which should stay under 1 s at 10k events.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from benchmarks.fold import write_log

TARGET_SECONDS = 1.0
PREFS = "USER PREFERENCES"


@contextmanager
def machine(config: Path) -> Iterator[None]:
    saved = {key: os.environ.get(key) for key in ("CLAUDE_CONFIG_DIR", "PLAYBOOK_USER_DIR")}
    os.environ.pop("PLAYBOOK_USER_DIR", None)
    os.environ["CLAUDE_CONFIG_DIR"] = str(config)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


class Timer:
    """Wall time spent in each wrapped function, per sync."""

    def __init__(self) -> None:
        self.current: Counter[str] = Counter()

    def wrap(self, owner: Any, name: str, label: str) -> None:
        original = getattr(owner, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.current[label] += time.perf_counter() - started

        setattr(owner, name, timed)


def lessons_in(log: Path) -> Counter[str]:
    """How often each lesson was added by a learning transaction (a merge's own record excluded)."""
    from eventlog.events import KeyPointAdded
    from eventlog.store import LogReader

    found: Counter[str] = Counter()
    for transaction in LogReader(log):
        if transaction.commit.source != "merge":
            found.update(e.text for e in transaction.events
                         if isinstance(e, KeyPointAdded) and e.text.startswith("lesson "))
    return found


def measure(clones: int = 20, events: int = 10_000, rounds: int = 3, seed: int = 27, keep: Path | None = None,
            say: Callable[[str], None] = lambda text: None) -> dict[str, object]:
    from eventlog.decide import ApplyOperations
    from eventlog.events import Cause
    from playbook.sync import cycle
    from playbook.sync.gitrepo import SyncGit
    from playbook.wiring.project import user_repository
    from projections.verify import verify

    root = Path(tempfile.mkdtemp(prefix="sync-bench-", dir=keep))
    rng = random.Random(seed)
    timer = Timer()
    timer.wrap(cycle, "check_foreign", "merge")
    timer.wrap(cycle, "_merge", "merge")
    timer.wrap(SyncGit, "fetch", "fetch")
    timer.wrap(SyncGit, "push", "push")
    try:
        remote = root / "remote.git"
        subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True, capture_output=True)
        seed_log = root / "seed.jsonl"
        info = write_log(seed_log, events, seed=seed)
        say(f"seed log: {info.events} events, {seed_log.stat().st_size >> 10} KiB")
        configs = [root / f"machine-{n:02d}" for n in range(clones)]
        for config in configs:
            (config / "playbook").mkdir(parents=True)
            shutil.copyfile(seed_log, config / "playbook" / "playbook.events.jsonl")
        taught: list[str] = []
        totals: list[dict[str, float]] = []

        def sync_on(config: Path, first: bool = False) -> None:
            timer.current = Counter()
            started = time.perf_counter()
            with machine(config):
                if first:
                    cycle.set_remote(str(remote))
                result = cycle.sync()
            timer.current["total"] = time.perf_counter() - started
            if not result.ok:
                raise SystemExit(f"{config.name}: {result.line}")
            totals.append(dict(timer.current))

        for config in configs:
            sync_on(config, first=True)
        say(f"{clones} machines set up")
        for number in range(rounds):
            order = configs[:]
            rng.shuffle(order)
            for config in order:
                texts = [f"lesson {config.name} {len(taught) + k}: keep the {rng.choice(['build', 'tests', 'docs'])} "
                         f"green" for k in range(rng.randint(1, 3))]
                taught.extend(texts)
                with machine(config):
                    user_repository().append([ApplyOperations([{"type": "ADD", "text": t, "section": PREFS}
                                                               for t in texts])], Cause(source="benchmark"))
                sync_on(config)
            say(f"round {number + 1}: {len(taught)} lessons so far")
        for config in configs:
            sync_on(config)
        logs = {(config / "playbook" / "playbook.events.jsonl").read_bytes() for config in configs}
        remote_log = subprocess.run(["git", "--git-dir", str(remote), "show", "main:playbook.events.jsonl"],
                                    check=True, capture_output=True).stdout
        final = configs[0] / "playbook" / "playbook.events.jsonl"
        counted = lessons_in(final)
        with machine(configs[0]):
            report = verify(user_repository())
            entries = [kp.text for section in user_repository().state().sections.values() for kp in section.values()]
        in_state = Counter(text for text in entries if text.startswith("lesson "))
        learned = [t for t in totals[clones:]]
        merge_times = sorted(t.get("merge", 0.0) for t in learned)
        return {
            "clones": clones, "events_each": info.events, "syncs": len(totals), "lessons": len(taught),
            "identical": len(logs) == 1 and remote_log in logs,
            "lost": sum(1 for t in taught if counted[t] == 0 or in_state[t] == 0),
            "doubled": sum(1 for t in taught if counted[t] > 1 or in_state[t] > 1),
            "verify": "clean" if report.ok else "; ".join(p.what for p in report.problems),
            "final_events": report.events,
            "sync_median_s": round(statistics.median(t["total"] for t in learned), 3),
            "fetch_median_s": round(statistics.median(t.get("fetch", 0.0) for t in learned), 3),
            "push_median_s": round(statistics.median(t.get("push", 0.0) for t in learned), 3),
            "merge_median_s": round(statistics.median(merge_times), 3),
            "merge_max_s": round(merge_times[-1], 3),
        }
    finally:
        if keep is None:
            shutil.rmtree(root, ignore_errors=True)


def met_targets(figures: dict[str, object]) -> bool:
    return (figures["identical"] is True and figures["lost"] == 0 and figures["doubled"] == 0
            and figures["verify"] == "clean" and float(figures["merge_median_s"]) < TARGET_SECONDS)  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clones", type=int, default=20)
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=27)
    parser.add_argument("--keep", type=Path)
    args = parser.parse_args(argv)
    figures = measure(args.clones, args.events, args.rounds, args.seed, args.keep,
                      say=lambda text: print(text, file=sys.stderr))
    for key, value in figures.items():
        print(f"{key:15} {value}")
    met = met_targets(figures)
    print(f"identical, none lost or doubled, verify clean, merge part < {TARGET_SECONDS:g} s (median): "
          f"{'met' if met else 'NOT met'}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
