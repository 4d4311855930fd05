"""The git merge driver on two long logs: time and peak memory.

    python -m benchmarks.merge [--events 100000] [--side 1000] [--keep DIR]

Writes a shared history in the real line format (sessions drawn by `benchmarks.fold`'s
generator), then two branches that each add `--side` more sessions (transactions) to it,
so each log holds about `--events` events. Then runs `playbook merge-driver` on them
in a fresh process, as git does, and reports its time (wall, and CPU, which a busy
machine disturbs less: the target is judged on it) and peak RSS (from /proc),
with the merged log checked: it reads whole, and merging it again changes nothing.
"""

from __future__ import annotations

import argparse
import copy
import random
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import msgspec

from benchmarks.fold import Generator
from eventlog.events import TransactionCommitted
from eventlog.evolve import apply
from eventlog.store import encode_line

TARGET_SECONDS, TARGET_MB = 2.0, 200.0

_CHILD = """
import sys, time
from playbook.commands.merging import merge_driver
code = merge_driver(*sys.argv[1:5])
took = time.process_time()  # the whole process, imports included: CPU time, which a busy machine disturbs less
try:
    with open("/proc/self/status") as status:
        kib = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
except (OSError, StopIteration):
    import resource
    kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(code, took, kib)
"""


class Writer:
    """Appends generated sessions to a log file, continuing its sequence, chain and clock."""

    def __init__(self, generator: Generator, seed: int) -> None:
        self.generator = generator
        self.rng = random.Random(seed)
        self.seq = 0
        self.running = 0
        self.clock = datetime(2026, 1, 1, tzinfo=timezone.utc)
        self.events = 0

    def fork(self, seed: int) -> Writer:
        other = copy.deepcopy(self)
        other.rng = random.Random(seed)
        other.generator.rng = random.Random(seed + 1)
        return other

    def write(self, path: Path, *, events: int | None = None, transactions: int | None = None) -> int:
        """Append sessions until `events` events (or `transactions` transactions) are written; returns how many."""
        gen, state, lines, written = self.generator, self.generator.state, [], 0
        with open(path, "ab") as out:
            while (events is not None and written < events) or (transactions is not None and transactions > 0):
                decided = gen.decide()
                if events is not None:
                    decided = decided[: events - written]
                if not decided:
                    continue
                tx = f"{self.rng.getrandbits(64):016x}"
                self.clock += timedelta(seconds=self.rng.randint(30, 3600), microseconds=self.rng.randint(0, 999_999))
                at = self.clock.isoformat(timespec="microseconds")
                for event in decided:
                    self.seq += 1
                    event = msgspec.structs.replace(event, seq=self.seq, tx=tx, at=at)
                    apply(state, event)
                    line, self.running = encode_line(event, self.running)
                    lines.append(line)
                gen.observe(decided)
                self.seq += 1
                commit = TransactionCommitted(seq=self.seq, tx=tx, at=at, events=len(decided), source="hook:SessionEnd",
                                              session=f"{self.rng.getrandbits(128):032x}", model="claude-sonnet-5-5")
                state.seq = self.seq
                line, self.running = encode_line(commit, self.running)
                lines.append(line)
                written += len(decided)
                if transactions is not None:
                    transactions -= 1
                if len(lines) >= 8192:
                    out.write(b"".join(lines))
                    lines.clear()
            out.write(b"".join(lines))
        self.events += written
        return written


def prepare(root: Path, events: int, side: int, seed: int = 5) -> dict[str, object]:
    """ancestor.jsonl, ours.jsonl and theirs.jsonl under `root`: each side adds `side` transactions."""
    base = Writer(Generator(seed=seed, live=300), seed)
    ancestor = root / "ancestor.jsonl"
    ancestor.unlink(missing_ok=True)
    # Each side's sessions add about 6 events each: the shared part is the rest of `events`.
    base.write(ancestor, events=max(events - side * 6, 1))
    counts = {}
    for number, name in enumerate(("ours", "theirs")):
        path = root / f"{name}.jsonl"
        shutil.copyfile(ancestor, path)
        branch = base.fork(seed * 100 + number)
        branch.write(path, transactions=side)
        counts[name] = branch.events
    return {"shared_events": base.events, "ours_events": counts["ours"], "theirs_events": counts["theirs"],
            "bytes": (root / "ours.jsonl").stat().st_size}


def run_driver(root: Path) -> tuple[int, float, float, float]:
    """(exit status, wall seconds of the process, its CPU seconds, peak RSS MB) of the driver run as git runs it."""
    merged = root / "merged.jsonl"
    shutil.copyfile(root / "ours.jsonl", merged)  # git hands the driver a copy of ours to overwrite
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-P", "-c", _CHILD, str(root / "ancestor.jsonl"), str(merged),
                           str(root / "theirs.jsonl"), ".claude/playbook.events.jsonl"],
                          capture_output=True, text=True, check=True)
    wall = time.perf_counter() - started
    code, cpu, kib = done.stdout.split()
    return int(code), wall, float(cpu), int(kib) * 1024 / 1e6


def check(root: Path) -> str:
    """The merged log reads whole, and merging either side into it again changes nothing."""
    from projections.merge import merge_logs
    from projections.verify import verify
    from projections.repository import PlaybookRepository

    claude = root / "check" / ".claude"
    claude.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(root / "merged.jsonl", claude / "playbook.events.jsonl")
    repo = PlaybookRepository(claude)
    repo.rebuild()
    report = verify(repo)
    if not report.ok:
        return f"verify: {report.problems[0].what}"
    for side in ("ours", "theirs"):
        again = merge_logs(root / "merged.jsonl", root / f"{side}.jsonl", root / "ancestor.jsonl")
        if not again.unchanged:
            return f"merging {side} again changed the log"
    return f"ok: {report.transactions:,} transactions, seq {report.seq:,}"


def measure(events: int = 100_000, side: int = 1000, keep: Path | None = None, say=print) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="bench-merge-") as tmp:
        root = keep or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        say(f"writing two logs of about {events:,} events, {side:,} new transactions on each side")
        sizes = prepare(root, events, side)
        say("running the merge driver")
        code, wall, cpu, peak = run_driver(root)
        verdict = check(root) if code == 0 else f"driver exit status {code}"
        return {**sizes, "code": code, "wall": wall, "cpu": cpu, "peak_mb": peak, "check": verdict}


def met_targets(figures: dict[str, object]) -> bool:
    """The driver succeeded, its merged log checks out, and it stayed within the time (CPU) and memory targets."""
    return (figures["code"] == 0 and str(figures["check"]).startswith("ok")
            and float(figures["cpu"]) < TARGET_SECONDS and float(figures["peak_mb"]) < TARGET_MB)  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--side", type=int, default=1000)
    parser.add_argument("--keep", type=Path)
    args = parser.parse_args(argv)
    figures = measure(args.events, args.side, args.keep, say=lambda text: print(text, file=sys.stderr))
    for key, value in figures.items():
        print(f"{key:15} {value}")
    met = met_targets(figures)
    print(f"targets < {TARGET_SECONDS:g} s and < {TARGET_MB:g} MB: {'met' if met else 'NOT met'}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
