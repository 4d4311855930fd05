"""The history page's data, read as the fold reads the log, against the strict one-transaction-at-a-time pass.

No browser here: what the page shows of this data is tests/test_page.py's.
"""

from __future__ import annotations

import gc
import json
from pathlib import Path

import msgspec
import pytest

import eventlog.registry
import eventlog.store
from eventlog.commands import ModelCall, RecordModelCalls
from eventlog.decide import ApplyOperations, CompleteLearning, RequestLearning
from eventlog.domain import PlaybookState
from eventlog.errors import CorruptLogError
from eventlog.events import Cause
from eventlog.fastread import RunReader
from eventlog.logformat import stamp, start
from eventlog.store import LogReader, fold_log
from playbook.commands.audit import revert
from playbook.commands.cli import main
from playbook.commands.purge import match_redactor
from projections.pagedata import PageData, build
from projections.purge import purge
from projections.repository import PlaybookRepository

from .pagedata_strict import build as build_strictly
from .pagelog import build_history

FUTURE = [b'{"type":"FromTheFuture","seq":%d,"tx":"f0f0f0f0f0f0f0f0","at":"2026-04-01T00:00:00+00:00","x":[1,2]}',
          b'{"type":"TransactionCommitted","seq":%d,"tx":"f0f0f0f0f0f0f0f0","at":"2026-04-01T00:00:00+00:00",'
          b'"events":1,"source":"v9"}']


def append_raw(repo: PlaybookRepository, lines: list[bytes]) -> None:
    """Append one transaction's lines as a newer version would write them (`%d`: their seqs), chained."""
    _state, position, _torn = fold_log(repo.log_path, PlaybookState())
    running = start(position.hash)
    out = []
    for seq, line in enumerate(lines, position.seq + 1):
        written, running = stamp((line % seq)[:-1], running)
        out.append(written)
    with open(repo.log_path, "ab") as handle:
        handle.write(b"".join(out))


@pytest.fixture(scope="module")
def every_cause(tmp_path_factory) -> PlaybookRepository:
    """A log with a transaction of every cause the page names: learning cycles, a hook's request, an import, a
    merge of key points, a manual edit, a revert, model usage, a purge, and a newer version's record."""
    repo = PlaybookRepository(tmp_path_factory.mktemp("page-data") / "demo" / ".claude")
    with pytest.MonkeyPatch.context() as patch:
        tx = build_history(repo, patch, cycles=9)
        revert(repo, tx["delete"])
        calls = [ModelCall(role="reflector", model="claude-opus-5-5", backend="api", attempt=1, outcome="ok",
                           input_tokens=1200, output_tokens=300, cost_usd=0.0081),
                 ModelCall(role="curator", model="claude-sonnet-5-5", backend="api", attempt=1, outcome="ok",
                           input_tokens=800, output_tokens=100, cache_read_input_tokens=200)]
        assert repo.append([RecordModelCalls(calls)], Cause(source="hook:SessionEnd", session="s-used",
                                                            model="claude-sonnet-5-5")) is not None
        session = Cause(source="hook:SessionEnd", session="s-9")  # a cycle that completes without a model's call
        assert repo.append([RequestLearning(request="req-9", hook="SessionEnd", transcript="/t/s-9.jsonl",
                                            session="s-9")], session) is not None
        assert repo.append([CompleteLearning(request="req-9", transcript="/t/s-9.jsonl", from_line=0, through_line=3,
                                             cited=[])], session) is not None
        assert repo.append([ApplyOperations([{"type": "ADD", "section": "OTHERS", "text": "From the other branch"}])],
                           Cause(source="merge", note="two branches' logs merged")) is not None
        append_raw(repo, FUTURE)
        purge(repo, match_redactor("Cycle 3"), "match")
    return repo


def same(data: PageData, reference: PageData) -> None:
    """Equal but for the time each was made."""
    assert msgspec.structs.replace(data.head, generated="") == msgspec.structs.replace(reference.head, generated="")
    assert json.loads(data.head_json) | {"generated": ""} == json.loads(reference.head_json) | {"generated": ""}
    assert data.chunks == reference.chunks


@pytest.mark.slow
@pytest.mark.parametrize("chunk_size", [64, 700, 1 << 20])
@pytest.mark.parametrize("chunk_events", [1, 12, 20_000])
def test_page_data_read_as_the_fold_reads_equals_the_strict_pass(every_cause, monkeypatch, chunk_size, chunk_events):
    log = every_cause.log_path
    reference = build_strictly(log, project="demo", chunk_events=chunk_events)
    causes = reference.head.causes
    assert all(causes[cause] for cause in ("learning", "hook", "manual", "revert", "import", "merge", "other"))
    assert reference.head.usage and reference.head.usage[0].calls == 2
    assert b"from the future" in b"".join(reference.chunks)  # the newer version's record, shown as its tag
    monkeypatch.setattr(eventlog.store, "CHUNK_SIZE", chunk_size)  # runs that end and begin mid-transaction
    same(build(log, project="demo", chunk_events=chunk_events), reference)


def test_progress_is_told_the_bytes_read_up_to_the_whole_log(every_cause, monkeypatch):
    monkeypatch.setattr(eventlog.store, "CHUNK_SIZE", 4096)
    told: list[int] = []
    build(every_cause.log_path, progress=told.append)
    assert len(told) > 3 and told == sorted(told) and told[-1] == every_cause.log_path.stat().st_size


def test_runs_are_the_transactions_the_strict_reader_reads(every_cause, monkeypatch):
    monkeypatch.setattr(eventlog.store, "CHUNK_SIZE", 300)
    records = [record for run in RunReader(every_cause.log_path).runs(eventlog.registry.record_decoder()) for record in run]
    assert records == [record for t in LogReader(every_cause.log_path, strict=True) for record in [*t.events, t.commit]]


def copy_log(repo: PlaybookRepository, tmp_path: Path) -> Path:
    project = tmp_path / "copy"
    (project / ".claude").mkdir(parents=True)
    (project / ".claude" / "playbook.events.jsonl").write_bytes(repo.log_path.read_bytes())
    return project


@pytest.mark.parametrize("chunk_size", [64, 1 << 20])
def test_a_damaged_log_writes_no_page(every_cause, tmp_path, monkeypatch, capsys, chunk_size):
    monkeypatch.setattr(eventlog.store, "CHUNK_SIZE", chunk_size)
    project = copy_log(every_cause, tmp_path)
    log = project / ".claude" / "playbook.events.jsonl"
    data = log.read_bytes()
    at = data.index(b"Use pathlib for file paths")
    log.write_bytes(data[:at] + b"Use pathlib for file_paths" + data[at + 26 :])  # same length, one byte changed
    with pytest.raises(CorruptLogError):
        build(log)
    assert gc.isenabled()  # paused while the data was built, and running again after the failure
    page = project / "history.html"
    assert main(["timeline", "--project", str(project), "--html", str(page)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("playbook: ") and err.count("\n") == 1 and "line" in err
    assert not page.exists() and [p.name for p in project.iterdir()] == [".claude"]


def test_a_torn_tail_is_left_out_of_the_page(every_cause, tmp_path):
    project = copy_log(every_cause, tmp_path)
    log = project / ".claude" / "playbook.events.jsonl"
    whole = build(log)
    with open(log, "ab") as handle:
        handle.write(b'{"type":"KeyPointAdded","seq":999,"tx":"00')  # a write cut short
    same(build(log), whole)
    same(build(log), build_strictly(log))


FIXTURES = Path(__file__).parent / "fixtures"


@pytest.mark.parametrize("log", [FIXTURES / "crc32" / "playbook.events.jsonl",
                                 FIXTURES / "hostile" / "log_from_the_future.jsonl",
                                 Path(__file__).parent / "golden" / "replay" / "playbook.events.jsonl"],
                         ids=["crc32", "from-the-future", "golden-replay"])
@pytest.mark.parametrize("chunk_size", [64, 1 << 20])
def test_logs_of_every_format_give_the_strict_pass_page_data(log, monkeypatch, chunk_size):
    reference = build_strictly(log, chunk_events=5)
    assert reference.head.transactions > 1
    monkeypatch.setattr(eventlog.store, "CHUNK_SIZE", chunk_size)
    same(build(log, chunk_events=5), reference)


@pytest.mark.slow
def test_a_long_log_of_ratings_gives_the_strict_pass_page_data(tmp_path):
    """Long stretches of rating-only transactions across chunks, summary samples thinned several times, merges
    and new entries between them."""
    from benchmarks.timeline import generate

    log = tmp_path / "playbook.events.jsonl"
    generate(log, 9_000)
    reference = build_strictly(log, chunk_events=700)
    assert reference.head.transactions > 800 and len(reference.head.summary) < reference.head.transactions // 2
    same(build(log, chunk_events=700), reference)


def test_a_rating_the_fast_road_does_not_expect_still_gives_the_strict_pass_page_data(every_cause, tmp_path):
    project = copy_log(every_cause, tmp_path)
    repo = PlaybookRepository(project / ".claude")
    append_raw(repo, [
        b'{"type":"KeyPointEvaluated","seq":%d,"tx":"e0e0e0e0e0e0e0e0","at":"2026-04-02T00:00:00+00:00",'
        b'"name":"pat-003","rating":"so-so","helpful":3,"harmful":1,"rationale":"an older rating word"}',
        b'{"type":"TransactionCommitted","seq":%d,"tx":"e0e0e0e0e0e0e0e0","at":"2026-04-02T00:00:00+00:00",'
        b'"events":1,"source":"manual"}'])
    reference = build_strictly(repo.log_path)
    assert b'"so-so"' in reference.chunks[-1]
    same(build(repo.log_path), reference)


@pytest.mark.parametrize("recent", [1, 2])
def test_the_recent_sessions_are_the_strict_pass_ones_when_older_ones_are_let_go(every_cause, monkeypatch, recent):
    import projections.pagedata

    from . import pagedata_strict

    sessions = [t.commit.session for t in LogReader(every_cause.log_path) if t.commit.session]
    assert len(sessions) > 8 * recent and len(set(sessions)) < len(sessions)  # let go of at least once, repeats
    monkeypatch.setattr(projections.pagedata, "RECENT_SESSIONS", recent)
    monkeypatch.setattr(pagedata_strict, "RECENT_SESSIONS", recent)
    reference = build_strictly(every_cause.log_path)
    assert len(reference.head.sessions) == recent
    same(build(every_cause.log_path), reference)
