"""Human and JSON rendering of the audit views (show, log, history, diff, revert, verify, import, stats).

Human output: aligned, readable in 80 columns, coloured only when asked (a terminal, no
NO_COLOR). Every text that comes from the log passes through `clean`, so control
characters and terminal escape sequences are shown escaped (`\\x1b[31m`) and never reach
the terminal. JSON output: one document, stable field names; the characters JSON leaves
raw but a terminal may act on (DEL, C1 controls, line separators, bidi controls) are
written as `\\uXXXX` escapes.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from eventlog import events as ev
from eventlog.domain import SECTION_SLUGS, PlaybookState
from eventlog.registry import tag_of
from projections.diff import Diff
from projections.timeline import HistoryItem

from .audit import Imported, PointState, Reverted, Selected, Stats
from .event_text import event_parts
from .event_text import history_kind as event_history_kind
from .safe_text import clean
from .terminal import LABEL, Style, cells, counters, fit, one_line, quote, when, wrap

# --- JSON -------------------------------------------------------------------------------------------

_JSON_UNSAFE = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def to_json(document: Any) -> str:
    """One indented JSON document; characters JSON leaves raw but terminals act on are escaped."""
    text = msgspec.json.format(msgspec.json.encode(document), indent=2).decode("utf-8")
    return _JSON_UNSAFE.sub(lambda m: "\\u%04x" % ord(m.group()), text)


def event_json(event: ev.Event | ev.UnknownRecord) -> dict:
    """Every field of an event (defaults included), with its `type` first."""
    if isinstance(event, ev.UnknownRecord):
        return {"type": event.type, "seq": event.seq, "tx": event.tx, "at": event.at, "unknown": True}
    return {"type": tag_of(event), **msgspec.to_builtins(msgspec.structs.asdict(event))}


def commit_json(commit: ev.TransactionCommitted) -> dict:
    return {"tx": commit.tx, "seq": commit.seq, "at": commit.at, "source": commit.source,
            "session": commit.session, "model": commit.model, "analysis": commit.analysis,
            "reasoning": commit.reasoning, "note": commit.note}


def state_json(state: PlaybookState) -> dict:
    return {section: [{"name": kp.name, "text": kp.text, "helpful": kp.helpful, "harmful": kp.harmful}
                      for kp in state.sections[section].values()] for section in SECTION_SLUGS}


# --- events, one line each ------------------------------------------------------------------------------


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
            lines.append(f"[{clean(kp.name)}] helpful={kp.helpful} harmful={kp.harmful} :: {clean(kp.text)}")
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


def show_json(point: PointState, label: str | None = None) -> dict:
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


def log_json(selected: list[Selected]) -> dict:
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


def history_lines(name: str, items: list[HistoryItem], style: Style, verbose: bool = False) -> list[str]:
    section, after = _now(items, name)
    lines = [style.paint(f"history of {clean(name)}", "bold") + "  (counters: helpful/harmful after each change)"]
    if after is not None:
        now = f"now in {clean(section or '?')}: helpful={after.helpful} harmful={after.harmful} :: {clean(after.text)}"
        lines += wrap("", now, style.width, indent=4) if verbose else [fit(now, style.width)]
    else:
        lines.append("now: not in the playbook")
    width = min(max(cells(clean(i.entry)) for i in items), 16)
    previous_tx = None
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
        entry = f"{fit(clean(item.entry), width):<{width}}"
        marked = style.paint(entry, "bold") if item.entry == name else entry
        if verbose:
            body = wrap(f"  {entry}  ", f"{what}  [{count}]", style.width)
            lines.append("  " + marked + body[0][2 + len(entry):])
            lines.extend(body[1:])
            continue
        room = style.width - (2 + width + 2) - (2 + len(count))
        what = fit(what, room)
        lines.append(f"  {marked}  {what}{' ' * (room - cells(what))}  {count}")
    return lines


def history_json(name: str, items: list[HistoryItem]) -> dict:
    section, after = _now(items, name)
    return {
        "entry": name,
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


# --- diff -----------------------------------------------------------------------------------------------


def _reordered(a: PlaybookState, b: PlaybookState, change: Diff) -> dict[str, list[str]]:
    """Sections whose entries present at both points changed their relative order."""
    out = {}
    for section, names in change.order.items():
        before = [n for n in a.sections[section] if n in b.sections[section]]
        after = [n for n in names if n in a.sections[section]]
        if before != after:
            out[section] = names
    return out


def _point(title: str, label: str, point: PointState, width: int) -> str:
    commit = point.commit
    after = f"  {when(commit.at)}  tx {clean(commit.tx)}" if commit is not None else "  (before the first transaction)"
    return fit(f"{title:<6}seq {point.seq}{after}  ({clean(label)})", width)


def diff_lines(change: Diff, a: PointState, b: PointState, a_label: str, b_label: str, style: Style) -> list[str]:
    width = style.width
    lines = [style.paint(fit(f"diff {clean(a_label)} {clean(b_label)}", width), "bold"),
             _point("from", a_label, a, width), _point("to", b_label, b, width)]
    text_indent = "      "

    def heading(title: str, count: int) -> None:
        lines.append("")
        lines.append(style.paint(f"{title} ({count})", "bold"))

    if change.added:
        heading("added", len(change.added))
        for c in change.added:
            lines.append(style.paint("  + ", "green") + f"{clean(c.name)}  {clean(c.section)}  {counters(c.helpful, c.harmful)}")
            lines += wrap(text_indent, quote(c.text), width)
    if change.removed:
        heading("removed", len(change.removed))
        for c in change.removed:
            lines.append(style.paint("  - ", "red") + f"{clean(c.name)}  {clean(c.section)}  {counters(c.helpful, c.harmful)}")
            lines += wrap(text_indent, quote(c.text), width)
    if change.reworded:
        heading("re-worded", len(change.reworded))
        for c in change.reworded:
            lines.append(style.paint("  ~ ", "yellow") + clean(c.name))
            before = wrap(text_indent + "- ", quote(c.before_text), width)
            after = wrap(text_indent + "+ ", quote(c.text), width)
            lines += [style.paint(line, "red") for line in before] + [style.paint(line, "green") for line in after]
    if change.moved:
        heading("moved", len(change.moved))
        for c in change.moved:
            moved = wrap(f"  > {clean(c.name)}  ", f"{clean(c.before_section)} -> {clean(c.section)}", width, indent=6)
            lines += [style.paint(moved[0][:4], "yellow") + moved[0][4:], *moved[1:]]
    if change.counters:
        heading("counters", len(change.counters))
        for c in change.counters:
            lines.append(style.paint("  # ", "yellow") + f"{clean(c.name)}  "
                         f"{counters(c.before_helpful or 0, c.before_harmful or 0)} -> {counters(c.helpful, c.harmful)}")
    reordered = _reordered(a.state, b.state, change)
    if reordered:
        heading("order", len(reordered))
        for section, names in reordered.items():
            lines += wrap(f"  {section}: ", ", ".join(clean(n) for n in names), width, indent=4)
    if change.version is not None:
        lines.append("")
        lines.append(style.paint("version", "bold") + f" {clean(change.version[0])} -> {clean(change.version[1])}")
    lines.append("")
    if change.is_empty() and not reordered:
        lines.append("no differences")
    else:
        counted = len(change.counters)
        lines.append(f"{len(change.added)} added, {len(change.removed)} removed, {len(change.reworded)} re-worded, "
                     f"{len(change.moved)} moved, {counted} counter change{'s' if counted != 1 else ''}")
    return lines


def diff_json(change: Diff, a: PointState, b: PointState, a_label: str, b_label: str) -> dict:
    return {
        **msgspec.to_builtins(change),
        "from": {"at": a_label, "seq": a.seq, "tx": a.commit.tx if a.commit is not None else None},
        "to": {"at": b_label, "seq": b.seq, "tx": b.commit.tx if b.commit is not None else None},
    }


# --- revert ---------------------------------------------------------------------------------------------


def _txs(transactions: list[str]) -> str:
    count = len(transactions)
    return f"{count} transaction{'s' if count != 1 else ''}: {', '.join(clean(t) for t in transactions)}"


def conflict_lines(conflicts: dict[str, list[str]], style: Style) -> list[str]:
    width = min(max(len(clean(n)) for n in conflicts), 16) if conflicts else 0
    lines = []
    for name in sorted(conflicts):
        lines += wrap(f"  {clean(name):<{width}}  ", f"changed later by {', '.join(clean(t) for t in conflicts[name])}", style.width)
    return lines


def revert_lines(result: Reverted, style: Style) -> list[str]:
    plan = result.plan
    if not plan.events:
        why = ("once the entries changed later are left as they are, the playbook already looks as it would "
               "without it" if plan.conflicts else "the playbook already looks as it would without it")
        lines = wrap("", f"nothing to revert in {_txs(plan.transactions)}: {why}", style.width, indent=2)
    elif result.dry_run:
        lines = wrap("", f"would revert {_txs(plan.transactions)}", style.width, indent=2)
        lines += [line for e in plan.events for line in event_lines(e, style, False)]
    else:
        committed = result.committed
        events = committed.events if committed is not None else plan.events
        tx = clean(committed.commit.tx) if committed is not None else "(nothing written)"
        lines = wrap("", f"reverted {_txs(plan.transactions)}", style.width, indent=2)
        lines.append(f"as new transaction {tx}:")
        lines += [line for e in events for line in event_lines(e, style, False)]
    if plan.conflicts:
        lines.append("left as they are (changed by later transactions):")
        lines += conflict_lines(plan.conflicts, style)
    if result.dry_run:
        lines.append("dry run: nothing was written")
    return lines


def revert_json(result: Reverted) -> dict:
    committed = result.committed
    return {
        "transactions": result.plan.transactions,
        "dry_run": result.dry_run,
        "applied": committed is not None,
        "tx": committed.commit.tx if committed is not None else None,
        "events": [event_json(e) for e in (committed.events if committed is not None else result.plan.events)],
        "conflicts": result.plan.conflicts,
    }


# --- verify ---------------------------------------------------------------------------------------------


def verify_lines(report: Any, style: Style) -> list[str]:
    read = f"{report.transactions} transactions, {report.events} events, log at seq {report.seq}"
    if report.ok:
        return [style.paint("OK", "green", "bold") + f"  {read}",
                f"    log       {clean(report.log)}", f"    snapshot  {clean(report.snapshot)}"]
    lines = []
    for problem in report.problems:
        where = clean(problem.file) + (f":{problem.line}" if problem.line is not None else "")
        byte = f" (byte {problem.offset})" if problem.offset is not None else ""
        lines.append(f"{where}: {clean(problem.what)}{byte}")  # one line each, as compilers do: FILE:LINE: what
    count = len(report.problems)
    lines.append(style.paint(f"{count} problem{'s' if count != 1 else ''}", "red", "bold")
                 + f"; the log reads cleanly up to seq {report.seq} ({report.transactions} transactions, "
                 f"{report.events} events)")
    return lines


def verify_json(report: Any) -> dict:
    return {"ok": report.ok, **msgspec.to_builtins(report)}


# --- import ---------------------------------------------------------------------------------------------


def import_lines(result: Imported, style: Style) -> list[str]:
    header = result.header
    count = len(result.entries)
    fmt = clean(header.file_format) if header is not None else "?"
    tx = clean(result.committed.commit.tx) if result.committed is not None else "-"
    present = len(result.present)
    if result.committed is None and present:
        return [f"nothing imported from {clean(result.path)}: its {present} entr{'ies are' if present != 1 else 'y is'} "
                "already in the playbook"]
    lines = [f"imported {count} entr{'ies' if count != 1 else 'y'} from {clean(result.path)}"]  # a path: not wrapped
    lines.append(f"format {fmt}; transaction {tx}")
    for event in [*result.entries, *result.rejected, *result.present]:
        lines += event_lines(event, style, False)
    if header is not None and header.ignored_key_points:
        lines.append(f"  {header.ignored_key_points} key_points ignored: the file also has sections")
    return lines


def import_json(result: Imported) -> dict:
    header = result.header
    return {
        "path": result.path, "tx": result.committed.commit.tx if result.committed is not None else None,
        "file_format": header.file_format if header is not None else None,
        "entries": len(result.entries), "genesis": header.genesis if header is not None else None,
        "ignored_key_points": header.ignored_key_points if header is not None else 0,
        "imported": [event_json(e) for e in result.entries],
        "rejected": [event_json(e) for e in result.rejected],
        "already_present": [event_json(e) for e in result.present],
    }


# --- stats ----------------------------------------------------------------------------------------------


def stats_lines(stats: Stats, style: Style) -> list[str]:
    def heading(title: str) -> None:
        lines.append("")
        lines.append(style.paint(title, "bold"))

    def table(rows: dict[str, int]) -> None:
        width = max((cells(clean(k)) for k in rows), default=0)
        for key, value in rows.items():
            lines.append(f"  {clean(key)}{' ' * (width - cells(clean(key)))}  {value:>6}")

    updated = when(stats.last_updated) if stats.last_updated else "never"
    lines = wrap("", f"{stats.entries} entries; {stats.transactions} transactions, log at seq {stats.seq}; "
                 f"last updated {updated}", style.width, indent=2)
    heading("entries per section")
    table(stats.sections)
    for title, counts in (("transactions per source", stats.sources), ("events per type", stats.events)):
        heading(title)
        if counts:
            table(counts)
        else:
            lines.append("  (none)")
    for title, rows in (("most helpful", stats.most_helpful), ("most harmful", stats.most_harmful)):
        heading(title)
        if not rows:
            lines.append("  (none)")
        width = max((cells(clean(r["name"])) for r in rows), default=0)
        for r in rows:
            head = f"  {clean(r['name'])}{' ' * (width - cells(clean(r['name'])))}  {counters(r['helpful'], r['harmful']):>7}  "
            lines.append(head + fit(clean(r["text"]), style.width - cells(head)))
    heading("learning cycles")
    lines.append("  " + "  ".join(f"{k} {v}" for k, v in stats.learning.items()))
    heading("learning outcomes per day (UTC)")
    if not stats.per_day:
        lines.append("  (none)")
    else:
        lines.append(f"  {'day':<10}  {'completed':>9}  {'failed':>6}  {'skipped':>7}")
        for day, row in stats.per_day.items():
            lines.append(f"  {clean(day):<10}  {row['completed']:>9}  {row['failed']:>6}  {row['skipped']:>7}")
    return lines


def stats_json(stats: Stats) -> dict:
    return msgspec.to_builtins(stats)
