"""What `playbook/quick/launch.py` runs: the search path without site or path hooks, then `show` of a current playbook
(`playbook.quick.quick_show`), a learning hook with nothing to do (`playbook.quick.quick_hook`), the hook, or the command line.

Hooks and the plugin's `playbook` command run `python -I -S .../playbook/quick/launch.py ARGS` (standard library only)
instead of `-m playbook`: `-S` skips `site`, which would process the environment's `.pth` files, among them an
editable install's path hook (tens of milliseconds on every call); `-I` keeps the current directory, `PYTHONPATH`
and the user's site-packages out. The search path becomes the directory holding this package (its source tree,
or the site-packages it was installed into) followed by the interpreter's own site-packages (a virtual
environment's, found from its `pyvenv.cfg`: see `site_packages`), all absolute paths: nothing is ever imported from
the directory a hook runs in. This module is imported from its bytecode; only the few lines of `launch.py`
are compiled on each run.
"""

from __future__ import annotations

import io  # already loaded by the interpreter's start: free
import os
import sys


def closed_to_devnull() -> None:
    """An output stream the caller closed (`show >&-`) becomes the null device, as if redirected there: the
    command's output goes nowhere instead of ending in a traceback. A closed stdin stays None: a hook tells
    Claude Code that its input is missing."""
    for name in ("stdout", "stderr"):
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, "w", encoding="utf-8"))


SITE_PACKAGES_NAME = "playbook-site-packages"
"""`provision.SITE_PACKAGES_NAME`: beside the plugin environment's ready stamp, its site-packages directories
as its own interpreter named them at set-up, one a line."""


def site_packages() -> list[str]:
    """The site-packages directories `site` would add for this interpreter, without reading their `.pth` files.

    A virtual environment's own are the ones its set-up recorded (the plugin's), else where `venv` made them:
    its install scheme, as `sysconfig` has it for POSIX (importing `sysconfig` costs a millisecond), or asked of
    `sysconfig` as `venv` asks it where those directories are not. `site.getsitepackages` cannot be asked for them
    under -S: Debian's and Ubuntu's `site` name a virtual environment's site-packages only once `site` itself has
    moved `sys.prefix` into it.
    """
    prefix = os.path.dirname(os.path.dirname(os.path.abspath(sys.executable)))
    try:
        with open(os.path.join(prefix, "pyvenv.cfg"), encoding="utf-8") as handle:
            config = handle.read().lower()
    except OSError:
        config = None  # not a virtual environment: the interpreter's own prefix, by its own `site`
    paths: list[str] = []
    if config is not None:
        try:
            with open(os.path.join(prefix, SITE_PACKAGES_NAME), encoding="utf-8") as handle:
                paths = [line for line in handle.read().splitlines() if os.path.isabs(line)]
        except (OSError, ValueError):
            pass
        if not paths and os.name == "posix":
            version = f"python{sys.version_info[0]}.{sys.version_info[1]}{'t' if 't' in sys.abiflags else ''}"
            paths = [os.path.join(prefix, lib, version, "site-packages") for lib in ("lib", sys.platlibdir)]
            paths = paths if any(os.path.isdir(path) for path in paths) else []
        if not paths:
            import sysconfig

            where = {"base": prefix, "platbase": prefix, "installed_base": prefix, "installed_platbase": prefix}
            paths = [sysconfig.get_path("purelib", "venv", where), sysconfig.get_path("platlib", "venv", where)]
    if config is None or any(line.replace(" ", "") == "include-system-site-packages=true"
                             for line in config.splitlines()):
        import site  # with -S, importing it runs nothing: only its path function is used

        paths += site.getsitepackages([sys.prefix])  # under -S, the base interpreter's prefix
    return [path for path in dict.fromkeys(paths) if os.path.isdir(path)]


def search_path() -> list[str]:
    """The package's own directory first (so the copy beside this file is the one run), then site-packages."""
    own = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return [own, *(path for path in site_packages() if path != own)]


def quiet_learning_hook(event: str) -> io.BytesIO | None:
    """Exit now when the learning hook `event` has nothing to do (`playbook.quick.quick_hook`), before the log's
    machinery is imported; otherwise the hook input read, for the full hook to read in turn (None: read
    nothing, the full hook reads stdin itself)."""
    if os.environ.get("PLAYBOOK_LEARNER"):
        sys.exit(0)  # a session the learner itself started: `run_hook` does nothing either
    if sys.stdin is None:
        return None
    try:
        raw = sys.stdin.buffer.read((1 << 20) + 1)
    except (AttributeError, OSError, ValueError):
        return None
    try:
        from playbook.quick.quick_hook import nothing_to_do

        quiet = nothing_to_do(event, raw)
    except Exception:  # undecided: the full hook decides, and says what is wrong
        quiet = False
    if quiet:  # nothing was written, nothing is left to close: the interpreter's teardown is skipped
        os._exit(0)
    return io.BytesIO(raw)


def unloadable(event: str, stdin: io.BytesIO | None, exc: BaseException) -> None:
    """A hook whose Python cannot load the playbook: the notice says so at the next session start, with the fix,
    and the learn log keeps it for a learning hook, whose session is not learned from."""
    try:
        from playbook.quick.notices import change_notice, note_learning
        from projections.quickjson import top_level_strings
        from projections.quicknotice import environment_line

        project = os.environ.get("CLAUDE_PROJECT_DIR")
        if not project and stdin is not None:
            project = top_level_strings(stdin.getvalue().decode("utf-8")).get("cwd")
        if not project:
            return
        line = environment_line(f"{type(exc).__name__}: {exc}")
    except Exception:  # the stderr line is said; this is only its record
        return
    try:
        change_notice(project, {"environment": ("-", line)})
    except OSError:
        pass  # the learn log may still take it
    if event != "SessionStart":
        try:
            note_learning(project, line)
        except OSError:
            pass


def main() -> None:
    from playbook.quick import stops

    stops.install()
    try:
        _main()
    except KeyboardInterrupt as stop:  # stopped while it was still starting: the command line says it after
        sys.exit(stops.stopped(stops.command_of(sys.argv[1:]), stop))


def _main() -> None:
    closed_to_devnull()
    path = search_path()
    sys.path[:] = path + [entry for entry in sys.path if entry not in path]  # launch.py's own entry among them
    hook = sys.argv[1:2] == ["hook"]
    if "show" in sys.argv[1:4]:
        from playbook.quick.quick_show import show  # standard library only: imports nothing that could fail

        code = show(sys.argv[1:])
        if code is not None:
            sys.exit(code)
    stdin = None
    if hook and len(sys.argv) == 3 and sys.argv[2] in ("SessionEnd", "PreCompact", "SubagentStop"):
        stdin = quiet_learning_hook(sys.argv[2])
    try:
        if hook and len(sys.argv) == 3:  # `hook EVENT`, what Claude Code runs: no command line to parse
            from playbook.wiring.hooks import run_hook
        else:
            from playbook.commands.cli import main as run
    except Exception as exc:  # a dependency that does not import: one line, never a traceback into Claude Code
        print(f"playbook: cannot start: {type(exc).__name__}: {exc}", file=sys.stderr)
        if hook and len(sys.argv) == 3:
            unloadable(sys.argv[2], stdin, exc)
        sys.exit(0 if hook else 1)  # a hook always exits 0
    if hook and len(sys.argv) == 3:
        for stream in (sys.stdout, sys.stderr):  # as the command line does: escapes, never an encoding error
            try:
                stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
            except (AttributeError, ValueError, OSError):  # closed, None, or not a text stream
                pass
        sys.exit(run_hook(sys.argv[2], stdin))
    sys.exit(run())


def console() -> int:
    """The `playbook` console script an installer writes: `show` of a current playbook.json with the standard
    library alone (see `playbook.quick.quick_show`), anything else the command line; never a traceback."""
    from playbook.quick import stops

    stops.install()
    try:
        return _console()
    except KeyboardInterrupt as stop:
        return stops.stopped(stops.command_of(sys.argv[1:]), stop)


def _console() -> int:
    closed_to_devnull()
    if "show" in sys.argv[1:4]:
        from playbook.quick.quick_show import show

        code = show(sys.argv[1:])
        if code is not None:
            return code
    try:
        from playbook.commands.cli import main as run
    except Exception as exc:  # a dependency that does not import: one line
        print(f"playbook: cannot start: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 0 if sys.argv[1:2] == ["hook"] else 1
    return run()

