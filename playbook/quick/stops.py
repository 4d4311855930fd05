"""Ctrl-C and SIGTERM at every entry point: the command stops where it is, one line says so and how to go on,
and the exit status is 130 or 143, never a traceback. Standard library only: installed before anything else."""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # not typing's: every hook and command imports this module first
if TYPE_CHECKING:
    import signal
else:
    try:  # the C half of `signal`: the module wraps it in enums, whose import every hook would pay (~7 ms)
        import _signal as signal
    except ImportError:  # pragma: no cover - an interpreter without it
        import signal


class Terminated(KeyboardInterrupt):
    """SIGTERM (a `kill`, a closing terminal's session), taken like Ctrl-C."""


def _terminate(signum: int, frame: object) -> None:
    raise Terminated()


def install() -> None:
    """SIGTERM raises `Terminated` in the main thread from now on; elsewhere (a thread) the default stays."""
    try:
        signal.signal(signal.SIGTERM, _terminate)
    except ValueError:
        pass


def stopped(command: str, stop: KeyboardInterrupt) -> int:
    """Say that `command` stopped, and return its exit status. The log is written a whole transaction at a
    time: what was committed stays, a write cut short is the next writer's to repair, and running the command
    again continues from there."""
    terminated = isinstance(stop, Terminated)
    try:
        print(f"playbook: {command} {'terminated' if terminated else 'interrupted'}: every transaction written "
              f"before it is in the log; run `playbook {command}` again to continue", file=sys.stderr, flush=True)
    except (OSError, ValueError, AttributeError):  # no stderr to say it on
        pass
    return 143 if terminated else 130


def command_of(argv: list[str]) -> str:
    """The subcommand named in `argv` (options and their values skipped), for the line `stopped` says."""
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in ("--project",):
            skip = True
        elif not arg.startswith("-"):
            return arg
    return "the command"
