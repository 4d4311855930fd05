"""Three clones learning at once, exchanging commits through a bare repository, in interleavings hypothesis picks.

After every exchange, on every clone that took part: no learning transaction is lost or doubled,
`playbook verify` passes and playbook.json is what a rebuild writes; before it, merging the two
logs either way folds to the same playbook, and merging again changes nothing.
PLAYBOOK_GIT_EXAMPLES raises the number of interleavings (default 3).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eventlog.domain import PlaybookState
from eventlog.store import fold_log
from projections.merge import merge_logs, write_merged
from projections.snapshot import playbook_dict
from playbook.commands.share import share
from tests.gittools import HAS_GIT, LOG, Git, assert_clean, git_env, learn, learned, playbook

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not HAS_GIT, reason="git is not installed")]

EXAMPLES = int(os.environ.get("PLAYBOOK_GIT_EXAMPLES", "3"))
SECTIONS = ("PATTERNS & APPROACHES", "MISTAKES TO AVOID", "PROJECT CONTEXT")
TEXTS = ("Run the tests first", "Prefer pathlib", "Keep commits small", "Mock the network", "Read the error")

step = st.one_of(
    st.tuples(st.just("learn"), st.integers(0, 2), st.integers(0, 10**6)),
    st.tuples(st.just("import"), st.integers(0, 2), st.integers(0, 10**6)),
    st.tuples(st.just("push"), st.integers(0, 2), st.just(0)),
    st.tuples(st.sampled_from(["pull", "pull-rebase"]), st.integers(0, 2), st.just(0)),
)


def _result(seed: int, names: list[str]) -> dict:
    """A model's extraction result, drawn from `seed`: adds (texts clash across clones on purpose), ratings,
    an update or a delete of names the clone has."""
    import random

    rng = random.Random(seed)
    operations = []
    for _ in range(rng.randint(0, 2)):
        operations.append({"type": "ADD", "text": rng.choice(TEXTS) + rng.choice(["", " (again)", f" #{seed % 7}"]),
                           "section": rng.choice(SECTIONS)})
    if names and rng.random() < 0.4:
        operations.append({"type": "UPDATE", "target_id": rng.choice(names), "text": f"Reworded {seed}"})
    if names and rng.random() < 0.2:
        operations.append({"type": "DELETE", "target_id": rng.choice(names), "reason": "outdated"})
    if len(names) >= 2 and rng.random() < 0.15:
        operations.append({"type": "MERGE", "source_ids": rng.sample(names, 2), "merged_text": f"Merged {seed}",
                           "section": rng.choice(SECTIONS)})
    ratings = [{"name": rng.choice(names), "rating": rng.choice(["helpful", "harmful", "neutral"])}
               for _ in range(rng.randint(0, 3))] if names else []
    return {"operations": operations, "evaluations": ratings}


def _names(clone: Path) -> list[str]:
    state = fold_log(clone / LOG, PlaybookState())[0]
    return sorted(state.where)


def _content(path: Path) -> dict:
    state = fold_log(path, PlaybookState())[0]
    document = playbook_dict(state)
    document.pop("last_updated")
    return document


def _show(git: Git, revision: str, target: Path) -> bool:
    done = git("show", f"{revision}:{LOG}", check=False)
    if done.returncode != 0:
        return False
    raw = subprocess.run(["git", "show", f"{revision}:{LOG}"], cwd=git.cwd, env=git.env, capture_output=True).stdout
    target.write_bytes(raw)
    return True


def _check_merge_both_ways(git: Git, clone: Path, scratch: Path) -> None:
    """merge(ours, theirs) and merge(theirs, ours) fold to the same playbook; merging again changes nothing."""
    theirs, base = scratch / "theirs.jsonl", scratch / "base.jsonl"
    if not _show(git, "origin/main", theirs):
        return
    found = git("merge-base", "HEAD", "origin/main", check=False).stdout.strip()
    ancestor = base if found and _show(git, found, base) else None
    ours = clone / LOG
    ab, ba = scratch / "ab.jsonl", scratch / "ba.jsonl"
    write_merged(merge_logs(ours, theirs, ancestor), ours, theirs, ab)
    write_merged(merge_logs(theirs, ours, ancestor), theirs, ours, ba)
    assert _content(ab) == _content(ba)
    assert merge_logs(ab, theirs, ancestor).unchanged
    assert merge_logs(ab, ours, ancestor).unchanged


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(steps=st.lists(step, min_size=4, max_size=9))
def test_three_clones_exchanging_commits_lose_nothing_and_stay_verified(steps):
    with tempfile.TemporaryDirectory(prefix="playbook-team-") as tmp:
        root = Path(tmp)
        env = git_env(root)
        Git(root, env)("init", "-q", "--bare", "-b", "main", str(root / "origin.git"))
        clones = []
        for number in range(3):
            path = root / f"c{number}"
            Git(root, env)("clone", "-q", str(root / "origin.git"), str(path))
            clones.append(path)
        first = clones[0]
        Git(first, env)("checkout", "-q", "-b", "main")
        learn(first, {"operations": [{"type": "ADD", "text": "Shared start", "section": SECTIONS[0]}]})
        share(first)
        Git(first, env)("add", "-A")
        Git(first, env)("commit", "-q", "-m", "share")
        Git(first, env)("push", "-q", "origin", "HEAD:main")
        known = [set(learned(first)), set(), set()]
        for clone in clones[1:]:
            Git(clone, env)("pull", "-q", "origin", "main")
            assert playbook(clone, "show", env=env).returncode == 0  # registers the driver and the git hooks
            known[clones.index(clone)] = set(known[0])
        origin = set(known[0])
        scratch = root / "scratch"
        scratch.mkdir()
        legacy = root / "legacy.json"

        for kind, index, seed in steps:
            clone, git = clones[index], Git(clones[index], env)
            if kind in ("learn", "import"):
                before = set(learned(clone))
                if kind == "learn":
                    learn(clone, _result(seed, _names(clone)))
                else:  # through the CLI: a teammate imports a playbook file
                    legacy.write_text(json.dumps({"key_points": [f"Imported tip {seed}"]}))
                    done = playbook(clone, "import", str(legacy), env=env)
                    assert done.returncode == 0, done.stderr
                git("add", "-A")
                git("commit", "-q", "-m", f"{kind} {seed}", check=False)
                new = set(learned(clone)) - before
                assert len(new) <= 1
                known[index] |= new
            elif kind == "push":
                if git("push", "-q", "origin", "HEAD:main", check=False).returncode == 0:
                    origin = set(known[index])
            else:
                git("fetch", "-q", "origin")
                _check_merge_both_ways(git, clone, scratch)
                mode = "--rebase" if kind == "pull-rebase" else "--no-rebase"
                done = git("pull", "-q", mode, "origin", "main", check=False)
                assert done.returncode == 0, done.stdout + done.stderr
                known[index] |= origin
                assert git("status", "--porcelain").stdout == ""
            counts = learned(clone)
            assert set(counts.values()) <= {1}, "a transaction appears twice"
            assert set(counts) == known[index], "a transaction was lost or appeared from nowhere"
            assert_clean(clone)
        shutil.rmtree(scratch)
