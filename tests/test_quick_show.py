"""`playbook show` answered from a current playbook.json with the standard library alone (playbook/quick_show.py)
prints exactly what the full command prints, and leaves every other case to it."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from eventlog.decide import ApplyOperations
from eventlog.domain import SECTION_SLUGS
from eventlog.events import Cause
from playbook import quick_show, share
from playbook.audit import PointState
from playbook.cli import main
from playbook.report import show_lines
from playbook.terminal import SHOWN, Style
from projections.repository import PlaybookRepository

ROOT = Path(__file__).resolve().parent.parent
LAUNCHER = ROOT / "playbook" / "launch.py"
TEXTS = ["plain ascii", "escape \x1b[31mred\x1b[0m and a bell \x07", "new\nline and tab\t", "wide 漢字 and é",
         "bidi \u202e override", "x" * (SHOWN + 50)]


def seed(project: Path) -> PlaybookRepository:
    repo = PlaybookRepository(project / ".claude")
    ops = [{"type": "ADD", "section": list(SECTION_SLUGS)[i % 3], "text": text} for i, text in enumerate(TEXTS)]
    repo.append([ApplyOperations(ops)], Cause(source="test"))
    return repo


def full_show(project: Path) -> str:
    """The full command's output, run in this process (never the quick path: that is in the entry points)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["show", "--project", str(project)]) == 0
    return out.getvalue()


def launched(project: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-I", "-S", str(LAUNCHER), *args], capture_output=True, text=True,
                          cwd=cwd or project, env={k: v for k, v in os.environ.items() if k != "CLAUDE_PROJECT_DIR"},
                          check=False, timeout=60)


def test_the_constants_are_the_full_commands():
    assert quick_show.SECTIONS == tuple(SECTION_SLUGS)
    assert quick_show.DRIVER_ATTRIBUTE == f"merge={share.DRIVER}".encode()


@pytest.mark.parametrize("color", [False, True])
def test_the_lines_are_the_full_commands_lines(tmp_path, color):
    repo = seed(tmp_path)
    snapshot = quick_show.current_snapshot(str(tmp_path))
    assert snapshot is not None
    state = repo.state()
    style = Style(color=color, width=100)
    assert quick_show.show_lines(snapshot, style) == show_lines(PointState(state=state, seq=state.seq), style)


def test_an_empty_playbook_reads_the_same(tmp_path):
    repo = PlaybookRepository(tmp_path / ".claude")
    repo.append([ApplyOperations([{"type": "ADD", "section": "OTHERS", "text": "gone soon"}])], Cause(source="test"))
    repo.append([ApplyOperations([{"type": "DELETE", "target_id": "oth-001"}])], Cause(source="test"))
    snapshot = quick_show.current_snapshot(str(tmp_path))
    assert snapshot is not None
    state = repo.state()
    assert "(the playbook is empty)" in quick_show.show_lines(snapshot, Style())
    assert quick_show.show_lines(snapshot, Style()) == show_lines(PointState(state=state, seq=state.seq), Style())


def test_the_launcher_prints_what_the_full_command_prints(tmp_path):
    seed(tmp_path)
    expected = full_show(tmp_path)
    for args in (["show"], ["show", "--project", str(tmp_path)], ["--project", str(tmp_path), "show"],
                 ["show", f"--project={tmp_path}"]):
        done = launched(tmp_path, *args)
        assert (done.returncode, done.stdout, done.stderr) == (0, expected, ""), args


def test_anything_but_a_current_snapshot_goes_to_the_full_command(tmp_path):
    repo = seed(tmp_path)
    project = str(tmp_path)
    assert quick_show.current_snapshot(project) is not None
    assert quick_show.show(["show", "--json", "--project", project]) is None
    assert quick_show.show(["show", "--at", "1", "--project", project]) is None
    assert quick_show.show(["show", "--project", str(tmp_path / "missing")]) is None

    # A hand edit: playbook.json is no longer the writer's own (the full command takes the edit in).
    snapshot = json.loads(repo.snapshot_path.read_text())
    snapshot["sections"]["OTHERS"] = [{"name": "oth-900", "text": "by hand", "helpful": 0, "harmful": 0}]
    repo.snapshot_path.write_text(json.dumps(snapshot))
    os.utime(repo.snapshot_path, ns=(1, 1))
    assert quick_show.current_snapshot(project) is None
    assert "by hand" in launched(tmp_path, "show").stdout
    assert quick_show.current_snapshot(project) is not None  # taken in, and written again by the writer

    # The log grew (another writer, the snapshot not yet replaced): the full command folds the tail.
    size = repo.log_path.stat().st_size
    os.truncate(repo.log_path, size + 1)
    assert quick_show.current_snapshot(project) is None
    os.truncate(repo.log_path, size)

    # A project whose .gitattributes names the merge driver: the full command checks its registration.
    (tmp_path / ".gitattributes").write_text("*.jsonl merge=playbook\n")
    assert quick_show.current_snapshot(project) is None
    (tmp_path / ".gitattributes").write_text("*.png binary\n")
    assert quick_show.current_snapshot(project) is not None


def test_a_snapshot_lagging_behind_the_log_goes_to_the_full_command(tmp_path, monkeypatch):
    from projections import snapshot

    repo = seed(tmp_path)
    monkeypatch.setattr(snapshot, "LAG_FROM_BYTES", 1)  # as a large playbook.json does
    monkeypatch.setattr(snapshot, "LAG_SHARE", 1)
    before = repo.snapshot_path.read_bytes()
    repo.append([ApplyOperations([{"type": "ADD", "text": "only in the tail"}])], Cause(source="test"))
    assert repo.snapshot_path.read_bytes() == before
    assert quick_show.current_snapshot(str(tmp_path)) is None
    assert "only in the tail" in full_show(tmp_path)


def test_a_claude_directory_leading_out_of_the_project_is_never_read(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    seed(elsewhere)
    project = tmp_path / "project"
    project.mkdir()
    (project / ".claude").symlink_to(elsewhere / ".claude")
    assert quick_show.current_snapshot(str(project)) is None
    done = launched(project, "show")
    assert done.returncode == 1 and "outside the project" in done.stderr and "plain ascii" not in done.stdout


def test_the_launcher_imports_nothing_from_the_directory_it_runs_in(tmp_path):
    seed(tmp_path / "project")
    hostile = tmp_path / "hostile"
    for name in ("playbook", "eventlog", "projections", "msgspec", "json", "re"):
        (hostile / name).mkdir(parents=True)
        (hostile / name / "__init__.py").write_text(f"open({str(tmp_path / ('imported-' + name))!r}, 'w').close()\n")
    for args in (["show", "--project", str(tmp_path / "project")], ["log", "--project", str(tmp_path / "project")]):
        done = launched(tmp_path / "project", *args, cwd=hostile)
        assert done.returncode == 0, done.stderr
    assert not list(tmp_path.glob("imported-*"))


def test_the_console_script_answers_show_and_every_other_command(tmp_path):
    seed(tmp_path)
    expected = full_show(tmp_path)
    script = "import sys; from playbook.launch import console; sys.exit(console())"
    for args, check in ((["show"], lambda out: out == expected), (["log", "-n", "1"], lambda out: "tx " in out)):
        done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, cwd=tmp_path,
                              env={**os.environ, "CLAUDE_PROJECT_DIR": str(tmp_path)}, timeout=60)
        assert done.returncode == 0 and check(done.stdout), (args, done.stdout, done.stderr)
