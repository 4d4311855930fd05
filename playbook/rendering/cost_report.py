"""`playbook stats`' model usage: tokens and estimated cost per cycle, per UTC day and per model."""

from __future__ import annotations

from typing import Any

import msgspec

from projections.usage import Totals, UsageReport

from .safe_text import clean
from .terminal import Style

RECENT_CYCLES = 10
"""Cycles the human rendering lists (the newest); `--json` gives every one."""


def usage_json(report: UsageReport) -> dict[str, Any]:
    return dict(msgspec.to_builtins(report))


def _cost(totals: Totals) -> str:
    if totals.calls and totals.unpriced == totals.calls:
        return "unknown"
    text = f"${totals.cost_usd:,.4f}"
    return text + (f" (+{totals.unpriced} unpriced)" if totals.unpriced else "")


def _row(label: str, totals: Totals, width: int) -> str:
    cache = totals.cache_creation_input_tokens + totals.cache_read_input_tokens
    failed = f"  {totals.failed} failed" if totals.failed else ""
    return (f"  {label:<{width}}  {totals.calls:>5}  {totals.input_tokens:>10,}  {totals.output_tokens:>9,}  "
            f"{cache:>9,}  {_cost(totals)}{failed}")


def usage_lines(report: UsageReport, style: Style) -> list[str]:
    """The usage tables: the newest cycles (UTC time and transaction), then per day and per model, then the total."""
    lines = ["", style.paint(f"model usage (estimated cost at prices of {report.prices_as_of})", "bold")]
    if not report.total.calls:
        return [*lines, "  (no model call recorded)"]
    cycles = report.cycles[-RECENT_CYCLES:]
    tables = {
        "newest cycles": {f"{c.at[5:16].replace('T', ' ')} {clean(c.tx[:8])}": c.totals for c in cycles},
        "per day (UTC)": {clean(day): totals for day, totals in report.per_day.items()},
        "per model": {clean(model): totals for model, totals in report.per_model.items()},
    }
    width = max(len(label) for rows in tables.values() for label in [*rows, "newest cycles"])
    header = f"calls  {'input':>10}  {'output':>9}  {'cache':>9}  cost"
    for title, rows in tables.items():
        lines.append(f"  {title:<{width}}  {header}")
        lines.extend(_row(label, totals, width) for label, totals in rows.items())
        lines.append("")
    lines.append(_row("total", report.total, width))
    return lines
