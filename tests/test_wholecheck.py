"""The whole-log checks' two-core road (`eventlog.wholecheck`): its results are the single-process road's.

The chain is checked by a forked child while the parent folds; a child that dies, a log that
grows while the check runs, damage in what was appended meanwhile, and a small log that never forks.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import msgspec
import pytest

import eventlog.wholecheck
from eventlog.domain import PlaybookState
from eventlog.logformat import COMMIT
from eventlog.store import LogReader
from eventlog.wholecheck import _ChainElsewhere, halves_fold, parallel_fold
from playbook.commands.audit import stats
from projections.checkpoints import Checkpoint
from projections.quickroads import CHECKPOINT_DIR
from projections.repository import PlaybookRepository
from projections.verify import verify

GOLDEN = Path(__file__).parent / "golden" / "replay" / "playbook.events.jsonl"


def _split(raw: bytes) -> tuple[bytes, bytes]:
    """The log cut after the commit line nearest its middle: (whole transactions before, the rest)."""
    lines = raw.splitlines(keepends=True)
    cut = next(i for i in range(len(lines) // 2, len(lines)) if lines[i].startswith(COMMIT)) + 1
    return b"".join(lines[:cut]), b"".join(lines[cut:])


def _damaged(tail: bytes) -> bytes:
    """`tail` with the `h` of its first event line changed."""
    lines = tail.splitlines(keepends=True)
    index = next(i for i, line in enumerate(lines) if not line.startswith(COMMIT))
    line = lines[index]
    lines[index] = line[:-4] + (b"0" if line[-4:-3] != b"0" else b"1") + line[-3:]
    return b"".join(lines)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> PlaybookRepository:
    monkeypatch.setattr(eventlog.wholecheck, "PARALLEL_FROM", 0)
    claude = tmp_path / ".claude"
    claude.mkdir()
    (claude / "playbook.events.jsonl").write_bytes(GOLDEN.read_bytes())
    return PlaybookRepository(claude)


def _single(repo: PlaybookRepository) -> tuple[Any, Any]:
    """verify's and stats' results on the single-process road."""
    eventlog.wholecheck.PARALLEL_FROM = 1 << 62
    try:
        return msgspec.to_builtins(verify(repo)), msgspec.to_builtins(stats(repo))
    finally:
        eventlog.wholecheck.PARALLEL_FROM = 0


def test_the_two_core_road_vouches_for_a_whole_log(repo: PlaybookRepository) -> None:
    reader = parallel_fold(repo.log_path, PlaybookState())
    single = LogReader(repo.log_path)
    single.fold(PlaybookState(), seqs=True)
    assert reader is not None and reader.position == single.position and reader.torn is None
    assert (msgspec.to_builtins(verify(repo)), msgspec.to_builtins(stats(repo))) == _single(repo)


def test_a_child_that_is_killed_leaves_the_verdict_to_the_single_process_road(
        repo: PlaybookRepository, monkeypatch: pytest.MonkeyPatch) -> None:
    parent = os.getpid()

    def killed(*args: Any) -> Any:
        if os.getpid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)
        raise AssertionError("the chain is checked in the child")

    monkeypatch.setattr(eventlog.wholecheck, "chain_reach", killed)
    assert parallel_fold(repo.log_path, PlaybookState()) is None
    assert (msgspec.to_builtins(verify(repo)), msgspec.to_builtins(stats(repo))) == _single(repo)


@pytest.mark.slow
def test_a_child_that_does_not_vouch_sends_the_check_to_the_road_that_names_the_line(
        repo: PlaybookRepository) -> None:
    head, tail = _split(GOLDEN.read_bytes())
    repo.log_path.write_bytes(head + _damaged(tail))  # the damage in the second half: the parent alone sees none
    unchecked = _ChainElsewhere(repo.log_path)
    unchecked.fold(PlaybookState(), seqs=True)
    assert unchecked.torn is None
    assert parallel_fold(repo.log_path, PlaybookState()) is None
    report = verify(repo)
    assert report.problems[0].file == str(repo.log_path)
    assert (report.problems[0].line, report.problems[0].offset) == (head.count(b"\n") + 1, len(head))
    assert msgspec.to_builtins(report) == msgspec.to_builtins(verify(repo, strict=True))


@pytest.mark.slow
@pytest.mark.parametrize("damage", [False, True], ids=["whole", "damaged"])
def test_a_log_that_grows_while_it_is_checked(repo: PlaybookRepository, monkeypatch: pytest.MonkeyPatch,
                                              damage: bool) -> None:
    """The child checks the file as it was; what the parent folds beyond that it checks itself."""
    head, tail = _split(GOLDEN.read_bytes())
    repo.log_path.write_bytes(head)
    appended = _damaged(tail) if damage else tail
    fold = _ChainElsewhere.fold

    def growing(self: LogReader, *args: Any, **kwargs: Any) -> bool:
        with open(self.path, "ab") as handle:  # after the fork: the child's end is the head's
            handle.write(appended)
        return fold(self, *args, **kwargs)

    monkeypatch.setattr(_ChainElsewhere, "fold", growing)
    reader = parallel_fold(repo.log_path, PlaybookState())
    assert repo.log_path.read_bytes() == head + appended
    if damage:
        assert reader is None
    else:
        assert reader is not None and reader.position.offset == len(head + tail)
    repo.log_path.write_bytes(head)
    grown = msgspec.to_builtins(verify(repo))
    monkeypatch.setattr(_ChainElsewhere, "fold", fold)
    assert grown == msgspec.to_builtins(verify(repo, strict=True))


def test_a_small_log_never_forks(repo: PlaybookRepository, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(eventlog.wholecheck, "PARALLEL_FROM", 8 << 20)

    def no_fork() -> int:
        raise AssertionError("a small log is checked in one process")

    monkeypatch.setattr(os, "fork", no_fork)
    assert parallel_fold(repo.log_path, PlaybookState()) is None
    assert verify(repo).transactions > 0


def keep_checkpoint(claude: Path, raw: bytes, edit: Any = None) -> Checkpoint:
    """A checkpoint of the log `raw` at the commit nearest its middle, written where the project keeps them."""
    head, _tail = _split(raw)
    whole = claude.parent / "whole.jsonl"
    whole.write_bytes(raw)
    state = PlaybookState()
    reader = LogReader(whole)
    reader.fold(state, until=len(head))
    assert reader.position.offset == len(head)
    if edit is not None:
        edit(state)
    kept = Checkpoint(state=state, position=reader.position)
    directory = claude / CHECKPOINT_DIR
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{reader.position.seq}.msgpack").write_bytes(msgspec.msgpack.encode(kept))
    return kept


@pytest.mark.slow
def test_the_halves_road_vouches_for_a_whole_log(repo: PlaybookRepository) -> None:
    kept = keep_checkpoint(repo.claude_dir, GOLDEN.read_bytes())
    found = halves_fold(repo.log_path, kept.state, kept.position)
    single, state = LogReader(repo.log_path), PlaybookState()
    single.fold(state, seqs=True)
    assert found is not None
    reader, folded, before = found
    assert reader.position == single.position and folded == state and 0 < before < 40
    assert (msgspec.to_builtins(verify(repo)), msgspec.to_builtins(stats(repo))) == _single(repo)


def _bumped(state: PlaybookState) -> None:
    section, kp = next(iter(state.entries()))
    kp.helpful += 1


def test_a_checkpoint_that_is_not_the_fold_is_not_trusted(repo: PlaybookRepository) -> None:
    kept = keep_checkpoint(repo.claude_dir, GOLDEN.read_bytes(), _bumped)
    assert halves_fold(repo.log_path, kept.state, kept.position) is None
    assert msgspec.to_builtins(verify(repo)) == _single(repo)[0]


def test_a_killed_first_half_leaves_the_verdict_to_the_single_process_road(
        repo: PlaybookRepository, monkeypatch: pytest.MonkeyPatch) -> None:
    kept = keep_checkpoint(repo.claude_dir, GOLDEN.read_bytes())
    parent = os.getpid()

    def killed(*args: Any) -> bytes:
        if os.getpid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)
        raise AssertionError("the first half is folded in the child")

    monkeypatch.setattr(eventlog.wholecheck, "_first_half", killed)
    assert halves_fold(repo.log_path, kept.state, kept.position) is None
    assert msgspec.to_builtins(verify(repo)) == _single(repo)[0]


@pytest.mark.slow
@pytest.mark.parametrize("lag", [False, True], ids=["current", "lagging"])
def test_stats_counts_the_log_and_takes_the_playbook_from_a_trusted_snapshot(
        repo: PlaybookRepository, monkeypatch: pytest.MonkeyPatch, lag: bool) -> None:
    import playbook.commands.audit

    head, tail = _split(GOLDEN.read_bytes())
    repo.log_path.write_bytes(head if lag else head + tail)
    repo.rebuild()
    if lag:
        with open(repo.log_path, "ab") as handle:
            handle.write(tail)
    expected = _single(repo)[1]
    roads: list[bool] = []
    fold = playbook.commands.audit.parallel_fold

    def seen(*args: Any, apply: bool = True) -> Any:
        roads.append(apply)
        return fold(*args, apply=apply)

    monkeypatch.setattr(playbook.commands.audit, "parallel_fold", seen)
    assert msgspec.to_builtins(stats(repo)) == expected
    assert roads == [False]  # counted, not applied
    repo.snapshot_path.write_bytes(repo.snapshot_path.read_bytes().replace(b'"helpful": 0', b'"helpful": 9', 1))
    assert msgspec.to_builtins(stats(repo)) == expected  # edited by hand: not trusted, the log folded
    assert roads == [False, True]


def test_a_transaction_replayed_under_a_recomputed_chain_is_named_alike_on_every_road(
        repo: PlaybookRepository) -> None:
    """A transaction of the first half copied after the log, re-numbered and the whole chain recomputed: the
    half a forked child folds is seen by byte search, the rest through the fold, and every road names the copy."""
    from eventlog.registry import record_decoder
    from eventlog.store import encode_line

    records = [record_decoder().decode(raw) for raw in GOLDEN.read_bytes().splitlines()]
    copied = [record for record in records if record.tx == records[0].tx]
    replayed = [msgspec.structs.replace(record, seq=len(records) + i + 1) for i, record in enumerate(copied)]
    lines, running = [], 0
    for record in records + replayed:
        line, running = encode_line(record, running)
        lines.append(line)
    repo.log_path.write_bytes(b"".join(lines))
    expected = _single(repo)[0]
    assert [(p["line"], p["what"].split(":")[0]) for p in expected["problems"]][0] == (
        len(records) + 1, f"transaction {records[0].tx} again")
    assert msgspec.to_builtins(verify(repo)) == expected  # the parallel road: the parent sees every record
    kept = keep_checkpoint(repo.claude_dir, repo.log_path.read_bytes())
    assert halves_fold(repo.log_path, kept.state, kept.position) is not None
    assert msgspec.to_builtins(verify(repo)) == expected  # the halves road: the first copy is in the child's half
