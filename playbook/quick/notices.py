"""Writing the notice (why a hook cannot do its job, each cause once a day) and the learn log: through
`eventlog.safefiles`, so nothing is written through a link. The notice and its marks live in this machine's own
directory for the project (`projections.quickroads.local_dir`), the learn log in the project's `.claude`.
Standard library and `eventlog.safefiles` only: the SessionStart script imports this when it has something to
write."""

from __future__ import annotations

import os
import time

from eventlog import safefiles
from projections.quickroads import LEARN_LOG_NAME, claude_outside, notice_path, read_small, user_dir
from projections.quickjson import json_quote
from projections.quicknotice import MAX_NOTICE_LINE, cause_order, read_notice


def change_notice(project: str | os.PathLike[str], changes: dict[str, tuple[str, str] | None],
                  mode: int = 0o600) -> bool:
    """Set each cause in `changes` to its (until, line), or settle it (None), keeping the others. The file is
    written only when that changes it, and removed once no cause is left; True when it was. Follows no link below
    the user-level directory. OSError when it cannot be written."""
    before = read_notice(project)
    after = dict(before)
    for cause, value in changes.items():
        if value is None:
            after.pop(cause, None)
        else:
            after[cause] = (value[0], " ".join(value[1].split())[:MAX_NOTICE_LINE])
    if after == before:
        return False
    path = notice_path(project)
    if not after:
        return safefiles.remove_file(path, user_dir())
    ordered = sorted(after.items(), key=lambda item: cause_order(item[0]))
    data = "".join(f"{cause} {until} {json_quote(line)}\n" for cause, (until, line) in ordered)
    safefiles.write_file(path, data.encode("ascii"), user_dir(), durable_name=False, mode=mode)
    return True


def mark_shown(project: str | os.PathLike[str], cause: str, today: str) -> bool:
    """Note that `cause` was shown `today`, keeping what else was shown today; False when it cannot be noted (a
    link, a FIFO, a read-only directory): a notice that cannot be marked is not shown, or it would be at every
    session start."""
    path = notice_path(project) + ".shown"
    kept = [line for line in (read_small(path) or b"").decode("utf-8", "replace").split("\n")
            if line.startswith(today + " ") and line.split(" ", 1)[1] != cause]
    data = "".join(line + "\n" for line in [*kept, f"{today} {cause}"]).encode("utf-8")
    try:
        safefiles.write_file(path, data, user_dir(), durable_name=False)
    except (OSError, ValueError):
        return False
    return True


def note_learning(project: str | os.PathLike[str], line: str) -> None:
    """Append `line`, with the time, to the project's learn log: where every learning failure is kept that a
    hook met before any learner could record it in the log. Never through a link or out of the project, never
    creating `.claude`; OSError when it cannot be written."""
    if claude_outside(project) is not None:
        raise OSError(f"{project}/.claude leads out of the project")
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())
    with safefiles.directory(os.path.join(project, ".claude"), project) as dir_fd:
        fd = safefiles.create(dir_fd, LEARN_LOG_NAME, append=True)
    try:
        safefiles.write_all(fd, f"{stamp} UTC {' '.join(line.split())}\n".encode("utf-8", "backslashreplace"))
    finally:
        os.close(fd)
