"""Every benchmark of the project, and the crash and stress tests' counts, in one table.

    python -m benchmarks [--quick | --full] [--tmpdir DIR] [--skip-tests]

Runs, in this order: the hook latencies (benchmarks/hooks.py), fold throughput against
raw msgspec decoding and the fold's peak memory, append latency (benchmarks/fold.py),
time travel, `history` and `log -n 20` on a long log (benchmarks/timeline.py), the history
page's writing and first screen (benchmarks/page.py), the tokens a learning cycle sends over three
recorded sessions (benchmarks/condense.py), the learner's score over labelled sessions with a scripted
model (benchmarks/learning.py), the git merge driver on two 100k-event
logs with 1,000 new transactions per side (benchmarks/merge.py), and
`pytest -q tests/test_crash.py tests/test_stress.py` in a subprocess, whose counts are
parsed. Progress goes to stderr; the table, one row per figure (what, figure, target,
met / NOT met), to stdout.

Sizes:   --quick   fold 100k events (2 reps), 50 appends, 10 hook runs, timeline and page 100k events,
                   stress 2 s, 20 crash trials: well under two minutes;
         default   fold 100k events (5 reps), 200 appends, 40 hook runs, time travel 1M events, page 100k events,
                   the tests' own defaults (stress 4 s, 60 crash trials): a couple of minutes;
         --full    fold, timeline and page on 1M events, stress 20 s, 150 crash trials.
Exit status 0 when every target is met, 1 otherwise.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TEST_FILES = ("tests/test_crash.py", "tests/test_stress.py")

MODES: dict[str, dict[str, Any]] = {
    "quick": {"fold_events": 100_000, "fold_reps": 2, "appends": 50, "hook_runs": 10, "timeline_events": 100_000,
              "page_events": 100_000, "merge_events": 100_000, "merge_side": 1000, "env": {"PLAYBOOK_STRESS_SECONDS": "2", "PLAYBOOK_CRASH_TRIALS": "20"}},
    "default": {"fold_events": 100_000, "fold_reps": 5, "appends": 200, "hook_runs": 40, "timeline_events": 1_000_000,
                "page_events": 100_000, "merge_events": 100_000, "merge_side": 1000, "env": {}},
    "full": {"fold_events": 1_000_000, "fold_reps": 5, "appends": 200, "hook_runs": 40,
             "timeline_events": 1_000_000, "page_events": 1_000_000, "merge_events": 100_000, "merge_side": 1000, "env": {"PLAYBOOK_STRESS_SECONDS": "20", "PLAYBOOK_CRASH_TRIALS": "150"}},
}

# Targets: those the issues set for the hooks, the fold, appends at scale and the timeline queries. The
# append's own latency has none, so its rows are figures for context.
HOOK_ABOVE_BARE_MS = 10.0
SESSION_END_MS = 300.0
FOLD_RATIO = 0.5
FOLD_PEAK_MB = 150.0
QUERY_SECONDS, QUERY_MB, TIME_TRAVEL_MB = 1.0, 200.0, 100.0
CHECK_RATIO = 1.5
SHOW_SECONDS = 0.05
PAGE_SECONDS, PAGE_MB, FIRST_SCREEN_SECONDS = 5.0, 300.0, 2.0


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class Report:
    def __init__(self) -> None:
        self.rows: list[tuple[str, str, str, str]] = []
        self.notes: list[str] = []

    def row(self, what: str, figure: str, target: str = "", met: bool | None = None) -> None:
        verdict = "-" if met is None else ("met" if met else "NOT met")
        self.rows.append((what, figure, target or "-", verdict))
        say(f"  {what}: {figure}   [{target or '-'}: {verdict}]")

    def section(self, title: str) -> None:
        self.rows.append((title, "", "", ""))

    def failed(self, what: str, exc: BaseException) -> None:
        detail = "".join(traceback.format_exception_only(type(exc), exc)).strip().splitlines()[-1]
        self.row(what, f"could not run: {detail[:90]}", "runs", False)
        self.notes.append(f"{what}: {traceback.format_exc()}")

    def all_met(self) -> bool:
        return all(verdict != "NOT met" for _w, _f, _t, verdict in self.rows)

    def render(self) -> str:
        header = ("what", "figure", "target", "met?")
        body = [r for r in self.rows if r[1]]
        widths = [max(len(r[i]) for r in [header, *body]) for i in range(4)]
        rule = "  ".join("-" * w for w in widths)
        lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip(), rule]
        for row in self.rows:
            if not row[1]:
                lines.append(row[0])
                continue
            lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
        return "\n".join(lines)


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def _count(n: int) -> str:
    return f"{n / 1e6:g}M" if n >= 1_000_000 else f"{n // 1000}k" if n >= 1000 else str(n)


# --- the benchmarks ----------------------------------------------------------------------------------------


def hooks(report: Report, mode: dict[str, Any]) -> None:
    from benchmarks import hooks as bench

    entries, runs = 500, mode["hook_runs"]
    say(f"hooks: {runs} runs of each command, interleaved, on a {entries}-entry playbook")
    samples = bench.measure(runs, entries)
    bare = statistics.median(samples[bench.BARE])
    end = statistics.median(samples[bench.SESSION_END])
    report.section(f"hooks ({runs} runs each, {entries}-entry playbook; medians, beside `python -I -S -c pass`, "
                   f"the same interpreter with the hooks' flags)")
    for name in bench.hook_names(entries):
        took = statistics.median(samples[name])
        report.row(f"{name}, above bare", f"{(took - bare) * 1000:+.1f} ms ({_ms(took)} vs {_ms(bare)})",
                   f"<= +{HOOK_ABOVE_BARE_MS:g} ms", took - bare <= HOOK_ABOVE_BARE_MS / 1000)
    for name in (bench.PROMPT_AFTER_APPEND, bench.WITH_SITE, bench.MODULE_END):
        took = statistics.median(samples[name])
        report.row(f"{name}, above bare", f"{(took - bare) * 1000:+.1f} ms ({_ms(took)})", "context")
    report.row("SessionEnd hook (learning on), time to return", f"{_ms(end)} ({(end - bare) * 1000:+.1f} ms above bare)",
               f"< {SESSION_END_MS:g} ms", end < SESSION_END_MS / 1000)


def fold_and_append(report: Report, mode: dict[str, Any], tmpdir: str | None) -> None:
    from benchmarks import fold as bench

    size, reps = mode["fold_events"], mode["fold_reps"]
    table = bench.Table()  # the benchmark's own rows go to stderr as it runs
    with tempfile.TemporaryDirectory(prefix="bench-all-", dir=tmpdir) as tmp:
        say(f"fold: {size:,} events, {reps} repetitions")
        try:
            figures = bench.bench_fold(table, Path(tmp), size, reps, memory=True)
        except Exception as exc:  # noqa: BLE001 - one broken benchmark must not lose the others' rows
            report.failed(f"fold of {_count(size)} events", exc)
        else:
            report.section(f"fold ({figures['events']:,} events, {figures['bytes'] / 2**20:.0f} MiB; "
                           f"{figures['reps']} runs of each, interleaved)")
            report.row("fold_log throughput (stream + hash chain + apply)", f"{figures['fold_eps']:,.0f} events/s",
                       f">= {FOLD_RATIO:g} x raw decode", figures["ratio"] >= FOLD_RATIO)
            report.row(f"raw msgspec decode ({figures['raw']})", f"{figures['raw_eps']:,.0f} events/s", "baseline")
            report.row("fold / raw decode (median of the run-by-run ratios)",
                       f"{figures['ratio']:.2f}x (CPU time {figures['cpu_ratio']:.2f}x; "
                       f"run by run {figures['paired_low']:.2f}x to {figures['paired_high']:.2f}x)",
                       f">= {FOLD_RATIO:g}x", figures["ratio"] >= FOLD_RATIO)
            report.row("fold / raw decode into the fold's views (only the fields it reads)",
                       f"{figures['views_ratio']:.2f}x", "context")
            report.row("the floor: SHA-256 of every byte; raw decode / (views decode + that)",
                       f"{figures['sha_share']:.2f}x a raw decode; {figures['floor_ratio']:.2f}x", "context")
            report.row("peak RSS of a fresh process folding the log", f"{figures['peak_mb']:.1f} MB "
                       f"(imports alone {figures['base_mb']:.1f} MB)", f"< {FOLD_PEAK_MB:g} MB",
                       figures["peak_mb"] < FOLD_PEAK_MB)
        appends = mode["appends"]
        say(f"append: {appends} appends of 10 ADDs")
        try:
            figures = bench.bench_append(table, Path(tmp), appends, seed_events=5000)
        except Exception as exc:  # noqa: BLE001
            report.failed("append", exc)
        else:
            report.section(f"append (one transaction of 10 ADDs via PlaybookRepository.append, {appends} appends, "
                           f"{figures['entries']}-entry playbook; {figures['fsyncs']} fsyncs each)")
            # The issues set no target for append latency: these rows are figures, not verdicts.
            report.row("append p50 (steady state)", _ms(figures["steady_p50"]), "context")
            report.row("append p99 (steady state)", _ms(figures["steady_p99"]), "context")
            report.row("append p50 / p99 (in a row, playbook growing)",
                       f"{_ms(figures['growing_p50'])} / {_ms(figures['growing_p99'])}", "context")
            report.row("disk floor: write 1.5 KB + fsync, p50 / p99",
                       f"{_ms(figures['fsync_p50'])} / {_ms(figures['fsync_p99'])}", "context")
        say(f"append: {appends} appends of 10 ADDs at 5,000 and at 50 key points")
        try:
            scale = bench.bench_append_scale(table, Path(tmp), appends)
        except Exception as exc:  # noqa: BLE001
            report.failed("append at 5,000 vs 50 key points", exc)
        else:
            report.section(f"append at {scale['large']:,} vs {scale['small']} key points (10 ADDs, {scale['appends']} "
                           f"appends each, interleaved, one writer per project; fsyncs {scale['fsyncs_small']} / "
                           f"{scale['fsyncs_large']})")
            report.row(f"append p50 at {scale['small']} / {scale['large']:,} key points",
                       f"{_ms(scale['p50_small'])} / {_ms(scale['p50_large'])} "
                       f"(p99 {_ms(scale['p99_small'])} / {_ms(scale['p99_large'])})", "context")
            report.row(f"append p50 at {scale['large']:,} vs {scale['small']} key points",
                       f"{scale['ratio']:.2f}x (mean {scale['mean_ratio']:.2f}x; CPU time {scale['cpu_ratio']:.2f}x)",
                       f"<= {bench.APPEND_SCALE_RATIO:g}x", scale["ratio"] <= bench.APPEND_SCALE_RATIO)
            report.row(f"same, a repository object per append (a hook's process), p50 at {scale['small']} / "
                       f"{scale['large']:,}", f"{_ms(scale['fresh_p50_small'])} / {_ms(scale['fresh_p50_large'])} "
                       f"({scale['fresh_p50_large'] / scale['fresh_p50_small']:.2f}x)", "context")


def timeline(report: Report, mode: dict[str, Any]) -> None:
    from benchmarks import timeline as bench

    events = mode["timeline_events"]
    say(f"timeline: {events:,} events")
    rows = bench.measure(events, say=lambda text: say("  " + text))
    report.section(f"time travel and audit on {events:,} events (each command in a fresh process, imports included)")
    raw = dict(rows).get("a plain read of the whole file")
    checks = {name: statistics.median(r[0] for n, r in rows if n == name)
              for name in ("verify", "stats", bench.RAW_DECODE, bench.FOLD, bench.SHA)}
    cpus = {name: statistics.median(r[3] for n, r in rows if n == name) for name in checks}
    decode = checks[bench.RAW_DECODE]
    for name in ("verify", "stats"):  # wall is the verdict; CPU beside it (a large log's chain runs on another core)
        peak = max(r[1] for n, r in rows if n == name)
        report.row(f"{name} (median of 3, beside a raw decode)", f"{checks[name]:.2f} s, peak {peak:.0f} MB "
                   f"({checks[name] / decode:.2f}x a raw decode of {decode:.2f} s); CPU {cpus[name]:.2f} s "
                   f"({cpus[name] / cpus[bench.RAW_DECODE]:.2f}x the decode's {cpus[bench.RAW_DECODE]:.2f} s)",
                   f"<= {CHECK_RATIO:g}x raw decode", checks[name] / decode <= CHECK_RATIO)
    for name in (bench.FOLD, bench.SHA):  # where their floor is
        report.row(f"{name} (median of 3)", f"{checks[name]:.2f} s ({checks[name] / decode:.2f}x a raw decode)",
                   "context")
    rows = [(name, figures) for name, figures in rows if name not in checks]
    for name, (seconds, peak, _result, _cpu) in rows:
        figure = f"{seconds * 1000:.0f} ms, peak {peak:.0f} MB"
        if "no checkpoints" in name or raw is None or name.startswith("a plain read"):
            # a log copied without its checkpoints (appends and rebuilds write them), and the floor
            report.row(name, figure, "context")
            continue
        figure += f" ({seconds / raw[0]:.1f}x a plain read)"
        if name.startswith(("at ", "diff ")):  # positions found in a fixed-width index, memory flat
            report.row(name, figure, f"< {QUERY_SECONDS:g} s, < {TIME_TRAVEL_MB:g} MB",
                       seconds < QUERY_SECONDS and peak < TIME_TRAVEL_MB)
        else:
            report.row(name, figure, f"< {QUERY_SECONDS:g} s, < {QUERY_MB:g} MB", seconds < QUERY_SECONDS and peak < QUERY_MB)


def show(report: Report, mode: dict[str, Any]) -> None:
    from benchmarks import timeline as bench

    runs = mode["hook_runs"] // 4
    say(f"show: 5,000 key points, {runs} runs")
    figures = bench.measure_show(5000, runs)
    bare = figures["bare"]
    report.section(f"playbook show at {figures['size']:,} key points ({runs} runs of each in fresh processes, "
                   f"interleaved; medians)")
    report.row("show as the plugin's command runs it (python -I -S playbook/quick/launch.py), the text kept",
               f"{_ms(figures['launcher'])} ({(figures['launcher'] - bare) * 1000:+.1f} ms above python -I -S -c pass "
               f"{_ms(bare)})", f"< {SHOW_SECONDS * 1000:g} ms", figures["launcher"] < SHOW_SECONDS)
    report.row("python -m playbook show (through site), the text kept",
               f"{_ms(figures['module'])} ({(figures['module'] - bare) * 1000:+.1f} ms above bare; python -c pass "
               f"{_ms(figures['site'])})", "context")
    report.row("show rendering the text from a current playbook.json (none kept yet)",
               f"{_ms(figures['rendered'])} ({(figures['rendered'] - bare) * 1000:+.1f} ms above bare)", "context")
    report.row("the full command in its process (playbook.commands.cli.main, imports included)", _ms(figures["inside"]),
               "context")
    what = ("lagging a short tail (folded forward without the command line, the text kept)"
            if figures["lagging"] is not None else "written again (rendered and kept)")
    report.row(f"first show after one more append, playbook.json {what}",
               f"{_ms(figures['first_after_append'])}", "context")
    if figures["lagging"] is not None:
        report.row("the shows after it, playbook.json still lagging",
                   f"{_ms(figures['lagging'])} ({(figures['lagging'] - bare) * 1000:+.1f} ms above bare)", "context")


def lean(report: Report, mode: dict[str, Any]) -> None:
    from benchmarks import lean as bench

    runs = mode["hook_runs"]
    say(f"lean context: SessionStart at 50/500/5,000 key points, {runs} runs each, interleaved")
    report.section(f"a lean context (medians of {runs} runs; tokens estimated as UTF-8 bytes / 4)")
    for row in bench.measure_injection(runs):
        above = (row["hook_budget"] - row["bare"]) * 1000
        report.row(f"SessionStart, {row['size']} key points: tokens with budget / without",
                   f"{row['tokens_budget']:,} / {row['tokens_whole']:,} "
                   f"({row['tokens_budget'] / row['tokens_whole']:.2f}x)", f"<= {row['budget']:,}",
                   row["tokens_budget"] <= row["budget"])
        report.row(f"SessionStart, {row['size']} key points: hook with budget / without, vs python -c pass",
                   f"{_ms(row['hook_budget'])} / {_ms(row['hook_whole'])} vs {_ms(row['bare'])} ({above:+.1f} ms)",
                   f"<= +{bench.SESSION_START_ABOVE_BARE_MS:g} ms", above <= bench.SESSION_START_ABOVE_BARE_MS)
    say("lean context: UserPromptSubmit at 5,000 key points")
    recall = bench.measure_recall(runs)
    above = (recall["hook"] - recall["bare"]) * 1000
    report.row(f"UserPromptSubmit, {recall['size']} key points, vs python -c pass",
               f"{_ms(recall['hook'])} vs {_ms(recall['bare'])} ({above:+.1f} ms, "
               f"{recall['hook'] / recall['bare']:.2f}x); {recall['added_chars']} chars added",
               f"<= +{bench.PROMPT_ABOVE_BARE_MS:g} ms", above <= bench.PROMPT_ABOVE_BARE_MS)
    report.row("UserPromptSubmit vs `python -I -S -c pass` (the same flags, nothing imported)",
               f"{_ms(recall['hook'])} vs {_ms(recall['bare_isolated'])} "
               f"({(recall['hook'] - recall['bare_isolated']) * 1000:+.1f} ms)", "context")
    say("lean context: dedup")
    for row in bench.measure_dedup():
        report.row(f"dedup {row['method']} at {row['threshold']}: precision / recall (labelled pairs)",
                   f"{row['precision']:.3f} / {row['recall']:.3f}", "precision >= 0.95", row["precision"] >= 0.95)
        report.row(f"dedup {row['method']}: search over {row['size']} key points",
                   f"{row['seconds']:.2f} s, {row['planted_found']}/{row['planted']} planted pairs found", "context")
    say("lean context: 50-cycle simulation")
    sim = bench.simulate()
    report.row("simulation: planted useful lessons injected at the end", f"{sim['useful_injected']}/{sim['useful']}",
               "all", sim["useful_injected"] == sim["useful"])
    report.row("simulation: planted duplicates surviving", f"{sim['duplicates_surviving']}/{sim['duplicates_planted']}",
               "context")
    report.row("simulation: most injected tokens in any cycle", f"{sim['max_tokens']:,}", f"<= {sim['budget']:,}",
               sim["max_tokens"] <= sim["budget"])
    report.row("simulation: destructive rewrite held; harmful lesson",
               f"{sim['held']} held; {'present' if sim['harmful_present'] else 'gone'}", "1 held; gone",
               sim["held"] == 1 and not sim["harmful_present"])


def condense(report: Report, mode: dict[str, Any]) -> None:
    from benchmarks import condense as bench

    say("tokens per cycle: the reflector's and curator's prompts over three recorded sessions")
    rows = bench.measure()
    report.section("tokens per learning cycle (recorded Claude Code sessions; tokens estimated as UTF-8 bytes / 4)")
    for row in rows:
        plain, condensed = row["plain"], row["condensed"]
        what = f"{row['kind']} session ({row['transcript_bytes']:,} B file): reflector plain / condensed"
        figure = (f"{plain['reflector_bytes']:,} / {condensed['reflector_bytes']:,} B, "
                  f"{plain['reflector_tokens']:,} / {condensed['reflector_tokens']:,} tk ({row['ratio']:.2f}x)")
        if row["kind"] == "tool_heavy":
            report.row(what, figure, f"<= {bench.TARGET_RATIO:g}x", row["ratio"] <= bench.TARGET_RATIO)
        else:
            report.row(what, figure, "context")
        report.row(f"{row['kind']} session: curator; whole cycle sent",
                   f"{condensed['curator_bytes']:,} B, {condensed['curator_tokens']:,} tk; "
                   f"{row['cycle_tokens']:,} tk", "context")


def learning(report: Report, mode: dict[str, Any]) -> None:
    from benchmarks import learning as bench

    say("learning: the labelled sessions through the learner, with the scripted model")
    result = bench.run("scripted")
    report.section(f"learning from {len(result.cycles)} labelled Claude Code sessions in order (the scripted model; "
                   "python -m benchmarks.learning --model for a real one)")
    for target in result.targets:
        report.row(target.what, target.figure, target.target, target.met)
    report.row("tokens spent in all; injected at the end", f"{result.tokens_spent:,}; {result.injected_tokens:,} of "
               f"{result.injected_budget:,}", "context")


def page(report: Report, mode: dict[str, Any]) -> None:
    from benchmarks import page as bench

    events = mode["page_events"]
    say(f"page: {events:,} events")
    figures = bench.measure(events, say=lambda text: say("  " + text))
    report.section(f"the history page on {events:,} events (page {figures['page_mb']:.0f} MB)")
    report.row("playbook timeline --html (a fresh process)", f"{figures['write_seconds']:.2f} s (CPU "
               f"{figures['write_cpu']:.2f} s), peak {figures['write_peak']:.0f} MB",
               f"< {PAGE_SECONDS:g} s, < {PAGE_MB:g} MB",
               figures["write_seconds"] < PAGE_SECONDS and figures["write_peak"] < PAGE_MB)
    report.row("a fold of the same log (the page reads it so: the floor)", f"{figures['read_seconds']:.2f} s "
               f"(CPU {figures['read_cpu']:.2f} s; the page {figures['write_cpu'] / figures['read_cpu']:.1f}x "
               f"of it in CPU)", "context")
    if figures["first_screen"] is None:
        report.row("first screen in headless Chromium", "not measured: no chromium, chromedriver or selenium",
                   f"< {FIRST_SCREEN_SECONDS:g} s", False)
    else:
        report.row("first screen in headless Chromium (median of 3 loads)", f"{figures['first_screen']:.2f} s",
                   f"< {FIRST_SCREEN_SECONDS:g} s", figures["first_screen"] < FIRST_SCREEN_SECONDS)


def merge(report: Report, mode: dict[str, Any]) -> None:
    from benchmarks import merge as bench

    events, side = mode["merge_events"], mode["merge_side"]
    say(f"merge driver: two logs of about {events:,} events, {side:,} new transactions per side")
    figures = bench.measure(events, side, say=lambda text: say("  " + text))
    report.section(f"git merge driver: two logs of {figures['ours_events']:,} and {figures['theirs_events']:,} events, "
                   f"{side:,} new transactions per side (a fresh process, as git runs it)")
    report.row("merge driver: CPU time (wall)", f"{figures['cpu']:.2f} s ({figures['wall']:.2f} s)",
               f"< {bench.TARGET_SECONDS:g} s", float(figures["cpu"]) < bench.TARGET_SECONDS)
    report.row("merge driver: peak RSS", f"{figures['peak_mb']:.0f} MB", f"< {bench.TARGET_MB:g} MB",
               float(figures["peak_mb"]) < bench.TARGET_MB)
    report.row("merged log: verify, and merging again changes nothing", str(figures["check"]), "ok",
               str(figures["check"]).startswith("ok"))


# --- the crash and stress tests -------------------------------------------------------------------------------


def _junit_counts(path: Path) -> dict[str, dict[str, int]]:
    """Per test file: cases run, failed (failure or error), skipped."""
    counts: dict[str, dict[str, int]] = {}
    for case in ElementTree.parse(path).getroot().iter("testcase"):
        module = (case.get("classname") or "").split(".")
        name = "/".join(module[:2]) + ".py" if len(module) >= 2 else (case.get("file") or "?")
        tally = counts.setdefault(name, {"run": 0, "failed": 0, "skipped": 0})
        tags = {child.tag for child in case}
        if "skipped" in tags:
            tally["skipped"] += 1
            continue
        tally["run"] += 1
        tally["failed"] += bool(tags & {"failure", "error"})
    return counts


def tests(report: Report, mode: dict[str, Any]) -> None:
    present = [name for name in TEST_FILES if (ROOT / name).exists()]
    missing = [name for name in TEST_FILES if name not in present]
    report.section("crash and stress tests: pytest -q " + " ".join(TEST_FILES) + " (in a subprocess)")
    for name in missing:
        report.row(f"{name}", "file not found: not written yet, not run", "exists", False)
    if not present:
        return
    env = {**os.environ, **mode["env"]}
    with tempfile.TemporaryDirectory(prefix="bench-tests-") as tmp:
        xml = Path(tmp) / "junit.xml"
        command = [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider",
                   "--hypothesis-show-statistics", f"--junitxml={xml}", *present]
        say("tests: " + " ".join(command[2:]) + "".join(f" {k}={v}" for k, v in mode["env"].items()))
        started = time.perf_counter()
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=3 * 3600)
        took = time.perf_counter() - started
        output = done.stdout + done.stderr
        counts = _junit_counts(xml) if xml.exists() else {}
    for name in present:
        tally = counts.get(name)
        if tally is None:
            last = output.strip().splitlines()[-1:] or ["no output"]
            report.row(f"{name}: test cases", f"no result (pytest exit {done.returncode}: {last[0][:60]})",
                       "0 failed", False)
            continue
        skipped = f", {tally['skipped']} skipped" if tally["skipped"] else ""
        report.row(f"{name}: test cases", f"{tally['run']} run, {tally['failed']} failed{skipped}", "0 failed",
                   tally["failed"] == 0)
    report.notes.append(f"pytest took {took:.0f} s (exit status {done.returncode})")

    # What the tests print about their own trials.
    crash = re.search(r"crash trials \(base seed (\d+)\): (\{.*\})", output)
    if crash:
        trial = ast.literal_eval(crash.group(2))
        failed = counts.get("tests/test_crash.py", {}).get("failed", 0)
        report.row("crash: writers SIGKILLed at random moments",
                   f"{trial.get('trials', '?')} trials, {trial.get('torn_tails', '?')} torn tails, "
                   f"{trial.get('acknowledged', '?')} acknowledged txs; failures: "
                   f"{'none' if failed == 0 else 'see test cases'}", "every ack kept, log whole", failed == 0)
        report.notes.append(f"crash trials (base seed {crash.group(1)}): {trial}")
    elif "tests/test_crash.py" in present:
        report.notes.append("tests/test_crash.py printed no 'crash trials' line (it did not reach its end?)")
    stress = re.search(r"^stress: (\d+) processes for ([\d.]+) s .*?: (\d+) transactions.*$", output, re.M)
    if stress:
        failed = counts.get("tests/test_stress.py", {}).get("failed", 0)
        report.row("stress: processes at once", f"{stress.group(1)} processes x {stress.group(2)} s: "
                   f"{stress.group(3)} transactions", "nothing lost, doubled or half-read",
                   failed == 0)
        report.notes.append(stress.group(0))
    for test, passing, failing in re.findall(
            r"^(tests/\S+)::\S*?:\n(?:.*\n)*?\s*- (\d+) passing, (\d+) failing", output, re.M):
        report.row(f"hypothesis examples: {test.split('/')[-1]}", f"{passing} passing, {failing} failing",
                   "0 failing", failing == "0")
    if done.returncode not in (0, 1):
        report.notes.append("pytest output (tail):\n" + "\n".join(output.strip().splitlines()[-30:]))
    elif done.returncode == 1:
        failures = [line for line in output.splitlines() if line.startswith(("FAILED", "ERROR"))]
        report.notes.append("failed: " + "; ".join(failures[:10]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="small sizes, few repetitions (a smoke run)")
    size.add_argument("--full", action="store_true", help="1M-event logs, longer crash and stress runs")
    parser.add_argument("--tmpdir", default=None, help="where the fold benchmark writes its logs")
    parser.add_argument("--skip-tests", action="store_true", help="leave out the crash and stress tests")
    args = parser.parse_args(argv)
    name = "quick" if args.quick else "full" if args.full else "default"
    mode = MODES[name]
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import msgspec

    started = time.perf_counter()
    load = os.getloadavg()[0]
    report = Report()
    steps: list[tuple[str, Callable[[], None]]] = [
        ("hooks", lambda: hooks(report, mode)),
        ("fold and append", lambda: fold_and_append(report, mode, args.tmpdir)),
        ("timeline", lambda: timeline(report, mode)),
        ("show", lambda: show(report, mode)),
        ("lean context", lambda: lean(report, mode)),
        ("tokens per cycle", lambda: condense(report, mode)),
        ("learning", lambda: learning(report, mode)),
        ("page", lambda: page(report, mode)),
        ("merge", lambda: merge(report, mode)),
    ]
    if not args.skip_tests:
        steps.append(("tests", lambda: tests(report, mode)))
    for title, step in steps:
        try:
            step()
        except Exception as exc:  # noqa: BLE001 - the table still shows the rest
            report.failed(title, exc)
    total = time.perf_counter() - started
    print(f"python -m benchmarks{' --' + name if name != 'default' else ''}: python {sys.version.split()[0]}, "
          f"msgspec {msgspec.__version__}, {os.cpu_count()} CPUs, load average {load:.1f} at the start and "
          f"{os.getloadavg()[0]:.1f} at the end; {total:.0f} s in all")
    print()
    print(report.render())
    if report.notes:
        print()
        for note in report.notes:
            print("note: " + note)
    return 0 if report.all_met() else 1


if __name__ == "__main__":
    raise SystemExit(main())
