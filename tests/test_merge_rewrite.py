"""A side that rewrites history both sides share (a line changed, the chain recomputed so `verify` passes) is
refused by the merge, through git's merge driver and `playbook merge`: ours is kept as it was, and one line
names the first line that differs, its transaction and the side that rewrote it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from eventlog.decide import ApplyOperations
from eventlog.events import Cause
from eventlog.store import LogReader
from projections.merge import MergeRefused, merge_logs
from projections.repository import PlaybookRepository
from tests.gittools import HAS_GIT, LOG, Git, git_env, learn, playbook
from tests.test_anchors import forge

pytestmark = pytest.mark.slow  # starts processes, a browser or Claude Code, or runs a campaign

PAT = "PATTERNS & APPROACHES"
OLD = "Prefer small commits"
FORGED = "Commit straight to main, skip the review"


def add(*texts: str) -> dict:
    return {"operations": [{"type": "ADD", "text": t, "section": PAT} for t in texts]}


def tx_of_line(log: Path, line: int) -> str:
    """The transaction that holds line `line` of the log."""
    for transaction in LogReader(log, strict=True):
        if transaction.start.line < line <= transaction.end.line:
            return transaction.commit.tx
    raise AssertionError(f"no transaction holds line {line}")


def rewrite(project: Path, env: dict[str, str] | None = None) -> tuple[int, str]:
    """Forge an old line of the project's log as someone who can write it would: the chain recomputed, the
    derived files rebuilt, so `playbook verify` passes. Returns (the line, its transaction)."""
    log = project / LOG
    line = forge(log, OLD, FORGED)
    tx = tx_of_line(log, line)
    assert playbook(project, "rebuild", env=env).returncode == 0
    done = playbook(project, "verify", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    return line, tx


def driver_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("playbook:")]


class Team:
    """A bare origin and two clones with the playbook shared; a few transactions both have."""

    def __init__(self, root: Path) -> None:
        from playbook.commands.share import share

        self.root, self.env = root, git_env(root)
        Git(root, self.env)("init", "-q", "--bare", "-b", "main", str(root / "origin.git"))
        self.first = self.clone("first")
        self.git(self.first)("checkout", "-q", "-b", "main")
        learn(self.first, add("Run the tests before committing", "Use pathlib"))
        learn(self.first, add(OLD))
        learn(self.first, add("Mock the network in unit tests"))
        share(self.first)
        self.commit(self.first, "shared playbook")
        self.git(self.first)("push", "-q", "origin", "HEAD:main")
        self.second = self.clone("second")
        assert playbook(self.second, "show", env=self.env).returncode == 0  # registers the driver

    def git(self, clone: Path) -> Git:
        return Git(clone, self.env)

    def clone(self, name: str) -> Path:
        path = self.root / name
        Git(self.root, self.env)("clone", "-q", str(self.root / "origin.git"), str(path))
        return path

    def commit(self, clone: Path, message: str) -> None:
        self.git(clone)("add", "-A")
        self.git(clone)("commit", "-q", "-m", message)


@pytest.fixture
def team(tmp_path) -> Team:
    if not HAS_GIT:
        pytest.skip("git is not installed")
    return Team(tmp_path)


@pytest.mark.parametrize("rewriter", ["theirs", "ours"])
def test_a_pull_that_meets_a_rewrite_of_shared_history_is_a_conflict_and_ours_is_kept(team, rewriter):
    first, second = team.first, team.second
    if rewriter == "theirs":  # a teammate rewrote an old line, learned on, pushed
        line, tx = rewrite(first, team.env)
    learn(first, add("Read the error before retrying"))
    team.commit(first, "first learns")
    team.git(first)("push", "-q", "origin", "HEAD:main")
    if rewriter == "ours":  # the rewrite is in this clone, and it pulls
        line, tx = rewrite(second, team.env)
    learn(second, add("Keep functions short"))
    team.commit(second, "second learns")
    before = (second / LOG).read_bytes()

    done = team.git(second)("pull", "-q", "--no-rebase", "origin", "main", check=False)

    assert done.returncode != 0
    assert "CONFLICT" in done.stdout + done.stderr
    assert team.git(second)("diff", "--name-only", "--diff-filter=U").stdout.split() == [LOG]
    assert (second / LOG).read_bytes() == before
    assert driver_lines(done.stderr) == [
        f"playbook: cannot merge {LOG}: {rewriter} rewrites shared history at line {line} (transaction {tx}): "
        f"refused; ours is kept"]


def test_a_purge_that_rewrote_shared_history_is_refused_with_what_to_do(team):
    first, second = team.first, team.second
    done = playbook(first, "purge", "--match", "small commits", env=team.env)
    assert done.returncode == 0, done.stderr
    learn(first, add("Read the error before retrying"))
    team.commit(first, "first purges and learns")
    team.git(first)("push", "-q", "origin", "HEAD:main")
    learn(second, add("Keep functions short"))
    team.commit(second, "second learns")
    before = (second / LOG).read_bytes()
    line = next(number for number, raw in enumerate(before.splitlines(), 1) if b"small commits" in raw)

    done = team.git(second)("pull", "-q", "--no-rebase", "origin", "main", check=False)

    assert done.returncode != 0 and (second / LOG).read_bytes() == before
    [message] = driver_lines(done.stderr)
    assert f"theirs rewrites shared history at line {line} (transaction {tx_of_line(second / LOG, line)})" in message
    assert "a purge" in message and "purge the same text" in message


def _projects(root: Path) -> tuple[PlaybookRepository, PlaybookRepository]:
    """Our project and another machine's copy of its log, each of which then learned on its own."""
    ours = PlaybookRepository(root / "ours" / ".claude")
    _learn(ours, "Run the tests before committing", "Use pathlib")
    _learn(ours, OLD)
    _learn(ours, "Mock the network in unit tests")
    (root / "other" / ".claude").mkdir(parents=True)
    shutil.copyfile(ours.store.path, root / "other" / ".claude" / "playbook.events.jsonl")
    return ours, PlaybookRepository(root / "other" / ".claude")


def _learn(repo: PlaybookRepository, *texts: str) -> None:
    repo.append([ApplyOperations([{"type": "ADD", "text": t, "section": PAT} for t in texts])], Cause(source="test"))


@pytest.mark.parametrize("anchored, rewriter", [(False, "theirs"), (True, "theirs"), (True, "ours")])
def test_playbook_merge_refuses_a_copy_whose_shared_history_differs(tmp_path, anchored, rewriter):
    ours, other = _projects(tmp_path)
    project = tmp_path / "ours"
    if anchored:  # anchors recorded before the rewrite say which side still holds the history they anchored
        assert playbook(project, "anchor").returncode == 0
    line, tx = rewrite(project if rewriter == "ours" else tmp_path / "other")
    _learn(ours, "Keep functions short")
    _learn(other, "Read the error before retrying")
    before = ours.store.path.read_bytes()

    done = playbook(project, "merge", str(other.store.path))

    assert done.returncode == 1 and done.stdout == ""
    assert ours.store.path.read_bytes() == before
    where = f"at line {line} (transaction {tx})"
    if anchored:
        expected = f"{rewriter} rewrites shared history {where}: refused; ours is kept"
    else:
        expected = (f"theirs differs from ours in shared history {where}, and neither a merge base nor an anchor "
                    f"says which side rewrote it: refused; ours is kept")
    assert done.stderr == f"playbook: cannot merge {other.store.path}: {expected}\n"

    with pytest.raises(MergeRefused) as refused:
        merge_logs(ours.store.path, other.store.path, None)
    assert (refused.value.line, refused.value.tx, refused.value.side) == (line, tx, "theirs")


def _verify_anchor(project: Path) -> tuple[int, str]:
    done = playbook(project, "verify", "--anchor")
    assert "Traceback" not in done.stderr
    return done.returncode, done.stdout + done.stderr


def test_anchors_are_carried_through_a_recorded_merge_and_a_merge_nobody_recorded_is_caught(tmp_path):
    """Ours anchored its own transaction; the other machine's earlier one goes before it in the merge, so ours' anchored
    line now holds theirs. The merge's record carries the anchor; the same lines without the record, a change in the
    history both shared, or a change of a line the merge wrote once it is anchored, are each caught."""
    ours, other = _projects(tmp_path)
    project = tmp_path / "ours"
    _learn(other, "Read the error before retrying")
    _learn(ours, "Keep functions short")
    assert playbook(project, "anchor").returncode == 0
    anchored = ours.store.path.read_bytes().count(b"\n")
    done = playbook(project, "merge", str(other.store.path))
    assert done.returncode == 0, done.stderr
    log = ours.store.path
    merged = log.read_bytes()
    transactions = list(LogReader(log, strict=True))
    assert transactions[-1].commit.source == "merge" and merged.count(b"\n") > anchored
    code, said = _verify_anchor(project)
    assert code == 0 and "carried through it" in said, said

    # The same merged lines with the merge's record cut away: a rewrite that says nothing of itself.
    log.write_bytes(merged[: transactions[-2].end.offset])
    assert playbook(project, "rebuild").returncode == 0 and playbook(project, "verify").returncode == 0
    code, said = _verify_anchor(project)
    first = transactions[-1].events[0].shared_seq + 1  # theirs' transaction, where ours' anchor had its own
    assert code == 1 and f"line {first} (seq {first}) is not the line that was anchored" in said, said

    # The history both shared, rewritten under the merge: the carried anchor still pins its lines there.
    log.write_bytes(merged)
    line = forge(log, OLD, FORGED)
    assert playbook(project, "rebuild").returncode == 0 and playbook(project, "verify").returncode == 0
    code, said = _verify_anchor(project)
    assert code == 1 and f"line {line} (seq {line}) is not the line that was anchored" in said, said

    # Once the merged log is anchored, a line the merge wrote again is pinned too.
    log.write_bytes(merged)
    assert playbook(project, "rebuild").returncode == 0
    done = playbook(project, "anchor")
    assert done.returncode == 0 and "anchored line" in done.stdout, done.stderr
    assert _verify_anchor(project)[0] == 0
    line = forge(log, "Keep functions short", "Keep functions long")
    assert playbook(project, "rebuild").returncode == 0 and playbook(project, "verify").returncode == 0
    code, said = _verify_anchor(project)
    assert code == 1 and f"line {line} (seq {line}) is not the line that was anchored" in said, said


def test_a_refusal_for_a_purge_of_theirs_names_the_purge_to_run_here():
    from projections.merge import SharedHistoryRewritten

    secrets = SharedHistoryRewritten("theirs", 3, "0123abcd", "purge", 9, reason="secrets")
    assert "purge the same text in ours (`playbook purge --secrets`), then merge again" in str(secrets)
    assert "(`playbook purge --user --secrets`)" in str(secrets.run_as("playbook purge --user").about("the remote"))
    named = SharedHistoryRewritten("theirs", 3, "0123abcd", "purge", 9, reason="match")
    assert "(`playbook purge --match TEXT`, with the text purged there)" in str(named)
    ours = SharedHistoryRewritten("ours", 3, "0123abcd", "purge", 9, reason="match")
    assert str(ours).endswith("purge the same text in theirs, then merge again")
