"""SessionStart hook: print the pre-projected playbook context. Standard library only.

Run as a script (`python -S .../playbook/quick/inject.py`): it imports nothing of this
project on the fast path, which is what keeps a session start cheap. When the
projection is missing or stale (the log grew, or playbook.json was edited), it
falls back to the full machinery, which brings the projection up to date.
"""

import os
import sys
import time

# The package's root, beside this file, for the quick roads' contract: absolute, never the current directory.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from projections.quickroads import (INJECTION_NAME, LOG_NAME, MAX_PROJECTION_BYTES, ORG_DIR, ORG_FETCH_EVERY,
                                    ORG_FETCH_STARTED, ORG_SETTINGS, SNAPSHOT_NAME, claude_outside, current_body,
                                    exit_now, org_mark, user_dir)
from projections.quickjson import json_quote
from projections.quicknotice import (MISSING_PYTHON, due_notice, environment_line, hook_line, missing_python_line,
                                     storage_line)


def _fast(claude_dir: str, user_level: bool = False) -> "bytes | None":  # a string: any Python 3 runs this
    """The hook output if the projection is current, else None.

    A project's `.claude` that leads out of the project is never read. No link in it is followed either: a
    repository can carry the projection, the log and playbook.json as links to another project's, which the
    full hook refuses (a link inside the project it follows). The user-level directory lives outside every
    project by design: there no link is followed, out of it or anywhere else."""
    if not user_level and claude_outside(os.path.dirname(claude_dir)) is not None:
        return None
    try:
        return current_body(claude_dir, INJECTION_NAME, MAX_PROJECTION_BYTES, user=True)
    except (OSError, ValueError):
        return None


def _notice(project: str) -> "bytes | None":
    """The notice's first cause not shown today (why a hook cannot do its job, and the fix), as a JSON string;
    marks it shown. With no notice this is one failed open."""
    try:
        today = time.strftime("%Y-%m-%d", time.gmtime())
        due = due_notice(project, today)
        if due is None:
            return None
        from playbook.quick.notices import mark_shown  # writes go through `eventlog.safefiles`: only when due

        if not mark_shown(project, due[0], today):
            return None
    except (OSError, ValueError, ImportError):
        return None
    return json_quote(due[1]).encode("ascii")


def _failed(project: str, exc: BaseException, loading: bool) -> None:
    """One line on stderr, and the notice's cause for the next session start (this one's included): the hooks'
    Python cannot load the playbook (`loading`), a file it cannot write, or another failure."""
    print(f"playbook: cannot inject the playbook: {exc}", file=sys.stderr)
    kinds = {kind.__name__ for kind in type(exc).__mro__}  # the package's errors, which this script cannot import
    error = str(exc) if "PlaybookError" in kinds else f"{type(exc).__name__}: {exc}"  # its message says it all
    if type(exc).__name__ == "OutsideProject":
        return  # what a repository links where it should not is refused, never kept as this machine's notice
    if loading:
        cause, line = "environment", environment_line(error)
    elif isinstance(exc, OSError) or "StorageError" in kinds:
        number = exc.errno if isinstance(exc, OSError) else getattr(exc.__cause__, "errno", None)
        cause, line = "storage", storage_line(str(exc), number)
    else:
        cause, line = "hook", hook_line("SessionStart", error)
    try:
        from playbook.quick.notices import change_notice

        change_notice(project, {cause: ("-", line)})
    except (OSError, ImportError):
        pass  # the same disk or permissions: the stderr line is all that can be said


def _with_notice(output: bytes, notice: bytes) -> bytes:
    """`output` (a hook JSON object, or nothing) with `notice` as its systemMessage, shown to the user; a
    systemMessage the projection put first (proposals waiting for review) follows the notice on a line of its own."""
    shown = b'{"systemMessage":"'
    if output.startswith(shown):
        return shown[:-1] + notice[:-1] + b"\\n" + output[len(shown):]
    if output.startswith(b"{"):
        return b'{"systemMessage":' + notice + b"," + output[1:]
    return b'{"systemMessage":' + notice + b"}\n"


def _fetch_orgs_when_due() -> None:
    """At most once a day, when orgs are configured, a detached `playbook org fetch --due --quiet`: the session
    never waits on it, and it never asks for credentials. A stat when no org is configured."""
    folder = os.path.join(user_dir(), ORG_DIR)
    try:
        last = os.lstat(os.path.join(folder, ORG_SETTINGS)).st_mtime
    except (OSError, ValueError):
        return
    try:
        last = max(last, os.lstat(os.path.join(folder, ORG_FETCH_STARTED)).st_mtime)
    except (OSError, ValueError):
        pass
    if time.time() - last < ORG_FETCH_EVERY:
        return
    try:
        import subprocess

        from eventlog.safefiles import write_file  # standard library only, and no link followed

        write_file(os.path.join(folder, ORG_FETCH_STARTED), b"", user_dir(), durable_name=False)
        launch = os.path.join(os.path.dirname(os.path.abspath(__file__)), "launch.py")
        subprocess.Popen([sys.executable, "-I", "-S", launch, "org", "fetch", "--due", "--quiet"], cwd=folder,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True, close_fds=True)
    except (OSError, ImportError, ValueError):
        pass  # the fetch waits for the next session start, or `playbook org fetch`


def main() -> int:
    try:
        sys.stdin.buffer.read()
    except (OSError, ValueError):
        pass
    claude_dir = os.path.join(os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd(), ".claude")
    outside = claude_outside(os.path.dirname(claude_dir))
    if outside is not None:
        print(f"playbook: {claude_dir!r} is a link to {outside!r}, outside the project: the playbook is not "
              "read or written there", file=sys.stderr)
        return 0
    output = _fast(claude_dir)
    if output is None and not any(os.path.exists(os.path.join(claude_dir, name))
                                  for name in (LOG_NAME, SNAPSHOT_NAME)):
        # No playbook in this project: the user-level one's own projection, or nothing.
        output = _fast(user_dir(), user_level=True)
        if output is None and not org_mark() and not any(os.path.lexists(os.path.join(user_dir(), name))
                                                         for name in (LOG_NAME, SNAPSHOT_NAME)):
            output = b""  # nothing anywhere; with orgs' playbooks alone, the full hook gives theirs
    if output is None:
        try:
            # Started with -S for speed: only now bring in site-packages, and not this script's directory.
            here = os.path.dirname(os.path.abspath(__file__))
            sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
            import site

            site.main()
            from playbook.wiring.hooks import session_start
        except Exception as exc:  # a dependency that does not load: said, and the session starts
            _failed(os.path.dirname(claude_dir), exc, loading=True)
            output = b""
        else:
            try:
                output = session_start(os.path.dirname(claude_dir))
            except Exception as exc:  # the session must start whatever happens here
                _failed(os.path.dirname(claude_dir), exc, loading=False)
                output = b""
    missing = os.environ.get(MISSING_PYTHON)
    if missing:
        try:
            from playbook.quick.notices import change_notice

            change_notice(os.path.dirname(claude_dir), {"python": ("-", missing_python_line(missing))})
        except (OSError, ImportError):
            pass  # a read-only project: its stderr line is the hook script's own
    notice = _notice(os.path.dirname(claude_dir))
    if notice is not None:
        output = _with_notice(output, notice)
    sys.stdout.buffer.write(output)
    sys.stdout.flush()
    _fetch_orgs_when_due()
    return 0


if __name__ == "__main__":
    exit_now(main())
