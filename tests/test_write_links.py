"""A repository's links never lead a hook or a command to write outside the project.

A cloned repository carries `.claude/diagnostic_mode`, `.claude/diagnostic` as a link to a directory of
the user's (`~/.bashrc.d`, whose files the next shell runs), a log, and a playbook.json that differs from
it by a "hand edit" whose text is shell code. The first SessionStart takes the edit in: nothing may be
written through the link (the flag a repository ships does not even switch diagnostics on), and the same
holds for every other name the hooks and commands write (locks, marks, kept texts, anchors, checkpoints,
temporary files): run as Claude Code runs them, the hooks exit 0 without a traceback and the commands say
what they refuse in one line, while nothing appears or changes outside the project and Claude Code's
directory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from eventlog.decide import ApplyOperations
from eventlog.events import Cause, KeyPointUpdated
from eventlog.store import LogReader
from playbook.wiring.install import hook_command
from projections.repository import PlaybookRepository
from tests.gittools import HAS_GIT, Git, git_env

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not HAS_GIT, reason="git is not installed")]

ROOT = Path(__file__).resolve().parent.parent
LAUNCH = ROOT / "playbook" / "quick" / "launch.py"
HAND_EDIT = 'x"\ntouch $HOME/X\n#'
START = b'{"hook_event_name": "SessionStart", "source": "startup", "session_id": "s1"}'


def _env(project: Path, home: Path) -> dict[str, str]:
    env = {k: v for k, v in git_env(home).items()
           if not k.startswith(("ANTHROPIC_", "AGENTIC_CONTEXT_", "CLAUDE", "PLAYBOOK_"))}
    return env | {"CLAUDE_PROJECT_DIR": str(project), "CLAUDE_CONFIG_DIR": str(home / ".claude"),
                  "PLAYBOOK_CLAUDE": ""}


def _tree(base: Path, *left_out: Path) -> dict[str, tuple[str, ...]]:
    """Every name under `base` (links not followed) with what it is and holds, but those under `left_out`."""
    found: dict[str, tuple[str, ...]] = {}
    for directory, dirs, files in os.walk(base):
        for name in [*dirs, *files]:
            path = Path(directory) / name
            if any(path == skip or skip in path.parents for skip in left_out):
                continue
            if path.is_symlink():
                found[str(path)] = ("link", os.readlink(path))
            elif path.is_dir():
                found[str(path)] = ("dir", oct(path.stat().st_mode))
            else:
                found[str(path)] = ("file", oct(path.stat().st_mode), path.read_bytes().hex())
    return found


def _hook(project: Path, env: dict[str, str], how: str) -> subprocess.CompletedProcess[bytes]:
    """The SessionStart hook as Claude Code runs it: the installed command, or the plugin's launcher."""
    if how == "installed":
        return subprocess.run(hook_command("SessionStart"), shell=True, input=START, capture_output=True, env=env,
                              cwd=project, timeout=60)
    return subprocess.run([sys.executable, "-I", "-S", str(LAUNCH), "hook", "SessionStart"], input=START,
                          capture_output=True, env=env, cwd=project, timeout=60)


def _cli(project: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-I", "-m", "playbook", *args], capture_output=True, env=env, cwd=project,
                          timeout=60, stdin=subprocess.DEVNULL)


def _no_traceback(done: subprocess.CompletedProcess[bytes]) -> None:
    assert b"Traceback" not in done.stderr, done.stderr.decode(errors="replace")


def _one_line(done: subprocess.CompletedProcess[bytes]) -> None:
    _no_traceback(done)
    assert done.stderr.count(b"\n") == 1 and done.stderr.startswith(b"playbook: "), done.stderr


# --- the reported attack: a clone, a diagnostic link, a hand edit that is shell code ----------------------


def _hostile_clone(tmp_path: Path, flag: str, linked: bool = True) -> tuple[Path, Path, Path]:
    """(the clone, the user's home, ~/.bashrc.d) of a repository shipping a log, a playbook.json edited by hand
    with shell code, `.claude/diagnostic` as a link to ~/.bashrc.d (unless not `linked`) and, when `flag` is
    "shipped", `.claude/diagnostic_mode`; with "the user's own" the user made that flag in the clone."""
    home = tmp_path / "home"
    bashrc_d = home / ".bashrc.d"
    bashrc_d.mkdir(parents=True)
    (bashrc_d / "aliases.sh").write_text("alias ll='ls -l'\n")
    (home / ".claude" / "projects").mkdir(parents=True)
    origin = tmp_path / "origin"
    repo = PlaybookRepository(origin / ".claude")
    repo.append([ApplyOperations([{"type": "ADD", "text": "use pathlib for file paths"}])], Cause(source="test"))
    data = json.loads(repo.snapshot_path.read_text())
    for entries in data["sections"].values():
        for entry in entries:
            entry["text"] = HAND_EDIT
    repo.snapshot_path.write_text(json.dumps(data, indent=2))
    shipped = [".claude/playbook.events.jsonl", ".claude/playbook.json"]
    if linked:
        (origin / ".claude" / "diagnostic").symlink_to(os.path.relpath(bashrc_d, origin / ".claude"))
        shipped.append(".claude/diagnostic")
    if flag == "shipped":
        (origin / ".claude" / "diagnostic_mode").write_text("")
        shipped.append(".claude/diagnostic_mode")
    git = Git(origin, git_env(home))
    git("init", "-q")
    git("add", "-f", *shipped)
    git("commit", "-q", "-m", "the team's playbook")
    project = tmp_path / "project"
    Git(tmp_path, git_env(home))("clone", "-q", str(origin), str(project))
    assert (project / ".claude" / "diagnostic").is_symlink() == linked
    if flag == "the user's own":
        (project / ".claude" / "diagnostic_mode").write_text("")
    return project, home, bashrc_d


@pytest.mark.parametrize("flag", ["shipped", "the user's own"])
def test_a_clones_diagnostic_link_is_never_written_through(tmp_path: Path, flag: str) -> None:
    project, home, bashrc_d = _hostile_clone(tmp_path, flag)
    env = _env(project, home)
    before = _tree(tmp_path, project, home / ".claude")

    first = _hook(project, env, "installed")
    assert first.returncode == 0, first.stderr
    _no_traceback(first)
    assert b"use pathlib" not in first.stdout and b"touch $HOME/X" in first.stdout  # the edit was taken in
    if flag == "shipped":  # a flag the repository ships does not switch diagnostics on
        assert b"diagnostic" not in first.stderr, first.stderr
    else:  # the user's own flag does, and the link is refused in one line
        assert first.stderr.count(b"diagnostic files not written") == 1, first.stderr
        assert b"outside" in first.stderr and first.stderr.count(b"\n") == 1, first.stderr
    again = _hook(project, env, "launcher")
    assert again.returncode == 0, again.stderr
    _no_traceback(again)
    for args in (["show"], ["add", "check the deploy script"], ["verify"]):
        done = _cli(project, env, *args)
        _no_traceback(done)
        assert done.returncode == 0, (args, done.stderr)

    assert sorted(os.listdir(bashrc_d)) == ["aliases.sh"]
    assert _tree(tmp_path, project, home / ".claude") == before
    updated = [e for t in LogReader(project / ".claude" / "playbook.events.jsonl") for e in t.events
               if isinstance(e, KeyPointUpdated)]
    assert [e.text for e in updated] == [HAND_EDIT]


def test_the_users_own_flag_writes_diagnostics_into_the_project(tmp_path: Path) -> None:
    """Diagnostics still work when they are the user's: the same clone without the link."""
    project, home, _bashrc_d = _hostile_clone(tmp_path, "the user's own", linked=False)
    done = _hook(project, _env(project, home), "installed")
    assert (done.returncode, done.stderr) == (0, b""), done.stderr
    written = list((project / ".claude" / "diagnostic").glob("*_curator_update.txt"))
    assert len(written) == 1 and HAND_EDIT in written[0].read_text()


# --- every other name the hooks and commands write, as a link out of the project --------------------------


def _seeded(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(a project with a playbook, the user's home, ~/.bashrc.d holding one script)."""
    home = tmp_path / "home"
    bashrc_d = home / ".bashrc.d"
    bashrc_d.mkdir(parents=True)
    (bashrc_d / "aliases.sh").write_text("alias ll='ls -l'\n")
    (home / ".claude" / "projects").mkdir(parents=True)
    project = tmp_path / "project"
    PlaybookRepository(project / ".claude").append(
        [ApplyOperations([{"type": "ADD", "text": "use pathlib for file paths"}])], Cause(source="test"))
    return project, home, bashrc_d


# name -> the runs that write it: a hook ("installed", "launcher") or a command line
WRITTEN_BY: dict[str, list[tuple[str, ...]]] = {
    "playbook.notice.shown": [("installed",), ("launcher",)],
    "playbook.notice": [("installed",)],
    "playbook.learn.lock": [("learn", "--pending")],
    "playbook.show.txt": [("show",), ("launch", "show")],
    "playbook.events.jsonl.lock": [("add", "check the deploy script"), ("installed",)],
    "playbook.anchors": [("anchor",)],
    "playbook.checkpoints": [("rebuild",), ("add", "check the deploy script"), ("installed",)],
}
ONE_LINE = {"playbook.learn.lock", "playbook.events.jsonl.lock", "playbook.anchors", "playbook.checkpoints"}
"""The names whose link stops the command: it says so in one line, exit 1 (a hook still exits 0)."""


@pytest.mark.parametrize("target", ["a new file", "an existing file"])
@pytest.mark.parametrize("name", sorted(WRITTEN_BY))
def test_a_name_linked_out_of_the_project_is_never_written_through(tmp_path: Path, name: str, target: str) -> None:
    project, home, bashrc_d = _seeded(tmp_path)
    env = _env(project, home)
    if name == "playbook.checkpoints":
        pointed = bashrc_d
    else:
        pointed = bashrc_d / ("aliases.sh" if target == "an existing file" else "playbook.sh")
    link = project / ".claude" / name
    if link.exists():
        link.unlink()
    link.symlink_to(pointed)
    before = _tree(tmp_path, project, home / ".claude")

    for run in WRITTEN_BY[name]:
        if run[0] in ("installed", "launcher"):
            done = _hook(project, env, run[0])
            assert done.returncode == 0, (run, done.stderr)
            _no_traceback(done)
            continue
        if run[0] == "launch":  # the plugin's `playbook` command
            done = subprocess.run([sys.executable, "-I", "-S", str(LAUNCH), *run[1:]], capture_output=True, env=env,
                                  cwd=project, timeout=60, stdin=subprocess.DEVNULL)
        else:
            done = _cli(project, env, *run)
        if name in ONE_LINE:
            assert done.returncode == 1, (run, done.stderr)
            _one_line(done)
        else:
            assert done.returncode == 0, (run, done.stderr)
            _no_traceback(done)

    assert _tree(tmp_path, project, home / ".claude") == before
    assert sorted(os.listdir(bashrc_d)) == ["aliases.sh"]


def test_a_learner_lock_linked_out_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    project, home, bashrc_d = _seeded(tmp_path)
    (project / ".claude" / "playbook.learn.lock").symlink_to(bashrc_d / "lock.sh")
    done = _cli(project, _env(project, home), "learn", "--pending")
    assert done.returncode == 1
    _one_line(done)
    assert b"playbook.learn.lock" in done.stderr and b"is a link" in done.stderr, done.stderr


# --- temporary names: the pid is this process's, so they are planted and written in process ---------------


def _plant(claude: Path, name: str, outside: Path) -> Path:
    path = claude / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(outside)
    return path


def _writes_with_temp(name: str, project: Path) -> None:
    """What writes the temporary name `name`, run in this process."""
    from eventlog.store import Position
    from playbook.commands.cli import main
    from projections import checkpoints

    repo = PlaybookRepository(project / ".claude")
    if name.startswith((".playbook.json.", ".playbook.hook.json.", ".playbook.recall.json.")):
        repo.append([ApplyOperations([{"type": "ADD", "text": "one more"}])], Cause(source="test"))
        repo.refresh()
    elif name.startswith(".playbook.show.txt."):
        assert main(["show", "--project", str(project)]) == 0
    elif name.startswith("playbook.checkpoints/.7.msgpack."):
        state, position = repo.current()
        checkpoints.save(project / ".claude" / "playbook.checkpoints", state, Position(position.offset, 7, position.hash,
                                                                                       position.line))
    elif name.startswith("playbook.checkpoints/.commits.index."):
        state, position = repo.current()
        checkpoints.save(project / ".claude" / "playbook.checkpoints", state, position)
    elif name == "playbook.events.jsonl.purging":
        assert main(["purge", "--match", "pathlib for", "--project", str(project)]) == 0
    elif name.startswith(".playbook.events.jsonl."):  # another machine's copy, one transaction further
        other = PlaybookRepository(project / "elsewhere" / ".claude")
        other.log_path.parent.mkdir(parents=True)
        other.log_path.write_bytes(repo.log_path.read_bytes())
        other.append([ApplyOperations([{"type": "ADD", "text": "learned elsewhere"}])], Cause(source="test"))
        assert main(["merge", str(other.log_path), "--project", str(project)]) == 0
        assert "learned elsewhere" in repo.log_path.read_text()
    else:
        raise AssertionError(name)


@pytest.mark.parametrize("kind", [".playbook.json.{pid}.tmp", ".playbook.hook.json.{pid}.tmp",
                                  ".playbook.recall.json.{pid}.tmp", ".playbook.show.txt.{pid}.tmp",
                                  "playbook.checkpoints/.7.msgpack.{pid}.tmp",
                                  "playbook.checkpoints/.commits.index.{pid}.tmp", "playbook.events.jsonl.purging",
                                  ".playbook.events.jsonl.{pid}.merge.tmp"])
def test_a_temporary_name_linked_out_is_never_written_through(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str], kind: str) -> None:
    project, home, bashrc_d = _seeded(tmp_path)
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / ".claude"))
    name = kind.format(pid=os.getpid())
    existing, new = bashrc_d / "aliases.sh", bashrc_d / "playbook.sh"
    planted = _plant(project / ".claude", name, new)
    before = _tree(tmp_path, project, home / ".claude")
    _writes_with_temp(name, project)
    assert "Traceback" not in capsys.readouterr().err
    assert _tree(tmp_path, project, home / ".claude") == before
    assert not new.exists() and existing.read_text() == "alias ll='ls -l'\n"
    assert not planted.is_symlink()  # the writer came to the name, and took the link away instead of following it
