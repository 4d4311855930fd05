"""`playbook show` answered from a current playbook.json, or from the text the last `show` kept
(playbook/quick/quick_show.py, playbook/quick/show_text.py), with the standard library alone prints exactly what the full
command prints, never a text rendered from files that have changed since, and leaves every other case to it."""

from __future__ import annotations

import contextlib
import io
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from eventlog.decide import ApplyOperations, Evaluate, ImportLegacy
from eventlog.domain import SECTION_SLUGS
from eventlog.events import Cause
from playbook.quick import folded_show, quick_show, show_text
from playbook.commands import share
from playbook.commands.audit import PointState
from playbook.commands.cli import main
from playbook.rendering.report import show_lines
from playbook.rendering.terminal import SHOWN, Style
from projections.repository import PlaybookRepository

ROOT = Path(__file__).resolve().parent.parent
LAUNCHER = ROOT / "playbook" / "quick" / "launch.py"
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


def launched(project: Path, *args: str, cwd: Path | None = None, module: bool = False) -> subprocess.CompletedProcess:
    entry = ["-m", "playbook"] if module else ["-I", "-S", str(LAUNCHER)]
    return subprocess.run([sys.executable, *entry, *args], capture_output=True, text=True,
                          cwd=cwd or project, env={k: v for k, v in os.environ.items() if k != "CLAUDE_PROJECT_DIR"},
                          check=False, timeout=60)


def kept_path(project: Path) -> Path:
    return project / ".claude" / show_text.SHOW_NAME


def full_painted(project: Path) -> bytes:
    """The full command's lines in colour, as a terminal gets them."""
    state = PlaybookRepository(project / ".claude").state()
    return ("\n".join(show_lines(PointState(state=state, seq=state.seq), Style(color=True))) + "\n").encode()


def test_the_constants_are_the_full_commands():
    assert quick_show.SECTIONS == tuple(SECTION_SLUGS)
    assert quick_show.DRIVER_ATTRIBUTE == f"merge={share.DRIVER}".encode()
    assert all((Path(show_text.__file__).parents[1] / name).is_file() for name in show_text.RENDERERS)


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


@pytest.mark.slow
@pytest.mark.parametrize("module", [False, True])
def test_the_launcher_prints_what_the_full_command_prints(tmp_path, module):
    seed(tmp_path)
    expected = full_show(tmp_path)
    assert kept_path(tmp_path).exists()  # the full command kept its text
    for args in (["show"], ["show", "--project", str(tmp_path)], ["--project", str(tmp_path), "show"],
                 ["show", f"--project={tmp_path}"]):
        kept_path(tmp_path).unlink()  # rendered from playbook.json, and kept...
        done = launched(tmp_path, *args, module=module)
        assert (done.returncode, done.stdout, done.stderr) == (0, expected, ""), args
        assert kept_path(tmp_path).exists()
        done = launched(tmp_path, *args, module=module)  # ...then printed as kept
        assert (done.returncode, done.stdout, done.stderr) == (0, expected, ""), args


@pytest.mark.slow
@pytest.mark.parametrize("module", [False, True])
@pytest.mark.parametrize("args", [["show"], ["show", "--full"], ["log"]])
def test_a_closed_stdout_is_as_if_sent_to_the_null_device(tmp_path, module, args):
    seed(tmp_path)
    entry = ["-m", "playbook"] if module else ["-I", "-S", str(LAUNCHER)]
    done = subprocess.run([sys.executable, *entry, *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, cwd=tmp_path, check=False, timeout=60,
                          preexec_fn=lambda: (os.close(0), os.close(1)),
                          env={k: v for k, v in os.environ.items() if k != "CLAUDE_PROJECT_DIR"})
    assert (done.returncode, done.stderr) == (0, ""), done.stderr


@pytest.mark.parametrize("color", [False, True])
def test_the_kept_text_is_the_full_commands_in_colour_or_not(tmp_path, color):
    seed(tmp_path)
    painted = full_painted(tmp_path)
    expected = painted if color else full_show(tmp_path).encode()
    assert show_text.plain(painted) == full_show(tmp_path).encode() and b"\x1b[1m" in painted
    kept_path(tmp_path).unlink()
    assert quick_show.text(str(tmp_path), color) == expected  # rendered from playbook.json
    assert show_text.kept(str(tmp_path / ".claude"), show_text.stamp(str(tmp_path / ".claude")), color) == expected
    assert quick_show.text(str(tmp_path), color) == expected  # as kept
    kept_path(tmp_path).unlink()
    full_show(tmp_path)
    assert quick_show.text(str(tmp_path), color) == expected  # as the full command kept it


def test_show_prints_the_colour_a_terminal_wants(tmp_path, monkeypatch, capsys):
    seed(tmp_path)
    painted = full_painted(tmp_path)

    class Terminal(io.TextIOWrapper):
        def isatty(self) -> bool:
            return True

    for kept in (False, True):
        if not kept:
            kept_path(tmp_path).unlink(missing_ok=True)
        raw = io.BytesIO()
        monkeypatch.setattr(sys, "stdout", Terminal(raw, encoding="utf-8"))
        monkeypatch.delenv("NO_COLOR", raising=False)
        monkeypatch.setenv("TERM", "xterm")
        assert quick_show.show(["show", "--project", str(tmp_path)]) == 0
        assert raw.getvalue() == painted
        raw = io.BytesIO()
        monkeypatch.setattr(sys, "stdout", Terminal(raw, encoding="utf-8"))
        monkeypatch.setenv("NO_COLOR", "1")
        assert quick_show.show(["show", "--project", str(tmp_path)]) == 0
        assert raw.getvalue() == show_text.plain(painted)
        raw = io.BytesIO()
        monkeypatch.setattr(sys, "stdout", Terminal(raw, encoding="ascii"))  # escapes, as the full command writes
        assert quick_show.show(["show", "--project", str(tmp_path)]) == 0
        assert raw.getvalue() == show_text.plain(painted).decode().encode("ascii", "backslashreplace")


def test_a_kept_text_is_never_printed_once_the_files_it_came_from_change(tmp_path, monkeypatch):
    repo = seed(tmp_path)
    project, claude = str(tmp_path), str(tmp_path / ".claude")
    full_show(tmp_path)
    assert quick_show.text(project, False) is not None

    # An append: the log grew.
    repo.append([ApplyOperations([{"type": "ADD", "text": "after the text was kept"}])], Cause(source="test"))
    assert show_text.kept(claude, show_text.stamp(claude), False) is None
    assert b"after the text was kept" in quick_show.text(project, False)  # playbook.json is current: rendered

    # The log replaced by another of the same size (a restore, a checkout), playbook.json untouched.
    log = repo.log_path.read_bytes()
    other = tmp_path / "other.jsonl"
    other.write_bytes(log)
    os.replace(other, repo.log_path)
    assert show_text.kept(claude, show_text.stamp(claude), False) is None

    # playbook.json edited by hand: the full command takes the edit in.
    full_show(tmp_path)
    assert show_text.kept(claude, show_text.stamp(claude), False) is not None
    os.utime(repo.snapshot_path, ns=(1, 1))
    assert show_text.kept(claude, show_text.stamp(claude), False) is None

    # Another version of the code that renders it (a source the stamp covers, standing for one installed
    # again), another interpreter.
    full_show(tmp_path)
    stamped = show_text.stamp(claude)
    assert show_text.kept(claude, stamped, False) is not None
    assert "rendering/report.py" in show_text.RENDERERS and "quick/quick_show.py" in show_text.RENDERERS
    monkeypatch.setattr(show_text, "RENDERERS", (*show_text.RENDERERS[:-1], "quick/launcher.py"))
    assert show_text.kept(claude, show_text.stamp(claude), False) is None
    monkeypatch.undo()
    monkeypatch.setattr(sys, "hexversion", sys.hexversion + 1)
    assert show_text.kept(claude, show_text.stamp(claude), False) is None
    monkeypatch.undo()
    assert show_text.kept(claude, show_text.stamp(claude), False) is not None

    # A write cut short, a header that does not add up.
    whole = kept_path(tmp_path).read_bytes()
    kept_path(tmp_path).write_bytes(whole[:-1])
    assert show_text.kept(claude, stamped, False) is None
    header, _, text = whole.partition(b"\n")
    for spans in (b"5:3", b"0:999999999", b"x", b""):
        kept_path(tmp_path).write_bytes(b" ".join(header.split(b" ")[:-1] + [spans]) + b"\n" + text)
        assert show_text.kept(claude, stamped, True) is None, spans


def test_show_with_options_neither_keeps_nor_reads_a_text(tmp_path):
    seed(tmp_path)
    for args in (["--full"], ["--json"], ["--at", "1"], ["--injected"]):
        kept_path(tmp_path).unlink(missing_ok=True)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main(["show", *args, "--project", str(tmp_path)]) == 0
        assert not kept_path(tmp_path).exists(), args
        assert quick_show.show(["show", *args, "--project", str(tmp_path)]) is None


@pytest.mark.slow
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
    full_show(tmp_path)
    assert quick_show.text(project, False) is not None
    (tmp_path / ".gitattributes").write_text("*.jsonl merge=playbook\n")
    assert quick_show.current_snapshot(project) is None and quick_show.text(project, False) is None
    (tmp_path / ".gitattributes").write_text("*.png binary\n")
    assert quick_show.current_snapshot(project) is not None


@pytest.mark.slow
def test_a_snapshot_lagging_behind_the_log_is_folded_forward_without_the_command_line(tmp_path, monkeypatch, capsys):
    from projections import snapshot

    repo = seed(tmp_path)
    project = str(tmp_path)
    monkeypatch.setattr(snapshot, "LAG_FROM_BYTES", 1)  # as a large playbook.json does
    monkeypatch.setattr(snapshot, "LAG_SHARE", 1)
    before = repo.snapshot_path.read_bytes()
    assert before.count(quick_show.LOG_BLOCK + b"%d," % repo.log_path.stat().st_size) == 1  # told before decoding
    repo.append([ApplyOperations([{"type": "ADD", "text": "only in the tail"}])], Cause(source="test"))
    assert repo.snapshot_path.read_bytes() == before
    assert quick_show.current_snapshot(project) is None and quick_show.text(project, False) is None
    assert quick_show._lags(project)
    folded = folded_show.text(project, False)  # which keeps its text
    expected = full_show(tmp_path)  # which folds the tail too
    assert repo.snapshot_path.read_bytes() == before and "only in the tail" in expected
    assert folded == expected.encode() and folded_show.text(project, True) == full_painted(tmp_path)
    assert quick_show.text(project, False) == expected.encode()
    done = launched(tmp_path, "show")
    assert (done.returncode, done.stdout, done.stderr) == (0, expected, "")

    repo.append([ApplyOperations([{"type": "ADD", "text": "and one more"}])], Cause(source="test"))
    assert repo.snapshot_path.read_bytes() == before
    assert quick_show.text(project, False) is None  # the kept text is a tail behind
    capsys.readouterr()
    assert quick_show.show(["show", "--project", project]) == 0
    shown = capsys.readouterr()
    assert (shown.out, shown.err) == (full_show(tmp_path), "") and "and one more" in shown.out
    assert quick_show.text(project, False) == shown.out.encode()

    # Edited by hand: the full command takes the edit in.
    repo.snapshot_path.write_bytes(before.replace(b"plain ascii", b"plain ASCII"))
    assert folded_show.text(project, False) is None
    assert quick_show.show(["show", "--project", project]) is None
    assert "plain ASCII" in full_show(tmp_path)


@pytest.mark.slow
def test_a_playbook_json_ahead_of_the_log_is_said_every_time(tmp_path):
    repo = seed(tmp_path)
    size = repo.log_path.stat().st_size
    repo.append([ApplyOperations([{"type": "ADD", "text": "only in playbook.json"}])], Cause(source="test"))
    os.truncate(repo.log_path, size)  # restored from an older copy
    for _ in range(2):
        done = launched(tmp_path, "show")
        assert done.returncode == 0 and "plain ascii" in done.stdout, done.stderr
        assert "only in playbook.json" not in done.stdout and "playbook.json" in done.stderr
    assert not kept_path(tmp_path).exists()


def test_a_kept_text_is_never_read_through_a_link_or_a_fifo(tmp_path):
    seed(tmp_path)
    expected = full_show(tmp_path)
    planted = tmp_path / "planted.txt"
    planted.write_bytes(kept_path(tmp_path).read_bytes().replace(b"plain ascii", b"PLAIN ASCII"))
    before = planted.read_bytes()
    kept_path(tmp_path).unlink()
    kept_path(tmp_path).symlink_to(planted)
    done = launched(tmp_path, "show")
    assert (done.returncode, done.stdout, done.stderr) == (0, expected, "")
    assert planted.read_bytes() == before and not kept_path(tmp_path).is_symlink()  # the link replaced, not followed
    kept_path(tmp_path).unlink()
    os.mkfifo(kept_path(tmp_path))
    done = launched(tmp_path, "show")
    assert (done.returncode, done.stdout, done.stderr) == (0, expected, "")


@pytest.mark.slow
def test_a_claude_directory_leading_out_of_the_project_is_never_read(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    seed(elsewhere)
    project = tmp_path / "project"
    project.mkdir()
    (project / ".claude").symlink_to(elsewhere / ".claude")
    assert quick_show.current_snapshot(str(project)) is None
    done = launched(project, "show")
    assert done.returncode == 1 and "outside the project" in done.stderr and "plain ascii" not in done.stdout


@pytest.mark.slow
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


@pytest.mark.slow
def test_the_console_script_answers_show_and_every_other_command(tmp_path):
    seed(tmp_path)
    expected = full_show(tmp_path)
    script = "import sys; from playbook.quick.launch import console; sys.exit(console())"
    for args, check in ((["show"], lambda out: out == expected), (["log", "-n", "1"], lambda out: "tx " in out)):
        done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, cwd=tmp_path,
                              env={**os.environ, "CLAUDE_PROJECT_DIR": str(tmp_path)}, timeout=60)
        assert done.returncode == 0 and check(done.stdout), (args, done.stdout, done.stderr)


def test_the_snapshot_is_decoded_as_json_decodes_it(tmp_path):
    seed(tmp_path)
    raw = (tmp_path / ".claude" / "playbook.json").read_bytes()
    assert quick_show._decode(raw) == json.loads(raw)
    assert quick_show._decode(b' \n{"a": [1, 2.5, null, true, "\\u00e9"]}\n ') == {"a": [1, 2.5, None, True, "é"]}
    for bad in (b"", b"{", b'{"a": 1} x', b"NaN", b'{"a": Infinity}', b"\xff", b'{"a": "\x01"}'):
        with pytest.raises((ValueError, StopIteration)):
            quick_show._decode(bad)


def _imported(project: Path) -> None:
    texts = iter([*TEXTS, "y" * (SHOWN + 500), "no\u00a0break and \u2028 separator", "", "  spaced  ", "tab\there"])
    sections = {section: [{"name": f"{slug}-{i + 1:03d}", "text": text, "helpful": i * 3 % 7, "harmful": i % 2}
                          for i, text in enumerate(next(texts) for _ in range(2))]
                for section, slug in SECTION_SLUGS.items()}
    PlaybookRepository(project / ".claude").append([ImportLegacy(data={"version": "1.0", "sections": sections},
                                                                 path="test", genesis=False)], Cause(source="test"))


def _changed(project: Path) -> None:
    repo = seed(project)
    repo.append([ApplyOperations([{"type": "UPDATE", "target_id": "pat-001", "text": "plain, and updated"},
                                  {"type": "DELETE", "target_id": "mis-001"},
                                  {"type": "ADD", "section": "PROJECT CONTEXT", "text": "context \x1b[1mbold\x1b[0m"}])],
                Cause(source="test"))
    repo.append([Evaluate([{"name": "pat-002", "rating": "helpful"}, {"name": "pref-001", "rating": "harmful"}])],
                Cause(source="test"))


def _generated(project: Path) -> None:
    from benchmarks.lean import seed_project

    seed_project(project, 300)


@pytest.mark.parametrize("make", [seed, _imported, _changed, _generated])
def test_every_road_prints_the_full_commands_text_of_several_playbooks(tmp_path, make):
    make(tmp_path)
    project = str(tmp_path)
    plain, painted = full_show(tmp_path).encode(), full_painted(tmp_path)
    assert show_text.plain(painted) == plain and painted.count(show_text.BOLD) == painted.count(show_text.RESET) >= 2
    for color, expected in ((False, plain), (True, painted)):
        kept_path(tmp_path).unlink(missing_ok=True)
        assert quick_show.text(project, color) == expected  # rendered from playbook.json
        assert quick_show.text(project, color) == expected  # as kept
        kept_path(tmp_path).unlink()
        assert folded_show.text(project, color) == expected  # folded by the log's reader
        assert quick_show.text(project, not color) == (painted if not color else plain)  # as kept by that road


def test_the_kept_text_is_as_private_as_the_playbook_and_leaves_no_temporary_file(tmp_path):
    seed(tmp_path)
    claude = tmp_path / ".claude"
    stale, fresh = claude / f".{show_text.SHOW_NAME}.999999.tmp", claude / f".{show_text.SHOW_NAME}.999998.tmp"
    stale.write_bytes(b"left by a show killed mid-write")
    fresh.write_bytes(b"being written by another show")
    os.utime(stale, (1, 1))
    full_show(tmp_path)
    assert stat.S_IMODE(kept_path(tmp_path).stat().st_mode) == stat.S_IMODE((claude / "playbook.json").stat().st_mode)
    assert not stale.exists() and fresh.exists()
    assert sorted(p.name for p in claude.glob(f".{show_text.SHOW_NAME}.*")) == [fresh.name]


@pytest.mark.slow
def test_a_playbook_file_leading_out_of_the_project_is_never_read(tmp_path):
    """A repository can carry `.claude` as a directory whose log, playbook.json and hook projection are links
    to another project's: show then refuses them as the full command does, and prints nothing of that playbook."""
    elsewhere = tmp_path / "elsewhere"
    seed(elsewhere)
    full_show(elsewhere)
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    for name in ("playbook.events.jsonl", "playbook.json", "playbook.hook.json"):
        assert (elsewhere / ".claude" / name).is_file()
        (project / ".claude" / name).symlink_to(elsewhere / ".claude" / name)
    assert quick_show.current_snapshot(str(project)) is None and quick_show.text(str(project), False) is None
    for module in (False, True):
        done = launched(project, "show", module=module)
        assert done.returncode == 1 and "outside the project" in done.stderr and "plain ascii" not in done.stdout
    assert not kept_path(project).exists()


@pytest.mark.slow
def test_a_log_of_another_history_at_the_same_size_and_time_is_never_shown_from_playbook_json(tmp_path):
    """A log replaced by another of the same size, on the same inode and with the same modification time (a
    checkout of another branch within one tick of a coarse clock, a restore in place): the full command finds
    that playbook.json reflects another history and shows the log's playbook; so does every quick road."""
    repo = seed(tmp_path / "a")
    base = repo.log_path.read_bytes()
    other = PlaybookRepository(tmp_path / "b" / ".claude")
    other.log_path.parent.mkdir(parents=True)
    other.log_path.write_bytes(base)
    for each, text in ((repo, "first entry"), (other, "other entry")):
        each.append([ApplyOperations([{"type": "ADD", "text": text}])], Cause(source="test"))
    replacement = other.log_path.read_bytes()
    assert len(replacement) == repo.log_path.stat().st_size
    project = tmp_path / "a"
    assert "first entry" in full_show(project) and kept_path(project).exists()
    before = repo.log_path.stat()
    with repo.log_path.open("r+b") as handle:
        handle.write(replacement)
    os.utime(repo.log_path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = repo.log_path.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (before.st_ino, before.st_size, before.st_mtime_ns)
    assert quick_show.current_snapshot(str(project)) is None
    assert quick_show.text(str(project), False) is None
    done = launched(project, "show")
    assert done.returncode == 0 and "other entry" in done.stdout and "first entry" not in done.stdout, done
    assert "another history" in done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("name", [".claude/playbook.show.txt", ".gitattributes"])
def test_a_directory_where_show_reads_a_file_is_no_traceback(tmp_path, name):
    """A repository can carry the kept text's name or .gitattributes as a directory: show prints what the full
    command prints."""
    seed(tmp_path)
    expected = full_show(tmp_path)
    (tmp_path / name).unlink(missing_ok=True)
    (tmp_path / name).mkdir()
    for module in (False, True):
        done = launched(tmp_path, "show", module=module)
        assert (done.returncode, done.stdout, done.stderr) == (0, expected, ""), done.stderr[-500:]
