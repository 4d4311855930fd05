"""Processes killed at a random moment, as a crash would take them."""

from __future__ import annotations

import random
import signal
import subprocess


def kill_at_random(process: subprocess.Popen[bytes], rng: random.Random, earliest: float, latest: float) -> None:
    """SIGKILL `process` at a moment drawn between `earliest` and `latest` seconds from now, unless it ended
    before then (nothing to kill: the test goes on at once); returns once it is gone."""
    try:
        process.wait(timeout=rng.uniform(earliest, latest))
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=60)
