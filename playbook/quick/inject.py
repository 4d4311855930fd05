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

INJECTION_NAME = "playbook.hook.json"
SETTINGS_NAME = "playbook.settings.json"
STAMPED_ENV = ("PLAYBOOK_INJECTION_BUDGET", "PLAYBOOK_RECALL", "PLAYBOOK_RECALL_MAX_CHARS")
NOTICE_NAME = "playbook.notice"
MAX_PROJECTION_BYTES = 16 << 20
"""Most bytes of `playbook.hook.json` the fast path reads, far above any context a session takes: a larger
file is left to the full hook, which writes the projection again from the log."""


def settings_stamp(project: str) -> str:
    """`projections.config.settings_stamp`, with the standard library alone: the two must agree."""
    parts = []
    user = os.path.expanduser(os.environ.get("CLAUDE_CONFIG_DIR") or "~/.claude")
    for path in (os.path.join(user, SETTINGS_NAME), os.path.join(project, ".claude", SETTINGS_NAME)):
        try:
            parts.append(str(os.stat(path).st_mtime_ns))
        except (OSError, ValueError):
            parts.append("0")
    for name in STAMPED_ENV:
        parts.append("".join(os.environ.get(name, "").split()).encode("utf-8", "surrogateescape").hex())
    return ":".join(parts)


def claude_outside(project: str) -> "str | None":
    """Where `<project>/.claude` leads when it is a link out of the project, else None.

    A repository can carry `.claude` as a link to any directory of the user's: the playbook
    is then neither read nor written there. One lstat when it is no link, the common case."""
    claude_dir = os.path.join(project, ".claude")
    if not os.path.islink(claude_dir):
        return None
    target, base = os.path.realpath(claude_dir), os.path.realpath(project)
    return None if target == base or target.startswith(os.path.join(base, "")) else target


def user_dir() -> str:
    """`playbook.wiring.project.user_dir`, with the standard library alone: the two must agree."""
    configured = os.environ.get("PLAYBOOK_USER_DIR")
    if configured:
        return configured
    config = os.environ.get("CLAUDE_CONFIG_DIR") or os.path.join(os.path.expanduser("~"), ".claude")
    return os.path.join(config, "playbook")


def user_mark(claude_dir: str) -> str:
    """`projections.injection.user_mark` of the user-level playbook injected with `claude_dir`'s: the two
    must agree. "-" when there is none (or it is the project's own directory)."""
    directory = user_dir()
    try:
        if os.path.realpath(directory) == os.path.realpath(claude_dir):
            return "-"
        size = os.stat(os.path.join(directory, "playbook.events.jsonl")).st_size
    except (OSError, ValueError):
        return "-"
    try:
        mtime = os.stat(os.path.join(directory, "playbook.json")).st_mtime_ns
    except (OSError, ValueError):
        mtime = 0
    return "%d:%d" % (size, mtime)


def _fast(claude_dir: str, user_level: bool = False) -> "bytes | None":  # a string: any Python 3 runs this
    """The hook output if the projection is current, else None.

    A project's `.claude` that leads out of the project is never read. No link in it is followed either: a
    repository can carry the projection, the log and playbook.json as links to another project's, which the
    full hook refuses (a link inside the project it follows). The user-level directory lives outside every
    project by design: there no link is followed, out of it or anywhere else."""
    if not user_level and claude_outside(os.path.dirname(claude_dir)) is not None:
        return None
    try:
        data = read_capped(os.path.join(claude_dir, INJECTION_NAME), MAX_PROJECTION_BYTES, os.O_NOFOLLOW)
        if data is None:
            return None
        header, _, output = data.partition(b"\n")
        size, mtime, stamp, user = header.split()
        log_size, snapshot_mtime = int(size), int(mtime)
        log = os.lstat(os.path.join(claude_dir, "playbook.events.jsonl"))
        if not stat.S_ISREG(log.st_mode) or log.st_size != log_size:
            return None
        snapshot = os.lstat(os.path.join(claude_dir, "playbook.json"))
        if not stat.S_ISREG(snapshot.st_mode) or snapshot.st_mtime_ns != snapshot_mtime:
            return None
        if stamp.decode() != settings_stamp(os.path.dirname(claude_dir)):
            return None
        if user.decode() != user_mark(claude_dir):
            return None
        return output
    except (OSError, ValueError):
        return None


def read_capped(path: str, limit: int, flags: int = 0) -> "bytes | None":
    """A regular file's bytes when it holds at most `limit` of them, else None; OSError when it cannot be opened.

    Non-blocking, a regular file of bounded size only, as `projections.config.read_settings` reads a settings
    file: a repository can carry the name as a link to /dev/zero (read without end) or to a FIFO (an open that
    never returns), or as a file of gigabytes (sparse, it costs the repository nothing)."""
    with os.fdopen(os.open(path, os.O_RDONLY | os.O_NONBLOCK | flags), "rb") as handle:
        status = os.fstat(handle.fileno())
        if not stat.S_ISREG(status.st_mode) or status.st_size > limit:
            return None
        data = handle.read(limit + 1)
    return data if len(data) <= limit else None


def read_small(path: str) -> "bytes | None":
    """A regular file's first 4 KiB, never through a link, a FIFO or a device a repository may carry."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None
        return handle.read(4096)


def _notice(claude_dir: str) -> "bytes | None":
    """The notice `.claude/playbook.notice` holds (a JSON string saying why learning cannot run), if it was not
    shown today; marks it shown. With no notice this is one failed open."""
    path = os.path.join(claude_dir, NOTICE_NAME)
    try:
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
        safefiles = _safefiles()
        with safefiles.directory(claude_dir, os.path.dirname(claude_dir)) as dir_fd:
            fd = safefiles.create(dir_fd, NOTICE_NAME + ".shown", truncate=True)
        with os.fdopen(fd, "wb") as handle:
            handle.write(today + b"\n")
    except (OSError, ValueError, ImportError):
        return None
    return encode_basestring_ascii(text).encode("ascii")


def _safefiles() -> "ModuleType":
    """`eventlog.safefiles`, which every write goes through, from the package beside this script.

    Run by path, the script has no search path to it: the package's directory is put first (an absolute
    path, never the current directory) while it is imported, as `launch.py` does for the whole command."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.path.insert(0, root)
    try:
        from eventlog import safefiles
    finally:
        sys.path.remove(root)
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
                                  for name in ("playbook.events.jsonl", "playbook.json")):
        # No playbook in this project: the user-level one's own projection, or nothing.
        output = _fast(user_dir(), user_level=True)
        if output is None and not any(os.path.lexists(os.path.join(user_dir(), name))
                                      for name in ("playbook.events.jsonl", "playbook.json")):
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
    notice = _notice(claude_dir)
    if notice is not None:
        output = _with_notice(output, notice)
    sys.stdout.buffer.write(output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
