"""The modes of the files and directories the log and its projections create (`safefiles` creates them)."""

from __future__ import annotations

import os

SHARED_FILES = os.environ.get("PLAYBOOK_SHARED_FILES", "").lower() not in ("", "0", "false", "no")
"""The setting `PLAYBOOK_SHARED_FILES=1`: files follow the umask (group may read), as other tools' files do."""
FILE_MODE = 0o664 if SHARED_FILES else 0o600
"""Mode of every file created here: private to the user (the log quotes transcripts and model answers),
unless shared; the umask applies on top, and none is ever world-writable."""
DIR_MODE = 0o775 if SHARED_FILES else 0o700
"""Mode of every directory created here: never world-writable, whatever the umask."""

