"""The quick roads' contract: the names, stamps, terms and safe small reads that the hook scripts and the
full machinery must agree on, and whether a projection is current. Standard library only (`os`, `stat`).

The SessionStart and UserPromptSubmit hooks (`playbook/quick/inject.py`, `recall.py`), the quick `show` and the
quiet learning hook run before anything else of ours is imported, under any Python 3 and with `-I -S`; the code
that writes what they read (`projections.injection`, `projections.recall`, `projections.config`, the playbook's
wiring) imports the same rules from here, so there is one copy of each.
"""

from __future__ import annotations

import os
import stat
import sys


LOG_NAME = "playbook.events.jsonl"
SNAPSHOT_NAME = "playbook.json"
INJECTION_NAME = "playbook.hook.json"
RECALL_NAME = "playbook.recall.json"
SETTINGS_NAME = "playbook.settings.json"
NOTICE_NAME = "notice"
"""The notice's name in the project's local directory (`local_dir`); `notice.shown` beside it holds the day it was
last shown."""
LOCAL_DIR = "projects"
"""Under the user-level directory, one directory per project for what this machine alone knows of it."""
LEARN_LOG_NAME = "playbook.learn.log"
"""What background learners print, and every learning failure a hook met before a learner could record it."""
SHOW_NAME = "playbook.show.txt"
CHECKPOINT_DIR = "playbook.checkpoints"
LOG_BLOCK = b'\n  "log": {\n    "offset": '
"""Where the writer's playbook.json says which log position it reflects: found without decoding the file."""
RECALL_FORMAT = b"recall-1"
"""The recall index's first word: an index of another format is not read, only projected again."""

STAMPED_ENV = ("PLAYBOOK_INJECTION_BUDGET", "PLAYBOOK_RECALL", "PLAYBOOK_RECALL_MAX_CHARS")
"""The environment variables that shape a projection: a change to one makes every projection stale."""
MAX_SETTINGS_BYTES = 1 << 20
"""The largest settings file read: a repository can ship a file of gigabytes under that name."""
MAX_STDIN = 1 << 20
"""The most of a hook's input read: Claude Code's hook input is a small JSON object."""
def _limit(name: str, default: int) -> int:
    raw = os.environ.get(name, "")
    return int(raw) if raw.isdigit() else default


HOOK_FOLD_LIMIT = _limit("PLAYBOOK_HOOK_FOLD_LIMIT", 16 << 20)
"""The largest log a hook folds when its projection is not current: a larger one (a repository can ship a log of
any size, and a pull can bring one) is left to a command the user runs, and the hook says so instead of holding up
the session. Every append of this machine's writers leaves the projection current, whatever the log's size."""
MAX_INDEX_BYTES = 64 << 20
"""Most bytes of the recall index the UserPromptSubmit hook reads; the writer keeps the index well below it."""
MAX_PROJECTION_BYTES = 16 << 20
"""Most bytes of `playbook.hook.json` the fast path reads, far above any context a session takes: a larger
file is left to the full hook, which writes the projection again from the log."""

SWITCHES = ("playbook_update_on_exit", "playbook_update_on_clear", "playbook_update_on_subagent_stop",
            "playbook_update_on_precompact")
"""The learning switches, one per hook that learns, all true by default."""
PLAYBOOK_FILES = ((LOG_NAME, stat.S_ISREG), (SNAPSHOT_NAME, stat.S_ISREG), (INJECTION_NAME, stat.S_ISREG),
                  (RECALL_NAME, stat.S_ISREG), (CHECKPOINT_DIR, stat.S_ISDIR))
"""The playbook's own names in `.claude` and the kind each must be: anything else there is not ours to use."""

STOP = frozenset(
    "a an the and or of to in on at for with by from as is are be it its this that you your we our i me my they "
    "them do does did not no never always use when then than so into over under about all any each every can "
    "should must will would could what which how why there here have has had was were been".split()
)
"""Words too common to recall a key point by."""


def terms(text: str) -> list[str]:
    """Lower-case words of two or more letters or digits, function words dropped, a plural `s` removed.

    One character at a time (`str.isalnum`): the hook that splits a prompt does not import `re`."""
    cleaned = "".join(ch if ch.isalnum() else " " for ch in text.lower())
    out = []
    for word in cleaned.split():
        if len(word) < 2 or word in STOP:
            continue
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        out.append(word)
    return out


def config_dir() -> str:
    """Claude Code's configuration directory: `$CLAUDE_CONFIG_DIR`, else `~/.claude`."""
    return os.path.expanduser(os.environ.get("CLAUDE_CONFIG_DIR") or "~/.claude")


def settings_paths(project: str | os.PathLike[str]) -> tuple[str, str]:
    """The user's settings file, then the project's."""
    return os.path.join(config_dir(), SETTINGS_NAME), os.path.join(project, ".claude", SETTINGS_NAME)


PROJECTION_FORMAT = "p2"
"""How this version renders a projection (p2: every key point kept to one line). Part of the settings stamp, so a
projection an earlier version wrote is not current for this one and is written again."""


def settings_stamp(project: str | os.PathLike[str]) -> str:
    """A token that changes whenever a setting that shapes a projection may have: the settings files'
    modification times and the environment variables in STAMPED_ENV, after the projections' format."""
    parts = [PROJECTION_FORMAT]
    for path in settings_paths(project):
        try:
            parts.append(str(os.stat(path).st_mtime_ns))
        except (OSError, ValueError):
            parts.append("0")
    for name in STAMPED_ENV:
        parts.append("".join(os.environ.get(name, "").split()).encode("utf-8", "surrogateescape").hex())
    return ":".join(parts)


def user_dir() -> str:
    """Where the user-level playbook lives: `PLAYBOOK_USER_DIR`, else `$CLAUDE_CONFIG_DIR/playbook`, else
    `~/.claude/playbook`."""
    configured = os.environ.get("PLAYBOOK_USER_DIR")
    if configured:
        return configured
    config = os.environ.get("CLAUDE_CONFIG_DIR") or os.path.join(os.path.expanduser("~"), ".claude")
    return os.path.join(config, "playbook")


MAX_SLUG = 200
"""The longest directory name Claude Code writes under `projects/` before it cuts the name and adds a hash."""


def _utf16(point: int) -> tuple[int, ...]:
    """The UTF-16 code units of one code point (a lone surrogate as itself), as `encode("utf-16-le",
    "surrogatepass")` gives them, without loading that codec (a module import on every hook)."""
    if point < 0x10000:
        return (point,)
    point -= 0x10000
    return 0xD800 + (point >> 10), 0xDC00 + (point & 0x3FF)


def project_slug(absolute: str) -> str:
    """Claude Code's (2.1) name for the directory of the project at `absolute` under `projects/`.

    Each UTF-16 code unit that is not an ASCII letter or digit becomes `-` (a letter beyond the
    BMP, such as an emoji, gives two); a name longer than MAX_SLUG is cut there and followed by `-`
    and the path's hash (Java's String.hashCode over the code units, its absolute value in base 36).
    Observed with Claude Code 2.1.328: `/tmp/enc/work/my.proj_dir name é` is written under
    `-tmp-enc-work-my-proj-dir-name--`, `/tmp/enc/work2/emoji 😀 ü` under `-tmp-enc-work2-emoji-----`."""
    units = [unit for point in map(ord, absolute) for unit in _utf16(point)]
    slug = "".join(chr(u) if u < 128 and chr(u).isalnum() else "-" for u in units)
    if len(slug) <= MAX_SLUG:
        return slug
    value = 0
    for unit in units:
        value = (value * 31 + unit) & 0xFFFFFFFF
    value = abs(value - (1 << 32) if value >= 1 << 31 else value)
    digits = ""
    while True:
        value, digit = divmod(value, 36)
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"[digit] + digits
        if not value:
            break
    return f"{slug[:MAX_SLUG]}-{digits}"


def local_dir(project: str | os.PathLike[str]) -> str:
    """This machine's own directory for `project`, outside every repository: `<user_dir>/projects/<slug>`, the slug
    Claude Code gives the project's real path for its own directory of the project's sessions.

    What a repository ships is never read from here: its `.claude/` can hold any file under any name, so what
    only this machine may say of a project (the learning notice, the learning requests made here) lives where
    no clone can put a file. Two paths Claude Code gives one slug (`/a/b-c`, `/a/b/c`) share it, as they share
    Claude Code's: what is kept here is this machine's own either way."""
    return os.path.join(user_dir(), LOCAL_DIR, project_slug(os.path.realpath(project)))


def notice_path(project: str | os.PathLike[str]) -> str:
    """Where the learning notice of `project` is kept: in its `local_dir`, never in the repository."""
    return os.path.join(local_dir(project), NOTICE_NAME)


def user_mark(directory: str | os.PathLike[str]) -> str:
    """`<log size>:<playbook.json mtime_ns>` of the user-level playbook in `directory`, "-" when it has no log:
    a projection that holds it is current while this is unchanged."""
    try:
        size = os.stat(os.path.join(directory, LOG_NAME)).st_size
    except (OSError, ValueError):
        return "-"
    try:
        mtime = os.stat(os.path.join(directory, SNAPSHOT_NAME)).st_mtime_ns
    except (OSError, ValueError):
        mtime = 0
    return "%d:%d" % (size, mtime)


ORG_DIR = "org"
"""Under the user-level directory, the organisations' playbooks: one directory per org, and ORG_PROJECTION."""
ORG_SETTINGS = "orgs.json"
"""In `<user_dir>/org/`: the org repositories configured, rewritten by every fetch (its time is the last fetch's)."""
ORG_FETCH_STARTED = "fetch.started"
"""In `<user_dir>/org/`: touched when a session start starts a background fetch, so the next ones do not."""
ORG_FETCH_EVERY = 24 * 3600
"""Seconds between background fetches of the orgs' repositories."""
ORG_PROJECTION = "playbook.org.json"
"""The orgs' key points as injected (verified, scrubbed), in `<user_dir>/org/`: written when an org is fetched,
added or removed, and only then."""


def org_mark() -> str:
    """`+<size>:<mtime_ns>` of the org projection, "" when there is none: one lstat, no link followed."""
    try:
        status = os.lstat(os.path.join(user_dir(), ORG_DIR, ORG_PROJECTION))
    except (OSError, ValueError):
        return ""
    if not stat.S_ISREG(status.st_mode):
        return ""
    return "+%d:%d" % (status.st_size, status.st_mtime_ns)


def injected_user_mark(claude_dir: str) -> str:
    """`user_mark` of the user-level playbook injected with `claude_dir`'s ("-" when there is none or it is
    the project's own directory), followed by `org_mark` when orgs' playbooks are injected too."""
    directory = user_dir()
    try:
        if os.path.realpath(directory) == os.path.realpath(claude_dir):
            return "-" + org_mark()
    except (OSError, ValueError):
        return "-" + org_mark()
    return user_mark(directory) + org_mark()


def projection_header(log_size: int, snapshot_mtime_ns: int, stamp: str, user: str | None = None) -> bytes:
    """The first line of a projection: what it was projected from. The SessionStart projection's ends with
    `user`, the `user_mark` of the user-level playbook its output holds; the recall index has none."""
    fields = [str(log_size), str(snapshot_mtime_ns), stamp, *([user] if user is not None else [])]
    return (" ".join(fields) + "\n").encode()


def current_body(claude_dir: str, name: str, limit: int, follow: bool = False, user: bool = False) -> bytes | None:
    """What the projection `name` in `claude_dir` holds after its header, if the header names the log, the
    snapshot and the settings as they are now (and, with `user`, the user-level playbook); else None.

    Non-blocking, regular files only, at most `limit` bytes, and through no link unless `follow` (once the
    full machinery has found that none leads out of the project): a repository can carry these names as
    links to a FIFO, a device or another project's files. OSError and ValueError when it cannot be read."""
    data = read_capped(os.path.join(claude_dir, name), limit, 0 if follow else os.O_NOFOLLOW)
    if data is None:
        return None
    header, _, body = data.partition(b"\n")
    fields = header.split()
    if len(fields) != (4 if user else 3):
        return None
    status = os.stat if follow else os.lstat
    log = status(os.path.join(claude_dir, LOG_NAME))
    if not stat.S_ISREG(log.st_mode) or log.st_size != int(fields[0]):
        return None
    snapshot = status(os.path.join(claude_dir, SNAPSHOT_NAME))
    if not stat.S_ISREG(snapshot.st_mode) or snapshot.st_mtime_ns != int(fields[1]):
        return None
    if fields[2].decode() != settings_stamp(os.path.dirname(claude_dir)):
        return None
    if user and fields[3].decode() != injected_user_mark(claude_dir):
        return None
    return body


def too_large_to_fold(claude_dir: str) -> int | None:
    """The size of the log in `claude_dir` when bringing its projections up to date would read more than
    HOOK_FOLD_LIMIT of it, else None. playbook.json's recorded position saves the fold of all before it (the
    writer checks that position's hash); a playbook.json over MAX_PROJECTION_BYTES, or none, saves nothing. No link
    followed."""
    try:
        status = os.lstat(os.path.join(claude_dir, LOG_NAME))
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(status.st_mode) or status.st_size <= HOOK_FOLD_LIMIT:
        return None
    try:
        snapshot = read_capped(os.path.join(claude_dir, SNAPSHOT_NAME), MAX_PROJECTION_BYTES, os.O_NOFOLLOW)
    except (OSError, ValueError):
        snapshot = None
    if snapshot is not None and _holds_its_position(claude_dir, snapshot, status.st_size):
        return None
    return status.st_size


def _holds_its_position(claude_dir: str, snapshot: bytes, log_size: int) -> bool:
    """True when the log ends within HOOK_FOLD_LIMIT after the position `snapshot` records, and the commit line
    there carries the hash it records: what a shipped playbook.json claims is checked, not believed."""
    at = snapshot.rfind(LOG_BLOCK)
    if at < 0:
        return False
    block = snapshot[at + len(LOG_BLOCK):at + len(LOG_BLOCK) + 200].split(b"\n")
    offset = block[0].rstrip(b",")
    recorded = block[2].strip().removeprefix(b'"hash": "').removesuffix(b'",') if len(block) > 2 else b""
    if not offset.isdigit() or not 0 <= log_size - int(offset) <= HOOK_FOLD_LIMIT or len(recorded) != 32:
        return False
    try:
        fd = os.open(os.path.join(claude_dir, LOG_NAME), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except (OSError, ValueError):
        return False
    try:
        end = os.pread(fd, min(int(offset), 64), max(int(offset) - 64, 0))
    except OSError:
        return False
    finally:
        os.close(fd)
    return end.endswith(b'"h":"' + recorded + b'"}\n')


def not_folded_line(claude_dir: str, size: int) -> str:
    """What a hook says when it leaves a log of `size` bytes unfolded, with the command that projects it."""
    project = os.path.dirname(claude_dir)
    return (f"playbook: not injected: the log ({size / 1e6:.0f} MB) changed outside this machine's writers and "
            f"is too large to fold while a session starts; run `playbook --project {project} rebuild` once")


def claude_outside(project: str | os.PathLike[str]) -> str | None:
    """Where `<project>/.claude` leads when it is a link out of the project, else None.

    A repository can carry `.claude` as a link to any directory of the user's: the playbook is then neither
    read nor written there. One lstat when it is no link, the common case."""
    claude_dir = os.path.join(project, ".claude")
    if not os.path.islink(claude_dir):
        return None
    target, base = os.path.realpath(claude_dir), os.path.realpath(project)
    return None if target == base or target.startswith(os.path.join(base, "")) else target


def read_capped(path: str, limit: int, flags: int = 0) -> bytes | None:
    """A regular file's bytes when it holds at most `limit` of them, else None; OSError when it cannot be opened.

    Non-blocking, a regular file of bounded size only: a repository can carry the name as a link to /dev/zero
    (read without end) or to a FIFO (an open that never returns), or as a file of gigabytes (sparse, it costs
    the repository nothing)."""
    with os.fdopen(os.open(path, os.O_RDONLY | os.O_NONBLOCK | flags), "rb") as handle:
        status = os.fstat(handle.fileno())
        if not stat.S_ISREG(status.st_mode) or status.st_size > limit:
            return None
        data = handle.read(limit + 1)
    return data if len(data) <= limit else None


def read_small(path: str) -> bytes | None:
    """A regular file's first 4 KiB, never through a link, a FIFO or a device a repository may carry."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None
        return handle.read(4096)


def exit_now(code: int) -> None:
    """End a hook script with `code`: what it wrote goes out, and the interpreter's teardown, which costs a few
    milliseconds a hook and closes nothing a hook left open, is skipped."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):  # a reader gone, or no stream: nothing more to say
            pass
    os._exit(code)
