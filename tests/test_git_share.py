"""Sharing the playbook through real git: share/unshare, a teammate's clone, and every way git moves the log."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from playbook.commands.share import BEGIN, driver_command, share, unshare
from tests.gittools import HAS_GIT, LOG, Git, assert_clean, commits, git_env, learn, learned, playbook

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not HAS_GIT, reason="git is not installed")]

PAT = "PATTERNS & APPROACHES"


def add(*texts: str) -> dict:
    return {"operations": [{"type": "ADD", "text": t, "section": PAT} for t in texts]}


def rate(*names: str, rating: str = "helpful") -> dict:
    return {"operations": [], "evaluations": [{"name": n, "rating": rating} for n in names]}


class Team:
    """A bare origin and clones of it, each with the playbook shared."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.env = git_env(root)
        Git(root, self.env)("init", "-q", "--bare", "-b", "main", str(root / "origin.git"))
        first = self.clone("first", fresh=True)
        learn(first, add("Run the tests before committing", "Use pathlib"))
        share(first)
        self.commit(first, "shared playbook")
        self.git(first)("push", "-q", "origin", "HEAD:main")

    def git(self, clone: Path) -> Git:
        return Git(clone, self.env)

    def clone(self, name: str, fresh: bool = False) -> Path:
        path = self.root / name
        Git(self.root, self.env)("clone", "-q", str(self.root / "origin.git"), str(path))
        if fresh:
            self.git(path)("checkout", "-q", "-b", "main")
        return path

    def commit(self, clone: Path, message: str) -> None:
        git = self.git(clone)
        git("add", "-A")
        git("commit", "-q", "-m", message, check=False)


@pytest.fixture
def team(tmp_path) -> Team:
    return Team(tmp_path)


def test_share_writes_attributes_ignores_driver_and_hooks_idempotently_and_unshare_undoes_exactly_that(tmp_path):
    env = git_env(tmp_path)
    project = tmp_path / "p"
    project.mkdir()
    git = Git(project, env)
    git("init", "-q", "-b", "main")
    (project / ".gitattributes").write_text("*.png binary\n")
    (project / ".gitignore").write_text("node_modules/\n.claude/playbook.json\n")
    hook = project / ".git" / "hooks" / "post-merge"
    hook.write_text("#!/bin/sh\necho mine\n")
    hook.chmod(0o755)
    before = {p: p.read_bytes() for p in (project / ".gitattributes", project / ".gitignore", hook)}

    old = os.environ.get("HOME")
    os.environ["HOME"] = str(tmp_path)  # share runs git: keep the user's global config out of it
    try:
        share(project)
        once = {p: p.read_bytes() for p in before}
        share(project)
        assert {p: p.read_bytes() for p in before} == once  # idempotent
        attributes = (project / ".gitattributes").read_text()
        assert attributes.startswith("*.png binary\n") and f"{LOG} merge=playbook" in attributes
        ignored = (project / ".gitignore").read_text()
        for line in (".claude/playbook.hook.json", ".claude/playbook.events.jsonl.lock", ".claude/playbook.learn.log",
                     ".claude/playbook.events.jsonl.torn-*", ".claude/playbook.checkpoints/"):
            assert line in ignored.splitlines()
        assert ignored.count(".claude/playbook.json\n") == 1  # already there: kept, not added twice
        assert LOG not in ignored.splitlines()
        assert git("config", "--get", "merge.playbook.driver").stdout.strip() == driver_command()
        assert driver_command().startswith("'/") and " -P -m playbook merge-driver %O %A %B %P" in driver_command()
        assert hook.read_text().startswith("#!/bin/sh\necho mine\n") and "git-hook post-merge" in hook.read_text()
        for name in ("post-checkout", "post-rewrite", "post-commit"):
            installed = project / ".git" / "hooks" / name
            assert installed.stat().st_mode & stat.S_IXUSR and BEGIN in installed.read_text()

        unshare(project)
    finally:
        if old is None:
            os.environ.pop("HOME", None)
        else:
            os.environ["HOME"] = old
    assert {p: p.read_bytes() for p in before} == before
    assert git("config", "--get-regexp", "^merge\\.", check=False).stdout == ""
    assert not (project / ".git" / "hooks" / "post-checkout").exists()


def test_a_teammates_fresh_clone_registers_the_driver_on_its_first_command(team):
    second = team.clone("second")
    assert team.git(second)("config", "--get", "merge.playbook.driver", check=False).stdout == ""
    done = playbook(second, "show", env=team.env)
    assert done.returncode == 0, done.stderr
    assert team.git(second)("config", "--get", "merge.playbook.driver").stdout.strip() == driver_command()
    assert (second / ".git" / "hooks" / "post-merge").exists()
    assert_clean(second)


def _diverge(team: Team) -> tuple[Path, Path, str]:
    """Two clones that learned different things; the first one's work is on origin. Returns (first, second, tx)."""
    first, second = team.root / "first", team.clone("second")
    assert playbook(second, "show", env=team.env).returncode == 0  # the teammate's first command registers the driver
    learn(first, add("Prefer small commits"))
    learn(first, rate("pat-001"))
    team.commit(first, "first learns")
    team.git(first)("push", "-q", "origin", "HEAD:main")
    learn(second, add("Mock the network in unit tests"))
    learn(second, rate("pat-001", "pat-002"))
    team.commit(second, "second learns")
    return first, second, commits(second)[-1].tx


@pytest.mark.parametrize("how", ["merge", "pull", "pull-rebase"])
def test_merge_and_pull_both_ways_merge_the_log_and_leave_it_verified(team, how):
    first, second, _tx = _diverge(team)
    git = team.git(second)
    if how == "merge":
        git("fetch", "-q", "origin")
        git("merge", "-q", "--no-edit", "origin/main")
    else:
        git("pull", "-q", "--rebase" if how == "pull-rebase" else "--no-rebase", "origin", "main")
    assert git("status", "--porcelain").stdout == ""
    assert_clean(second)
    counts = learned(second)
    assert set(counts.values()) == {1} and set(learned(first)) <= set(counts)
    done = playbook(second, "show", "--json", env=team.env)
    assert '"helpful": 2' in done.stdout  # pat-001 rated on both sides
    log = playbook(second, "log", "-n", "1", env=team.env).stdout
    assert "branches merged" in log
    git("push", "-q", "origin", "HEAD:main")
    team.git(first)("pull", "-q", "--no-rebase", "origin", "main")  # a fast-forward: no driver, the hook rebuilds
    assert_clean(first)
    assert (first / LOG).read_bytes() == (second / LOG).read_bytes()


def test_cherry_pick_brings_only_the_picked_commits_transactions(team):
    first, second, _tx = _diverge(team)
    git = team.git(second)
    git("checkout", "-q", "-b", "topic")
    learn(second, add("Keep functions short"))
    team.commit(second, "topic learns")
    picked = commits(second)[-1].tx
    learn(second, add("Never force-push main"))
    team.commit(second, "topic learns more")
    skipped = commits(second)[-1].tx
    git("checkout", "-q", "main")
    assert_clean(second)  # the branch switch rebuilt playbook.json for main's log
    git("fetch", "-q", "origin")
    git("reset", "-q", "--hard", "origin/main")
    git("cherry-pick", "topic~1")
    counts = learned(second)
    assert counts[picked] == 1 and skipped not in counts
    assert_clean(second)


def test_reverting_a_commit_that_taught_something_undoes_its_transactions(team):
    first = team.root / "first"
    learn(first, add("Prefer small commits"))
    team.commit(first, "learn small commits")
    taught = commits(first)[-1].tx
    learn(first, rate("pat-001"))
    team.commit(first, "later learning")
    git = team.git(first)
    git("revert", "--no-edit", "HEAD~1")
    assert_clean(first)
    last = commits(first)[-1]
    assert last.source == "revert" and taught in (last.note or "")
    texts = playbook(first, "show", env=team.env).stdout
    assert "Prefer small commits" not in texts and "Run the tests" in texts


def test_a_revert_that_would_undo_later_work_is_a_conflict_with_the_reason(team):
    first = team.root / "first"
    learn(first, add("Prefer small commits"))
    team.commit(first, "learn small commits")
    learn(first, rate("pat-003"))  # later learning touches what the reverted commit added
    team.commit(first, "rate it")
    done = team.git(first)("revert", "--no-edit", "HEAD~1", check=False)
    assert done.returncode != 0
    assert "later transactions changed the same entries" in done.stdout + done.stderr
    team.git(first)("revert", "--abort")
    assert_clean(first)


ANCHORS = ".claude/playbook.anchors"


def _anchor_and_commit(team: Team, clone: Path, text: str, push: bool = False) -> None:
    learn(clone, add(text))
    done = playbook(clone, "anchor", env=team.env)
    assert done.returncode == 0, done.stderr
    team.commit(clone, f"learn and anchor: {text}")
    if push:
        team.git(clone)("push", "-q", "origin", "HEAD:main")


def _verified_with_anchors(team: Team, clone: Path) -> None:
    done = playbook(clone, "verify", "--anchor", env=team.env)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stdout + done.stderr


@pytest.mark.parametrize("how", ["pull", "pull-rebase"])
def test_anchors_committed_on_both_sides_merge_through_a_pull_and_stay_provable(team, how):
    """Each clone anchors what it learned and commits the anchors file; a pull interleaves the teammate's earlier
    transaction before ours (the log is merged, ours replayed after it). The anchors file is merged as the union
    of both sides' anchors, with no conflict, and each is proven through the recorded merge: verify --anchor,
    anchor and purge work, on the merging clone and on the teammate's after a fast-forward."""
    first, second = team.root / "first", team.clone("second")
    assert playbook(second, "show", env=team.env).returncode == 0
    git = team.git(second)
    pull = ("pull", "-q", "--rebase" if how == "pull-rebase" else "--no-rebase", "origin", "main")
    _anchor_and_commit(team, first, "Prefer small commits", push=True)
    _anchor_and_commit(team, second, "Mock the network in unit tests")
    sides = {clone: set((clone / ANCHORS).read_text().splitlines()) for clone in (first, second)}

    done = git(*pull, check=False)  # the anchors file was added on both sides
    assert done.returncode == 0 and "CONFLICT" not in done.stdout + done.stderr, done.stdout + done.stderr
    assert git("status", "--porcelain").stdout == ""
    assert set((second / ANCHORS).read_text().splitlines()) == sides[first] | sides[second]
    assert any(c.source == "merge" for c in commits(second))
    _verified_with_anchors(team, second)
    assert_clean(second)
    git("push", "-q", "origin", "HEAD:main")
    team.git(first)("pull", "-q", "--no-rebase", "origin", "main")
    _verified_with_anchors(team, first)

    # Both sides append to the anchors file they now share, and learn; the next pull merges both again.
    _anchor_and_commit(team, first, "Read the error before retrying", push=True)
    _anchor_and_commit(team, second, "Keep functions short")
    done = git(*pull, check=False)
    assert done.returncode == 0 and "CONFLICT" not in done.stdout + done.stderr, done.stdout + done.stderr
    _verified_with_anchors(team, second)
    done = playbook(second, "anchor", env=team.env)
    assert done.returncode == 0 and "anchored line" in done.stdout, done.stderr
    done = playbook(second, "purge", "--match", "Keep functions", env=team.env)
    assert done.returncode == 0 and "purged" in done.stdout and "Traceback" not in done.stderr, done.stderr
    assert b"Keep functions" not in (second / LOG).read_bytes()
    _verified_with_anchors(team, second)
    team.commit(second, "purged")
    git("push", "-q", "origin", "HEAD:main")
    team.git(first)("pull", "-q", "--no-rebase", "origin", "main")
    _verified_with_anchors(team, first)


def test_share_names_the_anchors_file_for_the_merge_driver(team):
    attributes = (team.root / "first" / ".gitattributes").read_text().splitlines()
    assert f"{LOG} merge=playbook eol=lf" in attributes and f"{ANCHORS} merge=playbook eol=lf" in attributes


def test_a_purge_committed_in_one_clone_merges_with_a_teammates_work_and_reaches_the_others(team):
    first, second, _tx = _diverge(team)  # first's work is on origin; second learned apart from it
    git = team.git(second)
    purged = playbook(second, "purge", "--match", "pathlib", env=team.env)
    assert purged.returncode == 0, purged.stderr
    team.commit(second, "purge a name")

    # The purging clone pulls its teammate's work: the purge is carried into what it grew from, not refused.
    done = git("pull", "-q", "--no-rebase", "origin", "main", check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert git("status", "--porcelain").stdout == ""
    assert b"pathlib" not in (second / LOG).read_bytes()
    assert "Prefer small commits" in playbook(second, "show", env=team.env).stdout
    assert set(learned(second).values()) == {1} and set(learned(first)) <= set(learned(second))
    assert_clean(second)
    assert not [p for p in (second / ".git").iterdir() if p.name.endswith(".merge.tmp")]
    git("push", "-q", "origin", "HEAD:main")

    # A teammate who learned meanwhile is refused in one line until the same text is purged there too.
    learn(first, add("Name branches after tickets"))
    team.commit(first, "first learns again")
    other = team.git(first)
    refused = other("pull", "-q", "--no-rebase", "origin", "main", check=False)
    assert refused.returncode != 0 and "purge the same text in ours (`playbook purge --match TEXT`, with the text " \
        "purged there)" in refused.stderr, refused.stderr
    other("merge", "--abort")
    assert playbook(first, "purge", "--match", "pathlib", env=team.env).returncode == 0
    team.commit(first, "purge the name here too")
    done = other("pull", "-q", "--no-rebase", "origin", "main", check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert b"pathlib" not in (first / LOG).read_bytes()
    assert_clean(first)
    assert "Name branches after tickets" in playbook(first, "show", env=team.env).stdout


def test_a_purge_is_not_carried_over_a_teammates_commit_that_holds_the_text(team):
    first, second, _tx = _diverge(team)
    learn(first, add("pathlib is slow on NFS"))
    team.commit(first, "first learns the name again")
    team.git(first)("push", "-q", "origin", "HEAD:main")
    assert playbook(second, "purge", "--match", "pathlib", env=team.env).returncode == 0
    team.commit(second, "purge a name")
    before = (second / LOG).read_bytes()

    git = team.git(second)
    refused = git("pull", "-q", "--no-rebase", "origin", "main", check=False)
    assert refused.returncode != 0 and "purge the same text in theirs" in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr
    git("merge", "--abort")
    assert (second / LOG).read_bytes() == before and b"pathlib" not in before
    assert not [p for p in (second / ".git").iterdir() if p.name.endswith(".merge.tmp")]


def test_a_purge_replayed_by_a_rebasing_pull_is_refused_until_the_same_text_is_purged_in_the_rebased_log(team):
    first, second, _tx = _diverge(team)
    assert playbook(second, "purge", "--match", "pathlib", env=team.env).returncode == 0
    team.commit(second, "purge a name")
    git = team.git(second)
    # A rebase replays the purge onto the teammate's log (git's "ours" there): the driver cannot carry it.
    refused = git("pull", "-q", "--rebase", "origin", "main", check=False)
    assert refused.returncode != 0 and "purge the same text in ours" in refused.stderr, refused.stderr
    assert playbook(second, "purge", "--match", "pathlib", env=team.env).returncode == 0
    git("add", "-A")
    assert git("-c", "core.editor=true", "rebase", "--continue", check=False).returncode == 0
    assert b"pathlib" not in (second / LOG).read_bytes()
    assert "Prefer small commits" in playbook(second, "show", env=team.env).stdout
    assert set(learned(second).values()) == {1} and set(learned(first)) <= set(learned(second))
    assert_clean(second)


def test_a_purge_carries_over_a_shared_line_spelled_with_other_escapes_and_many_redactions(team):
    from eventlog.logformat import split_hash, stamp

    # A line of the shared history written by another tool: the same JSON, an escape where ours has the letter.
    first = team.root / "first"
    learn(first, add(" ".join(["pathlib"] * 30) + " caf\u00e9"))
    out, running = [], 0
    for raw in (first / LOG).read_bytes().splitlines():
        line, running = stamp(split_hash(raw)[0].replace("caf\u00e9".encode(), b"caf\\u00e9"), running)
        out.append(line)
    (first / LOG).write_bytes(b"".join(out))
    (first / ".claude" / "playbook.json").unlink()
    team.commit(first, "a line spelled otherwise")
    team.git(first)("push", "-q", "origin", "HEAD:main")
    second = team.clone("second")
    assert playbook(second, "show", env=team.env).returncode == 0
    learn(first, add("Prefer small commits"))
    team.commit(first, "first learns")
    team.git(first)("push", "-q", "origin", "HEAD:main")

    # The purge re-spells the line and redacts it 30 times: the carry reads it string by string, at once.
    assert playbook(second, "purge", "--match", "pathlib", env=team.env).returncode == 0
    team.commit(second, "purge a name")
    done = team.git(second)("pull", "-q", "--no-rebase", "origin", "main", check=False)
    assert done.returncode == 0, done.stderr
    assert b"pathlib" not in (second / LOG).read_bytes()
    assert "Prefer small commits" in playbook(second, "show", env=team.env).stdout
    assert_clean(second)
