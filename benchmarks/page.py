"""The history page on a long log: `playbook timeline --html` (time, peak memory) and its first screen in Chromium.

    python -m benchmarks.page [--events 1000000] [--keep DIR]

Generates the same log as benchmarks/timeline.py, writes the page in a fresh process
(wall and CPU time, peak memory from /proc), beside a fold of the log in another (the
page reads the log as the fold does: the floor it pays before its own work), then loads
the page from file:// in headless Chromium (when chromium, chromedriver and selenium are
installed) and reads when the first screen was drawn, in ms since navigation began.
Prints the figures; exits 1 when a target is missed. The CPU time is there because the
wall time of a shared machine is also its neighbours'.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.timeline import generate

WRITE_SECONDS, WRITE_MB, FIRST_SCREEN_SECONDS = 5.0, 300.0, 2.0

_CHILD = r"""
import os, sys, time
started, cpu = time.perf_counter(), os.times()
what = sys.argv[1]
if what == "page":
    from playbook.commands.cli import main
    code = main(["timeline", "--project", sys.argv[2], "--html", sys.argv[3]])
    assert code == 0, code
else:
    from pathlib import Path
    from eventlog.domain import PlaybookState
    from eventlog.store import fold_log
    fold_log(Path(sys.argv[2]) / ".claude" / "playbook.events.jsonl", PlaybookState())
elapsed = time.perf_counter() - started
used = sum(os.times()[:2]) - sum(cpu[:2])
peak = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM")) / 1024
print(f"{elapsed:.3f} {used:.3f} {peak:.1f}", file=sys.stderr)
"""


def _child(*args: str) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak MB) of a fresh process doing `args`, imports included."""
    done = subprocess.run([sys.executable, "-c", _CHILD, *args], capture_output=True, text=True, check=True)
    seconds, cpu, peak = done.stderr.split()[-3:]
    return float(seconds), float(cpu), float(peak)


def first_screen(page: Path, runs: int = 3) -> list[float] | None:
    """Seconds from navigation to the first screen drawn, per run; None without a browser."""
    chromium, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.options import Options
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        return None
    if not (chromium and driver_path):
        return None
    options = Options()
    options.binary_location = chromium
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1400,1000"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    driver.set_page_load_timeout(300)
    times = []
    try:
        for _ in range(runs):
            driver.get("about:blank")
            driver.get(page.as_uri())
            deadline = time.monotonic() + 120
            while not (ready := driver.execute_script("return document.body.getAttribute('data-ready')")):
                if time.monotonic() > deadline:
                    raise TimeoutError("the page never drew its first screen")
                time.sleep(0.02)
            times.append(int(ready) / 1000)
    finally:
        driver.quit()
    return times


def measure(events: int, keep: str | None = None, say: Any = print) -> dict[str, Any]:
    """Generate a log of `events` events, write its page and load it: the figures."""
    with tempfile.TemporaryDirectory(prefix="bench-page-") as tmp:
        project = Path(keep or tmp)
        claude_dir = project / ".claude"
        claude_dir.mkdir(parents=True, exist_ok=True)
        log = claude_dir / "playbook.events.jsonl"
        started = time.perf_counter()
        generate(log, events)
        say(f"generated {events:,} events ({log.stat().st_size / 2**20:.0f} MiB) in {time.perf_counter() - started:.1f} s")
        page = project / "history.html"
        read_seconds, read_cpu, read_peak = _child("fold", str(project))
        write_seconds, write_cpu, write_peak = _child("page", str(project), str(page))
        say(f"fold {read_seconds:.2f} s (CPU {read_cpu:.2f} s); page written in {write_seconds:.2f} s "
            f"(CPU {write_cpu:.2f} s), peak {write_peak:.0f} MB, {page.stat().st_size / 1e6:.0f} MB")
        screens = first_screen(page)
        if screens is not None:
            say("first screen: " + ", ".join(f"{s:.2f} s" for s in screens))
        return {"events": events, "read_seconds": read_seconds, "read_cpu": read_cpu, "read_peak": read_peak,
                "write_seconds": write_seconds, "write_cpu": write_cpu, "write_peak": write_peak,
                "page_mb": page.stat().st_size / 1e6,
                "first_screen": None if screens is None else statistics.median(screens), "screens": screens}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keep", help="generate into this directory and keep it")
    args = parser.parse_args(argv)
    load = os.getloadavg()[0]
    figures = measure(args.events, args.keep)
    met = lambda ok: "met" if ok else "NOT met"  # noqa: E731
    print(f"  {os.cpu_count()} CPUs, load average {load:.1f} at the start and {os.getloadavg()[0]:.1f} at the end")
    written = figures["write_seconds"] < WRITE_SECONDS and figures["write_peak"] < WRITE_MB
    print(f"  playbook timeline --html      {figures['write_seconds']:6.2f} s (CPU {figures['write_cpu']:.2f} s), "
          f"peak {figures['write_peak']:.0f} MB (page {figures['page_mb']:.0f} MB; a fold of the log: "
          f"{figures['read_seconds']:.2f} s, CPU {figures['read_cpu']:.2f} s)   "
          f"target < {WRITE_SECONDS:g} s, < {WRITE_MB:g} MB: {met(written)}")
    if figures["first_screen"] is None:
        print("  first screen in Chromium      not measured (no chromium, chromedriver or selenium)")
        return 1
    shown = figures["first_screen"] < FIRST_SCREEN_SECONDS
    print(f"  first screen in Chromium      {figures['first_screen']:6.2f} s (median)   target < "
          f"{FIRST_SCREEN_SECONDS:g} s: {met(shown)}")
    return 0 if written and shown else 1


if __name__ == "__main__":
    sys.exit(main())
