"""Test settings shared by every test module."""

import os

import pytest
from hypothesis import settings

# In CI, hypothesis draws the same examples every run, so main stays green unless the code changes;
# locally it explores anew each time (that is where new counterexamples are found).
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
if os.environ.get("CI") == "true":
    settings.load_profile("ci")

# Learners started by the tests reach a model only through the fake API a test sets up: without a
# key they would otherwise find the real Claude Code CLI on PATH and learn through it. The tests of
# that backend name the CLI themselves.
os.environ.setdefault("PLAYBOOK_CLAUDE", "")


@pytest.fixture(autouse=True)
def _user_level_playbook(tmp_path_factory, monkeypatch):
    """Every test gets a user-level playbook directory of its own, never the machine's ~/.claude/playbook;
    and learned USER PREFERENCES stay in the project's playbook, which is what the learning tests look at
    (the tests of the user-level playbook turn this off)."""
    monkeypatch.setenv("PLAYBOOK_USER_DIR", str(tmp_path_factory.mktemp("user-level") / "playbook"))
    monkeypatch.setenv("PLAYBOOK_PREFERENCES_PER_PROJECT", "1")
