"""Property tests of the event-sourced playbook (hypothesis).

(a) Random command sequences appended through the repository: the fold of the log,
    the repository's own answer and the spec's dict facade agree, and the playbook's
    invariants hold after every step.
(b) Replaying a log is deterministic down to the bytes of playbook.json.
(c) `fold` is `reduce(evolve)`, and `evolve` never touches its input.
(d) A state machine mixing appends, snapshot deletion, rebuilds, torn writes (crashes)
    and reopening, checked against an independent in-memory model.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from tests.logtools import transaction_after
from eventlog.unit_of_work import append_locked
from eventlog.decide import AddNewKeyPoints, ApplyOperations, Evaluate, Prune, decide_all
from eventlog.domain import PRUNE_RULE, SECTION_SLUGS, KeyPoint, PlaybookState, generate_keypoint_name, next_name
from eventlog.events import Cause, CountersSet, KeyPointAdded, KeyPointDeleted, KeyPointEvaluated, KeyPointImported
from eventlog.events import KeyPointMoved, KeyPointPruned, KeyPointsMerged, KeyPointUpdated, OperationSkipped
from eventlog.events import LearningCompleted, PlaybookImported, SectionReordered, SnapshotSetAside, TailRepaired, VersionSet
from eventlog.evolve import evolve, fold
from eventlog.store import LogReader, Position, fold_log
from playbook.api import apply_structured_operations, load_playbook, prune_harmful, update_playbook_data
from projections.repository import LOG_NAME, SNAPSHOT_NAME, PlaybookRepository
from projections.snapshot import render
import pytest

pytestmark = pytest.mark.slow  # starts processes, a browser or Claude Code, or runs a campaign

CANON = list(SECTION_SLUGS)
ENTRY_KEYS = {"name", "text", "helpful", "harmful"}
CAUSE = Cause(source="property-test")
# No example database: these tests write nothing outside their temporary directories.
COMMON = settings(deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# --- symbolic references ------------------------------------------------------------------------------
#
# Operations and evaluations name key points by ID. The same random request must be
# applied to several copies of the playbook whose IDs may legitimately differ (see
# test (a)), so requests are generated with symbolic references and resolved against
# each copy just before it is applied:
#   existing k   the k-th entry (mod count) in canonical order at the start of the step
#   fresh s d    the d-th ID after the highest one ever issued in section s, i.e. the
#                name the d-th new entry of this step in s will get (REQ-CUR-005: later
#                operations of a call see the entries created by earlier ones)
#   bogus v      a value that names nothing in any copy (unknown id, empty, not a string,
#                or the key left out)

MISSING = object()  # the key is left out of the dict


@dataclass(frozen=True)
class Ref:
    kind: str
    index: int = 0
    section: str = ""
    value: Any = None


@dataclass
class Env:
    """How references resolve against one copy of the playbook."""

    names: list[str]
    fresh: Any  # (section, d) -> name

    def resolve(self, template: Any) -> Any:
        if isinstance(template, Ref):
            if template.kind == "existing":
                return self.names[template.index % len(self.names)] if self.names else "none-yet"
            if template.kind == "fresh":
                return self.fresh(template.section, template.index)
            return template.value
        if isinstance(template, dict):
            resolved = {key: self.resolve(value) for key, value in template.items()}
            return {key: value for key, value in resolved.items() if value is not MISSING}
        if isinstance(template, list):
            return [value for value in map(self.resolve, template) if value is not MISSING]
        return template


_NUMBERED = re.compile(r"^([a-z]+)-(\d+)$")


def state_env(state: PlaybookState) -> Env:
    def fresh(section: str, d: int) -> str:
        slug, number = next_name(state, section).rsplit("-", 1)
        return f"{slug}-{int(number) + d:03d}"

    return Env([kp.name for _section, kp in state.entries()], fresh)


def dict_env(pb: dict) -> Env:
    """For a dict: IDs continue past its own names and past what the log it was loaded from issued."""
    names = [entry["name"] for section in CANON for entry in pb["sections"][section]]
    origin = getattr(pb, "origin", None)

    def fresh(section: str, d: int) -> str:
        slug = SECTION_SLUGS[section]
        highest = origin.high_water.get(slug, 0) if origin is not None else 0
        for name in names:
            match = _NUMBERED.match(name)
            if match and match.group(1) == slug:
                highest = max(highest, int(match.group(2)))
        return f"{slug}-{highest + 1 + d:03d}"

    return Env(names, fresh)


# --- strategies ---------------------------------------------------------------------------------------

def weighted(*choices: tuple[int, Any]) -> st.SearchStrategy:
    """One of the strategies, picked with the given weights (one_of would pick each distinct one equally)."""
    table = [strategy for weight, strategy in choices for _ in range(weight)]
    return st.integers(0, len(table) - 1).flatmap(lambda i: table[i])


GOOD_TEXTS = ["use type hints", "write the test first", "avoid global state", "prefer pathlib", "small commits"]
good_texts = st.sampled_from(GOOD_TEXTS)
texts = weighted((3, good_texts), (1, st.sampled_from(["", "   ", None, 42, MISSING])))
section_names = st.sampled_from(
    CANON + [s.lower() for s in CANON] + ["  others ", "Made Up Section", "", None, 5, MISSING]
)
existing_ref = st.builds(lambda k: Ref("existing", index=k), st.one_of(st.just(0), st.integers(0, 3), st.integers(0, 30)))
fresh_ref = st.builds(lambda s, d: Ref("fresh", section=s, index=d), st.sampled_from(CANON), st.integers(0, 2))
bogus_ref = st.builds(
    lambda v: Ref("bogus", value=v), st.sampled_from(["pat-999", "oth-900", "kpt_999", "nope", "", "  ", None, 7, MISSING])
)
refs = weighted((3, existing_ref), (1, fresh_ref), (1, bogus_ref))


def _op(**fields: Any) -> dict:
    return {key: value for key, value in fields.items() if value is not MISSING}


add_op = st.builds(lambda t, s: _op(type="ADD", text=t, section=s), texts, section_names)
update_op = st.builds(lambda r, t: _op(type="UPDATE", target_id=r, text=t), refs, texts)
delete_op = st.builds(
    lambda r, why: _op(type="DELETE", target_id=r, reason=why), refs, st.sampled_from(["obsolete", "", None, 3, MISSING])
)
merge_sources = st.builds(  # mostly distinct existing entries, sometimes with one more (fresh or unknown)
    lambda ks, extra: [Ref("existing", index=k) for k in ks] + extra,
    st.lists(st.integers(0, 5), min_size=2, max_size=3, unique=True),
    st.lists(st.one_of(fresh_ref, bogus_ref), max_size=1),
)
merge_op = st.builds(
    lambda sources, t, s: _op(type="MERGE", source_ids=sources, merged_text=t, section=s),
    weighted((2, merge_sources), (1, st.lists(refs, max_size=4)), (1, st.sampled_from([None, "pat-001", MISSING]))),
    texts,
    section_names,
)
invalid_op = st.sampled_from(
    ["ADD", 42, None, ["x"], {"type": "REPLACE", "text": "x"}, {"type": None}, {"text": "no type"},
     {"type": "add", "text": "lower case type"}, {"type": ["ADD"]}]
)
operation = weighted((4, add_op), (1, update_op), (2, merge_op), (2, delete_op), (1, invalid_op))
operation_lists = st.lists(operation, max_size=13)  # more than 10 is truncated
operations_any = weighted((5, operation_lists), (1, st.sampled_from(["not a list", {}, None])))

rating = weighted((2, st.just("helpful")), (4, st.just("harmful")), (1, st.just("neutral")),
                 (1, st.sampled_from(["HELPFUL", None, MISSING])))
evaluation = weighted(
    (6, st.builds(lambda r, g, why: _op(name=r, rating=g, rationale=why), refs, rating,
                  st.sampled_from(["why", "", None, 5, MISSING]))),
    (1, st.sampled_from(["oth-001", 3, None])),
)
evaluations = weighted((5, st.lists(evaluation, max_size=8)), (1, st.sampled_from([None, "x"])))
new_key_point = st.one_of(st.sampled_from(GOOD_TEXTS + ["", 42]),
                          st.builds(lambda t, s: _op(text=t, section=s), texts, section_names))
new_key_points = weighted((4, st.lists(new_key_point, max_size=4)), (1, st.sampled_from([None, "x"])))

# A step is what one facade call does, and the commands the repository gets for it.
steps = weighted(
    (2, st.tuples(st.just("operations"), operations_any, st.booleans())),
    (3, st.tuples(st.just("extraction"), operation_lists, evaluations, st.booleans())),
    (2, st.tuples(st.just("evaluation"), new_key_points, evaluations, st.booleans())),
    (1, st.tuples(st.just("prune"), st.just(None), st.booleans())),
)


def commands_of(step: tuple, env: Env) -> list:
    kind = step[0]
    if kind == "operations":
        return [ApplyOperations(env.resolve(step[1]))]
    if kind == "extraction":
        return [ApplyOperations(env.resolve(step[1])), Evaluate(env.resolve(step[2])), Prune()]
    if kind == "evaluation":
        return [AddNewKeyPoints(env.resolve(step[1])), Evaluate(env.resolve(step[2])), Prune()]
    return [Prune()]


def facade_apply(step: tuple, pb: dict, env: Env) -> dict:
    """The spec function that does what `commands_of(step)` does."""
    kind = step[0]
    if kind == "operations":
        return apply_structured_operations(pb, env.resolve(step[1]))
    if kind == "extraction":
        return update_playbook_data(pb, {"operations": env.resolve(step[1]), "evaluations": env.resolve(step[2])})
    if kind == "evaluation":
        return update_playbook_data(pb, {"new_key_points": env.resolve(step[1]), "evaluations": env.resolve(step[2])})
    return prune_harmful(pb)


# --- helpers --------------------------------------------------------------------------------------------


@contextlib.contextmanager
def project():
    """A fresh project directory, with CLAUDE_PROJECT_DIR pointing at it for the facade."""
    previous = os.environ.get("CLAUDE_PROJECT_DIR")
    with tempfile.TemporaryDirectory() as directory:
        os.environ["CLAUDE_PROJECT_DIR"] = directory
        try:
            yield Path(directory) / ".claude"
        finally:
            if previous is None:
                os.environ.pop("CLAUDE_PROJECT_DIR", None)
            else:
                os.environ["CLAUDE_PROJECT_DIR"] = previous


def append(repo: PlaybookRepository, commands: list, split: bool) -> PlaybookState:
    """Append `commands` as one transaction, or one transaction each; the repository's answer."""
    state = None
    for batch in ([c] for c in commands) if split else [commands]:
        committed = repo.append(batch, CAUSE)
        state = committed.state if committed is not None else repo.current()[0]
    assert state is not None
    return state


def ordered(state: PlaybookState) -> dict[str, list[tuple[str, str, int, int]]]:
    """Sections as ordered lists (Struct equality ignores the order of dict keys)."""
    return {s: [(kp.name, kp.text, kp.helpful, kp.harmful) for kp in state.sections[s].values()] for s in state.sections}


def ordered_dict(pb: dict) -> dict[str, list[tuple[str, str, int, int]]]:
    return {s: [(e["name"], e["text"], e["helpful"], e["harmful"]) for e in entries] for s, entries in pb["sections"].items()}


def without_names(sections: dict[str, list[tuple]]) -> dict[str, list[tuple]]:
    return {s: [entry[1:] for entry in entries] for s, entries in sections.items()}


def read_or_empty(path: Path) -> bytes:
    return path.read_bytes() if path.exists() else b""


def events_since(claude_dir: Path, state: PlaybookState) -> list:
    """The events committed after the state `state` (by sequence number)."""
    return [e for t in LogReader(claude_dir / LOG_NAME) if t.commit.seq > state.seq for e in t.events]


def check_state(state: PlaybookState) -> None:
    assert list(state.sections) == CANON
    names = [kp.name for _s, kp in state.entries()]
    assert len(names) == len(set(names))
    assert state.where == {kp.name: s for s, kp in state.entries()}
    for section, entries in state.sections.items():
        for name, kp in entries.items():
            assert kp.name == name
            assert isinstance(kp.text, str) and kp.text.strip()
            assert type(kp.helpful) is int and kp.helpful >= 0, kp
            assert type(kp.harmful) is int and kp.harmful >= 0, kp


def check_dict(pb: dict, snapshot: bool = False) -> None:
    assert "key_points" not in pb and "score" not in pb
    if snapshot:
        assert set(pb) == {"version", "last_updated", "sections", "log"}
    assert list(pb["sections"]) == CANON
    names = []
    for entries in pb["sections"].values():
        for entry in entries:
            assert set(entry) == ENTRY_KEYS, entry  # no score, nothing stray
            assert isinstance(entry["name"], str) and isinstance(entry["text"], str) and entry["text"].strip()
            assert type(entry["helpful"]) is int and entry["helpful"] >= 0, entry
            assert type(entry["harmful"]) is int and entry["harmful"] >= 0, entry
            names.append(entry["name"])
    assert len(names) == len(set(names)), sorted(names)


def check_log_and_snapshot(claude_dir: Path) -> tuple[PlaybookState, Any]:
    """The fold of the whole log; playbook.json is exactly its projection."""
    state, position, torn = fold_log(claude_dir / LOG_NAME, PlaybookState())
    assert torn is None
    raw = (claude_dir / SNAPSHOT_NAME).read_bytes()
    assert raw == render(state, position)
    check_dict(json.loads(raw), snapshot=True)
    return state, position


# --- (a) repository, log and facade agree -------------------------------------------------------------


@settings(COMMON, max_examples=60)
@given(st.lists(steps, min_size=1, max_size=10))
def test_repository_log_and_facade_agree_on_random_command_sequences(step_list):
    # Three copies of the playbook take every step:
    #  - the repository (the log), which is the reference;
    #  - `fresh`: a dict returned by load_playbook() just before the step, then the facade
    #    function. It was loaded from the same log, so it holds the same entries and
    #    remembers the log's high-water marks (its `origin`): its new IDs must be exactly
    #    those the log issues, and it is compared with names;
    #  - `chained`: ONE dict loaded from the empty project at the start and passed from
    #    facade call to facade call, never reloaded. It knows the high-water marks of its
    #    load plus the names it currently holds, but not the IDs it issued and then lost
    #    (an ADD later DELETEd, MERGE sources). The log never reuses such an ID; the dict
    #    legitimately may, so its IDs can drift from the log's. References are therefore
    #    resolved against each copy separately (see Ref), and it is compared on what does
    #    not depend on IDs: per section, the ordered (text, helpful, harmful) entries.
    with project() as claude_dir:
        repo = PlaybookRepository(claude_dir)
        chained = load_playbook()
        for step in step_list:
            before = repo.current()[0]
            env = state_env(before)
            fresh = load_playbook()
            assert ordered_dict(fresh) == ordered(before)
            fresh = facade_apply(step, fresh, env)
            chained = facade_apply(step, chained, dict_env(chained))

            returned = append(repo, commands_of(step, env), split=step[-1])

            folded, _position = check_log_and_snapshot(claude_dir)
            assert folded == returned
            assert ordered(folded) == ordered(returned)
            assert repo.current()[0] == folded
            assert PlaybookRepository(claude_dir).state() == folded
            check_state(folded)
            check_dict(fresh)
            check_dict(chained)
            assert ordered_dict(fresh) == ordered(folded), step
            assert without_names(ordered_dict(chained)) == without_names(ordered(folded)), step
            if ordered_dict(chained) != ordered(folded):
                event("the chained dict's IDs drifted from the log's")
            for kind in sorted({type(e).__name__ for e in events_since(claude_dir, before)}):
                event(f"log got {kind}")
            assert not [kp for _s, kp in folded.entries() if kp.harmful >= 3 and kp.harmful > kp.helpful] or (
                step[0] == "operations"  # a MERGE sums counters; only the prune of a later step removes it
            )


# --- (b) replaying is deterministic -------------------------------------------------------------------


@settings(COMMON, max_examples=30)
@given(st.lists(steps, min_size=1, max_size=8))
def test_rebuilding_twice_gives_the_bytes_the_appends_wrote(step_list):
    with project() as claude_dir:
        repo = PlaybookRepository(claude_dir)
        for step in step_list:
            append(repo, commands_of(step, state_env(repo.current()[0])), split=step[-1])
        snapshot = claude_dir / SNAPSHOT_NAME
        written = snapshot.read_bytes()
        log = read_or_empty(claude_dir / LOG_NAME)

        first_state = fold_log(claude_dir / LOG_NAME, PlaybookState())
        rebuilt = []
        for _ in range(2):
            snapshot.unlink()
            position = PlaybookRepository(claude_dir).rebuild()
            assert position == first_state[1]
            rebuilt.append(snapshot.read_bytes())
        PlaybookRepository(claude_dir).rebuild()  # over an existing file, too
        rebuilt.append(snapshot.read_bytes())

        assert rebuilt == [written] * 3
        assert fold_log(claude_dir / LOG_NAME, PlaybookState()) == first_state
        assert read_or_empty(claude_dir / LOG_NAME) == log  # rebuilding never writes the log


# --- (c) fold is reduce(evolve), evolve is pure -------------------------------------------------------

NAMES = ["pat-001", "pat-002", "mis-001", "oth-001", "oth-002", "oth-010", "kpt_001", "free-form",
         "pat-\u00b2", "pat-\u0663", "pref-0040", "ctx-007\n"]  # odd digits: see note_name
names = st.sampled_from(NAMES)
canon = st.sampled_from(CANON)
counts = st.integers(0, 6)
stamps = st.fixed_dictionaries({
    "seq": st.integers(0, 100),
    "at": st.sampled_from(["", "2025-01-01T00:00:00.000000+00:00", "2025-06-01T12:00:00.000000+00:00"]),
})
short_text = st.sampled_from(["a", "b", "c", "use types"])


def _event(cls, **strategies):
    return st.builds(lambda stamp, fields: cls(**stamp, **fields), stamps, st.fixed_dictionaries(strategies))


def _learning_events() -> list:
    """The learning-cycle events, where this version of the log has them."""
    import eventlog.events as ev

    requests, transcripts = st.sampled_from(["r1", "r2"]), st.sampled_from(["", "/t/a.jsonl", "/t/b.jsonl"])
    shapes = {
        "LearningRequested": dict(request=requests, hook=st.just("Stop"), transcript=transcripts),
        "LearningCompleted": dict(request=requests, transcript=transcripts, from_line=counts, through_line=counts),
        "LearningFailed": dict(request=requests, error=st.just("timeout"), transcript=transcripts),
        "LearningSkipped": dict(request=requests, reason=st.just("no key"), transcript=transcripts,
                                through_line=st.one_of(st.none(), counts)),
    }
    return [_event(getattr(ev, name), **fields) for name, fields in shapes.items() if hasattr(ev, name)]


random_events = st.one_of(
    _event(KeyPointAdded, section=canon, name=names, text=short_text, helpful=counts, harmful=counts,
           origin=st.just("operation")),
    _event(KeyPointImported, section=canon, name=names, text=short_text, helpful=counts, harmful=counts,
           source_format=st.just("dict_with_counters")),
    _event(PlaybookImported, path=st.just("x"), file_format=st.just("sections"), version=st.sampled_from(["1.0", "2"]),
           last_updated=st.sampled_from([None, "2024-01-01"]), genesis=st.booleans()),
    _event(KeyPointUpdated, name=names, text=short_text, previous_text=short_text),
    _event(KeyPointsMerged, section=canon, name=names, text=short_text, sources=st.lists(names, max_size=3),
           helpful=counts, harmful=counts),
    _event(KeyPointDeleted, section=canon, name=names, text=short_text),
    _event(KeyPointEvaluated, name=names, rating=st.sampled_from(["helpful", "harmful", "neutral"]), helpful=counts,
           harmful=counts),
    _event(KeyPointPruned, section=canon, name=names, text=short_text, helpful=counts, harmful=counts,
           rule=st.just(PRUNE_RULE)),
    _event(KeyPointMoved, name=names, from_section=canon, to_section=canon),
    _event(CountersSet, name=names, helpful=counts, harmful=counts, previous_helpful=counts, previous_harmful=counts),
    _event(SectionReordered, section=canon, names=st.lists(names, max_size=5)),
    _event(VersionSet, version=st.sampled_from(["1.0", "1.1"]), previous=st.just("1.0")),
    _event(OperationSkipped, kind=st.just("operation"), reason=st.just("unknown_id")),
    _event(TailRepaired, offset=counts, bytes_cut=counts, kept_at=st.just("x.torn")),
    _event(SnapshotSetAside, moved_to=st.just("x"), error=st.just("bad")),
    *_learning_events(),
)


@st.composite
def decided_events(draw):
    """Events as decide produces them, from random commands on a growing state."""
    state = PlaybookState()
    events = []
    for step in draw(st.lists(steps, max_size=5)):
        new = decide_all(state, commands_of(step, state_env(state)))
        events += new
        state = fold(new, state)
    return events


def deep(state: PlaybookState) -> Any:
    return msgspec.to_builtins(state)


@settings(COMMON, max_examples=200)
@given(st.lists(random_events, max_size=25) | decided_events(), st.lists(random_events, max_size=8))
def test_fold_is_reduce_of_evolve_and_evolve_never_mutates(events, start_events):
    start = fold(start_events)
    start_before, start_copy = deep(start), start.copy()

    reduced = functools.reduce(evolve, events, PlaybookState())
    assert reduced == fold(events)
    assert ordered(reduced) == ordered(fold(events))
    assert functools.reduce(evolve, events, start) == fold(events, start)
    assert ordered(functools.reduce(evolve, events, start)) == ordered(fold(events, start))
    assert deep(start) == start_before and start == start_copy  # neither touched the given state

    state = start
    for record in events:
        before, copied = deep(state), state.copy()
        after = evolve(state, record)
        assert deep(state) == before and state == copied and ordered(state) == ordered(copied)
        # The result shares nothing mutable with its input.
        assert after is not state and after.sections is not state.sections
        for section in after.sections.values():
            for kp in section.values():
                kp.helpful += 100
            section["scribble"] = KeyPoint("scribble", "x")
        for field in after.__struct_fields__:  # where, high_water, and any other table the state holds
            if field != "sections" and isinstance(table := getattr(after, field), dict):
                table.clear()
                table["scribble"] = None
        assert deep(state) == before and ordered(state) == ordered(copied)
        state = evolve(state, record)


@settings(COMMON, max_examples=200)
@given(st.lists(random_events, max_size=25) | decided_events())
def test_next_name_is_never_behind_generate_keypoint_name_and_never_live(events):
    state = fold(events)
    for section, slug in SECTION_SLUGS.items():
        entries = [{"name": name} for name in state.sections[section]]
        issued = next_name(state, section)
        assert issued not in state.where
        assert int(issued.rsplit("-", 1)[1]) >= int(generate_keypoint_name(entries, slug).rsplit("-", 1)[1])


def test_next_name_never_hands_out_a_live_name_when_the_high_water_is_behind():
    state = fold([KeyPointAdded(section="PATTERNS & APPROACHES", name=f"pat-00{n}", text=str(n), helpful=0, harmful=0,
                                origin="save") for n in (1, 2)])
    state.high_water["pat"] = 0  # as a state built some other way might have it
    assert next_name(state, "PATTERNS & APPROACHES") == "pat-003"


# --- (d) a state machine with crashes -------------------------------------------------------------------

machine_commands = weighted(
    (3, st.builds(ApplyOperations, operation_lists)),
    (2, st.builds(Evaluate, evaluations)),
    (1, st.builds(AddNewKeyPoints, new_key_points)),
    (1, st.just(Prune())),
)


class Model:
    """name -> (section, text, helpful, harmful) in insertion order, fed with committed events only.

    Independent of evolve: it also checks what each event claims (IDs are never reused
    and follow the section's slug; ratings add one; prunes follow the rule).
    """

    def __init__(self) -> None:
        self.entries: dict[str, tuple[str, str, int, int]] = {}
        self.issued: dict[str, int] = dict.fromkeys(SECTION_SLUGS.values(), 0)

    def _new(self, section: str, name: str, text: str, helpful: int, harmful: int) -> None:
        slug = SECTION_SLUGS[section]
        assert name == f"{slug}-{self.issued[slug] + 1:03d}", (name, self.issued)
        self.issued[slug] += 1
        self.entries[name] = (section, text, helpful, harmful)

    def apply(self, event: Any) -> None:
        match event:
            case KeyPointAdded(section=section, name=name, text=text, helpful=helpful, harmful=harmful):
                assert (helpful, harmful) == (0, 0)
                self._new(section, name, text, helpful, harmful)
            case KeyPointUpdated(name=name, text=text, previous_text=previous):
                section, old, helpful, harmful = self.entries[name]
                assert old == previous and text != old
                self.entries[name] = (section, text, helpful, harmful)
            case KeyPointsMerged(section=section, name=name, text=text, sources=sources, helpful=h, harmful=hh):
                removed = [self.entries.pop(source) for source in sources]
                assert len(removed) >= 2 and len(set(sources)) == len(sources)
                assert (h, hh) == (sum(r[2] for r in removed), sum(r[3] for r in removed))
                self._new(section, name, text, h, hh)
            case KeyPointDeleted(name=name, text=text, section=section):
                assert self.entries.pop(name)[:2] == (section, text)
            case KeyPointPruned(name=name, helpful=helpful, harmful=harmful):
                assert self.entries.pop(name)[2:] == (helpful, harmful)
                assert harmful >= 3 and harmful > helpful
            case KeyPointEvaluated(name=name, rating=rating, helpful=helpful, harmful=harmful):
                section, text, h, hh = self.entries[name]
                assert (helpful, harmful) == (h + (rating == "helpful"), hh + (rating == "harmful"))
                self.entries[name] = (section, text, helpful, harmful)
            case OperationSkipped() | TailRepaired():
                pass
            case PlaybookImported(entries=0):  # an empty playbook.json left by an append that wrote nothing
                pass
            case _:
                raise AssertionError(f"unexpected event {event!r}")

    def sections(self) -> dict[str, list[tuple[str, str, int, int]]]:
        result: dict[str, list[tuple[str, str, int, int]]] = {s: [] for s in CANON}
        for name, (section, text, helpful, harmful) in self.entries.items():
            result[section].append((name, text, helpful, harmful))
        return result

    def env(self) -> Env:
        def fresh(section: str, d: int) -> str:
            slug = SECTION_SLUGS[section]
            return f"{slug}-{self.issued[slug] + 1 + d:03d}"

        return Env([name for s in CANON for name, *_ in self.sections()[s]], fresh)


class PlaybookMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="playbook-machine-"))
        self.claude_dir = self.root / "project" / ".claude"
        self.repo = PlaybookRepository(self.claude_dir)
        self.model = Model()
        self.committed_tx: list[str] = []
        self.torn = b""  # bytes of unfinished transactions at the end of the log
        self.torn_count = 0
        self.seen_taken_in = 0

    def teardown(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    @property
    def log(self) -> Path:
        return self.claude_dir / LOG_NAME

    def _take_in(self) -> None:
        """Transactions the repository appended on its own (imports of what it found outside the log)."""
        taken = self.repo.taken_in[self.seen_taken_in:]
        self.seen_taken_in = len(self.repo.taken_in)
        for committed in taken:
            self._record(committed)

    def _record(self, committed: Any, size_before: int | None = None) -> None:
        if committed is None:
            assert not self.torn, "a torn tail must be repaired by the next writer"
            return
        events = committed.events
        if self.torn:
            repaired = events[0]
            assert isinstance(repaired, TailRepaired), events
            assert repaired.bytes_cut == len(self.torn)
            assert size_before is None or repaired.offset == size_before - len(self.torn)
            assert (self.claude_dir / repaired.kept_at).read_bytes() == self.torn
            event("a writer repaired a torn tail")
            events = events[1:]
            self.torn = b""
        assert not [e for e in events if isinstance(e, TailRepaired)]
        for record in events:
            self.model.apply(record)
            event(f"model got {type(record).__name__}")
        self.committed_tx.append(committed.commit.tx)

    def _size(self) -> int:
        return self.log.stat().st_size if self.log.exists() else 0

    def _command(self, template: Any) -> Any:
        env = self.model.env()
        if isinstance(template, ApplyOperations):
            return ApplyOperations(env.resolve(template.operations))
        if isinstance(template, Evaluate):
            return Evaluate(env.resolve(template.evaluations))
        if isinstance(template, AddNewKeyPoints):
            return AddNewKeyPoints(env.resolve(template.new_key_points))
        return template

    @rule(template=machine_commands)
    def append(self, template):
        command = self._command(template)
        size = self._size()
        taken = len(self.repo.taken_in)
        if not (self.claude_dir / SNAPSHOT_NAME).exists():
            event("append without playbook.json")
        elif not self.repo.is_fresh():
            event("append with a stale playbook.json")
        committed = self.repo.append([command], CAUSE)
        if len(self.repo.taken_in) > taken:  # an import came first, and repaired any torn tail
            size = None
        self._take_in()
        self._record(committed, size)
        check_log_and_snapshot(self.claude_dir)  # whole log, no torn tail, playbook.json is its projection
        if isinstance(command, Prune):
            assert not [e for e in self.model.entries.values() if e[3] >= 3 and e[3] > e[2]]

    @rule(template=machine_commands)
    def crash_after_log_before_snapshot(self, template):
        """A writer that appended and fsynced, then died before replacing playbook.json."""
        command = self._command(template)
        size = self._size()
        with self.repo.store.locked():
            committed = append_locked(self.repo.store, 
                PlaybookState(), Position(), lambda s: decide_all(s, [command]), CAUSE
            )
        self._record(committed, size)
        if committed is not None:
            assert not self.repo.is_fresh()

    @rule(data=st.data(), text=st.sampled_from(["torn a", "torn b"]), events=st.integers(1, 3))
    def torn_write(self, data, text, events):
        """A writer that died in the middle of its one write: a strict prefix of a valid transaction."""
        self.torn_count += 1
        payload = transaction_after(self.log, f"torn{self.torn_count:012d}", events, text)
        cut = data.draw(st.integers(1, len(payload) - 1), label="cut")
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as handle:
            handle.write(payload[:cut])
        self.torn += payload[:cut]

    @rule()
    def delete_snapshot(self):
        (self.claude_dir / SNAPSHOT_NAME).unlink(missing_ok=True)

    @rule()
    def rebuild(self):
        position = self.repo.rebuild()
        state, expected, _torn = fold_log(self.log, PlaybookState())
        assert position == expected
        assert (self.claude_dir / SNAPSHOT_NAME).read_bytes() == render(state, position)

    @rule()
    def reopen(self):
        self.repo = PlaybookRepository(self.claude_dir)
        self.seen_taken_in = 0

    @rule()
    def read_state(self):
        state = self.repo.state()
        self._take_in()
        assert ordered(state) == self.model.sections()
        assert not self.repo.needs_housekeeping() or self.torn  # a torn tail keeps the snapshot "stale"

    @invariant()
    def matches_the_model(self):
        expected = self.model.sections()
        current = self.repo.current()[0]
        assert ordered(current) == expected
        check_state(current)

        reader = LogReader(self.log)
        transactions = list(reader)
        assert [t.commit.tx for t in transactions] == self.committed_tx  # only whole transactions, all of them
        assert not [e for t in transactions for e in t.events if e.tx.startswith("torn")]
        assert (reader.torn.length if reader.torn else 0) == len(self.torn)

        # .state() may write (it takes in what waits outside the log): check it on a copy,
        # so the machine keeps exploring states with a missing or stale snapshot.
        if self.claude_dir.exists():
            copy = self.root / "copy"
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(self.claude_dir, copy / ".claude")
            assert ordered(PlaybookRepository(copy / ".claude").state()) == expected


PlaybookMachine.TestCase.settings = settings(COMMON, max_examples=40, stateful_step_count=30)
TestPlaybookMachine = PlaybookMachine.TestCase


unknown_section_adds = _event(KeyPointAdded, section=st.sampled_from(["A NEWER SECTION", *CANON]), name=names,
                              text=short_text, helpful=counts, harmful=counts, origin=st.just("operation"))


@settings(COMMON, max_examples=300)
@example([[KeyPointAdded(section=CANON[0], name="pat-001", text="a", helpful=0, harmful=0, origin="operation"),
           LearningCompleted(request="r1", transcript="/t/a.jsonl", from_line=0, through_line=1),
           KeyPointEvaluated(name="pat-001", rating="helpful", helpful=1, harmful=0),
           KeyPointAdded(section="A NEWER SECTION", name="pat-001", text="b", helpful=2, harmful=0,
                         origin="operation"),
           KeyPointDeleted(section=CANON[1], name="mis-001", text="c")]], [])
@given(st.lists(st.lists(random_events | unknown_section_adds, max_size=12), max_size=5) | decided_events().map(lambda e: [e]),
       st.lists(random_events, max_size=8))
def test_the_fold_of_transactions_is_apply_on_each_event(transactions, start_events):
    """`apply_transaction` (adds, deletes and ratings applied inline) leaves the state `apply` on each event
    does: names re-added, adds into a section this version does not know, deletes and ratings of names
    not there, ratings after a learning cycle moved the session count."""
    from eventlog.events import TransactionCommitted
    from eventlog.evolve import apply_transaction

    start = fold(start_events)
    inline, each = start.copy(), start.copy()
    seq = start.seq
    for number, events in enumerate(transactions):
        at = f"2025-0{number % 9 + 1}-01T00:00:00.000000+00:00"
        stamped = []
        for event in events:
            if isinstance(event, PlaybookImported) and stamped:
                continue  # an import's transaction opens with it (`decide_import`): a genesis resets last_updated
            seq += 1
            stamped.append(msgspec.structs.replace(event, seq=seq, at=at))
        seq += 1
        apply_transaction(inline, stamped, seq, at)
        each = fold([*stamped, TransactionCommitted(seq=seq, tx=f"{number:016x}", at=at, events=len(stamped), source="test")], each)
        assert deep(inline) == deep(each)
        assert ordered(inline) == ordered(each)
