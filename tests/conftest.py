"""Test settings shared by every test module."""

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings

# The tests' files go to a RAM disk when the machine has one and the run named no place of its own: thousands of
# appends each end in fsync, which on a disk costs a millisecond or more and on tmpfs nothing. What the tests
# check does not rest on a disk's timing (a crash here is a killed process, not a lost power supply).
_RAM = Path("/dev/shm")
if "TMPDIR" not in os.environ and _RAM.is_dir() and os.access(_RAM, os.W_OK) and shutil.disk_usage(_RAM).free > 2**31:
    os.environ["TMPDIR"] = str(_RAM)  # the processes the tests start keep their temporary files there too
    tempfile.tempdir = None  # asked again at the next use

# pytest keeps the test modules it rewrote for their asserts, as it does by default, also where the environment
# asks Python to write no bytecode: rewriting all of them again costs every worker some ten seconds a run.
sys.dont_write_bytecode = False

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


# Modules whose module-scoped fixture builds something large (a virtual environment of the system Python, a log of
# 200,000 events, an anchored log and its copy, a browser), or that import something large (the Anthropic SDK, 2 s of
# CPU): each runs whole on one pytest-xdist worker, so that is built or imported once a run; the scheduler hands out its largest units first (by number of tests), so no worker is left
# with one of them at the end while the other has nothing to do.
ONE_WORKER_MODULES = ("tests/test_system_python.py", "tests/test_crash_campaign.py", "tests/test_interrupts.py",
                      "tests/test_page.py", "tests/test_fake_anthropic.py")


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist, which a run may leave out
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    if config.getvalue("dist") != "load":
        return None  # a distribution the run asked for by name
    from xdist.scheduler import LoadScopeScheduling

    class ModulesWholeElseEachTest(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return module if module in ONE_WORKER_MODULES else nodeid

    return ModulesWholeElseEachTest(config, log)
