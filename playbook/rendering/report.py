"""Human and JSON rendering of the views of the log: show, log, history (the others: `report_changes`).

Human output: aligned, readable in 80 columns, coloured only when asked (a terminal, no
NO_COLOR). Every text that comes from the log passes through `clean`, so control
characters and terminal escape sequences are shown escaped (`\\x1b[31m`) and never reach
the terminal. JSON output: one document, stable field names; the characters JSON leaves
raw but a terminal may act on (DEL, C1 controls, line separators, bidi controls) are
written as `\\uXXXX` escapes.
"""

from __future__ import annotations

import re
from typing import Any, assert_never

import msgspec

from eventlog import events as ev
from eventlog.domain import SECTION_SLUGS, PlaybookState
from eventlog.registry import tag_of
from projections.timeline import Fate, HistoryItem, Removal

from playbook.commands.audit import PointState, Selected
from .event_text import describe_operation, event_parts
from .event_text import history_kind as event_history_kind
from .safe_text import clean
from .terminal import LABEL, Style, cells, counters, fit, one_line, quote, shown, when, wrap

# --- JSON -------------------------------------------------------------------------------------------

_JSON_UNSAFE = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def to_json(document: Any) -> str:
    """One indented JSON document; characters JSON leaves raw but terminals act on are escaped."""
    text = msgspec.json.format(msgspec.json.encode(document), indent=2).decode("utf-8")
    return _JSON_UNSAFE.sub(lambda m: "\\u%04x" % ord(m.group()), text)


def event_json(event: ev.Event | ev.UnknownRecord) -> dict[str, Any]:
    """Every field of an event (defaults included), with its `type` first."""
    if isinstance(event, ev.UnknownRecord):
        return {"type": event.type, "seq": event.seq, "tx": event.tx, "at": event.at, "unknown": True}
    return {"type": tag_of(event), **msgspec.to_builtins(msgspec.structs.asdict(event))}


def commit_json(commit: ev.TransactionCommitted) -> dict[str, Any]:
    return {"tx": commit.tx, "seq": commit.seq, "at": commit.at, "source": commit.source,
            "session": commit.session, "model": commit.model, "analysis": commit.analysis,
            "reasoning": commit.reasoning, "note": commit.note}


def state_json(state: PlaybookState) -> dict[str, Any]:
    return {section: [{"name": kp.name, "text": kp.text, "helpful": kp.helpful, "harmful": kp.harmful}
                      for kp in state.sections[section].values()] for section in SECTION_SLUGS}


# --- events, one line each ------------------------------------------------------------------------------


def proposal_lines(proposals: list[Any], style: Style, heading: str | None = None) -> list[str]:
    """Pending proposals, oldest first: id, when, the operation, and what would refuse it."""
    if not proposals:
        return ["no pending proposals"]
    lines = [heading] if heading else [f"{len(proposals)} proposal(s) waiting for review"]
    for proposal in proposals:
        at = proposal.recorded_at[:19].replace("T", " ")
        lines.append(f"  {style.paint(clean(proposal.id), 'cyan')}  {at}  {describe_operation(proposal.operation)}")
        for name, text in proposal.base.items():
            lines.append(f"      {clean(name)} when proposed: {quote(text)}")
        if proposal.held:
            lines.append(f"      {style.paint('would have been held', 'magenta')}: {clean(proposal.held)}")
        if proposal.conflict:
            lines.append(f"      {style.paint('would be refused', 'red')}: {clean(proposal.conflict)}")
    return lines


def decision_lines(decisions: list[Any], style: Style) -> list[str]:
    """What review actions did: outcome, id, reason, transaction; below the decisions that share a
    transaction, its events once (an accept's, so what it changed is seen)."""
    lines: list[str] = []
    index = 0
    while index < len(decisions):
        tx = decisions[index].tx
        end = index + 1
        while end < len(decisions) and tx is not None and decisions[end].tx == tx:
            end += 1
        together = decisions[index:end]
        for decision in together:
            reason = f": {clean(decision.reason)}" if decision.reason else ""
            colour = {"accepted": "green", "held": "magenta"}.get(decision.outcome, "red")
            shown_tx = f"  (tx {decision.tx})" if decision.tx else ""
            lines.append(f"{style.paint(decision.outcome, colour)} {clean(decision.id)}{reason}{shown_tx}")
        if any(decision.outcome == "accepted" for decision in together):
            for event in together[0].events:
                lines.extend(event_lines(event, style, verbose=False, indent=4))
        index = end
    return lines


def event_lines(event: ev.Event | ev.UnknownRecord, style: Style, verbose: bool, indent: int = 2) -> list[str]:
    mark, label, detail, colour = event_parts(event)
    head = f"{' ' * indent}{mark} {label:<{LABEL}} "
    painted = style.paint(f"{mark} {label:<{LABEL}}", colour)
    if verbose:
        lines = wrap(head, detail, style.width)
        return [" " * indent + painted + lines[0][indent + 2 + LABEL:], *lines[1:]]
    return [" " * indent + painted + " " + fit(detail, style.width - len(head))]


# --- show / at ------------------------------------------------------------------------------------------


def show_lines(point: PointState, style: Style, label: str | None = None) -> list[str]:
    state = point.state
    lines: list[str] = []
    for section in SECTION_SLUGS:
        entries = state.sections[section]
        if not entries:
            continue
        if lines:
            lines.append("")
        lines.append(style.paint(f"## {section}", "bold"))
        for kp in entries.values():
            lines.append(f"[{clean(kp.name)}] helpful={kp.helpful} harmful={kp.harmful} :: {clean(shown(kp.text))}")
    if not lines:
        lines.append("(the playbook is empty)")
    lines.append("")
    total = 0
    for section in SECTION_SLUGS:
        count = len(state.sections[section])
        total += count
        lines.append(f"{section:<24}{count:>5}")
    lines.append(style.paint(f"{'all':<24}{total:>5}", "bold"))
    if label is None:
        lines.append(f"log at seq {point.seq}")
    else:
        lines.append(fit(f"as of {clean(label)}: log at seq {point.seq}", style.width))
        commit = point.commit
        if commit is not None:
            lines.append(fit(f"after transaction {clean(commit.tx)} ({when(commit.at)}, {clean(commit.source)})", style.width))
        else:
            lines.append("before the first transaction")
    lines.append(f"last updated {when(state.last_updated) if state.last_updated else 'never'}")
    return lines


def show_json(point: PointState, label: str | None = None) -> dict[str, Any]:
    state = point.state
    counts = {section: len(state.sections[section]) for section in SECTION_SLUGS}
    return {
        "at": label, "seq": point.seq, "tx": point.commit.tx if point.commit is not None else None,
        "version": state.version, "last_updated": state.last_updated,
        "sections": state_json(state), "counts": counts, "total": sum(counts.values()),
    }


# --- log ------------------------------------------------------------------------------------------------


def _field(label: str, text: str, style: Style, verbose: bool) -> list[str]:
    head = f"{label:<{LABEL}}"
    painted = style.paint(label, "dim") + " " * (LABEL - len(label))
    if verbose:
        lines = wrap(head, "\n".join(clean(line) for line in text.splitlines()), style.width)
        return [painted + lines[0][LABEL:], *lines[1:]]
    return [painted + fit(one_line(text), style.width - LABEL)]


def log_lines(selected: list[Selected], style: Style, verbose: bool = False, filtered: bool = False) -> list[str]:
    if not selected:
        return ["(no transactions match)" if filtered else "(the log is empty)"]
    lines: list[str] = []
    for item in selected:
        transaction = item.transaction
        commit = transaction.commit
        if lines:
            lines.append("")
        first = transaction.start.seq + 1
        seqs = f"seq {first}-{commit.seq}" if first < commit.seq else f"seq {commit.seq}"
        lines.append(style.paint(f"tx {clean(commit.tx)}", "yellow") + f"  {when(commit.at)} UTC  {seqs}")
        lines += _field("source", commit.source, style, verbose)
        for label in ("session", "model", "analysis", "reasoning", "note"):
            value = getattr(commit, label)
            if value:
                lines += _field(label, value, style, verbose)
        for event in item.events:
            lines += event_lines(event, style, verbose)
        hidden = len(transaction.events) - len(item.events)
        if hidden:
            lines.append(style.paint(f"  … and {hidden} other event{'s' if hidden != 1 else ''}", "dim"))
    return lines


def log_json(selected: list[Selected]) -> dict[str, Any]:
    return {"transactions": [
        {**commit_json(s.transaction.commit), "first_seq": s.transaction.start.seq + 1,
         "events_total": len(s.transaction.events), "events": [event_json(e) for e in s.events]}
        for s in selected
    ]}


# --- history --------------------------------------------------------------------------------------------


def history_kind(item: HistoryItem) -> tuple[str, str]:
    """(kind, what happened) for one history item, as seen from `item.entry`."""
    return event_history_kind(item.event, item.entry, item.commit.session)


def _now(items: list[HistoryItem], name: str) -> tuple[str | None, Any]:
    """(section, entry) of `name` after its last item, from the events alone (no fold)."""
    section: str | None = None
    after = None
    for item in items:
        if item.entry != name:
            continue
        event = item.event
        if isinstance(event, (ev.KeyPointAdded, ev.KeyPointImported)) or (
                isinstance(event, ev.KeyPointsMerged) and event.name == name):
            section = event.section
        elif isinstance(event, ev.KeyPointMoved):
            section = event.to_section
        after = item.after
    return section, after


def _removal(event: Removal) -> str:
    match event:
        case ev.KeyPointDeleted(reason=reason):
            return f"deleted ({clean(reason)})" if reason else "deleted"
        case ev.KeyPointPruned(rule=rule):
            return f"pruned ({clean(rule)})"
        case ev.KeyPointsMerged(name=into):
            return f"merged into {clean(into)}"
        case _:
            assert_never(event)


def fate_text(fate: Fate) -> str:
    """Where an entry's lesson lives now, in words: the first thing its history says."""
    names = [clean(name) for name in fate.merged_into]
    if len(names) > 3:  # a lesson merged again in session after session: where it went first, and where last
        names = [names[0], f"{len(names) - 2} more", names[-1]]
    merged = "merged into " + ", then ".join(names)
    if fate.live is not None:
        return f"lives on as {clean(fate.live)} ({merged})" if fate.merged_into else "in the playbook now"
    if fate.removed is None or fate.commit is None:
        return f"{merged}, no longer in the playbook" if fate.merged_into else "never in the playbook, only named"
    commit = fate.commit
    return (f"{merged + ', then ' if fate.merged_into else ''}{_removal(fate.removed)} by "
            f"{clean(commit.source)} in tx {clean(commit.tx)}, {when(commit.at)} UTC")


def history_lines(name: str, items: list[HistoryItem], style: Style, verbose: bool = False,
                  fate: Fate | None = None) -> list[str]:
    section, after = _now(items, name)
    head = f"history of {clean(name)}"
    first, *more = wrap("", head + (f": {fate_text(fate)}" if fate is not None else ""), style.width, indent=4)
    lines = [style.paint(head, "bold") + first[len(head):] if first.startswith(head) else first, *more]
    if after is not None:
        now = f"now in {clean(section or '?')}: helpful={after.helpful} harmful={after.harmful} :: {clean(shown(after.text))}"
        lines += wrap("", now, style.width, indent=4) if verbose else [fit(now, style.width)]
    else:
        lines.append("now: not in the playbook")
    lines.append(style.paint("(counters: helpful/harmful after each change)", "dim"))
    width = min(max(cells(clean(i.entry)) for i in items), 16)
    previous_tx = None
    columns: dict[str, tuple[str, str]] = {}  # an entry's column, plain and as printed: a few entries, many items
    fitted: dict[tuple[str, int], str] = {}  # a long history says the same few things many times
    for item in items:
        commit = item.commit
        if commit.tx != previous_tx:
            lines.append("")
            session = f"  session {clean(commit.session)}" if commit.session else ""
            stamp, tx = when(commit.at), clean(commit.tx)
            rest = fit(f"{clean(commit.source)}{session}", style.width - cells(stamp) - cells(tx) - 4)
            lines.append(f"{style.paint(stamp, 'dim')}  {style.paint(tx, 'yellow')}  {rest}")
            previous_tx = commit.tx
        _kind, what = history_kind(item)
        count = counters(item.after.helpful, item.after.harmful) if item.after is not None else "gone"
        if (column := columns.get(item.entry)) is None:
            entry = f"{fit(clean(item.entry), width):<{width}}"
            column = columns[item.entry] = entry, style.paint(entry, "bold") if item.entry == name else entry
        entry, marked = column
        if verbose:
            body = wrap(f"  {entry}  ", f"{what}  [{count}]", style.width)
            lines.append("  " + marked + body[0][2 + len(entry):])
            lines.extend(body[1:])
            continue
        room = style.width - (2 + width + 2) - (2 + len(count))
        if (shown_what := fitted.get((what, room))) is None:
            cut = fit(what, room)
            shown_what = fitted[what, room] = f"{cut}{' ' * (room - cells(cut))}"
        lines.append(f"  {marked}  {shown_what}  {count}")
    return lines


def history_json(name: str, items: list[HistoryItem], fate: Fate | None = None) -> dict[str, Any]:
    section, after = _now(items, name)
    return {
        "entry": name,
        **({} if fate is None else {"lives": {
            "live": fate.live, "merged_into": fate.merged_into, "text": fate_text(fate),
            "removed": None if fate.removed is None else event_json(fate.removed),
            "tx": fate.commit.tx if fate.commit is not None else None,
            "at": fate.commit.at if fate.commit is not None else None,
            "source": fate.commit.source if fate.commit is not None else None}}),
        "now": None if after is None else {"name": after.name, "section": section, "text": after.text,
                                           "helpful": after.helpful, "harmful": after.harmful},
        "items": [
            {"entry": item.entry, "kind": history_kind(item)[0], "at": item.commit.at, "tx": item.commit.tx,
             "source": item.commit.source, "session": item.commit.session, "model": item.commit.model,
             "event": event_json(item.event),
             "after": None if item.after is None else msgspec.to_builtins(item.after)}
            for item in items
        ],
    }
