"""Time travel, diffs, reverts and verify, on logs built through the real write path."""

from __future__ import annotations

import io
import json
from pathlib import Path

import msgspec

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eventlog.decide import ApplyOperations, Evaluate, Prune, ReplaceContent
from eventlog.domain import SECTION_SLUGS, PlaybookState
from eventlog.events import Cause, KeyPointAdded, KeyPointsMerged
from eventlog.evolve import apply_transaction
from eventlog.registry import mentions, touched_names
from eventlog import storage, store
from eventlog.store import LogReader
from projections.revert import plan_revert
from projections import checkpoints
from projections.repository import PlaybookRepository
from projections.snapshot import playbook_dict
from projections.diff import apply_diff, diff
from projections.revert import RevertConflict
from projections import history as history_module
from projections.timeline import Timeline, TimelineError
from projections.verify import verify

SECTIONS = list(SECTION_SLUGS)


def content(state: PlaybookState) -> tuple:
    """What a user sees: version and each section's entries, in order."""
    return state.version, {s: [(kp.name, kp.text, kp.helpful, kp.harmful) for kp in e.values()]
                           for s, e in state.sections.items()}


def prefix_fold(repo: PlaybookRepository, seq: int) -> PlaybookState:
    state = PlaybookState()
    for transaction in LogReader(repo.store.path):
        if transaction.commit.seq > seq:
            break
        apply_transaction(state, transaction.events, transaction.commit.seq, transaction.commit.at)
    return state


step = st.one_of(
    st.builds(lambda texts, sections: ("add", [{"type": "ADD", "text": t, "section": s}
                                               for t, s in zip(texts, sections)]),
              st.lists(st.sampled_from([f"tip {i}" for i in range(12)]), min_size=1, max_size=4),
              st.lists(st.sampled_from(SECTIONS), min_size=4, max_size=4)),
    st.builds(lambda i, rating: ("rate", i, rating), st.integers(0, 30), st.sampled_from(["helpful", "harmful"])),
    st.builds(lambda i, text: ("update", i, text), st.integers(0, 30), st.sampled_from(["new a", "new b", "new c"])),
    st.builds(lambda i: ("delete", i), st.integers(0, 30)),
    st.builds(lambda i, j: ("merge", i, j), st.integers(0, 30), st.integers(0, 30)),
    st.just(("prune",)),
)


def build(repo: PlaybookRepository, steps: list, sessions: int = 3) -> None:
    for number, item in enumerate(steps):
        names = [kp.name for _, kp in repo.current()[0].entries()]
        pick = (lambda i: names[i % len(names)]) if names else (lambda i: "none-001")
        match item:
            case ("add", ops):
                commands = [ApplyOperations(ops)]
            case ("rate", i, rating):
                commands = [Evaluate([{"name": pick(i), "rating": rating, "rationale": "r"}]), Prune()]
            case ("update", i, text):
                commands = [ApplyOperations([{"type": "UPDATE", "target_id": pick(i), "text": text}])]
            case ("delete", i):
                commands = [ApplyOperations([{"type": "DELETE", "target_id": pick(i), "reason": "old"}])]
            case ("merge", i, j):
                commands = [ApplyOperations([{"type": "MERGE", "source_ids": [pick(i), pick(j)], "merged_text": f"m{number}"}])]
            case _:
                commands = [Prune()]
        repo.append(commands, Cause(source="test", session=f"session-{number % sessions}"))


def fresh_repo(tmp_path_factory) -> PlaybookRepository:
    return PlaybookRepository(tmp_path_factory.mktemp("p") / ".claude")


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(step, min_size=1, max_size=14), every=st.sampled_from([10**9, 3, 7]))
def test_at_seq_equals_the_fold_of_the_prefix_with_and_without_checkpoints(tmp_path_factory, monkeypatch, steps, every):
    monkeypatch.setattr(checkpoints, "CHECKPOINT_EVERY", every)
    repo = fresh_repo(tmp_path_factory)
    build(repo, steps)
    timeline = Timeline(repo)
    last = timeline.refs[-1].end.seq if timeline.refs else 0
    for seq in range(0, last + 1):
        expected = content(prefix_fold(repo, seq))
        assert content(timeline.state_at(timeline.resolve(str(seq)))) == expected, seq
        # a second time: now from the checkpoints the first pass wrote
        assert content(Timeline(repo).state_at(timeline.resolve(str(seq)))) == expected, seq


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(step, min_size=1, max_size=12), data=st.data())
def test_diff_applied_to_a_gives_b(tmp_path_factory, steps, data):
    repo = fresh_repo(tmp_path_factory)
    build(repo, steps)
    timeline = Timeline(repo)
    seqs = [0] + [r.end.seq for r in timeline.refs]
    a, b = data.draw(st.sampled_from(seqs)), data.draw(st.sampled_from(seqs))
    state_a, state_b = timeline.state_at(timeline.resolve(str(a))), timeline.state_at(timeline.resolve(str(b)))
    assert content(apply_diff(state_a, diff(state_a, state_b))) == content(state_b)
    assert diff(state_a, state_a).is_empty()


def revert(repo: PlaybookRepository, target: str, force: bool = False):
    plan = plan_revert(Timeline(repo), target, force)
    return repo.append([ReplaceContent(target=playbook_dict(plan.target), origin="revert", base=plan.base)],
                       Cause(source="revert", note=f"revert of {', '.join(plan.transactions)}"))


@pytest.mark.slow
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(step, min_size=1, max_size=10), data=st.data())
def test_reverting_an_untouched_transaction_gives_the_log_without_it_and_revert_of_revert_restores(
        tmp_path_factory, steps, data):
    repo = fresh_repo(tmp_path_factory)
    build(repo, steps)
    refs = Timeline(repo).refs
    if not refs:
        return  # nothing was ever appended
    chosen = data.draw(st.sampled_from(refs))
    before = content(repo.current()[0])
    try:
        plan = plan_revert(Timeline(repo), chosen.commit.tx)
    except RevertConflict:
        return  # later transactions touched its entries: covered by the conflict test
    without = PlaybookState()
    for transaction in LogReader(repo.store.path):
        if transaction.commit.tx != chosen.commit.tx:
            apply_transaction(without, transaction.events, transaction.commit.seq, transaction.commit.at)
    assert content(plan.target) == content(without)
    committed = revert(repo, chosen.commit.tx)
    assert content(repo.current()[0]) == content(without)
    if committed is None:
        return  # the transaction changed nothing that is still visible
    revert(repo, committed.commit.tx)
    assert content(repo.current()[0]) == before


def test_revert_refuses_on_conflict_and_force_reverts_the_rest(tmp_path):
    repo = PlaybookRepository(tmp_path / ".claude")
    first = repo.append([ApplyOperations([{"type": "ADD", "text": "a"}, {"type": "ADD", "text": "b"}])],
                        Cause(source="test", session="one"))
    repo.append([Evaluate([{"name": "oth-001", "rating": "helpful"}])], Cause(source="test", session="two"))
    size = repo.store.size()
    with pytest.raises(RevertConflict) as raised:
        plan_revert(Timeline(repo), first.commit.tx)
    assert set(raised.value.conflicts) == {"oth-001"} and repo.store.size() == size
    plan = plan_revert(Timeline(repo), "one", force=True)
    assert set(plan.conflicts) == {"oth-001"}
    revert(repo, "one", force=True)
    assert [(kp.name, kp.helpful) for _, kp in repo.current()[0].entries()] == [("oth-001", 1)]


def test_a_transaction_written_while_a_revert_is_planned_is_not_undone(tmp_path):
    repo = PlaybookRepository(tmp_path / ".claude")
    first = repo.append([ApplyOperations([{"type": "ADD", "text": "a"}])], Cause(source="t"))
    plan = plan_revert(Timeline(repo), first.commit.tx)
    repo.append([ApplyOperations([{"type": "ADD", "text": "written meanwhile"}])], Cause(source="t"))
    repo.append([ReplaceContent(target=playbook_dict(plan.target), origin="revert", base=plan.base)],
                Cause(source="revert"))
    assert [kp.text for _, kp in repo.current()[0].entries()] == ["written meanwhile"]


def test_an_ambiguous_transaction_prefix_is_refused(tmp_path, monkeypatch):
    ids = iter(["0123abcd00000000", "0123abcdffffffff"])
    new_transaction = storage.new_transaction
    monkeypatch.setattr(storage, "new_transaction", lambda: (next(ids), new_transaction()[1]))
    repo = PlaybookRepository(tmp_path / ".claude")
    for text in ("a", "b"):
        repo.append([ApplyOperations([{"type": "ADD", "text": text}])], Cause(source="t"))
    timeline = Timeline(repo)
    txs = [r.commit.tx for r in timeline.refs]
    assert txs == ["0123abcd00000000", "0123abcdffffffff"]
    with pytest.raises(TimelineError, match="ambiguous"):
        timeline.match_tx(txs[0][:8])
    assert timeline.match_tx(txs[0]) == [0]
    with pytest.raises(TimelineError):
        Timeline(PlaybookRepository(tmp_path / "empty" / ".claude")).resolve("not a time")


def test_history_follows_merges_back_and_ends_with_the_entry_s_fate(tmp_path):
    repo = PlaybookRepository(tmp_path / ".claude")
    repo.append([ApplyOperations([{"type": "ADD", "text": "a"}, {"type": "ADD", "text": "b"}])], Cause(source="t"))
    repo.append([ApplyOperations([{"type": "UPDATE", "target_id": "oth-001", "text": "a2"}])], Cause(source="t"))
    repo.append([ApplyOperations([{"type": "MERGE", "source_ids": ["oth-001", "oth-002"], "merged_text": "ab"}])],
                Cause(source="t"))
    repo.append([Evaluate([{"name": "oth-003", "rating": "harmful", "rationale": f"r{i}"} for i in range(1)])],
                Cause(source="t"))
    repo.append([ApplyOperations([{"type": "DELETE", "target_id": "oth-003", "reason": "wrong"}])], Cause(source="t"))
    items = Timeline(repo).history("oth-003")
    summary = [(i.entry, type(i.event).__name__) for i in items]
    assert summary == [("oth-001", "KeyPointAdded"), ("oth-001", "KeyPointUpdated"), ("oth-001", "KeyPointsMerged"),
                       ("oth-002", "KeyPointAdded"), ("oth-002", "KeyPointsMerged"),
                       ("oth-003", "KeyPointsMerged"), ("oth-003", "KeyPointEvaluated"),
                       ("oth-003", "KeyPointDeleted")]
    assert items[1].event.previous_text == "a" and items[1].after.text == "a2"
    assert items[6].after.harmful == 1 and items[6].event.rationale == "r0"
    assert items[-1].event.reason == "wrong" and items[-1].after is None


def reference_history(repo: PlaybookRepository, name: str, until: int | None = None,
                      seen: set[str] | None = None) -> list[tuple[str, int]]:
    """History by the plainest road: every transaction, oldest first, each event that mentions the entry."""
    seen = set() if seen is None else seen
    seen.add(name)
    items: list[tuple[str, int]] = []
    for transaction in LogReader(repo.store.path):
        if until is not None and transaction.start.seq >= until:
            break
        for event in transaction.events:
            if not mentions(event, name):
                continue
            if isinstance(event, KeyPointsMerged) and event.name == name:
                for source in event.sources:
                    if source not in seen:
                        items += reference_history(repo, source, event.seq, seen)
            items.append((name, event.seq))
    return items


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(step, min_size=1, max_size=16), block=st.sampled_from([1 << 22, 200, 1500]))
def test_history_in_one_backward_pass_equals_a_forward_read_of_every_transaction(tmp_path_factory, monkeypatch,
                                                                                  steps, block):
    monkeypatch.setattr(history_module, "_BACK_BLOCK", block)  # many blocks, transactions longer than one
    repo = fresh_repo(tmp_path_factory)
    build(repo, steps)
    names = {name for t in LogReader(repo.store.path) for e in t.events for name in touched_names(e)}
    for name in sorted(names):
        assert [(i.entry, i.event.seq) for i in Timeline(repo).history(name)] == reference_history(repo, name), name


# --- verify finds each kind of damage, with its line -----------------------------------------------


def small_log(tmp_path: Path) -> PlaybookRepository:
    repo = PlaybookRepository(tmp_path / ".claude")
    for text in ("one", "two", "three", "four"):
        repo.append([ApplyOperations([{"type": "ADD", "text": text}])], Cause(source="t"))
    assert verify(repo).ok
    return repo


def lines_of(repo: PlaybookRepository) -> list[bytes]:
    return repo.store.path.read_bytes().splitlines(keepends=True)


def only_problem(repo: PlaybookRepository):
    report = verify(repo)
    assert not report.ok
    return report.problems[0]


def test_verify_finds_a_byte_flipped_in_the_middle(tmp_path):
    repo = small_log(tmp_path)
    lines = lines_of(repo)
    lines[4] = lines[4].replace(b'"three"', b'"thrEe"')  # line 5: the third ADD
    repo.store.path.write_bytes(b"".join(lines))
    problem = only_problem(repo)
    assert (problem.line, problem.file) == (5, str(repo.store.path)) and "hash" in problem.what


def test_verify_finds_a_deleted_line(tmp_path):
    repo = small_log(tmp_path)
    lines = lines_of(repo)
    del lines[2]
    repo.store.path.write_bytes(b"".join(lines))
    assert only_problem(repo).line == 3


def test_verify_finds_two_lines_swapped(tmp_path):
    repo = small_log(tmp_path)
    lines = lines_of(repo)
    lines[2], lines[3] = lines[3], lines[2]
    repo.store.path.write_bytes(b"".join(lines))
    assert only_problem(repo).line == 3


def test_verify_finds_a_truncated_tail(tmp_path):
    repo = small_log(tmp_path)
    data = repo.store.path.read_bytes()
    repo.store.path.write_bytes(data[:-40])
    problem = only_problem(repo)
    assert problem.line == 7 and "unfinished" in problem.what


def _damages(lines: list[bytes]) -> dict[str, bytes]:
    """Each kind of damage to a log of whole lines, as the damaged file's bytes."""
    whole = b"".join(lines)
    swapped = list(lines)
    swapped[2], swapped[3] = swapped[3], swapped[2]
    commit = next(i for i, line in enumerate(lines) if line.startswith(b'{"type":"TransactionCommitted"'))
    return {
        "none": whole,
        "byte flipped in an event": b"".join(lines[:4] + [lines[4].replace(b'"three"', b'"thrEe"')] + lines[5:]),
        "byte flipped in a commit line": b"".join(lines[:commit] + [lines[commit].replace(b'"seq":', b'"seQ":')]
                                                  + lines[commit + 1:]),
        "line deleted": b"".join(lines[:2] + lines[3:]),
        "lines swapped": b"".join(swapped),
        "tail cut mid-line": whole[:-40],
        "last line damaged whole": whole[:-5] + b"X" + whole[-4:],
        "junk appended": whole + b'{"type":"KeyPointAdded","seq":99\n',
        "a line of junk in the middle": b"".join(lines[:3] + [b"not json at all\n"] + lines[3:]),
        "last commit's newline missing": whole[:-1],
        "empty": b"",
    }


@pytest.mark.parametrize("damage", ["none", "byte flipped in an event", "byte flipped in a commit line", "line deleted",
                                    "lines swapped", "tail cut mid-line", "last line damaged whole", "junk appended",
                                    "a line of junk in the middle", "last commit's newline missing", "empty"])
def test_verify_on_the_fast_path_gives_the_strict_reader_s_verdicts(tmp_path, damage):
    repo = small_log(tmp_path)
    repo.store.path.write_bytes(_damages(lines_of(repo))[damage])
    fast, strict = verify(repo), verify(repo, strict=True)
    assert (fast.problems, fast.transactions, fast.events, fast.seq) == (
        strict.problems, strict.transactions, strict.events, strict.seq)
    if damage != "none":
        assert not fast.ok


def test_verify_finds_a_snapshot_edited_by_hand_and_the_line(tmp_path):
    repo = small_log(tmp_path)
    text = repo.snapshot_path.read_text().splitlines()
    number = next(i for i, line in enumerate(text) if '"three"' in line)
    text[number] = text[number].replace('"three"', '"3"')
    repo.snapshot_path.write_text("\n".join(text) + "\n")
    problem = only_problem(repo)
    assert problem.file == str(repo.snapshot_path) and problem.line == number + 1 and "hand" in problem.what


def test_verify_reports_a_stale_snapshot(tmp_path):
    repo = small_log(tmp_path)
    stale = repo.snapshot_path.read_bytes()
    repo.append([ApplyOperations([{"type": "ADD", "text": "five"}])], Cause(source="t"))
    repo.snapshot_path.write_bytes(stale)
    assert "behind" in only_problem(repo).what
    json.loads(stale)  # the stale snapshot itself is intact


def test_a_diff_of_counters_keeps_the_entry_in_place():
    a = PlaybookState()
    for name in ("pat-001", "pat-002"):
        apply_transaction(a, decide_events(a, name), 0, "")
    b = a.copy()
    b.sections["PATTERNS & APPROACHES"]["pat-001"].helpful = 1
    change = diff(a, b)
    assert change.order == {} and [c.name for c in change.counters] == ["pat-001"]
    assert list(apply_diff(a, change).sections["PATTERNS & APPROACHES"]) == ["pat-001", "pat-002"]


def decide_events(state: PlaybookState, name: str) -> list:
    return [KeyPointAdded(section="PATTERNS & APPROACHES", name=name, text=name, helpful=0, harmful=0,
                          origin="operation")]


@pytest.mark.parametrize("names", [["oth-114", "oth-11", "mis-061", "pat-1"], ["legacy name", "x", "oth-1"],
                                   [f"s{i}-1" for i in range(12)], ["oth-1", "oth-2", "oth-11", "oth-114", "mis-1"]])
def test_history_search_finds_every_name_of_any_shape_once_at_each_place(names):
    from projections import history

    data = b"".join(b'{"name":' + json.dumps(n).encode() + b'}\n' for n in names * 3) + b'"oth-1140" "xoth-11"'
    for end in (len(data), len(data) // 2):
        needles = {json.dumps(n).encode(): end if i % 2 else len(data) for i, n in enumerate(names)}
        expected = sorted((at, needle) for needle in needles for at in _all(data[:needles[needle]], needle))
        assert sorted(history._hits(data, 0, needles)) == expected


def _all(data: bytes, needle: bytes) -> list[int]:
    found, at = [], data.find(needle)
    while at >= 0:
        found.append(at)
        at = data.find(needle, at + 1)
    return found


class _Counted(io.BufferedReader):
    """A file whose reads are counted."""

    read_bytes = 0

    def read(self, size: int | None = -1) -> bytes:
        got = super().read(size)
        _Counted.read_bytes += len(got)
        return got


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(transactions=st.lists(st.lists(st.integers(0, 400), max_size=4), max_size=12),
       tail=st.sampled_from([b"", b'{"type":"KeyPointAdded","seq"', b'{"type":"TransactionCommitted","seq":9']),
       block=st.integers(1, 300))
def test_the_backward_blocks_hand_out_every_whole_transaction_once_reading_each_byte_once(tmp_path_factory,
                                                                                        transactions, tail, block):
    lines = [b"".join(b'{"type":"KeyPointEvaluated","x":"' + b"a" * size + b'"}\n' for size in events)
             + b'{"type":"TransactionCommitted","seq":%d}\n' % number for number, events in enumerate(transactions)]
    path = tmp_path_factory.mktemp("blocks") / "log.jsonl"
    path.write_bytes(b"".join(lines) + tail)
    _Counted.read_bytes = 0
    with _Counted(io.FileIO(path)) as handle:
        original, history_module._BACK_BLOCK = history_module._BACK_BLOCK, block
        try:
            blocks = list(history_module._blocks(handle))
        finally:
            history_module._BACK_BLOCK = original
    pieces = [data[begin:end] for _low, data, begin, end in blocks]
    assert [low + begin for low, _data, begin, _end in blocks] == [sum(map(len, pieces[n + 1:])) for n in range(len(pieces))]
    assert b"".join(reversed(pieces)) == b"".join(lines)
    assert all(piece.endswith(b"}\n") and b'"TransactionCommitted"' in piece.splitlines()[-1] for piece in pieces)
    assert _Counted.read_bytes <= path.stat().st_size
