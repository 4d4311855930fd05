"""A merge that git makes without our post-merge hook (`core.hooksPath` elsewhere, a hook killed) leaves no
playbook.json "of another history": the driver retires the projection of the log it replaced, the next reader
rebuilds it, and `recover` never takes back an entry the log already holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from playbook.commands.share import share
from tests.gittools import HAS_GIT, Git, assert_clean, git_env, learn, learned, playbook

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not HAS_GIT, reason="git is not installed")]

PAT = "PATTERNS & APPROACHES"


def add(*texts: str) -> dict:
    return {"operations": [{"type": "ADD", "text": t, "section": PAT} for t in texts]}


def clones(root: Path) -> tuple[Path, Path, Git, Git]:
    """Two clones of one shared playbook, each with its git hooks pointed at an empty directory."""
    env = git_env(root)
    Git(root, env)("init", "-q", "--bare", "-b", "main", str(root / "origin.git"))
    first = root / "first"
    Git(root, env)("clone", "-q", str(root / "origin.git"), str(first))
    Git(first, env)("checkout", "-q", "-b", "main")
    learn(first, add("Run the tests before committing"))
    share(first)
    Git(first, env)("add", "-A")
    Git(first, env)("commit", "-q", "-m", "shared")
    Git(first, env)("push", "-q", "origin", "HEAD:main")
    second = root / "second"
    Git(root, env)("clone", "-q", str(root / "origin.git"), str(second))
    playbook(second, "show", env=env)  # a teammate's first command registers the driver
    (root / "no-hooks").mkdir()
    for clone in (first, second):
        Git(clone, env)("config", "core.hooksPath", str(root / "no-hooks"))
    return first, second, Git(first, env), Git(second, env)


def test_a_pull_without_the_post_merge_hook_leaves_a_playbook_every_reader_trusts(tmp_path: Path) -> None:
    first, second, git_first, git_second = clones(tmp_path)
    learn(first, add("Use pathlib for paths"))
    git_first("commit", "-qam", "first learned")
    git_first("push", "-q", "origin", "HEAD:main")
    learn(second, add("Answer in British English"))
    git_second("commit", "-qam", "second learned")
    git_second("pull", "-q", "--no-rebase", "--no-edit", "origin", "main")

    env = git_env(tmp_path)
    verified = playbook(second, "verify", env=env)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    shown = playbook(second, "show", env=env)
    assert shown.returncode == 0 and "another history" not in shown.stderr, shown.stderr
    assert "Use pathlib for paths" in shown.stdout and "Answer in British English" in shown.stdout
    assert not list((second / ".claude").glob("playbook.json.ahead-*"))
    learn(second, add("Prefer small commits"))  # the next writer sets nothing aside
    assert not list((second / ".claude").glob("playbook.json.ahead-*"))
    assert_clean(second)
    assert all(count == 1 for count in learned(second).values())


def test_recover_never_takes_back_an_entry_the_log_already_holds(tmp_path: Path) -> None:
    first, second, git_first, git_second = clones(tmp_path)
    learn(first, add("Use pathlib for paths"))
    git_first("commit", "-qam", "first learned")
    git_first("push", "-q", "origin", "HEAD:main")
    learn(second, add("Answer in British English"))
    git_second("commit", "-qam", "second learned")
    kept = (second / ".claude" / "playbook.json").read_bytes()  # a projection of ours, as it was
    git_second("pull", "-q", "--no-rebase", "--no-edit", "origin", "main")
    (second / ".claude" / "playbook.json").write_bytes(kept)  # as a driver without the retirement left it
    env = git_env(tmp_path)
    playbook(second, "add", "Prefer small commits", env=env)  # a writer sets the old projection aside
    assert list((second / ".claude").glob("playbook.json.ahead-*"))
    recovered = playbook(second, "recover", env=env)
    assert recovered.returncode in (0, 1), recovered.stderr
    texts = [line for line in playbook(second, "show", env=env).stdout.splitlines() if ":: " in line]
    assert sum("Answer in British English" in line for line in texts) == 1, texts
    assert sum("Run the tests before committing" in line for line in texts) == 1, texts
