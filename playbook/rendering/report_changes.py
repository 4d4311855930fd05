"""Human and JSON rendering of the commands that compare, change or count: diff, revert, verify, import, stats.

The same rules as `playbook.rendering.report`: every text from the log passes through `clean`,
output fits 80 columns, colour only when asked.
"""

from __future__ import annotations

from typing import Any

import msgspec

from eventlog.domain import PlaybookState
from projections.diff import Change, Diff

from playbook.commands.audit import Imported, PointState, Reverted, Stats
from playbook.commands.recover import Recovered
from .report import event_json, event_lines
from .safe_text import clean
from .terminal import Style, cells, counters, fit, quote, when, wrap


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


_TEXT_INDENT = "      "


def diff_lines(change: Diff, a: PointState, b: PointState, a_label: str, b_label: str, style: Style) -> list[str]:
    width = style.width
    lines = [style.paint(fit(f"diff {clean(a_label)} {clean(b_label)}", width), "bold"),
             _point("from", a_label, a, width), _point("to", b_label, b, width)]

    def heading(title: str, count: int) -> None:
        lines.append("")
        lines.append(style.paint(f"{title} ({count})", "bold"))

    for title, changed, render in (("added", change.added, _added), ("removed", change.removed, _removed),
                                   ("re-worded", change.reworded, _reworded), ("moved", change.moved, _moved),
                                   ("counters", change.counters, _counted)):
        if changed:
            heading(title, len(changed))
            for c in changed:
                lines += render(c, style)
    reordered = _reordered(a.state, b.state, change)
    if reordered:
        heading("order", len(reordered))
        for section, names in reordered.items():
            lines += wrap(f"  {section}: ", ", ".join(clean(n) for n in names), width, indent=4)
    return lines + _diff_footer(change, bool(reordered), style)


def _added(c: Change, style: Style) -> list[str]:
    return [style.paint("  + ", "green") + f"{clean(c.name)}  {clean(c.section)}  {counters(c.helpful, c.harmful)}",
            *wrap(_TEXT_INDENT, quote(c.text), style.width)]


def _removed(c: Change, style: Style) -> list[str]:
    return [style.paint("  - ", "red") + f"{clean(c.name)}  {clean(c.section)}  {counters(c.helpful, c.harmful)}",
            *wrap(_TEXT_INDENT, quote(c.text), style.width)]


def _reworded(c: Change, style: Style) -> list[str]:
    before = wrap(_TEXT_INDENT + "- ", quote(c.before_text), style.width)
    after = wrap(_TEXT_INDENT + "+ ", quote(c.text), style.width)
    return [style.paint("  ~ ", "yellow") + clean(c.name), *[style.paint(line, "red") for line in before],
            *[style.paint(line, "green") for line in after]]


def _moved(c: Change, style: Style) -> list[str]:
    moved = wrap(f"  > {clean(c.name)}  ", f"{clean(c.before_section)} -> {clean(c.section)}", style.width, indent=6)
    return [style.paint(moved[0][:4], "yellow") + moved[0][4:], *moved[1:]]


def _counted(c: Change, style: Style) -> list[str]:
    return [style.paint("  # ", "yellow") + f"{clean(c.name)}  "
            f"{counters(c.before_helpful or 0, c.before_harmful or 0)} -> {counters(c.helpful, c.harmful)}"]


def _diff_footer(change: Diff, reordered: bool, style: Style) -> list[str]:
    lines = []
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


def diff_json(change: Diff, a: PointState, b: PointState, a_label: str, b_label: str) -> dict[str, Any]:
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


def revert_json(result: Reverted) -> dict[str, Any]:
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
    notes = [f"note: {clean(note)}" for note in report.notes]
    if report.ok:
        lines = [style.paint("OK", "green", "bold") + f"  {read}",
                 f"    log       {clean(report.log)}", f"    snapshot  {clean(report.snapshot)}"]
        if report.anchors is not None:
            lines.append(f"    anchors   the log extends all {report.anchors} recorded head"
                         f"{'s' if report.anchors != 1 else ''}")
        return lines + notes
    lines = [*notes]
    for problem in report.problems:
        where = clean(problem.file) + (f":{problem.line}" if problem.line is not None else "")
        byte = f" (byte {problem.offset})" if problem.offset is not None else ""
        lines.append(f"{where}: {clean(problem.what)}{byte}")  # one line each, as compilers do: FILE:LINE: what
    count = len(report.problems)
    lines.append(style.paint(f"{count} problem{'s' if count != 1 else ''}", "red", "bold")
                 + f"; the log reads cleanly up to seq {report.seq} ({report.transactions} transactions, "
                 f"{report.events} events)")
    return lines


def verify_json(report: Any) -> dict[str, Any]:
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


def import_json(result: Imported) -> dict[str, Any]:
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


def recover_lines(result: Recovered, style: Style) -> list[str]:
    committed = result.committed
    if committed is None:
        return [f"nothing to recover: the log already holds everything in {clean(result.path)}"]
    lines = [f"recovered {clean(result.path)} ({clean(result.base)}) as new transaction {clean(committed.commit.tx)}:"]
    return lines + [line for e in committed.events for line in event_lines(e, style, False)]


def recover_json(result: Recovered) -> dict[str, Any]:
    committed = result.committed
    return {"file": result.path, "base": result.base, "applied": committed is not None,
            "tx": committed.commit.tx if committed is not None else None,
            "events": [event_json(e) for e in committed.events] if committed is not None else []}


def _heading(title: str, style: Style) -> list[str]:
    return ["", style.paint(title, "bold")]


def _table(rows: dict[str, int]) -> list[str]:
    width = max((cells(clean(k)) for k in rows), default=0)
    return [f"  {clean(key)}{' ' * (width - cells(clean(key)))}  {value:>6}" for key, value in rows.items()]


def _ranked(rows: list[dict[str, Any]], style: Style) -> list[str]:
    """Key points with their counters and as much of their text as the width leaves."""
    if not rows:
        return ["  (none)"]
    width = max(cells(clean(r["name"])) for r in rows)
    lines = []
    for r in rows:
        head = f"  {clean(r['name'])}{' ' * (width - cells(clean(r['name'])))}  {counters(r['helpful'], r['harmful']):>7}  "
        lines.append(head + fit(clean(r["text"]), style.width - cells(head)))
    return lines


def _per_day(per_day: dict[str, dict[str, int]]) -> list[str]:
    if not per_day:
        return ["  (none)"]
    return [f"  {'day':<10}  {'completed':>9}  {'failed':>6}  {'skipped':>7}"] + [
        f"  {clean(day):<10}  {row['completed']:>9}  {row['failed']:>6}  {row['skipped']:>7}"
        for day, row in per_day.items()]


def stats_lines(stats: Stats, style: Style) -> list[str]:
    updated = when(stats.last_updated) if stats.last_updated else "never"
    lines = wrap("", f"{stats.entries} entries; {stats.transactions} transactions, log at seq {stats.seq}; "
                 f"last updated {updated}", style.width, indent=2)
    lines += _heading("entries per section", style) + _table(stats.sections)
    for title, counts in (("transactions per source", stats.sources), ("events per type", stats.events)):
        lines += _heading(title, style) + (_table(counts) or ["  (none)"])
    for title, rows in (("most helpful", stats.most_helpful), ("most harmful", stats.most_harmful)):
        lines += _heading(title, style) + _ranked(rows, style)
    lines += _heading("learning cycles", style)
    if stats.backend:
        lines += wrap("  backend ", clean(stats.backend), style.width, indent=4)
    lines += wrap("  ", "  ".join(f"{k.replace('_', ' ')} {v}" for k, v in stats.learning.items()), style.width)
    lines += _heading("learning outcomes per day (UTC)", style) + _per_day(stats.per_day)
    return lines + _heading("value (playbook eval: with vs without the playbook)", style) + _value(stats.value, style)


def _value(value: list[dict[str, Any]], style: Style) -> list[str]:
    from eventlog.events import ValueMeasured

    from .value_report import value_lines

    measured = [msgspec.convert(item, ValueMeasured) for item in value]
    return value_lines([(event.at, event) for event in measured], style)


def stats_json(stats: Stats) -> dict[str, Any]:
    document: dict[str, Any] = msgspec.to_builtins(stats)
    return document
