"""One damage never turns into a second one: what a kill, a shortened log or a bad file leaves is kept and said.

Kills are real: a child process dies by SIGKILL at a fault point (`eventlog.store.fault`).
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from eventlog.decide import ApplyOperations
from eventlog.events import Cause
from projections.repository import PlaybookRepository
from tests.test_crash import child_env

CAUSE = Cause(source="test")


def ops(*operations: dict) -> list[ApplyOperations]:
    return [ApplyOperations(list(operations))]


# --- leftovers of a kill ------------------------------------------------------------------------------

CHECKPOINTER = r'''
import sys
from eventlog.decide import ApplyOperations
from eventlog.events import Cause
from projections import checkpoints
from projections.repository import PlaybookRepository
checkpoints.CHECKPOINT_EVERY = 4  # the second append passes a mark and writes a checkpoint first
repo = PlaybookRepository(sys.argv[1])
for i in range(3):
    repo.append([ApplyOperations([{"type": "ADD", "text": f"kill {i}"}])], Cause(source="crash-test"))
'''


def _killed_while_writing_a_checkpoint(claude: Path) -> list[Path]:
    child = subprocess.run([sys.executable, "-c", CHECKPOINTER, str(claude)], env=child_env("before-replace"),
                           capture_output=True, timeout=60)
    assert child.returncode == -signal.SIGKILL, child.stderr.decode()
    left = sorted((claude / "playbook.checkpoints").glob(".*.msgpack.*.tmp"))
    assert left, sorted(p.name for p in (claude / "playbook.checkpoints").iterdir())
    return left


def test_checkpoint_temporaries_of_a_killed_writer_are_removed_by_the_next_writer_and_by_rebuild(tmp_path):
    claude = tmp_path / ".claude"
    repo = PlaybookRepository(claude)
    repo.append(ops({"type": "ADD", "text": "before"}), CAUSE)
    left = _killed_while_writing_a_checkpoint(claude)
    repo.append(ops({"type": "ADD", "text": "next writer"}), CAUSE)
    assert not any(path.exists() for path in left)

    left = _killed_while_writing_a_checkpoint(claude)
    rebuilt = subprocess.run([sys.executable, "-m", "playbook", "rebuild", "--project", str(tmp_path)],
                             env=child_env(), capture_output=True, timeout=60)
    assert rebuilt.returncode == 0, rebuilt.stderr.decode()
    assert not any(path.exists() for path in left)
    assert not list((claude / "playbook.checkpoints").glob(".*.tmp"))
