"""The envelope every line of the log shares, the commit record, and what a reader or writer does with any record.

`Record` is a line's envelope (`seq`, `tx`, `at`) and `Event` the base of every change;
the event types themselves are in `eventlog.events` (and `eventlog.events_learning`),
which re-exports all of this.
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec


RecordType = TypeVar("RecordType", bound=msgspec.Struct)


class Record(msgspec.Struct, frozen=True, kw_only=True, tag_field="type", omit_defaults=True, gc=False):
    """The envelope. Optional fields left at their default are omitted from the line."""

    seq: int = 0
    tx: str = ""
    at: str = ""


class Event(Record, frozen=True, kw_only=True):
    """A change to the playbook, or a request that was considered and not applied."""


class TransactionCommitted(Record, frozen=True, kw_only=True, tag="TransactionCommitted"):
    """Closes a transaction of `events` records. Readers see a transaction only once this is written."""

    events: int
    source: str
    session: str | None = None
    model: str | None = None
    analysis: str | None = None
    reasoning: str | None = None
    note: str | None = None


class Cause(msgspec.Struct, frozen=True, kw_only=True):
    """Why a transaction happened: written on its commit record."""

    source: str
    session: str | None = None
    model: str | None = None
    analysis: str | None = None
    reasoning: str | None = None
    note: str | None = None


class UnknownRecord(msgspec.Struct, frozen=True, kw_only=True):
    """A line of a type this version does not know (written by a newer one): kept, never applied."""

    seq: int
    tx: str
    type: str
    at: str = ""


def record_view(record_type: type[Record], fields: tuple[str, ...]) -> type[msgspec.Struct]:
    """A decode-only twin of `record_type` (same tag) that keeps just `fields` of a line.

    Decoding skips the other fields instead of building them, which is what makes the
    fold fast; types and defaults are the record's own.
    """
    kept: list[tuple[Any, ...]] = []
    for field in msgspec.structs.fields(record_type):
        if field.name not in fields:
            continue
        if field.default is not msgspec.NODEFAULT:
            kept.append((field.name, field.type, field.default))
        elif field.default_factory is not msgspec.NODEFAULT:
            kept.append((field.name, field.type, msgspec.field(default_factory=field.default_factory)))
        else:
            kept.append((field.name, field.type))
    unknown = set(fields) - {name for name, *_ in kept}
    if unknown:
        raise TypeError(f"{record_type.__name__} has no field {', '.join(sorted(unknown))}")
    config = record_type.__struct_config__
    return msgspec.defstruct(
        f"{record_type.__name__}View", kept, kw_only=True, frozen=True, gc=False,
        tag=config.tag, tag_field=config.tag_field, module=__name__,
    )


def encodable_json(value: Any) -> Any:
    """JSON data that can be written: every lone surrogate replaced by U+FFFD, and a number of more
    digits than Python writes out replaced by a note of its size."""
    if isinstance(value, str):
        # UTF-16 round trip: a surrogate pair becomes its character, a lone surrogate U+FFFD.
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, int) and value.bit_length() > 14_000:  # over 4,300 digits: Python will not write it
        return f"<a number of {int(value.bit_length() * 0.30103) + 1} digits>"
    if isinstance(value, dict):
        return {encodable_json(key): encodable_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [encodable_json(item) for item in value]
    return value


def encodable_record(record: RecordType) -> RecordType:
    """`record` made encodable (see `encodable_json`): lone surrogates, which UTF-8 cannot hold and a
    model's `\\ud83d` escape or a hand-written file can bring, become U+FFFD."""
    return msgspec.convert(encodable_json(msgspec.to_builtins(record)), type(record))


encoder = msgspec.json.Encoder()
