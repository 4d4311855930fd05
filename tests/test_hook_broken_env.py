"""A hook run in an environment whose dependency no longer imports (a library removed or damaged after
the set-up finished) says so in one line and exits 0: no traceback reaches Claude Code."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.test_notice import venv_with_this_package

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def broken_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    python, site = venv_with_this_package(tmp_path_factory.mktemp("broken") / "venv")
    (site / "msgspec").mkdir()
    (site / "msgspec" / "__init__.py").write_text('raise ImportError("msgspec/_core.so: cannot open shared object file")\n')
    return python


@pytest.mark.slow
@pytest.mark.parametrize("event", ["SessionEnd", "PreCompact", "SubagentStop"])
def test_hook_in_a_broken_environment_says_one_line(broken_python: str, tmp_path: Path, event: str) -> None:
    env = {**os.environ, "PLAYBOOK_PYTHON": broken_python, "CLAUDE_PROJECT_DIR": str(tmp_path)}
    done = subprocess.run(["sh", str(ROOT / "plugin/hooks/playbook-hook"), event], input=b"{}", capture_output=True,
                          env=env, cwd=tmp_path, timeout=30)
    assert done.returncode == 0
    assert done.stdout == b""
    assert b"Traceback" not in done.stderr
    assert done.stderr.count(b"\n") == 1 and b"msgspec/_core.so" in done.stderr, done.stderr


def test_cli_in_a_broken_environment_fails_in_one_line(broken_python: str, tmp_path: Path) -> None:
    done = subprocess.run([broken_python, "-I", "-m", "playbook", "show"], capture_output=True, cwd=tmp_path,
                          timeout=30)
    assert done.returncode == 1
    assert b"Traceback" not in done.stderr and done.stderr.count(b"\n") == 1, done.stderr
