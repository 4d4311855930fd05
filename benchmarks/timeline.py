"""Time travel and audit on a long log: `show --at`, `history` and `log -n 20` on 1M events.

    python -m benchmarks.timeline [--events 1000000] [--keep DIR]

Generates a log in the real line format (transactions of ten events, mostly ratings,
with one entry, pat-001, rated about every hundredth transaction so its history has
about a thousand events), then times each query in a fresh process (peak memory from
/proc) with and without checkpoints. Prints a table; asserts nothing.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from eventlog.events import KeyPointAdded, KeyPointEvaluated, TransactionCommitted
from eventlog.store import encode_line
from projections.repository import PlaybookRepository

SECTIONS = ("PATTERNS & APPROACHES", "MISTAKES TO AVOID", "USER PREFERENCES", "PROJECT CONTEXT", "OTHERS")
SLUGS = ("pat", "mis", "pref", "ctx", "oth")


def generate(path: Path, events: int, seed: int = 1) -> int:
    """Write a log of about `events` events; returns the seq of the last line."""
    rng = random.Random(seed)
    clock = datetime(2026, 1, 1, tzinfo=timezone.utc)
    seq, running = 0, 0
    counters: dict[str, list[int]] = {}
    names: list[str] = []
    written = 0
    buffer: list[bytes] = []
    with open(path, "wb") as handle:
        while written < events:
            tx = f"{rng.getrandbits(64):016x}"
            clock += timedelta(seconds=rng.randint(30, 600))
            at = clock.isoformat(timespec="microseconds")
            batch = []
            if len(names) < 300:
                for _ in range(10):
                    slug = SLUGS[len(names) % 5]
                    name = f"{slug}-{len([n for n in names if n.startswith(slug)]) + 1:03d}"
                    names.append(name)
                    counters[name] = [0, 0]
                    batch.append(("add", name, SECTIONS[SLUGS.index(slug)]))
            else:
                hot = rng.random() < 0.01
                for index in range(10):
                    name = "pat-001" if hot and index == 0 else rng.choice(names[1:])
                    batch.append(("rate", name, "helpful" if rng.random() < 0.7 else "harmful"))
            for kind, name, extra in batch:
                seq += 1
                if kind == "add":
                    record = KeyPointAdded(seq=seq, tx=tx, at=at, section=extra, name=name,
                                           text=f"key point {name}: keep functions small and named", helpful=0,
                                           harmful=0, origin="operation")
                else:
                    counts = counters[name]
                    counts[0 if extra == "helpful" else 1] += 1
                    record = KeyPointEvaluated(seq=seq, tx=tx, at=at, name=name, rating=extra, helpful=counts[0],
                                               harmful=counts[1], rationale="it was applied in this session")
                line, running = encode_line(record, running)
                buffer.append(line)
            seq += 1
            line, running = encode_line(TransactionCommitted(seq=seq, tx=tx, at=at, events=len(batch),
                                                             source="hook:SessionEnd", session=f"s{seq}",
                                                             model="claude-sonnet-5-5"), running)
            buffer.append(line)
            written += len(batch)
            if len(buffer) > 20_000:
                handle.write(b"".join(buffer))
                buffer.clear()
        handle.write(b"".join(buffer))
    return seq


QUERY = r"""
import sys, time
from pathlib import Path
from projections.repository import PlaybookRepository
from projections.timeline import Timeline
repo = PlaybookRepository(Path(sys.argv[1]))
what = sys.argv[2]
started = time.perf_counter()
timeline = Timeline(repo)
if what == "show-at":
    state = timeline.state_at(timeline.resolve(sys.argv[3]))
    result = sum(len(e) for e in state.sections.values())
elif what == "history":
    result = len(timeline.history("pat-001"))
else:
    result = len(timeline.newest(20))
elapsed = time.perf_counter() - started
peak = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM")) / 1024
print(f"{elapsed:.3f} {peak:.1f} {result}")
"""


def run(claude_dir: Path, *args: str) -> tuple[float, float, str]:
    out = subprocess.run([sys.executable, "-c", QUERY, str(claude_dir), *args], capture_output=True, text=True,
                         check=True).stdout.split()
    return float(out[0]), float(out[1]), out[2]


def measure(events: int, keep: str | None = None, say=print) -> list[tuple[str, tuple[float, float, str]]]:
    """Generate a log of `events` events and time each query in a fresh process: (name, (seconds, peak MB, result))."""
    with tempfile.TemporaryDirectory(prefix="bench-timeline-") as tmp:
        claude_dir = Path(keep or tmp) / ".claude"
        claude_dir.mkdir(parents=True, exist_ok=True)
        log = claude_dir / "playbook.events.jsonl"
        started = time.perf_counter()
        last = generate(log, events)
        say(f"generated {events:,} events ({last:,} lines, {log.stat().st_size / 2**20:.0f} MiB) "
            f"in {time.perf_counter() - started:.1f} s")
        middle = str(last // 2)
        rows = [("show --at (middle), no checkpoints at all", run(claude_dir, "show-at", middle))]
        started = time.perf_counter()
        PlaybookRepository(claude_dir).rebuild()  # what appends and rebuilds leave behind: checkpoints
        say(f"playbook rebuild (snapshot and checkpoints): {time.perf_counter() - started:.1f} s")
        rows += [("show --at (middle), with checkpoints", run(claude_dir, "show-at", middle)),
                 ("show --at (a third in), with checkpoints", run(claude_dir, "show-at", str(last // 3))),
                 ("history pat-001", run(claude_dir, "history")),
                 ("log -n 20", run(claude_dir, "newest"))]
        return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keep", help="generate into this directory and keep it")
    args = parser.parse_args(argv)
    for name, (seconds, peak, result) in measure(args.events, args.keep):
        verdict = "met" if seconds < 1 and peak < 200 else "NOT met"
        print(f"  {name:<46} {seconds * 1000:8.0f} ms   peak {peak:6.1f} MB   ({result})  target <1 s, <200 MB: {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
