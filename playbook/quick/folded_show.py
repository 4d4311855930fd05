"""`playbook show` of a playbook.json that lags the log by a short tail, without the command line.

From 256 KiB on, playbook.json is left behind by appends while the log after it stays short
(`projections.snapshot.may_lag`): the quick path (`playbook.quick.quick_show`) then has no text it may print.
Rather than the full command (its parser, every command's module), this folds the tail onto the
file's state with the log's own reader and renders what the full command would, when that is all the full
command would do: playbook.json is the writer's own, the log holds its position, nothing waits to be taken in
and nothing diverges. In any other case it answers None and the full command runs and says what it finds.
"""

from __future__ import annotations

from pathlib import Path

from eventlog.errors import PlaybookError
from projections.repository import PlaybookRepository
from projections.snapshot import playbook_dict

from . import show_text
from playbook.wiring.project import claude_dir
from playbook.rendering.terminal import Style


def text(project: str, color: bool) -> bytes | None:
    """`show`'s text for `project` (in colour or not) folded forward from a lagging playbook.json, and kept
    (`playbook.quick.show_text`); None when the full command must run."""
    try:
        directory = claude_dir(Path(project))
        stamped = show_text.stamp(str(directory))
        repo = PlaybookRepository(directory)
        # A lagging playbook.json needs no housekeeping only at a position the log holds: no divergence to say.
        if stamped is None or repo.needs_housekeeping() or (repo.is_fresh() and repo.divergence() is not None):
            return None
        state, _position = repo.current()
    except (PlaybookError, OSError):
        return None
    snapshot = {**playbook_dict(state), "log": {"seq": state.seq}}
    painted = ("\n".join(show_text.show_lines(snapshot, Style(color=True))) + "\n").encode("utf-8")
    if show_text.stamp(str(directory)) == stamped:  # nothing moved while it was read
        show_text.keep(str(directory), stamped, painted, project)
    return painted if color else show_text.plain(painted)
