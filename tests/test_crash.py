"""Crash tests: real writers and learners killed with SIGKILL, then the log's guarantees checked.

1. `test_writers_killed_at_random_moments`: a child process appends transactions through
   `PlaybookRepository.append` in a loop (small ones, and now and then a 6 MiB one, which a
   SIGKILL can tear: Linux stops a buffered `write` between its chunks, pages or folios of up
   to 2 MiB, when a fatal signal is pending) and, after each append returns, writes the
   commit's seq and tx id to an fsynced file: the acknowledged set. The parent kills it after
   a random delay (a third of the time, after that delay, as soon as a helper process sees the
   log grow page by page: a long write in progress), then checks that every
   acknowledged transaction is in the log, that readers (`LogReader`, fast and strict,
   `repo.current()`) see whole transactions only, that the next append cuts a torn tail into
   a `TailRepaired` event with the bytes kept in the `.torn-*` file, and that afterwards
   `projections.verify.verify` finds nothing and playbook.json is `render` of the log's fold.
2. `test_fault_point`: each fault point (`PLAYBOOK_FAULT`, see `eventlog.store.fault`), once,
   with and without a torn tail waiting for the writer: the writer dies there by SIGKILL, and
   what the log, the snapshot and the next reader or writer do is checked exactly.
3. `test_learner_killed_*`: `python -m playbook learn --pending`, with a fake Anthropic API that
   answers slowly, killed at random moments (while it starts, while the reflector or the
   curator has not answered yet) or by a fault point during its final append; then
   `python -m playbook learn --pending` finishes the request, and the session's ratings are
   counted exactly once.

Cuts at every byte offset and junk tails, which need no processes, are in tests/test_store.py.

Environment:
    PLAYBOOK_CRASH_TRIALS  random-kill writer trials (default 60; e.g. 500 for a long run).
                           The random learner kills are max(4, trials // 15).
    PLAYBOOK_CRASH_SEED    base seed (default: random; a failure names the trial's seed).

A SIGKILL loses no page-cache data, so what these tests cannot show is a missing `fsync`:
that needs a power cut (or a VM/dm-flakey harness), not a killed process.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from eventlog.decide import ApplyOperations
from eventlog.domain import PlaybookState
from eventlog.events import Cause, KeyPointAdded, KeyPointEvaluated, LearningCompleted, LearningFailed
from eventlog.events import LearningSkipped, TailRepaired
from eventlog.evolve import apply_transaction
from eventlog.store import LogReader, Position
from playbook.learner.bootstrap import transcripts_dir
from playbook.learner.requests import request_learning
from projections.repository import PlaybookRepository
from projections.snapshot import read_snapshot, render
from projections.verify import verify
from tests.fake_anthropic import FakeAnthropic, Reply, reply_text, request_texts

pytestmark = pytest.mark.slow  # starts processes, a browser or Claude Code, or runs a campaign

TRIALS = int(os.environ.get("PLAYBOOK_CRASH_TRIALS", "60"))
LEARNER_TRIALS = max(4, TRIALS // 15)
BASE_SEED = int(os.environ.get("PLAYBOOK_CRASH_SEED", random.randrange(1 << 30)))
WORKERS = max(1, min(2, os.cpu_count() or 1))
MAX_KILL_DELAY = 0.4
MID_WRITE = 1 / 3
FIXTURES = Path(__file__).parent / "fixtures" / "transcripts"

WRITER = r'''
import os, random, sys
from eventlog.decide import ApplyOperations, Evaluate
from eventlog.events import Cause
from projections.repository import PlaybookRepository

claude, acks, seed, count, BIG = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
rng = random.Random(seed)
repo = PlaybookRepository(claude)
fd = os.open(acks, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
sections = ["STRATEGIES & INSIGHTS", "COMMON MISTAKES TO AVOID", "USER PREFERENCES", "OTHERS"]
names = []
os.write(1, b"ready\n")
i = 0
while count < 0 or i < count:
    i += 1
    k = rng.randint(1, 4)
    commands = [ApplyOperations([{"type": "ADD", "section": rng.choice(sections),
                                  "text": f"w{seed} t{i} {j}/{k} " + "lesson " * rng.randint(1, 40)}
                                 for j in range(k)])]
    if names and rng.random() < 0.5:
        commands.append(Evaluate([{"name": rng.choice(names), "rating": rng.choice(["helpful", "harmful"])}]))
    if names and rng.random() < 0.1:
        commands.append(ApplyOperations([{"type": "DELETE", "target_id": rng.choice(names)}]))
    if rng.random() < BIG:  # 8 lines of 768 KiB: a write long enough for a SIGKILL to tear it
        commands += [ApplyOperations({"pad": "x" * (768 << 10)}) for _ in range(8)]
    committed = repo.append(commands, Cause(source="crash-test", note=f"w{seed} t{i}"))
    names = [kp.name for _, kp in committed.state.entries()]
    os.write(fd, f"{committed.commit.seq} {committed.commit.tx} {i}\n".encode())
    os.fsync(fd)
'''
KILLER = r'''
import os, signal, sys, time
log, pid = sys.argv[1], int(sys.argv[2])
def size():
    try:
        return os.stat(log).st_size
    except FileNotFoundError:
        return -1
last, deadline = size(), time.monotonic() + 5
while time.monotonic() < deadline:
    now = size()
    # A long write extends the file page by page, so it shows page-aligned sizes; a short
    # write shows up whole, and then the file almost never ends on a page boundary.
    if now != last and (now % 4096 == 0 or now - last > 4096):
        break
    last = now
os.kill(pid, signal.SIGKILL)
'''
TEXT = re.compile(r"^w(\d+) t(\d+) (\d+)/(\d+) ")
NOTE = re.compile(r"^w(\d+) t(\d+)$")


# --- helpers ------------------------------------------------------------------------------------


def child_env(fault: str | None = None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k != "PLAYBOOK_FAULT" and not k.startswith(("ANTHROPIC_", "AGENTIC_CONTEXT_"))}
    if fault:
        env["PLAYBOOK_FAULT"] = fault
    env.update(extra)
    return env


def start_writer(claude: Path, acks: Path, seed: int, count: int, fault: str | None = None,
                 big: float = 0.1) -> subprocess.Popen:
    err = open(claude.parent / "writer.stderr", "wb")
    child = subprocess.Popen([sys.executable, "-c", WRITER, str(claude), str(acks), str(seed), str(count), str(big)],
                             env=child_env(fault), stdout=subprocess.PIPE, stderr=err)
    err.close()
    assert child.stdout.readline() == b"ready\n", (claude.parent / "writer.stderr").read_text()
    return child


def read_acks(path: Path) -> list[tuple[int, str, int]]:
    """(commit seq, tx, index) of every append that returned; a line cut by the kill does not count."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    return [(int(s), tx, int(i)) for s, tx, i in (line.split() for line in data.decode().splitlines(True)
                                                    if line.endswith("\n"))]


def read_log(path: Path):
    """The committed transactions, read by the fast and the strict reader (which must agree), and the torn tail."""
    fast = LogReader(path)
    transactions = list(fast)
    strict = LogReader(path, strict=True)
    assert [t.commit for t in strict] == [t.commit for t in transactions]
    assert strict.position == fast.position and strict.torn == fast.torn
    return transactions, fast


def fold_of(transactions: list) -> tuple[PlaybookState, Position]:
    """The state and position after `transactions` (all of a log's, from its start)."""
    state = PlaybookState()
    for transaction in transactions:
        apply_transaction(state, transaction.events, transaction.commit.seq, transaction.commit.at)
    return state, transactions[-1].end if transactions else Position()


def assert_only_whole_transactions(repo: PlaybookRepository, transactions: list) -> None:
    """A reader sees each writer transaction whole (all its ADDs, in one tx), and a gap-free prefix of them."""
    for transaction in transactions:
        assert transaction.commit.events == len(transaction.events)
    groups: dict[tuple[str, str], list[tuple[int, int, str]]] = {}
    for transaction in transactions:
        for event in transaction.events:
            if isinstance(event, KeyPointAdded) and (match := TEXT.match(event.text)):
                groups.setdefault((match[1], match[2]), []).append((int(match[3]), int(match[4]),
                                                                     transaction.commit.tx))
    for key, parts in groups.items():
        assert sorted(j for j, _, _ in parts) == list(range(parts[0][1])), f"partial transaction {key}: {parts}"
        assert len({tx for _, _, tx in parts}) == 1, f"transaction {key} split: {parts}"
    numbers: dict[str, list[int]] = {}
    for transaction in transactions:
        if transaction.commit.source == "crash-test" and (match := NOTE.match(transaction.commit.note or "")):
            numbers.setdefault(match[1], []).append(int(match[2]))
    for seed, seen in numbers.items():
        assert seen == list(range(1, len(seen) + 1)), f"writer {seed} committed {seen}: not a gap-free prefix"
    # repo.current() (snapshot + tail) sees exactly the fold of the committed transactions.
    state, position = repo.current()
    assert render(state, position) == render(*fold_of(transactions))


def assert_acked_present(transactions: list, acked: list[tuple[int, str, int]]) -> None:
    commits = {t.commit.tx: t.commit for t in transactions}
    for seq, tx, index in acked:
        assert tx in commits, f"acknowledged transaction t{index} ({tx}, seq {seq}) lost"
        assert commits[tx].seq == seq and commits[tx].note.endswith(f" t{index}")


def assert_clean(repo: PlaybookRepository) -> list:
    """verify() finds nothing, and playbook.json is render() of the fold of the whole log; the log's transactions."""
    report = verify(repo)
    assert report.ok, report.problems
    transactions = list(LogReader(repo.store.path))
    assert repo.snapshot_path.read_bytes() == render(*fold_of(transactions))
    assert repo.is_fresh()
    return transactions


def next_writer(repo_dir: Path, text: str, torn: bytes) -> list:
    """Append as the next writer does; check it cut exactly the torn bytes (kept beside the log) or nothing,
    and left a clean log and snapshot. Returns the log's transactions."""
    repo = PlaybookRepository(repo_dir)
    committed = repo.append([ApplyOperations([{"type": "ADD", "text": text}])], Cause(source="crash-test",
                                                                                       note="next writer"))
    assert committed is not None and repo.taken_in == []
    repaired = [e for e in committed.events if isinstance(e, TailRepaired)]
    if torn:
        assert len(repaired) == 1 and committed.events[0] is repaired[0], committed.events
        assert repaired[0].bytes_cut == len(torn)
        assert (repo_dir / repaired[0].kept_at).read_bytes() == torn
    else:
        assert repaired == []
    return assert_clean(repo)


# --- 1. writers killed at random moments ---------------------------------------------------------


def crash_trial(root: Path, seed: int) -> dict[str, int]:
    rng = random.Random(seed)
    claude, acks = root / ".claude", root / "acks"
    claude.mkdir(parents=True)
    writer = start_writer(claude, acks, seed, -1)
    time.sleep(rng.uniform(0, MAX_KILL_DELAY))
    mid_write = rng.random() < MID_WRITE
    if mid_write:  # then as soon as the log is seen in the middle of a long write
        subprocess.run([sys.executable, "-S", "-c", KILLER, str(claude / "playbook.events.jsonl"), str(writer.pid)],
                       timeout=30, check=True)
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    assert writer.returncode == -signal.SIGKILL, (root / "writer.stderr").read_text()
    acked = read_acks(acks)
    repo = PlaybookRepository(claude)
    log = repo.store.path
    transactions, reader = read_log(log)
    assert_acked_present(transactions, acked)
    assert_only_whole_transactions(repo, transactions)
    torn = log.read_bytes()[reader.torn.offset:] if reader.torn else b""
    assert reader.position.offset + len(torn) == repo.store.size()
    found = read_snapshot(repo.snapshot_path)
    stale = found is not None and found.snapshot is not None and found.snapshot.log.offset != reader.position.offset
    writer_txs = sum(t.commit.source == "crash-test" for t in transactions)
    litter = len(list(claude.glob(".*.tmp")))

    after = next_writer(claude, f"after the crash of trial {seed}", torn)
    assert_acked_present(after, acked)
    assert after[:len(transactions)] == transactions  # the repair cut nothing committed
    return {"trials": 1, "killed_as_the_log_grew": mid_write, "acknowledged": len(acked),
            "committed": writer_txs, "committed_not_acknowledged": writer_txs - len(acked),
            "torn_tails": bool(torn), "torn_after_a_random_delay": bool(torn) and not mid_write,
            "torn_bytes": len(torn), "stale_snapshots": stale, "no_log": not transactions,
            "temp_files_left": litter}


def test_writers_killed_at_random_moments(tmp_path):
    totals: Counter[str] = Counter()
    lock = threading.Lock()

    def one(index: int) -> None:
        seed = BASE_SEED + index
        root = tmp_path / f"trial-{seed}"
        try:
            stats = crash_trial(root, seed)
        except BaseException as exc:
            raise AssertionError(f"trial with seed {seed} (PLAYBOOK_CRASH_SEED={seed} replays its choices first): "
                                 f"{type(exc).__name__}: {exc}\nkept in {root}") from exc
        shutil.rmtree(root)
        with lock:
            totals.update(stats)

    with ThreadPoolExecutor(WORKERS) as pool:
        for future in [pool.submit(one, index) for index in range(TRIALS)]:
            future.result()
    print(f"\ncrash trials (base seed {BASE_SEED}): {dict(totals)}")
    assert totals["trials"] == TRIALS and totals["acknowledged"] > 0


# --- 2. every fault point, deterministically ------------------------------------------------------


def _history(claude: Path) -> PlaybookRepository:
    repo = PlaybookRepository(claude)
    for index in range(3):
        repo.append([ApplyOperations([{"type": "ADD", "text": f"w0 t{index + 1} 0/1 before"}])],
                    Cause(source="crash-test", note=f"w0 t{index + 1}"))
    return repo


def _tear(repo: PlaybookRepository) -> bytes:
    """Leave the project as a writer killed mid-`write` does: half a transaction after the log, the old snapshot."""
    log, snapshot = repo.store.path.read_bytes(), repo.snapshot_path.read_bytes()
    repo.append([ApplyOperations([{"type": "ADD", "text": f"torn {n}"} for n in range(4)])],
                Cause(source="crash-test", note="torn"))
    whole = repo.store.path.read_bytes()
    torn = whole[len(log):len(log) + (len(whole) - len(log)) * 2 // 3]
    assert torn.count(b"\n") >= 2 and not torn.endswith(b"\n")
    repo.store.path.write_bytes(log + torn)
    repo.snapshot_path.write_bytes(snapshot)
    return torn


CASES = [("after-write", False), ("after-write", True), ("after-fsync", False), ("after-fsync", True),
         ("before-snapshot", False), ("before-snapshot", True), ("after-cut", True)]


@pytest.mark.parametrize(("point", "torn_first"), CASES, ids=[f"{p}{'-torn' if t else ''}" for p, t in CASES])
def test_fault_point(tmp_path, point, torn_first):
    claude, acks = tmp_path / ".claude", tmp_path / "acks"
    repo = _history(claude)
    torn = _tear(repo) if torn_first else b""
    log_before = repo.store.path.read_bytes()
    snapshot_before = repo.snapshot_path.read_bytes()

    writer = start_writer(claude, acks, 7, 1, fault=point)  # appends "w7 t1 0/k ..." once
    writer.wait(timeout=60)
    assert writer.returncode == -signal.SIGKILL, (tmp_path / "writer.stderr").read_text()
    assert read_acks(acks) == []  # it died before append returned
    transactions, reader = read_log(repo.store.path)
    assert_only_whole_transactions(repo, transactions)
    mine = [t for t in transactions if t.commit.note == "w7 t1" and any(
        isinstance(e, KeyPointAdded) and e.text.startswith("w7 t1 ") for e in t.events)]
    kept = sorted(claude.glob("playbook.events.jsonl.torn-*"))
    report = verify(repo)

    if point == "after-cut":
        # The cut bytes are kept, the log is not truncated yet, and nothing was written.
        assert [p.read_bytes() for p in kept] == [torn]
        assert repo.store.path.read_bytes() == log_before and mine == []
        assert reader.torn is not None and reader.torn.length == len(torn)
        assert repo.snapshot_path.read_bytes() == snapshot_before
        assert [p.what.split(":")[0] for p in report.problems] == ["unfinished transaction"]
    else:
        if point == "after-write":
            # Not acknowledged: it may or may not be there (without a power cut, the page cache keeps it).
            assert len(mine) <= 1
        else:
            assert len(mine) == 1, "a transaction fsynced before the crash must be in the log"
        if mine:
            repaired = [e for e in mine[0].events if isinstance(e, TailRepaired)]
            assert len(repaired) == int(torn_first)
            if torn_first:
                assert (claude / repaired[0].kept_at).read_bytes() == torn
            assert reader.torn is None
            # The snapshot was not replaced: it is behind the log, and says so.
            assert repo.snapshot_path.read_bytes() == snapshot_before and not repo.is_fresh()
            assert [p.what.split(":")[0] for p in report.problems] == ["behind the log"], report.problems
            state, _ = repo.current()  # a reader folds the tail the snapshot misses
            assert any(kp.text.startswith("w7 t1 ") for _, kp in state.entries())
        if point == "before-snapshot":
            # The next reader that may write (state() does housekeeping) brings the snapshot up to date.
            repo.state()
            assert_clean(repo)

    remaining = repo.store.path.read_bytes()[reader.position.offset:]
    final = next_writer(claude, f"after {point}", remaining)
    assert_only_whole_transactions(repo, final)
    assert final[:len(transactions)] == transactions


# --- 3. the background learner killed ---------------------------------------------------------------

SECRET = "sk-test-crash-4242"
REFLECTION = {"analysis": "The tests were run before committing, as pat-001 says.",
              "bullet_tags": [{"name": "pat-001", "tag": "helpful", "rationale": "It was followed and it worked"}]}
CURATION = {"reasoning": "The user prefers pathlib; worth remembering.",
            "operations": [{"type": "ADD", "text": "prefer pathlib", "section": "USER PREFERENCES"}]}
MODEL_DELAY = 0.8


class SlowModels:
    """Reflector and curator; each answer takes MODEL_DELAY seconds while `slow` is set."""

    def __init__(self) -> None:
        self.slow = True

    def __call__(self, body: dict) -> Reply:
        text = request_texts(body)
        answer = CURATION if "You are the curator" in text else REFLECTION
        if "You are the reflector" not in text and "You are the curator" not in text:
            return reply_text("Done.")
        return Reply(text=json.dumps(answer), delay=MODEL_DELAY if self.slow else 0.0)


def _learning_project(root: Path) -> tuple[Path, str]:
    project = root / "project"
    (project / ".claude").mkdir(parents=True)
    PlaybookRepository(project / ".claude").append(
        [ApplyOperations([{"type": "ADD", "text": "run the tests before committing",
                           "section": "PATTERNS & APPROACHES"}])], Cause(source="test"))
    transcript = transcripts_dir(project, root) / "session.jsonl"  # Claude Code's directory is `root`
    transcript.parent.mkdir(parents=True)
    shutil.copy(FIXTURES / "tool_use_resumed.jsonl", transcript)
    request = request_learning(project, "SessionEnd", str(transcript), "session-1", "other")
    return project, request


def _learner(project: Path, api: FakeAnthropic, fault: str | None = None) -> subprocess.Popen:
    env = child_env(fault, ANTHROPIC_BASE_URL=api.url, ANTHROPIC_API_KEY=SECRET, CLAUDE_PROJECT_DIR=str(project),
                    CLAUDE_CONFIG_DIR=str(project.parent), PLAYBOOK_RETRY_BASE_DELAY="0.01")
    out = open(project / "learner.out", "ab")
    learner = subprocess.Popen([sys.executable, "-m", "playbook", "learn", "--pending"], env=env, cwd=project,
                               stdout=out, stderr=out)
    out.close()
    return learner


def _events(project: Path, kind: type) -> list:
    return [e for t in LogReader(project / ".claude" / "playbook.events.jsonl") for e in t.events
            if isinstance(e, kind)]


def learner_trial(root: Path, mode: str, rng: random.Random) -> str:
    """Kill a learner (at a random moment, or by a fault point), finish with another; return where it died."""
    project, request = _learning_project(root)
    models = SlowModels()
    models.slow = not mode.startswith("fault:")
    with FakeAnthropic(models) as api:
        if mode.startswith("fault:"):
            learner = _learner(project, api, fault=mode[len("fault:"):])
            learner.wait(timeout=60)
            assert learner.returncode == -signal.SIGKILL, (project / "learner.out").read_text()
            assert len(api.message_requests()) == 2  # it died in its final append, after both answers
        else:
            learner = _learner(project, api)
            if mode == "starting":  # loading, taking the lock, reading the transcript, loading the model client
                # A moment before the reflector is asked; the load's length varies with the machine, so the
                # draw is cut where the first question arrives (the learner is then still waiting on it).
                deadline = time.monotonic() + rng.uniform(0, 1.5)
                while not api.message_requests() and time.monotonic() < deadline:
                    time.sleep(0.005)
            else:  # the reflector (1) or the curator (2) was asked and has not answered yet
                wanted = {"reflector": 1, "curator": 2}[mode]
                deadline = time.monotonic() + 60
                while len(api.message_requests()) < wanted and time.monotonic() < deadline:
                    time.sleep(0.005)
                assert len(api.message_requests()) >= wanted, (project / "learner.out").read_text()
                # before the answer comes, with room for a sleep that overshoots on a loaded machine
                time.sleep(rng.uniform(0, MODEL_DELAY * 0.7))
            learner.send_signal(signal.SIGKILL)
            learner.wait()
            assert learner.returncode == -signal.SIGKILL, (project / "learner.out").read_text()
        asked = len(api.message_requests())
        repo = PlaybookRepository(project / ".claude")
        assert_only_whole_transactions(repo, read_log(repo.store.path)[0])
        done_before = bool(_events(project, LearningCompleted))
        assert done_before == (request not in repo.current()[0].pending)
        if mode in ("fault:after-fsync", "fault:before-snapshot"):
            assert done_before and not repo.is_fresh()

        models.slow = False
        result = subprocess.run([sys.executable, "-m", "playbook", "learn", "--pending"], capture_output=True,
                                text=True, timeout=120, cwd=project,
                                env=child_env(None, ANTHROPIC_BASE_URL=api.url, ANTHROPIC_API_KEY=SECRET,
                                              CLAUDE_PROJECT_DIR=str(project), CLAUDE_CONFIG_DIR=str(root)))
        assert result.returncode == 0, result.stderr
        if done_before:
            assert result.stdout.strip() == "no pending learning" and len(api.message_requests()) == asked
        else:
            assert result.stdout.strip() == f"{request}: completed", result.stdout

    # The session's ratings and the curator's ADD, exactly once; nothing pending; a clean log and snapshot.
    state = repo.current()[0]
    assert state.pending == {}
    assert {kp.name: (kp.helpful, kp.harmful) for _, kp in state.entries()} == {"pat-001": (1, 0),
                                                                                "pref-001": (0, 0)}
    assert [(e.name, e.rating) for e in _events(project, KeyPointEvaluated)] == [("pat-001", "helpful")]
    assert [e.request for e in _events(project, LearningCompleted)] == [request]
    assert [e.text for e in _events(project, KeyPointAdded)] == ["run the tests before committing", "prefer pathlib"]
    assert _events(project, LearningFailed) == [] and _events(project, LearningSkipped) == []
    assert_clean(repo)
    return f"{mode}: asked {asked}, {'completed' if done_before else 'pending'} when killed"


def _run_learner_trials(tmp_path: Path, modes: list[str], seed: int) -> list[str]:
    def one(index: int) -> str:
        root = tmp_path / f"learner-{index}"
        try:
            return learner_trial(root, modes[index], random.Random(seed + index))
        except BaseException as exc:
            raise AssertionError(f"learner trial {modes[index]} (seed {seed + index}): {type(exc).__name__}: {exc}"
                                 f"\nkept in {root}") from exc

    with ThreadPoolExecutor(WORKERS) as pool:
        results = [f.result() for f in [pool.submit(one, i) for i in range(len(modes))]]
    print("\n" + "\n".join(results))
    return results


def test_learner_killed_at_random_moments(tmp_path):
    rng = random.Random(BASE_SEED)
    modes = [("starting", "reflector", "curator")[i % 3] for i in range(LEARNER_TRIALS)]
    rng.shuffle(modes)
    _run_learner_trials(tmp_path, modes, BASE_SEED)


def test_learner_killed_in_its_final_append(tmp_path):
    _run_learner_trials(tmp_path, ["fault:after-write", "fault:after-fsync", "fault:before-snapshot"], BASE_SEED)
