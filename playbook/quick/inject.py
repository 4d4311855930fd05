"""SessionStart hook: print the pre-projected playbook context. Standard library only.

Run as a script (`python -S .../playbook/quick/inject.py`): it imports nothing of this
project on the fast path, which is what keeps a session start cheap. When the
projection is missing or stale (the log grew, or playbook.json was edited), it
falls back to the full machinery, which brings the projection up to date.
"""

import os
import stat
import sys
import time

TYPE_CHECKING = False  # not typing's: this script imports nothing it can do without
if TYPE_CHECKING:
    from types import ModuleType

# The package's root, beside this file, for the quick roads' contract: absolute, never the current directory.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from projections.quickroads import (INJECTION_NAME, LOG_NAME, MAX_PROJECTION_BYTES, SNAPSHOT_NAME,  # noqa: E402
                                    claude_outside, current_body, notice_path, read_small, user_dir)


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
    """The notice this machine keeps for `project` (a JSON string saying why learning cannot run), if it was not
    shown today; marks it shown. With no notice this is one failed open.

    Read from the project's local directory only (`notice_path`), never from the project's `.claude/`: a
    repository can ship a file under any name there, and the user must not be shown its text as ours."""
    try:
        path = notice_path(project)
        message = read_small(path)
        if message is None:
            return None
        # Only ever one JSON string: a file shaped to add other members to the hook's output is no notice.
        from _json import encode_basestring_ascii, scanstring

        message = message.strip()
        if not message.startswith(b'"'):
            return None
        text, end = scanstring(message.decode("utf-8"), 1)
        if end != len(message.decode("utf-8")):
            return None
        today = time.strftime("%Y-%m-%d", time.gmtime()).encode()
        if (read_small(path + ".shown") or b"").strip() == today:
            return None
        safefiles = _safefiles()  # this machine's own directory: no link followed below the user-level one
        with safefiles.directory(os.path.dirname(path), user_dir()) as dir_fd:
            fd = safefiles.create(dir_fd, os.path.basename(path) + ".shown", truncate=True)
        with os.fdopen(fd, "wb") as handle:
            handle.write(today + b"\n")
    except (OSError, ValueError, ImportError):
        return None
    return encode_basestring_ascii(text).encode("ascii")


def _safefiles() -> "ModuleType":
    """`eventlog.safefiles`, which every write goes through, from the package beside this script (put on the
    search path with the contract), imported only when the script writes."""
    from eventlog import safefiles

    return safefiles


def _with_notice(output: bytes, notice: bytes) -> bytes:
    """`output` (a hook JSON object, or nothing) with `notice` as its systemMessage, shown to the user; a
    systemMessage the projection put first (proposals waiting for review) follows the notice on a line of its own."""
    shown = b'{"systemMessage":"'
    if output.startswith(shown):
        return shown[:-1] + notice[:-1] + b"\\n" + output[len(shown):]
    if output.startswith(b"{"):
        return b'{"systemMessage":' + notice + b"," + output[1:]
    return b'{"systemMessage":' + notice + b"}\n"


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
        if output is None and not any(os.path.lexists(os.path.join(user_dir(), name))
                                      for name in (LOG_NAME, SNAPSHOT_NAME)):
            output = b""
    if output is None:
        try:
            # Started with -S for speed: only now bring in site-packages, and not this script's directory.
            here = os.path.dirname(os.path.abspath(__file__))
            sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
            import site

            site.main()
            from playbook.wiring.hooks import session_start

            output = session_start(os.path.dirname(claude_dir))
        except Exception as exc:  # the session must start whatever happens here
            print(f"playbook: cannot inject the playbook: {exc}", file=sys.stderr)
            return 0
    notice = _notice(os.path.dirname(claude_dir))
    if notice is not None:
        output = _with_notice(output, notice)
    sys.stdout.buffer.write(output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
