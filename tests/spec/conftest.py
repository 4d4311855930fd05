"""Fixtures shared by the spec acceptance tests; plain helpers are in helpers.py."""

import pytest

from tests.spec.helpers import claude_dir


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A fresh project directory per test: CLAUDE_PROJECT_DIR and the working directory point at it.

    Not autouse: test_sections, test_scoring and test_curator switch it on for every test with
    `pytestmark = pytest.mark.usefixtures("project")`. test_invariants must not get it: its
    Hypothesis tests share one module-scoped project directory (its own `project_dir` fixture).
    """
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def diag_mode(project):
    """The project with diagnostic mode switched on (.claude/diagnostic_mode exists)."""
    d = claude_dir(project)
    d.mkdir(parents=True, exist_ok=True)
    (d / "diagnostic_mode").write_text("", encoding="utf-8")
    return project
