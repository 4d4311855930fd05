"""Time travel and audit on a long log: `show --at`, `history` and `log -n 20` on 1M events.

    python -m benchmarks.timeline [--events 1000000] [--keep DIR]

Generates a log in the real line format (transactions of ten events, mostly ratings,
with one entry, pat-001, rated about every hundredth transaction so its history has
about a thousand events, the others about one rating in 300 each (RATED), and a chain of
merges: every MERGE_EVERY transactions the chain's newest entry and one added half that many transactions before are merged into
a new one, so `history` of the last follows every merge back), then times each query in a fresh process (peak memory from
/proc) with and without checkpoints. Prints a table; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from eventlog.events import KeyPointAdded, KeyPointEvaluated, KeyPointsMerged, TransactionCommitted
from eventlog.store import encode_line
from projections.repository import PlaybookRepository

SECTIONS = ("PATTERNS & APPROACHES", "MISTAKES TO AVOID", "USER PREFERENCES", "PROJECT CONTEXT", "OTHERS")
SLUGS = ("pat", "mis", "pref", "ctx", "oth")
MERGE_EVERY = 1800
CHAIN_END = "chain-end"
RATED = "mis-001"
"""An entry added at the start and never merged: about one rating in 300 (the entries alive) is one of its."""
RAW_DECODE = "raw decode of every line (msgspec, full records)"
FOLD = "fold of the whole log (decode into views, chain, apply)"
SHA = "SHA-256 of every byte, one hash (the chain's floor)"
"""Where a whole-log check's floor is, beside the raw decode: the fold it builds on, and hashing alone."""
"""What `history` is asked about to follow the merge chain: the name of the chain's newest entry."""


def chain_end(log: Path) -> str:
    """The name of the merge chain's newest entry, which `generate` writes beside the log."""
    return (log.parent / CHAIN_END).read_text()


def generate(path: Path, events: int, seed: int = 1) -> int:
    """Write a log of about `events` events; returns the seq of the last line. The merge chain's newest
    entry is named in the file CHAIN_END beside the log."""
    rng = random.Random(seed)
    clock = datetime(2026, 1, 1, tzinfo=timezone.utc)
    seq, running = 0, 0
    counters: dict[str, list[int]] = {}
    names: list[str] = []
    issued = {slug: 0 for slug in SLUGS}
    chain = fresh = ""
    written = transactions = 0
    buffer: list[bytes] = []

    def new_name(slug: str) -> str:
        issued[slug] += 1
        return f"{slug}-{issued[slug]:03d}"

    with open(path, "wb") as handle:
        while written < events:
            tx = f"{rng.getrandbits(64):016x}"
            clock += timedelta(seconds=rng.randint(30, 600))
            at = clock.isoformat(timespec="microseconds")
            transactions += 1
            batch: list[tuple[str, str, str]] = []
            if len(names) < 300:
                for _ in range(10):
                    slug = SLUGS[len(names) % 5]
                    name = new_name(slug)
                    names.append(name)
                    counters[name] = [0, 0]
                    batch.append(("add", name, SECTIONS[SLUGS.index(slug)]))
            elif transactions % MERGE_EVERY == MERGE_EVERY // 2:  # an entry that the next merge takes in
                fresh = new_name("mis")
                names.append(fresh)
                counters[fresh] = [0, 0]
                batch.append(("add", fresh, SECTIONS[1]))
            elif transactions % MERGE_EVERY == 0 and fresh and not chain:
                chain = fresh  # the chain begins with the first such entry
                continue
            elif transactions % MERGE_EVERY == 0 and fresh:
                sources = [chain, fresh]
                chain = new_name("oth")
                for source in sources:
                    names.remove(source)
                names.append(chain)
                counters[chain] = [sum(counters[s][0] for s in sources), sum(counters[s][1] for s in sources)]
                batch.append(("merge", chain, ",".join(sources)))
            else:
                hot = rng.random() < 0.01
                for index in range(10):
                    name = "pat-001" if hot and index == 0 else rng.choice(names[1:])
                    batch.append(("rate", name, "helpful" if rng.random() < 0.7 else "harmful"))
            for kind, name, extra in batch:
                seq += 1
                record: KeyPointAdded | KeyPointEvaluated | KeyPointsMerged
                if kind == "add":
                    record = KeyPointAdded(seq=seq, tx=tx, at=at, section=extra, name=name,
                                           text=f"key point {name}: keep functions small and named", helpful=0,
                                           harmful=0, origin="operation")
                elif kind == "merge":
                    helpful, harmful = counters[name]
                    record = KeyPointsMerged(seq=seq, tx=tx, at=at, section="OTHERS", name=name,
                                             text=f"key point {name}: merged", sources=extra.split(","),
                                             helpful=helpful, harmful=harmful)
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
    (path.parent / CHAIN_END).write_text(chain or "pat-001")
    return seq


QUERY = r"""
import contextlib, os, sys, time
started = time.perf_counter()
what = sys.argv[2:]
if what == ["raw"]:  # one plain pass over the file's bytes: the floor of any query that reads it all
    with open(os.path.join(sys.argv[1], "playbook.events.jsonl"), "rb") as handle:
        result = sum(chunk.count(b"\\n") for chunk in iter(lambda: handle.read(1 << 20), b""))
elif what == ["decode"]:  # msgspec decoding every line into its record, nothing else: what a whole-log check is held to
    from eventlog.wholelines import WholeLines
    from eventlog.registry import record_decoder
    with open(os.path.join(sys.argv[1], "playbook.events.jsonl"), "rb", buffering=0) as handle:
        result = 0
        for buffer, size in WholeLines(handle):
            with memoryview(buffer) as view:
                result += len(record_decoder().decode_lines(view[:size]))
elif what == ["sha"]:  # SHA-256 of every byte as the fold reads it, one hash: the chain's floor, no work per transaction
    import hashlib
    from eventlog.wholelines import WholeLines
    digest = hashlib.sha256()
    with open(os.path.join(sys.argv[1], "playbook.events.jsonl"), "rb", buffering=0) as handle:
        for buffer, size in WholeLines(handle):
            with memoryview(buffer) as view:
                digest.update(view[:size])
    result = digest.hexdigest()[:8]
elif what == ["fold"]:  # the store's fold of the whole log (decode, chain, apply): what verify and stats build on
    from pathlib import Path
    from eventlog.domain import PlaybookState
    from eventlog.store import fold_log
    result = fold_log(Path(sys.argv[1], "playbook.events.jsonl"), PlaybookState())[1].seq
else:
    from playbook.commands.cli import main
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        code = main([*what, "--project", os.path.dirname(sys.argv[1])])
    assert code == 0, code
    result = code
elapsed = time.perf_counter() - started
import resource  # CPU of this process and of any child it waited for (a whole-log check's chain on the other core)
cpu = sum(u.ru_utime + u.ru_stime for u in map(resource.getrusage, (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)))
peak = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM")) / 1024
print(f"{elapsed:.3f} {peak:.1f} {result} {cpu:.3f}")
"""


def run(claude_dir: Path, *args: str) -> tuple[float, float, str, float]:
    """Seconds (imports included), peak RSS, result and CPU seconds (its children's included) of one `playbook`
    command (or "raw") in a fresh process."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # as installed: bytecode cached
    out = subprocess.run([sys.executable, "-c", QUERY, str(claude_dir), *args], capture_output=True, text=True,
                         check=True, env=env).stdout.split()
    return float(out[0]), float(out[1]), out[2], float(out[3])


def measure(events: int, keep: str | None = None, say=print) -> list[tuple[str, tuple[float, float, str, float]]]:
    """Generate a log of `events` events and time each query in a fresh process:
    (name, (seconds, peak MB, result, CPU seconds))."""
    with tempfile.TemporaryDirectory(prefix="bench-timeline-") as tmp:
        claude_dir = Path(keep or tmp) / ".claude"
        claude_dir.mkdir(parents=True, exist_ok=True)
        log = claude_dir / "playbook.events.jsonl"
        started = time.perf_counter()
        last = generate(log, events)
        end = chain_end(log)
        say(f"generated {events:,} events ({last:,} lines, {log.stat().st_size / 2**20:.0f} MiB) "
            f"in {time.perf_counter() - started:.1f} s")
        tenth = last // 10
        run(claude_dir, "log", "-n", "1")  # bytecode written once, as a first run after installing does
        rows = [("at (middle), no checkpoints at all", run(claude_dir, "at", str(last // 2)))]
        started = time.perf_counter()
        PlaybookRepository(claude_dir).rebuild()  # what appends and rebuilds leave behind: checkpoints
        say(f"playbook rebuild (snapshot and checkpoints): {time.perf_counter() - started:.1f} s")
        merges = (events // 10) // MERGE_EVERY
        rows += [("at (a tenth in)", run(claude_dir, "at", str(tenth))),
                 ("at (a third in)", run(claude_dir, "at", str(last // 3))),
                 ("diff (three tenths to seven tenths)", run(claude_dir, "diff", str(3 * tenth), str(7 * tenth))),
                 ("history pat-001 (about 1,000 ratings)", run(claude_dir, "history", "pat-001")),
                 (f"history {RATED} (about {events // 300:,} ratings, added first)",
                  run(claude_dir, "history", RATED)),
                 (f"history {end} (a chain of about {merges} merges followed)", run(claude_dir, "history", end)),
                 ("log -n 20", run(claude_dir, "log", "-n", "20"))]
        for _ in range(3):  # the whole-log checks beside a raw decode, interleaved: their ratio is the figure
            rows += [("verify", run(claude_dir, "verify")), ("stats", run(claude_dir, "stats")),
                     (RAW_DECODE, run(claude_dir, "decode")), (FOLD, run(claude_dir, "fold")),
                     (SHA, run(claude_dir, "sha"))]
        rows.append(("a plain read of the whole file", run(claude_dir, "raw")))
        return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keep", help="generate into this directory and keep it")
    args = parser.parse_args(argv)
    for name, (seconds, peak, result, cpu) in measure(args.events, args.keep):
        verdict = "met" if seconds < 1 and peak < 200 else "NOT met"
        print(f"  {name:<46} {seconds * 1000:8.0f} ms (CPU {cpu * 1000:6.0f} ms)   peak {peak:6.1f} MB   ({result})  "
              f"target <1 s, <200 MB: {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())


SHOW = r"""
import contextlib, io, sys, time
started = time.perf_counter()
from playbook.commands.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    main(["show", "--project", sys.argv[1]])
print(f"{time.perf_counter() - started:.4f}")
"""
LAUNCHER = Path(__file__).resolve().parents[1] / "playbook" / "quick" / "launch.py"


def measure_show(size: int = 5000, runs: int = 10) -> dict[str, float]:
    """Medians (seconds) of `playbook show` on a `size`-key-point playbook, each run a fresh process, interleaved:
    as the plugin's command runs it (`python -I -S playbook/quick/launch.py show`), as `python -m playbook show`
    (through site), beside `python -I -S -c pass` (bare) and `python -c pass`; and the full command's own work
    in its process (`playbook.commands.cli.main`, imports included: what a playbook.json that is not current costs).

    Those print the text the first `show` kept (`playbook.quick.show_text`); `rendered` is the launcher rendering it
    from a current playbook.json (no text kept yet). After one more append, a large playbook.json lags the log by
    a short tail: `first_after_append` is the show that then folds the tail (`playbook.quick.folded_show`) and keeps
    its text (one sample per run, each after an append of its own), `lagging` the shows after it."""
    import statistics

    from benchmarks.lean import seed_project
    from eventlog.decide import ApplyOperations
    from eventlog.events import Cause
    from playbook.quick import quick_show, show_text

    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

    def took(command: list[str]) -> tuple[float, str]:
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
        return time.perf_counter() - started, done.stdout

    with tempfile.TemporaryDirectory(prefix="bench-show-") as tmp:
        project = Path(tmp) / "project"
        repo = seed_project(project, size)
        kept = project / ".claude" / show_text.SHOW_NAME
        commands = {"launcher": [sys.executable, "-I", "-S", str(LAUNCHER), "show", "--project", str(project)],
                    "module": [sys.executable, "-m", "playbook", "show", "--project", str(project)],
                    "bare": [sys.executable, "-I", "-S", "-c", "pass"],
                    "site": [sys.executable, "-c", "pass"],
                    "cli": [sys.executable, "-c", SHOW, str(project)]}
        samples: dict[str, list[float]] = {name: [] for name in (*commands, "rendered")}
        inside: list[float] = []
        shown = took(commands["launcher"])[1]
        assert shown == took(commands["module"])[1] and f"all{size:>26}" in shown, "show printed another playbook"
        for index in range(runs + 1):
            for name, command in commands.items():
                seconds, out = took(command)
                if index:  # the first run writes the bytecode
                    samples[name].append(seconds)
                    if name == "cli":
                        inside.append(float(out.split()[-1]))
            kept.unlink(missing_ok=True)
            seconds, out = took(commands["launcher"])
            assert out == shown, "show rendered another text than the one it kept"
            if index:
                samples["rendered"].append(seconds)
        # One append more: a large playbook.json may then lag the log by a short tail (the reader folds it),
        # and the first show runs the full command, which keeps its text for the next ones.
        first, behind = [], []
        lagging = True
        for index in range(runs):
            repo.append([ApplyOperations([{"type": "ADD", "text": f"one more, number {index}"}])],
                        Cause(source="benchmark"))
            lagging = lagging and quick_show.current_snapshot(str(project)) is None
            seconds, out = took(commands["launcher"])
            assert f"one more, number {index}" in out, "show printed a text kept before the append"
            first.append(seconds)
            behind.append(took(commands["launcher"])[0])
    figures = {name: statistics.median(times) for name, times in samples.items()}
    return {"size": size, **figures, "inside": statistics.median(inside), "first_after_append": statistics.median(first),
            "lagging": statistics.median(behind) if lagging else None}
