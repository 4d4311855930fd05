"""Speed and memory figures for the log: fold throughput, peak memory, append latency, freshness checks.

    python -m benchmarks.fold [--sizes 100000,1000000] [--quick] [--tmpdir DIR]

Prints a table; asserts nothing about timing. Logs are generated in a temporary
directory (removed afterwards) with the real line format: records stamped with
seq / tx / at as `JsonlEventStore._write` stamps them, each line chained with
`encode_line`, each transaction closed by its `TransactionCommitted` line.

The generator plays sessions of a reflector and a curator against a playbook of a
few hundred live entries: each transaction is the events `decide_all` returns for
`[ApplyOperations(ops), Evaluate(ratings), Prune()]`, as `update_playbook_data`
issues them. To keep 1M events quick, decide runs on a scratch state holding only
the entries the commands name (plus `high_water`, which is all `next_name` needs
beyond them); with `validate=True` every transaction is also decided against the
full state and the two must be equal, which the smoke test checks.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import msgspec

from eventlog.decide import ApplyOperations, Command, Evaluate, Prune, decide_all
from eventlog.domain import SECTION_SLUGS, PlaybookState
from eventlog.events import Cause, Event, KeyPointAdded, KeyPointDeleted, KeyPointPruned, KeyPointsMerged
from eventlog.events import TransactionCommitted
from eventlog.evolve import apply
from eventlog.registry import AnyRecord
from eventlog.store import WholeLines, encode_line, fold_decoder, fold_log

SECTIONS = tuple(SECTION_SLUGS)
SECTION_WEIGHTS = (0.34, 0.30, 0.10, 0.16, 0.10)

_VERBS = ("Prefer", "Avoid", "Always run", "Check", "Use", "Never hand-edit", "Document", "Pin", "Validate",
          "Keep", "Split", "Mock", "Read", "Re-run", "Name")
_OBJECTS = ("the test suite", "type hints on public functions", "small focused commits", "msgspec structs",
            "the lock file", "async fixtures", "relative imports", "the public API", "environment variables",
            "retry loops", "the migration scripts", "generated files", "the CI configuration", "log levels",
            "database transactions", "feature flags")
_CONTEXTS = ("before opening a pull request", "when touching the storage layer", "in hook scripts",
             "for CLI entry points", "when the user asks for a refactor", "after a dependency bump",
             "while a migration is pending", "in code that runs on every request", "when tests are flaky",
             "before answering questions about the build")
_RATIONALES = ("it prevented a failing build", "the user corrected this twice", "it was irrelevant to this task",
               "following it caused a wrong edit", "it saved a round trip")
_MODELS = ("claude-sonnet-4-5", "claude-opus-4-1", "claude-haiku-4-5")


class Generator:
    """Sessions against a running state: `commands()` draws a session, `decide()` turns it into events.

    The caller stamps the events and applies them to `state` (as the store does), then calls `observe`.
    """

    def __init__(self, seed: int = 0, live: int = 300, validate: bool = False) -> None:
        self.rng = random.Random(seed)
        self.state = PlaybookState()
        self.live = live
        self.validate = validate
        self.bad: dict[str, bool] = {}  # hidden quality of each live entry: bad ones collect harmful ratings
        self.issued = 0

    def _text(self) -> str:
        rng = self.rng
        self.issued += 1
        return f"{rng.choice(_VERBS)} {rng.choice(_OBJECTS)} {rng.choice(_CONTEXTS)} (session note {self.issued})"

    def _section(self) -> str:
        return self.rng.choices(SECTIONS, SECTION_WEIGHTS)[0]

    def _add(self) -> dict[str, Any]:
        return {"type": "ADD", "text": self._text(), "section": self._section()}

    def commands(self) -> tuple[list[Command], set[str]]:
        """One session's commands, and the names they touch (what decide needs to see)."""
        rng, names = self.rng, list(self.state.where)
        ops: list[Any] = []
        evals: list[dict[str, Any]] = []
        touched: set[str] = set()
        if len(names) < self.live * 0.8:  # warm-up: the curator fills an empty playbook
            ops = [self._add() for _ in range(10)]
            picked = rng.sample(names, min(len(names), rng.randint(0, 4)))
            it = iter(picked)
        else:
            n_add = rng.choice((0, 1, 1, 2, 2, 3))
            n_merge = 1 if rng.random() < 0.25 else 0
            n_update = 1 if rng.random() < 0.5 else 0
            mean_delete = max(0.0, n_add - n_merge - 0.25 + (len(names) - self.live) / 25)
            n_delete = min(4, int(mean_delete) + (rng.random() < mean_delete % 1))
            n_eval = rng.randint(3, 8)
            merge_size = rng.choice((2, 2, 3))
            picked = rng.sample(names, n_update + n_delete + n_merge * merge_size + n_eval)
            it = iter(picked)
            ops = [self._add() for _ in range(n_add)]
            if rng.random() < 0.04:  # the curator proposes something already in the playbook
                existing = rng.choice(names)
                touched.add(existing)
                ops.append({"type": "ADD", "text": self.state.get(existing).text, "section": self._section()})
            if rng.random() < 0.03:  # a section name that is not one of the five
                ops.append({"type": "ADD", "text": self._text(), "section": "Testing tips"})
            for _ in range(n_update):
                ops.append({"type": "UPDATE", "target_id": next(it), "text": self._text()})
            for _ in range(n_merge):
                ops.append({"type": "MERGE", "source_ids": [next(it) for _ in range(merge_size)],
                            "merged_text": self._text(), "section": self._section()})
            for _ in range(n_delete):
                ops.append({"type": "DELETE", "target_id": next(it), "reason": "outdated"})
            if rng.random() < 0.03:
                ops.append({"type": "REPLACE", "target_id": names[0]})  # unknown type: skipped
            if rng.random() < 0.03:
                ops.append({"type": "DELETE", "target_id": "pat-000"})  # unknown id: skipped
            rng.shuffle(ops)
            del ops[10:]
            if rng.random() < 0.12:
                evals.append({"name": f"kpt_{rng.randint(1, 999)}", "rating": "helpful"})  # unknown id: skipped
        for name in it:
            bad = self.bad.get(name, False)
            roll = rng.random()
            rating = ("harmful" if roll < 0.6 else "neutral" if roll < 0.85 else "helpful") if bad else (
                "helpful" if roll < 0.55 else "neutral" if roll < 0.9 else "harmful")
            item: dict[str, Any] = {"name": name, "rating": rating}
            if rng.random() < 0.3:
                item["rationale"] = rng.choice(_RATIONALES)
            evals.append(item)
        touched.update(picked)
        return [ApplyOperations(ops), Evaluate(evals), Prune()], touched

    def _scratch(self, touched: set[str]) -> PlaybookState:
        """The running state cut down to `touched` entries, in the same order, with the same high water."""
        full = self.state
        scratch = PlaybookState(version=full.version, last_updated=full.last_updated,
                                high_water=full.high_water, seq=full.seq)
        for section, entries in full.sections.items():
            kept = scratch.sections[section]
            for name in entries:
                if name in touched:
                    kept[name] = entries[name]
                    scratch.where[name] = section
        return scratch

    def decide(self) -> list[Event]:
        """The events of one session (unstamped). decide_all copies the state it is given: nothing here changes."""
        commands, touched = self.commands()
        events = decide_all(self._scratch(touched), commands)
        if self.validate:
            full = decide_all(self.state, commands)
            if full != events:
                raise AssertionError(f"scratch decide differs from full decide:\n{events}\n{full}")
        return events

    def observe(self, events: list[Event]) -> None:
        """Keep the hidden quality of entries in step with events already applied to `state`."""
        for event in events:
            if isinstance(event, (KeyPointAdded, KeyPointsMerged)):
                self.bad[event.name] = self.rng.random() < 0.25
            if isinstance(event, KeyPointsMerged):
                for source in event.sources:
                    self.bad.pop(source, None)
            elif isinstance(event, (KeyPointDeleted, KeyPointPruned)):
                self.bad.pop(event.name, None)


class LogInfo(msgspec.Struct):
    path: str
    events: int
    lines: int
    transactions: int
    bytes: int
    seconds: float
    live: int
    mix: dict[str, int]


def write_log(path: Path, n_events: int, *, seed: int = 0, live: int = 300, validate: bool = False,
              keep: list[Event | TransactionCommitted] | None = None,
              generator: Generator | None = None) -> LogInfo:
    """Write a log of exactly `n_events` events (plus one commit line per transaction) to `path`.

    `keep`, when given, receives every record as written. The final state is `generator.state`.
    """
    started = time.perf_counter()
    gen = generator or Generator(seed=seed, live=live, validate=validate)
    rng = random.Random(seed + 1)
    clock = datetime(2025, 1, 1, tzinfo=timezone.utc)
    state, seq, previous, events, transactions, size = gen.state, 0, 0, 0, 0, 0
    mix: Counter[str] = Counter()
    buffer: list[bytes] = []
    with open(path, "wb") as out:
        while events < n_events:
            decided = gen.decide()[: n_events - events]
            if not decided:
                continue
            tx = f"{rng.getrandbits(64):016x}"
            clock += timedelta(seconds=rng.randint(30, 3600), microseconds=rng.randint(0, 999_999))
            at = clock.isoformat(timespec="microseconds")
            for event in decided:
                seq += 1
                event = msgspec.structs.replace(event, seq=seq, tx=tx, at=at)
                apply(state, event)
                line, previous = encode_line(event, previous)
                buffer.append(line)
                mix[type(event).__name__] += 1
                if keep is not None:
                    keep.append(event)
            gen.observe(decided)
            seq += 1
            commit = TransactionCommitted(
                seq=seq, tx=tx, at=at, events=len(decided), source=rng.choice(("session_end", "pre_compact")),
                session=f"{rng.getrandbits(128):032x}", model=rng.choice(_MODELS),
                analysis="reflector rated the key points it used; curator proposed changes",
            )
            state.seq = seq
            line, previous = encode_line(commit, previous)
            buffer.append(line)
            if keep is not None:
                keep.append(commit)
            events += len(decided)
            transactions += 1
            if len(buffer) >= 8192:
                size += out.write(b"".join(buffer))
                buffer.clear()
        size += out.write(b"".join(buffer))
    return LogInfo(path=str(path), events=events, lines=seq, transactions=transactions, bytes=size,
                   seconds=time.perf_counter() - started, live=len(state.where), mix=dict(mix))


# --- measurements -------------------------------------------------------------------------------


def fold_file(path: Path) -> PlaybookState:
    """The real read path: stream, verify the hash chain, group transactions, apply."""
    state, _position, torn = fold_log(path, PlaybookState())
    assert torn is None
    return state


def _decode_chunks(path: Path, decoder: msgspec.json.Decoder) -> int:
    count = 0
    with open(path, "rb", buffering=0) as handle:
        for buffer, size in WholeLines(handle):
            with memoryview(buffer) as view:
                chunk = view[:size]
                count += len(decoder.decode_lines(chunk))
                del chunk
    return count


def raw_decode_chunks(path: Path) -> int:
    """msgspec alone, every record whole, over the file read as the fold reads it (1 MiB chunks, one buffer)."""
    return _decode_chunks(path, msgspec.json.Decoder(AnyRecord))


def raw_decode_views(path: Path) -> int:
    """msgspec alone, into the fold's views (only the fields the fold reads), read as the fold reads it."""
    return _decode_chunks(path, fold_decoder())


def raw_decode_whole(path: Path) -> int:
    """msgspec alone, the whole file in one read and one decode_lines call (memory grows with the log)."""
    return len(msgspec.json.Decoder(AnyRecord).decode_lines(path.read_bytes()))


def raw_decode_lines(path: Path) -> int:
    """msgspec alone, one decode call per line."""
    decode = msgspec.json.Decoder(AnyRecord).decode
    count = 0
    with open(path, "rb") as handle:
        for line in handle:
            decode(line)
            count += 1
    return count


def sha256_chunks(path: Path) -> str:
    """SHA-256 of every byte, one hash, read as the fold reads it: the chain check's floor (no work per transaction)."""
    digest = hashlib.sha256()
    with open(path, "rb", buffering=0) as handle:
        for buffer, size in WholeLines(handle):
            with memoryview(buffer) as view:
                digest.update(view[:size])
    return digest.hexdigest()


RAW_DECODERS: dict[str, Callable[[Path], int]] = {
    "decode_lines, 1 MiB chunks (the fold's reader)": raw_decode_chunks,
    "decode_lines, whole file": raw_decode_whole,
    "decode, per line": raw_decode_lines,
}


def _timed(fn: Callable[[], Any]) -> tuple[float, float]:
    """(wall, CPU) seconds of one call. CPU time is less disturbed by other processes on a busy machine."""
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


# The child reports VmHWM (peak RSS of its own address space) when /proc has it. Its
# ru_maxrss is no good here: Linux carries the parent's peak into a child across
# fork + exec, so a child of this (large) process reports at least the parent's peak.
_CHILD = """
import resource, sys
from pathlib import Path
import eventlog.store
from eventlog.domain import PlaybookState
if sys.argv[1] != "-":
    state, position, torn = eventlog.store.fold_log(Path(sys.argv[1]), PlaybookState())
    assert torn is None and position.seq > 0
try:
    with open("/proc/self/status") as status:
        kib = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
except (OSError, StopIteration):
    kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(kib)
"""


def child_peak_rss_mb(path: Path | None) -> float:
    """Peak RSS (MB) of a fresh interpreter that imports eventlog and, given a path, folds it."""
    done = subprocess.run([sys.executable, "-c", _CHILD, str(path) if path else "-"],
                          capture_output=True, text=True, check=True)
    return int(done.stdout.strip()) * 1024 / 1e6  # KiB -> MB


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    rank = q / 100 * (len(ordered) - 1)
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def _many(fn: Callable[[], Any], n: int) -> list[float]:
    times = []
    for _ in range(n):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return times


def fsync_floor(directory: Path, n: int) -> list[float]:
    """Write 1.5 KB to a file and fsync it: the disk's floor under every append."""
    path = directory / "fsync-probe"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    payload = b"x" * 1500
    try:
        def once() -> None:
            os.write(fd, payload)
            os.fsync(fd)
        return _many(once, n)
    finally:
        os.close(fd)
        path.unlink()


def _ops(tag: str, count: int = 10) -> list[dict[str, Any]]:
    return [{"type": "ADD", "text": f"Benchmark tip {tag}-{j}: keep hooks fast and idempotent",
             "section": SECTIONS[j % len(SECTIONS)]} for j in range(count)]


def prepared_repository(claude_dir: Path, n_events: int, live: int, exact: int | None = None):
    """A project dir holding a generated log of `n_events` and a fresh snapshot (optionally exactly `exact` entries)."""
    from projections.repository import LOG_NAME, PlaybookRepository

    claude_dir.mkdir(parents=True)
    write_log(claude_dir / LOG_NAME, n_events, seed=7, live=live)
    repo = PlaybookRepository(claude_dir)
    repo.rebuild()
    if exact is not None:
        names = list(repo.current()[0].where)
        while len(names) > exact:
            doomed, names = names[: min(10, len(names) - exact)], names[min(10, len(names) - exact):]
            repo.append([ApplyOperations([{"type": "DELETE", "target_id": n} for n in doomed])], Cause(source="bench"))
        round_ = 0
        while len(names) < exact:
            ops = _ops(f"fill{round_}", min(10, exact - len(names)))
            round_ += 1
            committed = repo.append([ApplyOperations(ops)], Cause(source="bench"))
            names = list(committed.state.where)
    return repo


# --- the run ------------------------------------------------------------------------------------


class Table:
    def __init__(self) -> None:
        self.rows: list[tuple[str, str, str]] = []

    def section(self, title: str) -> None:
        self.rows.append((title, "", ""))
        print(title, file=sys.stderr, flush=True)

    def row(self, name: str, value: str, note: str = "") -> None:
        self.rows.append(("  " + name, value, note))
        print(f"  {name}: {value}  {note}", file=sys.stderr, flush=True)

    def render(self) -> str:
        w0 = max(len(r[0]) for r in self.rows if r[1])
        w1 = max(len(r[1]) for r in self.rows if r[1])
        lines = []
        for name, value, note in self.rows:
            if not value:
                lines.append(name)
            else:
                lines.append(f"{name:<{w0}}  {value:>{w1}}  {note}".rstrip())
        return "\n".join(lines)


def _rate(n: int, seconds: float) -> str:
    return f"{n / seconds:,.0f}"


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms"


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.0f} us"


def _short(type_name: str) -> str:
    return type_name.replace("KeyPoints", "").replace("KeyPoint", "").replace("Operation", "")


def bench_fold(table: Table, root: Path, size: int, reps: int, memory: bool) -> dict[str, Any]:
    """Adds its rows to `table`; returns the figures (events/s, ratio, peak MB when `memory`)."""
    path = root / f"log-{size}.jsonl"
    info = write_log(path, size)
    mix = ", ".join(f"{_short(k)} {v / info.events:.0%}" for k, v in sorted(info.mix.items(), key=lambda kv: -kv[1]))
    table.section(f"fold, {size:,} events ({info.lines:,} lines, {info.transactions:,} transactions, "
                  f"{info.bytes / 2**20:.0f} MiB, {info.live} live entries at the end)")
    table.row("generate (decide + stamp + encode_line)", f"{info.seconds:.1f} s",
              f"{_rate(info.events, info.seconds)} events/s; mix: {mix}")
    runs: dict[str, list[tuple[float, float]]] = {"fold": [], "views": [], "sha": [],
                                                  **{name: [] for name in RAW_DECODERS}}
    path.read_bytes()  # the page cache is warm for everyone alike
    reps = reps * 3 if size <= 200_000 else reps  # small logs are quick and noisier: more pairs
    for _ in range(reps):  # side by side, so the machine's noise hits all of them alike
        runs["fold"].append(_timed(lambda: fold_file(path)))
        for name, fn in RAW_DECODERS.items():
            runs[name].append(_timed(lambda fn=fn: fn(path)))
        runs["views"].append(_timed(lambda: raw_decode_views(path)))
        runs["sha"].append(_timed(lambda: sha256_chunks(path)))
    wall = {name: statistics.median(w for w, _c in times) for name, times in runs.items()}
    cpu = {name: statistics.median(c for _w, c in times) for name, times in runs.items()}
    best = min(RAW_DECODERS, key=wall.__getitem__)
    table.row("fold_log (stream + hash chain + apply)", f"{_rate(info.events, wall['fold'])} events/s",
              f"{wall['fold']:.2f} s wall, median of {reps}; CPU time: {_rate(info.events, cpu['fold'])} events/s")
    for name in RAW_DECODERS:
        table.row(f"raw msgspec, {name}", f"{_rate(info.events, wall[name])} events/s",
                  f"{wall[name]:.2f} s; CPU time: {_rate(info.events, cpu[name])} events/s"
                  + ("   <- baseline (fastest)" if name == best else ""))
    # The verdict is the median of the ratios of each pair, measured a second apart: on a
    # machine whose speed drifts during the run, that is steadier than a ratio of medians.
    paired = sorted(raw[0] / fold[0] for raw, fold in zip(runs[best], runs["fold"]))
    ratio, cpu_ratio = statistics.median(paired), statistics.median(
        raw[1] / fold[1] for raw, fold in zip(runs[best], runs["fold"]))
    table.row("fold / raw decode", f"{ratio:.2f}x",
              f"median of {reps} pairs, {paired[0]:.2f}x to {paired[-1]:.2f}x; ratio of the medians "
              f"{wall[best] / wall['fold']:.2f}x; CPU time {cpu_ratio:.2f}x; "
              f"target >= 0.5x: {'met' if ratio >= 0.5 else 'NOT met'}")
    views_ratio = wall["views"] / wall["fold"]
    table.row("raw msgspec, decode_lines into the fold's views", f"{_rate(info.events, wall['views'])} events/s",
              f"{wall['views']:.2f} s; only the fields the fold reads; fold / this: {views_ratio:.2f}x")
    # The fold's floor: decoding into its views and hashing every byte, with nothing else; raw decode / that
    # is the ratio a fold with a free apply and no work per transaction would reach.
    floor_ratio = wall[best] / (wall["views"] + wall["sha"])
    table.row("SHA-256 of every byte, one hash (the chain's floor)", f"{wall['sha'] * 1000:.0f} ms",
              f"{wall['sha'] / wall[best]:.2f}x the raw decode; raw decode / (views decode + this): {floor_ratio:.2f}x")
    figures: dict[str, Any] = {"events": info.events, "bytes": info.bytes, "transactions": info.transactions,
                               "fold_eps": info.events / wall["fold"], "raw_eps": info.events / wall[best],
                               "raw": best, "ratio": ratio, "cpu_ratio": cpu_ratio, "reps": reps,
                               "paired_low": paired[0], "paired_high": paired[-1], "views_ratio": views_ratio,
                               "sha_share": wall["sha"] / wall[best], "floor_ratio": floor_ratio}
    if memory:
        base = child_peak_rss_mb(None)
        peak = child_peak_rss_mb(path)
        table.row("peak RSS, fresh child that imports eventlog", f"{base:.1f} MB")
        table.row("peak RSS, fresh child that folds this log", f"{peak:.1f} MB",
                  f"the fold's own cost: {peak - base:+.1f} MB; target < 150 MB: {'met' if peak < 150 else 'NOT met'}")
        figures |= {"peak_mb": peak, "base_mb": base}
    path.unlink()
    return figures


def _append_10_adds(claude_dir: Path, tag: str, writer: Any = None) -> float:
    """Seconds for one real append of 10 ADD operations, by `writer` (a PlaybookRepository) when given, else by
    a repository object made for the call, as a hook does."""
    from projections.repository import PlaybookRepository

    ops = _ops(tag)
    started = time.perf_counter()
    repo = writer if writer is not None else PlaybookRepository(claude_dir)
    committed = repo.append([ApplyOperations(ops)], Cause(source="bench"))
    elapsed = time.perf_counter() - started
    assert committed is not None and len(committed.events) == 10
    return elapsed


def _count_fsyncs(fn: Callable[[], Any]) -> int:
    calls = 0
    real = os.fsync

    def counting(fd: int) -> None:
        nonlocal calls
        calls += 1
        real(fd)

    os.fsync = counting
    try:
        fn()
    finally:
        os.fsync = real
    return calls


def bench_append(table: Table, root: Path, appends: int, seed_events: int) -> dict[str, Any]:
    """Adds its rows to `table`; returns the figures in seconds (p50 / p99, steady and in a row)."""
    from eventlog.safefiles import write_file

    steady_dir, growing_dir = root / "steady" / ".claude", root / "growing" / ".claude"
    repo = prepared_repository(steady_dir, seed_events, live=300)
    growing_repo = prepared_repository(growing_dir, seed_events, live=300)
    entries = len(repo.current()[0].where)
    log_path, log_size = repo.store.path, repo.store.size()
    saved = {p: p.read_bytes() for p in steady_dir.iterdir()
             if p.is_file() and p != log_path and not p.name.endswith(".lock")}

    def reset() -> None:  # back to the prepared log and projections, durably, outside the timing
        os.truncate(log_path, log_size)
        fd = os.open(log_path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        for path, data in saved.items():
            write_file(path, data, path.parent)

    fsyncs = _count_fsyncs(lambda: _append_10_adds(steady_dir, "count"))
    reset()
    steady, growing, floor = [], [], []
    for index in range(appends):  # interleaved, so the disk's and the machine's noise hit all three alike
        steady.append(_append_10_adds(steady_dir, f"s{index}"))
        reset()
        growing.append(_append_10_adds(growing_dir, f"g{index}"))
        floor.extend(fsync_floor(root, 1))
    grown = len(growing_repo.current()[0].where)
    table.section(f"append, one transaction of 10 ADD operations via PlaybookRepository.append "
                  f"(log of {seed_events:,} events, {entries} entries)")
    table.row("append p50, steady state", _ms(_percentile(steady, 50)),
              f"{appends} appends, each on the same log and playbook (reset after each, untimed)")
    table.row("append p99, steady state", _ms(_percentile(steady, 99)), f"max {_ms(max(steady))}")
    quarter = max(appends // 4, 1)
    table.row("append p50, in a row", _ms(_percentile(growing, 50)),
              f"{appends} appends in a row: playbook {entries} -> {grown} entries; "
              f"first / last quarter p50 {_ms(statistics.median(growing[:quarter]))} / "
              f"{_ms(statistics.median(growing[-quarter:]))}")
    table.row("append p99, in a row", _ms(_percentile(growing, 99)), f"max {_ms(max(growing))}")
    table.row("write 1.5 KB + fsync, p50 (disk floor)", _ms(_percentile(floor, 50)),
              f"p99 {_ms(_percentile(floor, 99))}; an append calls fsync {fsyncs} times")
    return {"appends": appends, "entries": entries, "seed_events": seed_events, "fsyncs": fsyncs,
            "steady_p50": _percentile(steady, 50), "steady_p99": _percentile(steady, 99),
            "growing_p50": _percentile(growing, 50), "growing_p99": _percentile(growing, 99),
            "fsync_p50": _percentile(floor, 50), "fsync_p99": _percentile(floor, 99)}


APPEND_SCALE_RATIO = 2.0
"""Target: an append of 10 operations at 5,000 key points costs at most this many times the same at 50."""


def bench_append_scale(table: Table, root: Path, appends: int, small: int = 50, large: int = 5000,
                       run: int = 16) -> dict[str, Any]:
    """Adds its rows to `table`: p50 of a 10-ADD append at `large` key points beside the same at `small`.

    Appends alternate between the two projects, `run` in a row on each, then both go back to their
    prepared log and files (untimed): each timed append is one of a real sequence, so the rewrites of
    playbook.json that a large one spreads over several appends are among the figures, at their rate.
    Each project has one writer (a PlaybookRepository kept across its appends, as a learning cycle or a
    long-lived process keeps it); the first append after a reset finds the files changed under it and reads
    them again, as it would after another process's write."""
    from projections.repository import PlaybookRepository
    from eventlog.safefiles import write_file

    projects = {}
    for size in (small, large):
        claude_dir = root / f"scale-{size}" / ".claude"
        repo = prepared_repository(claude_dir, max(3 * size, 3000), live=size, exact=size)
        log_path = repo.store.path
        saved = {p: p.read_bytes() for p in claude_dir.iterdir()
                 if p.is_file() and p != log_path and not p.name.endswith(".lock")}
        projects[size] = (claude_dir, log_path, log_path.stat().st_size, saved)

    def reset(size: int) -> None:
        claude_dir, log_path, log_size, saved = projects[size]
        os.truncate(log_path, log_size)
        for path in list(claude_dir.iterdir()):
            if path.is_file() and path != log_path and path not in saved and not path.name.endswith(".lock"):
                path.unlink()
        for path, data in saved.items():
            write_file(path, data, path.parent)

    fsyncs = {size: _count_fsyncs(lambda size=size: _append_10_adds(projects[size][0], "count")) for size in projects}
    for size in projects:
        reset(size)
    times: dict[int, list[float]] = {small: [], large: []}
    cpu: dict[int, list[float]] = {small: [], large: []}
    writers = {size: PlaybookRepository(projects[size][0]) for size in projects}
    for index in range(appends):
        for size in (small, large):  # interleaved: the machine's noise hits both alike
            started = time.process_time()
            times[size].append(_append_10_adds(projects[size][0], f"r{index}", writers[size]))
            cpu[size].append(time.process_time() - started)
        if (index + 1) % run == 0:
            for size in projects:
                reset(size)
    for size in projects:
        reset(size)
    fresh: dict[int, list[float]] = {small: [], large: []}
    for index in range(appends // 4):  # context: a repository object per append, as a hook makes one
        for size in (small, large):
            fresh[size].append(_append_10_adds(projects[size][0], f"f{index}"))
        if (index + 1) % run == 0:
            for size in projects:
                reset(size)
    fresh_p50 = {size: _percentile(values, 50) for size, values in fresh.items()}
    p50 = {size: _percentile(values, 50) for size, values in times.items()}
    mean = {size: statistics.fmean(values) for size, values in times.items()}
    ratio = p50[large] / p50[small]
    cpu_ratio = _percentile(cpu[large], 50) / _percentile(cpu[small], 50)
    table.section(f"append of 10 ADD operations at {large:,} vs {small} key points "
                  f"({appends} each, interleaved, {run} in a row between resets, one writer per project)")
    table.row(f"append p50 at {small} / {large:,} key points", f"{_ms(p50[small])} / {_ms(p50[large])}",
              f"p99 {_ms(_percentile(times[small], 99))} / {_ms(_percentile(times[large], 99))}; "
              f"fsyncs {fsyncs[small]} / {fsyncs[large]}")
    table.row(f"append p50 at {large:,} vs {small} key points", f"{ratio:.2f}x",
              f"target <= {APPEND_SCALE_RATIO:g}x: {'met' if ratio <= APPEND_SCALE_RATIO else 'NOT met'}; "
              f"mean {mean[large] / mean[small]:.2f}x; CPU time p50 {_ms(_percentile(cpu[small], 50))} / "
              f"{_ms(_percentile(cpu[large], 50))}, {cpu_ratio:.2f}x")
    table.row(f"same, a repository object per append, p50 at {small} / {large:,}",
              f"{_ms(fresh_p50[small])} / {_ms(fresh_p50[large])}",
              f"{fresh_p50[large] / fresh_p50[small]:.2f}x; {appends // 4} each: each append reads playbook.json "
              "and ranks the playbook again, as a hook's process does")
    return {"cpu_ratio": cpu_ratio, "small": small, "large": large, "p50_small": p50[small], "p50_large": p50[large], "ratio": ratio,
            "mean_ratio": mean[large] / mean[small], "p99_small": _percentile(times[small], 99),
            "p99_large": _percentile(times[large], 99), "fsyncs_small": fsyncs[small],
            "fsyncs_large": fsyncs[large], "appends": appends, "fresh_p50_small": fresh_p50[small],
            "fresh_p50_large": fresh_p50[large]}


def bench_fresh(table: Table, root: Path, calls: int) -> None:
    claude_dir = root / "fresh" / ".claude"
    repo = prepared_repository(claude_dir, 3000, live=500, exact=500)
    assert repo.is_fresh() and len(repo.current()[0].where) == 500
    snapshot_kb = repo.snapshot_path.stat().st_size / 1024
    table.section(f"freshness, 500-entry playbook (snapshot {snapshot_kb:.0f} KB)")
    fresh = _many(repo.is_fresh, calls)
    current = _many(repo.current, max(calls // 4, 50))
    table.row("is_fresh() median", _us(statistics.median(fresh)), f"p99 {_us(_percentile(fresh, 99))}; {calls} calls")
    table.row("current() median, snapshot fresh", _us(statistics.median(current)),
              f"p99 {_us(_percentile(current, 99))}; {len(current)} calls")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fold", description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000", help="comma-separated event counts")
    parser.add_argument("--quick", action="store_true", help="100k only, fewer repetitions (smoke test)")
    parser.add_argument("--tmpdir", default=None, help="where to put the generated logs (default: system temp)")
    args = parser.parse_args(argv)
    sizes = [100_000] if args.quick else [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    reps, appends, calls = (2, 50, 500) if args.quick else (5, 200, 2000)
    started = time.perf_counter()
    load = os.getloadavg()[0]
    table = Table()
    with tempfile.TemporaryDirectory(prefix="bench-fold-", dir=args.tmpdir) as tmp:
        root = Path(tmp)
        table.section(f"python {sys.version.split()[0]}, msgspec {msgspec.__version__}, {os.cpu_count()} CPUs, "
                      f"temp dir {root}, load average {load:.1f} at start")
        for size in sizes:
            bench_fold(table, root, size, reps, memory=True)
        bench_append(table, root, appends, seed_events=5000)
        bench_append_scale(table, root, appends)
        bench_fresh(table, root, calls)
    total = time.perf_counter() - started
    table.section(f"whole run: {total:.0f} s; load average {os.getloadavg()[0]:.1f} at the end")
    print()
    print(table.render())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
