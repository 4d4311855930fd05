"""The event registry is complete: every event class has one entry, a short name and a rendering."""

from __future__ import annotations

import inspect
import typing

import msgspec

from eventlog import events as ev
from eventlog.registry import BY_TAG, FAMILIES, REGISTRY, SHORT_NAMES, cites, mentions, record_decoder, touched_names
from playbook.rendering.event_text import PARTS


def _event_classes() -> set[type]:
    return {cls for _, cls in inspect.getmembers(ev, inspect.isclass)
            if issubclass(cls, ev.Event) and cls.__struct_config__.tag_field == "type" and cls is not ev.Event}


def test_every_event_class_has_exactly_one_entry():
    assert {entry.cls for entry in REGISTRY} == _event_classes()
    assert len(BY_TAG) == len(REGISTRY)


def test_the_static_union_mypy_checks_matches_against_is_every_event_type():
    assert set(typing.get_args(ev.AnyEvent)) == {entry.cls for entry in REGISTRY}


def test_short_names_are_unique_and_not_another_tag_or_family():
    shorts = list(SHORT_NAMES.values())
    assert len(set(shorts)) == len(shorts)
    assert not set(shorts) & set(BY_TAG)
    assert all(FAMILIES[family] for family in FAMILIES)


def test_every_event_type_has_a_rendering():
    assert {entry.cls for entry in REGISTRY} <= set(PARTS)


def test_reads_and_touches_name_fields_of_the_class():
    for entry in REGISTRY:
        fields = {f.name for f in msgspec.structs.fields(entry.cls)}
        assert set(entry.reads) <= fields, entry.tag
        assert set(entry.touches) <= fields and set(entry.cites) <= fields, entry.tag


def test_a_merge_touches_its_result_and_its_sources_and_decodes_as_itself():
    merged = ev.KeyPointsMerged(section="OTHERS", name="oth-3", text="t", sources=["oth-1", "oth-2"], helpful=0,
                                harmful=0)
    assert touched_names(merged) == {"oth-1", "oth-2", "oth-3"}
    assert record_decoder().decode(msgspec.json.encode(merged)) == merged


def test_an_event_mentions_the_names_it_touches_or_cites_and_no_other():
    events = [
        ev.KeyPointsMerged(section="OTHERS", name="oth-3", text="t", sources=["oth-1", "oth-2"], helpful=0, harmful=0),
        ev.KeyPointEvaluated(name="oth-1", rating="helpful", helpful=1, harmful=0),
        ev.KeyPointMarkedStale(name="oth-2", idle_sessions=3),
        ev.OperationSkipped(kind="operation", reason="unknown", operation={"type": "UPDATE", "target_id": "oth-3"}),
        ev.CurationHeld(reason="shrinks", operations=[{"type": "DELETE", "target_id": "oth-1"}]),
    ]
    for event in events:
        for name in ("oth-1", "oth-2", "oth-3", "oth", "t", "OTHERS"):
            assert mentions(event, name) == (name in touched_names(event) or cites(event, name)), (event, name)
    assert [mentions(event, "oth-3") for event in events] == [True, False, False, True, False]
