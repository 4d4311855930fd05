"""Stress: every kind of process on one project at once, and a state machine with reverts.

1. `test_everything_at_once_for_a_few_seconds` starts, through multiprocessing "spawn"
   (separate interpreters, nothing inherited but the arguments), at the same moment:
   - writers appending ADD / UPDATE / MERGE / DELETE / ratings through
     `PlaybookRepository.append`, each on entries only it touches, so each knows
     exactly what its entries must look like at the end;
   - learners running `request_learning` + `learn_pending` against one fake Anthropic
     API (reflector and curator scripted by prompt; every fourth transcript makes the
     reflector answer garbage, so some cycles fail), transcripts under the test's own
     `CLAUDE_CONFIG_DIR`;
   - rebuilders calling `repo.rebuild()` (and `refresh()`);
   - readers running the installed SessionStart command (`hook_command("SessionStart")`)
     as a subprocess in a loop, reading playbook.json and the injection file;
   - a time traveller checking `Timeline.state_at` against a plain fold of the log prefix.
   Readers record a digest of everything they saw. Afterwards, from the log alone, the
   test recomputes the projections after every transaction: every playbook.json and every
   hook output a reader saw must be the projection of some committed prefix, and each
   reader's sightings must go forward in the log, never back.
   Runs `PLAYBOOK_STRESS_SECONDS` (default 4) seconds once all processes are up.

2. `TestRevertMachine`: a hypothesis state machine mixing appends (ADD / UPDATE / MERGE /
   DELETE / ratings), torn writes, reopening, snapshot damage (deleted, stale, restored
   from the past, edited by hand, an old injection file), rebuilds and forced reverts of
   a transaction or a whole session (as `playbook revert --force` does). After every step
   the repository, playbook.json, the SessionStart fast path, time travel and `verify`
   agree with a model that is nothing but a fold of the committed events.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import multiprocessing
import os
import random
import shutil
import subprocess
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from tests.logtools import transaction_after
from eventlog.unit_of_work import append_locked
from eventlog.decide import ApplyOperations, ReplaceContent, decide_all
from eventlog.domain import SECTION_SLUGS, PlaybookState
from eventlog.events import Cause, CountersSet, KeyPointAdded, KeyPointDeleted, KeyPointEvaluated, KeyPointImported
from eventlog.events import KeyPointMoved, KeyPointPruned, KeyPointsMerged, KeyPointUpdated, LearningCompleted
from eventlog.events import LearningFailed, LearningRequested, LearningSkipped, TailRepaired, TransactionCommitted
from eventlog.evolve import apply_transaction, fold
from eventlog.store import LogReader, Position, fold_log
from playbook.quick import inject
from projections.revert import plan_revert
from projections import checkpoints
from projections.injection import hook_output
from projections.quickroads import INJECTION_NAME
from projections.repository import LOG_NAME, SNAPSHOT_NAME, PlaybookRepository
from projections.snapshot import playbook_dict, render
from projections.timeline import Timeline
from projections.verify import verify
from tests.fake_anthropic import FakeAnthropic, Reply, reply_text, request_texts
from tests.test_concurrency import _check_log_is_whole, _check_snapshot_is_the_projection, _failures, _report_failure
from tests.test_properties import COMMON, check_state, machine_commands, ordered, state_env
import pytest

pytestmark = pytest.mark.slow  # starts processes, a browser or Claude Code, or runs a campaign

SECTIONS = list(SECTION_SLUGS)
CTX = multiprocessing.get_context("spawn")
FIXTURE = Path(__file__).parent / "fixtures" / "transcripts" / "tool_use_resumed.jsonl"
SECONDS = float(os.environ.get("PLAYBOOK_STRESS_SECONDS") or 4)
ROLES = {"writer": 6, "learner": 3, "rebuilder": 2, "hook_reader": 3, "file_reader": 1, "time_traveller": 1}
CHILD_CHECKPOINT_EVERY = 40  # so appends and rebuilds write checkpoints that the time traveller uses
START_TIMEOUT = 120.0
FAIL_MARK = "PLEASE-ANSWER-GARBAGE"
REFLECTION = {"analysis": "pat-001 was followed and the tests passed.",
              "bullet_tags": [{"name": "pat-001", "tag": "helpful", "rationale": "followed, it worked"},
                              {"name": "nope-999", "tag": "harmful", "rationale": "not in the playbook"}]}
SEED = [{"type": "ADD", "text": f"seed entry of {section}", "section": section} for section in SECTIONS]


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=10).hexdigest()


def _child_setup(env: dict[str, str]) -> None:
    for name in list(os.environ):
        if name.startswith(("ANTHROPIC_", "AGENTIC_CONTEXT_", "CLAUDE_")):
            del os.environ[name]
    os.environ.update(env)
    checkpoints.CHECKPOINT_EVERY = CHILD_CHECKPOINT_EVERY


def _write_json(path: Path, data: Any) -> None:
    temp = path.with_suffix(".tmp")
    temp.write_text(json.dumps(data))
    os.replace(temp, path)


# --- the children -----------------------------------------------------------------------------------------


def _writer(claude_dir: str, result_dir: str, worker: int, env: dict, barrier, seconds: float) -> None:
    """Appends random changes to entries only it touches; records every acknowledged transaction."""
    try:
        _child_setup(env)
        from eventlog.decide import Evaluate

        rng = random.Random(worker)
        own: dict[str, list] = {}  # name -> [text, helpful, harmful], as this writer's appends left them
        acks = open(Path(result_dir, f"acks-{worker}.jsonl"), "w")  # noqa: SIM115 - closed below
        prefix = f"w{worker}-"
        repo = PlaybookRepository(Path(claude_dir))
        barrier.wait(timeout=START_TIMEOUT)
        deadline = time.monotonic() + seconds
        round_ = 0
        while time.monotonic() < deadline:
            round_ += 1
            if round_ % 7 == 0:  # a new repository object now and then, as a new hook process would have
                repo = PlaybookRepository(Path(claude_dir))
            names = list(own)
            choices = ["add"] * 3 + (["rate", "rate", "update", "delete"] if names else [])
            choices += ["merge"] if len(names) >= 2 else []
            choices += ["delete", "merge"] * (len(names) > 25)
            kind = rng.choice(choices)
            ops: list = []
            ratings: list = []
            if kind == "add":
                ops = [{"type": "ADD", "text": f"{prefix}{round_}-{k}", "section": rng.choice(SECTIONS)}
                       for k in range(rng.randint(1, 3))]
                if names and rng.random() < 0.3:  # and a rating in the same transaction
                    ratings = [{"name": rng.choice(names), "rating": "helpful"}]
            elif kind == "rate":
                ratings = [{"name": n, "rating": rng.choice(["helpful", "helpful", "neutral"])}
                           for n in rng.sample(names, min(len(names), rng.randint(1, 3)))]
            elif kind == "update":
                ops = [{"type": "UPDATE", "target_id": rng.choice(names), "text": f"{prefix}{round_}-u"}]
            elif kind == "delete":
                ops = [{"type": "DELETE", "target_id": rng.choice(names), "reason": "stress"}]
            else:
                ops = [{"type": "MERGE", "source_ids": rng.sample(names, 2), "merged_text": f"{prefix}{round_}-m",
                        "section": rng.choice(SECTIONS)}]
            commands = ([ApplyOperations(ops)] if ops else []) + ([Evaluate(ratings)] if ratings else [])
            committed = repo.append(commands, Cause(source="stress", session=f"writer-{worker}"))
            assert committed is not None, (kind, ops, ratings)
            # What the writer asked for, and nothing else, happened to its entries.
            added = [op["text"] for op in ops if op["type"] == "ADD"]
            rated = [r["name"] for r in ratings]
            for e in committed.events:
                if isinstance(e, KeyPointAdded):
                    assert e.text == added.pop(0) and e.name not in own, e
                    own[e.name] = [e.text, 0, 0]
                elif isinstance(e, KeyPointEvaluated):
                    assert e.name == rated.pop(0), e
                    rating = next(r["rating"] for r in ratings if r["name"] == e.name)
                    text, helpful, harmful = own[e.name]
                    assert (e.helpful, e.harmful) == (helpful + (rating == "helpful"), harmful), (e, own[e.name])
                    own[e.name] = [text, e.helpful, e.harmful]
                elif isinstance(e, KeyPointUpdated):
                    assert kind == "update" and e.name == ops[0]["target_id"] and e.text == ops[0]["text"]
                    assert e.previous_text == own[e.name][0]
                    own[e.name][0] = e.text
                elif isinstance(e, KeyPointDeleted):
                    assert kind == "delete" and e.name == ops[0]["target_id"] and e.text == own.pop(e.name)[0]
                elif isinstance(e, KeyPointsMerged):
                    assert kind == "merge" and e.sources == ops[0]["source_ids"] and not e.missing_sources
                    removed = [own.pop(source) for source in e.sources]
                    assert (e.helpful, e.harmful) == (sum(r[1] for r in removed), sum(r[2] for r in removed))
                    own[e.name] = [e.text, e.helpful, e.harmful]
                else:
                    raise AssertionError(f"unexpected event {e!r} for {kind} {ops} {ratings}")
            assert not added and not rated, (added, rated, committed.events)
            for name, (text, helpful, harmful) in own.items():  # the state returned agrees
                kp = committed.state.get(name)
                assert kp is not None and (kp.text, kp.helpful, kp.harmful) == (text, helpful, harmful)
            acks.write(json.dumps({"tx": committed.commit.tx, "seq": committed.commit.seq,
                                   "events": [[type(e).__name__, e.name] for e in committed.events]}) + "\n")
            acks.flush()
        acks.close()
        _write_json(Path(result_dir, f"writer-{worker}.json"), {"own": own, "rounds": round_})
    except BaseException:
        _report_failure(result_dir, worker)
        raise


def _learner(project: str, config_dir: str, result_dir: str, worker: int, env: dict, barrier,
             seconds: float) -> None:
    """Records learning requests for fresh transcripts and runs the pending ones, like the background learner."""
    try:
        _child_setup(env)
        import playbook.learner.models  # noqa: F401 - the model client loads before the clock starts
        from playbook.learner.bootstrap import transcripts_dir
        from playbook.learner.learn import learn_pending
        from playbook.learner.requests import request_learning

        fixture = FIXTURE.read_text()
        transcripts = transcripts_dir(Path(project), Path(config_dir))
        transcripts.mkdir(parents=True, exist_ok=True)
        requests, outcomes = [], []
        barrier.wait(timeout=START_TIMEOUT)
        deadline = time.monotonic() + seconds
        round_ = 0
        while time.monotonic() < deadline:
            round_ += 1
            fail = (round_ + worker) % 4 == 2  # learner 1 fails its first round
            path = transcripts / f"{uuid.uuid4()}.jsonl"
            marker = f"learner {worker} round {round_}" + (f" {FAIL_MARK}" if fail else "")
            path.write_text(fixture + json.dumps({"type": "user", "message": {"role": "user", "content": marker}})
                            + "\n")
            request = request_learning(Path(project), "SessionEnd", str(path), f"learner-{worker}-{round_}", "other")
            requests.append({"request": request, "transcript": str(path), "fail": fail})
            outcomes += [[o.request, o.status, o.detail] for o in learn_pending(Path(project))]
        _write_json(Path(result_dir, f"learner-{worker}.json"), {"requests": requests, "outcomes": outcomes})
    except BaseException:
        _report_failure(result_dir, 100 + worker)
        raise


def _rebuilder(claude_dir: str, result_dir: str, worker: int, env: dict, barrier, seconds: float) -> None:
    try:
        _child_setup(env)
        rng = random.Random(1000 + worker)
        repo = PlaybookRepository(Path(claude_dir))
        barrier.wait(timeout=START_TIMEOUT)
        deadline = time.monotonic() + seconds
        rebuilds = refreshes = 0
        while time.monotonic() < deadline:
            if rng.random() < 0.7:
                position = repo.rebuild()
                assert position.seq > 0
                rebuilds += 1
            else:
                repo.refresh()
                refreshes += 1
            time.sleep(rng.uniform(0, 0.03))
        _write_json(Path(result_dir, f"rebuilder-{worker}.json"), {"rebuilds": rebuilds, "refreshes": refreshes})
    except BaseException:
        _report_failure(result_dir, 200 + worker)
        raise


def _check_snapshot_bytes(raw: bytes) -> None:
    data = json.loads(raw)
    assert list(data["sections"]) == SECTIONS, list(data["sections"])
    assert all(data["sections"][s] for s in SECTIONS)  # the seed entries never go away
    assert data["log"]["offset"] > 0


def _check_hook_output(out: bytes) -> None:
    data = json.loads(out)
    context = data["hookSpecificOutput"]["additionalContext"]
    assert data["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    for section in SECTIONS:
        assert f"## {section}\n" in context, (section, context[:2000])
    assert out.endswith(b"}\n") and out.count(b"\n") == 1


def _sightings(seen: list[str], data: bytes) -> None:
    digest = _digest(data)
    if not seen or seen[-1] != digest:
        seen.append(digest)


def _hook_reader(project: str, result_dir: str, worker: int, env: dict, barrier, seconds: float) -> None:
    """Runs the installed SessionStart command in a loop, and reads playbook.json between runs."""
    try:
        _child_setup(env)
        from playbook.wiring.install import hook_command

        command = hook_command("SessionStart")
        payload = json.dumps({"hook_event_name": "SessionStart", "source": "startup",
                              "session_id": f"reader-{worker}", "cwd": project}).encode()
        snapshot = Path(project, ".claude", SNAPSHOT_NAME)
        hooks: list[str] = []
        files: list[str] = []
        runs = reads = 0
        barrier.wait(timeout=START_TIMEOUT)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            done = subprocess.run(command, shell=True, input=payload, cwd=project, capture_output=True, timeout=60,
                                  env=os.environ)
            assert done.returncode == 0 and done.stderr == b"", (done.returncode, done.stderr.decode(errors="replace"))
            _check_hook_output(done.stdout)
            _sightings(hooks, done.stdout)
            runs += 1
            raw = snapshot.read_bytes()
            _check_snapshot_bytes(raw)
            _sightings(files, raw)
            reads += 1
        _write_json(Path(result_dir, f"hook-reader-{worker}.json"),
                    {"runs": runs, "reads": reads, "hooks": hooks, "files": files})
    except BaseException:
        _report_failure(result_dir, 300 + worker)
        raise


def _file_reader(claude_dir: str, result_dir: str, worker: int, env: dict, barrier, seconds: float) -> None:
    """Reads playbook.json and the injection file as fast as it can (no lock): always whole files."""
    try:
        _child_setup(env)
        from projections.snapshot import read_snapshot

        snapshot, injection = Path(claude_dir, SNAPSHOT_NAME), Path(claude_dir, INJECTION_NAME)
        files: list[str] = []
        hooks: list[str] = []
        reads = 0
        barrier.wait(timeout=START_TIMEOUT)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            raw = snapshot.read_bytes()
            _check_snapshot_bytes(raw)
            _sightings(files, raw)
            found = read_snapshot(snapshot)
            assert found is not None and found.snapshot is not None, found  # ours, untouched, digest matches
            header, _, output = injection.read_bytes().partition(b"\n")
            log_size, mtime = (int(x) for x in header.split()[:2])
            assert log_size > 0 and mtime > 0
            _check_hook_output(output)
            _sightings(hooks, output)
            reads += 1
            time.sleep(0.002)
        _write_json(Path(result_dir, f"file-reader-{worker}.json"), {"reads": reads, "files": files, "hooks": hooks})
    except BaseException:
        _report_failure(result_dir, 400 + worker)
        raise


def _time_traveller(claude_dir: str, result_dir: str, worker: int, env: dict, barrier, seconds: float) -> None:
    """`state_at` of a random past transaction (checkpoints, commit index) equals a plain fold of the prefix."""
    try:
        _child_setup(env)
        rng = random.Random(500 + worker)
        log = Path(claude_dir, LOG_NAME)
        trips = 0
        barrier.wait(timeout=START_TIMEOUT)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            timeline = Timeline(PlaybookRepository(Path(claude_dir)))
            refs = timeline.refs
            ref = refs[-1] if rng.random() < 0.2 else rng.choice(refs)
            got = timeline.state_at(ref.end)
            expected = PlaybookState()
            for transaction in LogReader(log):
                if transaction.end.seq > ref.end.seq:
                    break
                apply_transaction(expected, transaction.events, transaction.commit.seq, transaction.commit.at)
            assert expected.seq == ref.end.seq
            assert got == expected and ordered(got) == ordered(expected), ref
            newest = timeline.newest(3)
            seqs = [t.commit.seq for t in newest]
            assert seqs == sorted(seqs, reverse=True) and seqs[0] >= ref.end.seq
            trips += 1
        _write_json(Path(result_dir, f"time-traveller-{worker}.json"), {"trips": trips})
    except BaseException:
        _report_failure(result_dir, 500 + worker)
        raise


# --- the test ---------------------------------------------------------------------------------------------


def _models() -> Any:
    curated = itertools.count(1)

    def respond(body: dict) -> Reply:
        text = request_texts(body)
        if "You are the reflector" in text:
            return reply_text("no JSON here {{{" if FAIL_MARK in text else json.dumps(REFLECTION))
        if "You are the curator" in text:
            return reply_text(json.dumps({"reasoning": "worth keeping", "operations": [
                {"type": "ADD", "text": f"learned tip {next(curated)}", "section": "USER PREFERENCES"}]}))
        return reply_text("Done.")

    return respond


def _readable(path: Path) -> Any:
    return json.loads(path.read_text())


def _forward(sightings: list[str], where: dict[str, list[int]], who: str) -> int:
    """Each sighting is the projection of a committed prefix, and they go forward: the prefixes' indexes
    (the smallest possible at each step) never decrease. Returns the last index."""
    index = 0
    for number, digest in enumerate(sightings):
        candidates = [i for i in where.get(digest, []) if i >= index]
        assert candidates, (f"{who}: sighting {number} is not the projection of any committed prefix at or "
                            f"after transaction {index}" + (" (it is one of an earlier prefix: went back)"
                                                            if digest in where else ""))
        index = candidates[0]
    return index


def test_everything_at_once_for_a_few_seconds(tmp_path, capsys):
    started = time.monotonic()
    project = tmp_path / "project"
    claude_dir = project / ".claude"
    config_dir = tmp_path / "claude"
    result_dir = tmp_path / "results"
    for directory in (project, config_dir, result_dir):
        directory.mkdir()
    seeded = PlaybookRepository(claude_dir).append([ApplyOperations(SEED)], Cause(source="seed"))
    assert seeded is not None and [e.name for e in seeded.events] == ["pat-001", "mis-001", "pref-001", "ctx-001",
                                                                     "oth-001"]
    total = sum(ROLES.values())
    assert total >= 16
    barrier = CTX.Barrier(total)
    with FakeAnthropic(_models()) as api:
        env = {"CLAUDE_PROJECT_DIR": str(project), "CLAUDE_CONFIG_DIR": str(config_dir),
               "ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "sk-test-stress",
               "PLAYBOOK_RETRY_BASE_DELAY": "0.01", "PLAYBOOK_LEARN_DEADLINE": "60"}
        common = (str(result_dir),)
        targets = {
            "writer": lambda i: (_writer, (str(claude_dir), *common, i, env, barrier, SECONDS)),
            "learner": lambda i: (_learner, (str(project), str(config_dir), *common, i, env, barrier, SECONDS)),
            "rebuilder": lambda i: (_rebuilder, (str(claude_dir), *common, i, env, barrier, SECONDS)),
            "hook_reader": lambda i: (_hook_reader, (str(project), *common, i, env, barrier, SECONDS)),
            "file_reader": lambda i: (_file_reader, (str(claude_dir), *common, i, env, barrier, SECONDS)),
            "time_traveller": lambda i: (_time_traveller, (str(claude_dir), *common, i, env, barrier, SECONDS)),
        }
        processes = []
        for role, count in ROLES.items():
            for i in range(count):
                target, args = targets[role](i)
                processes.append(CTX.Process(target=target, args=args, name=f"{role}-{i}"))
        for process in processes:
            process.start()
        try:
            for process in processes:
                process.join(START_TIMEOUT + SECONDS + 120)
        finally:
            for process in processes:
                if process.is_alive():  # only the children this test started
                    process.terminate()
                    process.join(5)
        requests_served = len(api.message_requests())
    ran = time.monotonic() - started
    assert not _failures(result_dir), _failures(result_dir)
    assert [(p.name, p.exitcode) for p in processes] == [(p.name, 0) for p in processes]

    # The log is whole (gap-free seq, hash chain, every transaction closed, unique ids), verify agrees,
    # and playbook.json is exactly the projection of the whole log.
    log = claude_dir / LOG_NAME
    transactions = _check_log_is_whole(log)
    final = _check_snapshot_is_the_projection(claude_dir)
    report = verify(PlaybookRepository(claude_dir))
    assert report.ok, report.problems
    assert report.transactions == len(transactions)
    check_state(final)
    by_tx = {t.commit.tx: t for t in transactions}

    # Writers: every acknowledged transaction is in the log exactly once, as acknowledged, and nothing else
    # of theirs is; their entries are exactly as their own appends left them (no lost or doubled update).
    writer_txs = 0
    for i in range(ROLES["writer"]):
        acks = [json.loads(line) for line in (result_dir / f"acks-{i}.jsonl").read_text().splitlines()]
        assert len(acks) == _readable(result_dir / f"writer-{i}.json")["rounds"]
        assert len({a["tx"] for a in acks}) == len(acks)
        mine = [t for t in transactions if t.commit.session == f"writer-{i}"]
        assert [t.commit.tx for t in mine] == [a["tx"] for a in acks]  # all of them, once, in their order
        for ack in acks:
            transaction = by_tx[ack["tx"]]
            assert transaction.commit.seq == ack["seq"] and transaction.commit.source == "stress"
            assert [[type(e).__name__, e.name] for e in transaction.events] == ack["events"]
        own = _readable(result_dir / f"writer-{i}.json")["own"]
        theirs = {kp.name: [kp.text, kp.helpful, kp.harmful] for _s, kp in final.entries()
                  if kp.text.startswith(f"w{i}-")}
        assert theirs == own
        writer_txs += len(acks)
    sessions = [t.commit.session for t in transactions if (t.commit.session or "").startswith("writer-")]
    switches = sum(1 for a, b in zip(sessions, sessions[1:]) if a != b)
    assert switches > ROLES["writer"], "the writers did not run at the same time"

    # Learning: every request finished exactly once, the way its transcript asked for; each completed
    # cycle is one transaction with the reflector's tag and the curator's ADD.
    requested = [e.request for t in transactions for e in t.events if isinstance(e, LearningRequested)]
    finished = Counter(e.request for t in transactions for e in t.events
                       if isinstance(e, (LearningCompleted, LearningFailed, LearningSkipped)))
    assert len(set(requested)) == len(requested) and set(finished) == set(requested)
    assert set(finished.values()) <= {1}, [r for r, n in finished.items() if n > 1]
    records, outcomes = [], []
    for i in range(ROLES["learner"]):
        data = _readable(result_dir / f"learner-{i}.json")
        records += data["requests"]
        outcomes += [o for o in data["outcomes"] if o[1] != "gone"]
    assert sorted(r["request"] for r in records) == sorted(requested)
    assert sorted(o[0] for o in outcomes) == sorted(requested)  # each run by exactly one learner
    # nothing pending but the failed cycles, each waiting for its first retry
    assert {r: p.attempts for r, p in final.pending.items()} == {r["request"]: 1 for r in records if r["fail"]}
    kinds = {e.request: type(e).__name__ for t in transactions for e in t.events
             if isinstance(e, (LearningCompleted, LearningFailed, LearningSkipped))}
    status = {o[0]: o[1] for o in outcomes}
    for record in records:
        want = ("LearningFailed", "failed") if record["fail"] else ("LearningCompleted", "completed")
        assert (kinds[record["request"]], status[record["request"]]) == want, record
    completed = [t for t in transactions if any(isinstance(e, LearningCompleted) for e in t.events)]
    for transaction in completed:
        assert transaction.commit.analysis == REFLECTION["analysis"]
        assert [e.name for e in transaction.events if isinstance(e, KeyPointEvaluated)] == ["pat-001"]
        assert [e.text.startswith("learned tip") for e in transaction.events if isinstance(e, KeyPointAdded)] == [True]
    assert final.get("pat-001").helpful == len(completed)
    learned = sorted(kp.text for _s, kp in final.entries() if kp.text.startswith("learned tip"))
    assert len(learned) == len(set(learned)) == len(completed) >= 1
    assert requests_served >= 2 * len(completed)

    # Readers: every playbook.json and every hook output seen was the projection of a committed prefix,
    # and each reader only ever moved forward in the log.
    files: dict[str, list[int]] = {}
    hooks: dict[str, list[int]] = {}
    state = PlaybookState()
    for index, transaction in enumerate(transactions):
        apply_transaction(state, transaction.events, transaction.commit.seq, transaction.commit.at)
        files.setdefault(_digest(render(state, transaction.end)), []).append(index)
        hooks.setdefault(_digest(hook_output(state)), []).append(index)
    runs = reads = 0
    for i in range(ROLES["hook_reader"]):
        data = _readable(result_dir / f"hook-reader-{i}.json")
        _forward(data["hooks"], hooks, f"hook reader {i}, SessionStart output")
        _forward(data["files"], files, f"hook reader {i}, playbook.json")
        runs += data["runs"]
        assert data["runs"] >= 1
    for i in range(ROLES["file_reader"]):
        data = _readable(result_dir / f"file-reader-{i}.json")
        _forward(data["files"], files, f"file reader {i}, playbook.json")
        _forward(data["hooks"], hooks, f"file reader {i}, playbook.hook.json")
        reads += data["reads"]
    trips = sum(_readable(result_dir / f"time-traveller-{i}.json")["trips"] for i in range(ROLES["time_traveller"]))
    rebuilds = [_readable(result_dir / f"rebuilder-{i}.json") for i in range(ROLES["rebuilder"])]
    assert trips >= 1 and all(r["rebuilds"] + r["refreshes"] >= 1 for r in rebuilds)

    # And the hook, run once more now, prints exactly the final playbook.
    from playbook.wiring.install import hook_command

    done = subprocess.run(hook_command("SessionStart"), shell=True, input=b"{}", cwd=project, capture_output=True,
                          env={**os.environ, "CLAUDE_PROJECT_DIR": str(project)}, timeout=60)
    assert (done.returncode, done.stderr, done.stdout) == (0, b"", hook_output(final))

    with capsys.disabled():
        print(f"\nstress: {len(processes)} processes for {SECONDS:g} s ({ran:.1f} s in all): "
              f"{len(transactions)} transactions, {transactions[-1].end.seq} lines; {writer_txs} writer appends; "
              f"{len(requested)} learning requests ({len(completed)} completed); "
              f"{sum(r['rebuilds'] for r in rebuilds)} rebuilds; {runs} SessionStart hook runs; "
              f"{reads} file reads; {trips} time-travel checks")


# --- the state machine ------------------------------------------------------------------------------------


SESSIONS = ["session-a", "session-b", "session-c"]


def _touched(event: Any) -> set[str]:
    """The entries an event changes (written here again, not taken from the code under test)."""
    if isinstance(event, KeyPointsMerged):
        return {event.name, *event.sources}
    if isinstance(event, (KeyPointAdded, KeyPointImported, KeyPointUpdated, KeyPointDeleted, KeyPointPruned,
                          KeyPointEvaluated, CountersSet, KeyPointMoved)):
        return {event.name}
    return set()


def _entries(state: PlaybookState) -> dict[str, tuple]:
    return {kp.name: (section, kp.text, kp.helpful, kp.harmful) for section, kp in state.entries()}


def _resolve(template: Any, env: Any) -> Any:
    """A command of `machine_commands` with its symbolic references resolved against the model."""
    return type(template)(**{f: env.resolve(getattr(template, f)) for f in template.__struct_fields__})


class Tx:
    def __init__(self, events: list, commit: TransactionCommitted) -> None:
        self.events, self.commit = events, commit


class RevertMachine(RuleBasedStateMachine):
    """The model: the committed transactions, folded from scratch (`fold`) whenever it is needed."""

    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="playbook-stress-machine-"))
        self.claude_dir = self.root / "project" / ".claude"
        self.repo = PlaybookRepository(self.claude_dir)
        self.txs: list[Tx] = []
        self.torn = b""
        self.torn_count = 0
        self.snapshot = "missing"  # fresh | missing | stale | edited: what the machine did to playbook.json
        self.old_snapshots: list[bytes] = []
        self.old_injections: list[bytes] = []
        self.seen_taken_in = 0
        self.every = checkpoints.CHECKPOINT_EVERY
        checkpoints.CHECKPOINT_EVERY = 9  # so checkpoints exist, and time travel and reverts use them

    def teardown(self) -> None:
        checkpoints.CHECKPOINT_EVERY = self.every
        shutil.rmtree(self.root, ignore_errors=True)

    @property
    def log(self) -> Path:
        return self.claude_dir / LOG_NAME

    @property
    def snapshot_path(self) -> Path:
        return self.claude_dir / SNAPSHOT_NAME

    def expected(self, upto: int | None = None) -> PlaybookState:
        txs = self.txs if upto is None else self.txs[:upto]
        state = fold([e for tx in txs for e in tx.events])
        state.seq = txs[-1].commit.seq if txs else 0
        return state

    def _record(self, committed: Any) -> None:
        if committed is None:
            assert not self.torn, "a torn tail is repaired by the next append"
            return
        events = committed.events
        if self.torn:
            assert isinstance(events[0], TailRepaired), events
            assert events[0].bytes_cut == len(self.torn)
            assert (self.claude_dir / events[0].kept_at).read_bytes() == self.torn
            self.torn = b""
            event("a torn tail was repaired")
        assert not [e for e in events[1:] if isinstance(e, TailRepaired)]
        self.txs.append(Tx(list(events), committed.commit))

    def _take_in(self) -> int:
        taken = self.repo.taken_in[self.seen_taken_in:]
        self.seen_taken_in = len(self.repo.taken_in)
        for committed in taken:
            assert committed.commit.source in ("manual_edit", "rebuild", "import"), committed.commit
            event(f"took in: {committed.commit.source}")
            self._record(committed)
        return len(taken)

    def _written(self) -> None:
        """After an append or rebuild: the snapshot is fresh; keep its bytes for the `restore` rules."""
        self.snapshot = "fresh"
        for path, kept in ((self.snapshot_path, self.old_snapshots), (self.claude_dir / INJECTION_NAME,
                                                                      self.old_injections)):
            data = path.read_bytes()
            if not kept or kept[-1] != data:
                kept.append(data)
                del kept[:-8]

    # --- rules -------------------------------------------------------------------------------------

    @rule(templates=st.lists(machine_commands, min_size=1, max_size=3), session=st.sampled_from(SESSIONS))
    def append(self, templates, session):
        env = state_env(self.expected())
        resolved = [_resolve(template, env) for template in templates]
        committed = self.repo.append(resolved, Cause(source="machine", session=session))
        self._take_in()
        self._record(committed)
        self._written()

    @rule(data=st.data(), events=st.integers(1, 3))
    def crash(self, data, events):
        """A writer died in the middle of its one write: a strict prefix of a valid transaction."""
        self.torn_count += 1
        payload = transaction_after(self.log, f"torn{self.torn_count:012d}", events, f"torn {self.torn_count}")
        cut = data.draw(st.integers(1, len(payload) - 1), label="cut")
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as handle:
            handle.write(payload[:cut])
        self.torn += payload[:cut]

    @rule()
    def reopen(self):
        self.repo = PlaybookRepository(self.claude_dir)
        self.seen_taken_in = 0

    @rule(how=st.sampled_from(["delete", "restore", "behind", "edit", "old_injection"]), data=st.data())
    def damage_snapshot(self, how, data):
        if how == "delete":
            self.snapshot_path.unlink(missing_ok=True)
            self.snapshot = "missing"
        elif how == "restore" and self.old_snapshots:
            old = data.draw(st.sampled_from(self.old_snapshots), label="old snapshot")
            self.snapshot_path.write_bytes(old)
            self.snapshot = "fresh" if old == render(self.expected(), self._end()) else "stale"
        elif how == "behind":
            # A writer that appended and fsynced, then died before replacing playbook.json.
            template = data.draw(machine_commands, label="command")
            command = _resolve(template, state_env(self.expected()))
            with self.repo.store.locked():
                committed = append_locked(self.repo.store, 
                    PlaybookState(), Position(), lambda s: decide_all(s, [command]),
                    Cause(source="machine", session=data.draw(st.sampled_from(SESSIONS), label="session")))
            self._record(committed)
            if committed is not None:
                event("appended behind playbook.json's back")
                if self.snapshot == "fresh":
                    self.snapshot = "stale"
        elif how == "edit" and self.snapshot in ("fresh", "stale") and self.snapshot_path.exists():
            pb = json.loads(self.snapshot_path.read_bytes())
            entries = [(s, i) for s in SECTIONS for i in range(len(pb["sections"][s]))]
            if not entries:
                return
            section, index = data.draw(st.sampled_from(entries), label="edited entry")
            change = data.draw(st.sampled_from(["text", "counters", "remove"]), label="edit")
            if change == "text":
                pb["sections"][section][index]["text"] += " (edited by hand)"
            elif change == "counters":
                pb["sections"][section][index]["helpful"] += 2
            else:
                del pb["sections"][section][index]
            self.snapshot_path.write_text(json.dumps(pb, indent=2))
            self.snapshot = "edited"
        elif how == "old_injection" and self.old_injections:
            (self.claude_dir / INJECTION_NAME).write_bytes(data.draw(st.sampled_from(self.old_injections)))

    @rule()
    def rebuild(self):
        if self.snapshot == "edited":
            event("rebuild over a hand edit")
        position = self.repo.rebuild()
        self._take_in()  # rebuild takes in a hand edit (or sets an unreadable file aside) before it folds
        assert position == self._end()
        self._written()

    @rule(data=st.data())
    def revert(self, data):
        if not self.txs:
            return
        sessions = sorted({tx.commit.session for tx in self.txs if tx.commit.session})
        target = data.draw(st.sampled_from([tx.commit.tx for tx in self.txs] + sessions), label="revert")
        before = self.expected()
        plan = plan_revert(Timeline(self.repo), target, force=True)
        chosen = [i for i, tx in enumerate(self.txs) if target in (tx.commit.tx, tx.commit.session)]
        assert sorted(plan.transactions) == sorted(self.txs[i].commit.tx for i in chosen)
        assert plan.base == before and ordered(plan.base) == ordered(before)

        # What a forced revert must give, worked out here from the model alone: the log as if the
        # reverted transactions had never been, except for the entries later ones touched too (left as now).
        reverted = set(plan.transactions)
        without = PlaybookState()
        touched_by_reverted, touched_later = set(), set()
        for tx in self.txs[chosen[0]:]:
            names = {n for e in tx.events for n in _touched(e)}
            (touched_by_reverted if tx.commit.tx in reverted else touched_later).update(names)
        for tx in self.txs:
            if tx.commit.tx not in reverted:
                apply_transaction(without, tx.events, tx.commit.seq, tx.commit.at)
        conflicts = touched_by_reverted & touched_later
        assert set(plan.conflicts) == conflicts

        committed = self.repo.append([ReplaceContent(target=playbook_dict(plan.target), origin="revert",
                                                     base=plan.base)],
                                     Cause(source="revert", session=data.draw(st.sampled_from(SESSIONS)),
                                           note=f"revert of {', '.join(plan.transactions)}"))
        taken = self._take_in()
        self._record(committed)
        self._written()
        event(f"revert of {len(plan.transactions)} transaction(s), {len(conflicts)} conflict(s)")
        if taken:
            return  # a hand edit was taken in first: the revert applied on top of it
        after = self.expected()
        got, want = _entries(after), _entries(without)
        now = _entries(before)
        for name in set(got) | set(want) | set(now):
            expected = now.get(name) if name in conflicts else want.get(name)
            assert got.get(name) == expected, (name, got.get(name), expected, plan.conflicts)
        for section in SECTIONS:
            assert [n for n in after.sections[section] if n not in conflicts] == \
                [n for n in without.sections[section] if n not in conflicts], section

    def _end(self) -> Position:
        return fold_log(self.log, PlaybookState())[1] if self.log.exists() else Position()

    # --- the invariant ----------------------------------------------------------------------------------

    @invariant()
    def agrees_with_the_model(self):
        expected = self.expected()
        current, position = self.repo.current()
        assert current == expected and ordered(current) == ordered(expected)
        check_state(current)
        reader = LogReader(self.log)
        assert [t.commit.tx for t in reader] == [tx.commit.tx for tx in self.txs]
        assert (reader.torn.length if reader.torn else 0) == len(self.torn)

        # playbook.json: the model's projection unless the machine made it missing, stale or edited.
        if self.snapshot == "fresh":
            assert self.snapshot_path.read_bytes() == render(expected, position)
        # The SessionStart fast path never serves anything but the current playbook.
        fast = inject._fast(str(self.claude_dir))
        if fast is not None:
            event("the SessionStart fast path answered")
            assert fast == hook_output(expected)

        # verify: no problem but the torn tail and what the machine did to playbook.json.
        problems = sorted(p.what for p in verify(self.repo).problems)
        wanted = []
        if self.torn:
            wanted.append("unfinished transaction")
        if self.snapshot == "missing" and self.txs:
            wanted.append("missing")
        elif self.snapshot == "stale":
            wanted.append("behind the log")
        elif self.snapshot == "edited":
            wanted.append("edited by hand")
        assert len(problems) == len(wanted) and all(
            any(p.startswith(w) for p in problems) for w in wanted), (problems, wanted)

        # Time travel, through checkpoints and the commit index, to the end and to the middle.
        if self.txs:
            timeline = Timeline(PlaybookRepository(self.claude_dir))
            assert timeline.state_at(position) == expected
            middle = len(self.txs) // 2
            past = self.expected(middle + 1)
            at = timeline.state_at(timeline.refs[middle].end)
            assert at == past and ordered(at) == ordered(past)


RevertMachine.TestCase.settings = settings(COMMON, max_examples=60, stateful_step_count=40)
TestRevertMachine = RevertMachine.TestCase
