"""Bootstrap finds a project's past sessions where Claude Code writes them: `projects/<the encoded path>/`."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from playbook.learner.bootstrap import transcripts_dir
from projections.quickroads import project_slug
from tests.fake_anthropic import FakeAnthropic, reply_text
from tests.test_e2e_claude_code import CLAUDE

pytestmark = pytest.mark.slow  # starts processes, a browser or Claude Code, or runs a campaign

# Directory names Claude Code 2.1.328 wrote for these working directories (observed with `claude -p`).
OBSERVED = {
    "/tmp/enc/work/my.proj_dir name é": "-tmp-enc-work-my-proj-dir-name--",
    "/tmp/enc/work2/emoji 😀 ü": "-tmp-enc-work2-emoji-----",
    "/tmp/enc/work2/" + "/".join(["a.b_c dé" * 5] * 6):
        "-tmp-enc-work2-a-b-c-d-a-b-c-d-a-b-c-d-a-b-c-d-a-b-c-d--a-b-c-d-a-b-c-d-a-b-c-d-a-b-c-d-a-b-c-d--a-b-c-d-a-b-"
        "c-d-a-b-c-d-a-b-c-d-a-b-c-d--a-b-c-d-a-b-c-d-a-b-c-d-a-b-c-d-a-b-c-d--a-b-c-d-a-b-c-d-a-b-c-ua30bp",
}


@pytest.mark.parametrize("path", list(OBSERVED))
def test_the_encoding_is_claude_codes(path: str) -> None:
    assert project_slug(path) == OBSERVED[path]


def test_a_long_path_is_cut_at_200_and_named_by_its_hash() -> None:
    slug = project_slug("/" + "x" * 300)
    assert slug.startswith("-" + "x" * 199 + "-") and len(slug) > 201
    assert project_slug("/" + "x" * 299 + "y")[:200] == slug[:200] and project_slug("/" + "x" * 299 + "y") != slug


def test_an_older_claude_codes_directory_is_still_found(tmp_path: Path) -> None:
    project = tmp_path / "my.project"
    project.mkdir()
    older = tmp_path / "config" / "projects" / str(project.resolve()).replace(os.sep, "-")
    older.mkdir(parents=True)
    assert transcripts_dir(project, tmp_path / "config") == older


@pytest.mark.skipif(CLAUDE is None and os.environ.get("CI") != "true", reason="Claude Code is not installed")
def test_a_real_claude_code_session_is_where_bootstrap_looks(tmp_path: Path) -> None:
    """A session started through a link, in a directory named with `.`, `_`, a space, é and an emoji."""
    assert CLAUDE is not None, "Claude Code must be installed in CI"
    project, home = tmp_path / "my.proj_dir name é 😀", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    (tmp_path / "link").symlink_to(project)
    with FakeAnthropic(lambda body: reply_text("ok")) as api:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE", "PLAYBOOK_"))}
        env |= {"HOME": str(home), "ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "sk-test-e2e",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}
        done = subprocess.run([CLAUDE, "-p", "hello", "--output-format", "json"], cwd=tmp_path / "link", env=env,
                              capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    written = [path.parent for path in (home / ".claude" / "projects").glob("*/*.jsonl")]
    assert written == [transcripts_dir(tmp_path / "link", home / ".claude")], written
