"""The UserPromptSubmit hook given input that is not a hook's JSON object adds nothing and says nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

INPUTS = {
    "cut short": b'{"prompt": "how do we deploy',
    "a bad escape": b'{"prompt": "\\x deploy"}',
    "past the read limit": b'{"prompt": "' + b"deploy " * 200_000 + b'"}',
    "deeply nested": b'{"x": ' + b"[" * 100_000 + b"]" * 100_000 + b', "prompt": "deploy"}',
    "binary": bytes(range(256)) * 64,
}


@pytest.mark.parametrize("name", list(INPUTS))
def test_recall_is_silent_on_input_that_is_no_hook_json(tmp_path: Path, name: str) -> None:
    done = subprocess.run([sys.executable, "-I", "-S", str(ROOT / "playbook" / "quick" / "recall.py")], input=INPUTS[name],
                          capture_output=True, env={**os.environ, "CLAUDE_PROJECT_DIR": str(tmp_path)}, timeout=20)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
