import sys

from playbook.quick import stops

stops.install()


def _run() -> int:
    from playbook.quick.launcher import closed_to_devnull

    closed_to_devnull()
    if "show" in sys.argv[1:4]:  # a current playbook.json needs nothing but the standard library
        from playbook.quick.quick_show import show

        code = show(sys.argv[1:])
        if code is not None:
            return code
    try:
        from playbook.commands.cli import main
    except Exception as exc:  # a dependency that no longer imports: one line, never a traceback into Claude Code
        print(f"playbook: cannot start: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 0 if sys.argv[1:2] == ["hook"] else 1  # a hook always exits 0
    return main()


try:
    sys.exit(_run())
except KeyboardInterrupt as stop:  # stopped while it was still starting, or after the command returned
    sys.exit(stops.stopped(stops.command_of(sys.argv[1:]), stop))
