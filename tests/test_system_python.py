"""The plugin and the hooks on the distribution's own Python (Debian's and Ubuntu's /usr/bin/python3).

Their `site` is patched: `site.getsitepackages` names a virtual environment's site-packages only once
`site` has run, which the hooks skip (`-I -S`), so a launcher asking it found none of the dependencies.
Their `ensurepip` comes apart from Python (python3.X-venv), without which `venv` fails half way. Driven
as Claude Code runs them: `sh plugin/hooks/playbook-hook EVENT`, `sh plugin/bin/playbook ...`, `python -I -S launch.py`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.test_plugin_setup import only, run_hook, wait_for_failure

pytestmark = pytest.mark.slow  # builds virtual environments from the distribution's python3

ROOT = Path(__file__).resolve().parent.parent
SYSTEM_PYTHON = "/usr/bin/python3"
LEARNING_EVENTS = ("SessionEnd", "PreCompact", "SubagentStop")


def _probe(python: str, code: str) -> bool:
    try:
        return subprocess.run([python, "-I", "-c", code], capture_output=True, timeout=60).returncode == 0
    except OSError:
        return False


SYSTEM = os.access(SYSTEM_PYTHON, os.X_OK) and _probe(SYSTEM_PYTHON,
                                                      "import sys, venv; assert sys.version_info >= (3, 11)")
needs_system_python = pytest.mark.skipif(not SYSTEM, reason=f"no Python 3.11+ with venv at {SYSTEM_PYTHON}")


def dependencies() -> list[str]:
    import tomllib

    return list(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"])


@pytest.fixture(scope="module")
def system_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtual environment of the system Python holding the project's dependencies (not the project: the
    launcher finds it beside itself, as the plugin's does)."""
    venv = tmp_path_factory.mktemp("system") / "venv"
    subprocess.run([SYSTEM_PYTHON, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "--quiet",
                    "--disable-pip-version-check", *dependencies()], check=True, timeout=600)
    return venv


def launch(python: Path, *args: str, cwd: Path, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(cwd), "CLAUDE_PROJECT_DIR": str(cwd), "LANG": "C.UTF-8"}
    return subprocess.run([str(python), "-I", "-S", str(ROOT / "playbook" / "quick" / "launch.py"), *args], input=stdin,
                          capture_output=True, cwd=cwd, env=env, timeout=60)


@needs_system_python
def test_the_command_starts_under_I_S_in_a_venv_of_the_system_python(system_venv: Path, tmp_path: Path) -> None:
    done = launch(system_venv / "bin" / "python", "--help", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(b"usage: playbook") and done.stderr == b""


@needs_system_python
@pytest.mark.parametrize("event", LEARNING_EVENTS)
def test_a_learning_hook_starts_under_I_S_in_a_venv_of_the_system_python(system_venv: Path, tmp_path: Path,
                                                                         event: str) -> None:
    done = launch(system_venv / "bin" / "python", "hook", event, cwd=tmp_path, stdin=b"{}")
    assert done.returncode == 0 and done.stdout == b""
    assert b"cannot start" not in done.stderr, done.stderr
    # The full hook's own word on its input: it imported the log's machinery and read what it was given.
    assert done.stderr == f"playbook: {event}: no transcript_path in the hook input; nothing to learn\n".encode()


def wait_for_ready(data: Path, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (data / "venv" / "playbook-ready").exists():
            return
        assert not (data / "setup-failed.json").exists(), (data / "setup.log").read_text()
        time.sleep(0.05)
    raise AssertionError("the set-up did not finish: " + (data / "setup.log").read_text())


@needs_system_python
@pytest.mark.skipif(SYSTEM and not (_probe(SYSTEM_PYTHON, "import ensurepip")
                                    or _probe(SYSTEM_PYTHON, "import pip")),
                    reason=f"{SYSTEM_PYTHON} has neither pip nor ensurepip (python3-venv)")
def test_the_plugin_set_up_on_the_system_python_learns_and_runs_its_command(tmp_path: Path) -> None:
    """Ready means a hook starts: the plugin's environment, set up by its own hook with the system Python
    and no uv, runs every learning hook and the `playbook` command Claude Code's shell has."""
    project, data = tmp_path / "project", tmp_path / "data"
    (project / ".claude").mkdir(parents=True)
    path = only(tmp_path, python3=SYSTEM_PYTHON)
    # The machine's index and proxy settings, and its pip cache: the set-up downloads from PyPI.
    network = {k: v for k, v in os.environ.items() if k.upper().endswith(("PROXY", "_CA_BUNDLE")) or
               k.startswith(("PIP_", "SSL_CERT"))}
    network.setdefault("PIP_CACHE_DIR", str(Path.home() / ".cache" / "pip"))
    first = run_hook("SessionStart", project, data, path, **network)
    assert first.returncode == 0 and b"setting up its Python environment" in first.stdout
    wait_for_ready(data)
    for event in LEARNING_EVENTS:
        done = run_hook(event, project, data, path)
        assert done.returncode == 0 and b"cannot start" not in done.stderr, done.stderr
        assert b"not ready" not in done.stderr, done.stderr
    assert (data / "venv" / "playbook-site-packages").read_text().strip()
    env = {"PATH": f"{path}:/usr/bin:/bin", "HOME": str(tmp_path / "home"), "CLAUDE_PLUGIN_DATA": str(data),
           "LANG": "C.UTF-8"}
    shown = subprocess.run(["/bin/sh", str(ROOT / "plugin/bin/playbook"), "--project", str(project), "log", "--json"],
                           capture_output=True, cwd=project, env=env, timeout=60)
    assert shown.returncode == 0 and shown.stderr == b"", shown.stderr
    json.loads(shown.stdout)


@pytest.fixture
def bin_without_ensurepip(tmp_path: Path) -> str:
    """The bin/ of the system Python as Debian ships it without python3.X-venv and python3-pip: its binary
    beside a standard library that lacks ensurepip, and no site-packages. On PATH as it is, so that what
    `venv` makes of it finds this standard library too."""
    if not SYSTEM:
        pytest.skip(f"no Python 3.11+ at {SYSTEM_PYTHON}")
    real = os.path.realpath(SYSTEM_PYTHON)
    stdlib = Path(subprocess.run([real, "-I", "-c", "import sysconfig; print(sysconfig.get_path('stdlib'))"],
                                 capture_output=True, text=True, check=True).stdout.strip())
    prefix = tmp_path / "bare"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "lib" / stdlib.name).mkdir(parents=True)
    for entry in stdlib.iterdir():
        if entry.name not in ("ensurepip", "site-packages", "dist-packages"):
            (prefix / "lib" / stdlib.name / entry.name).symlink_to(entry)
    python = prefix / "bin" / os.path.basename(real)
    shutil.copy2(real, python)
    if python.name != "python3":
        (prefix / "bin" / "python3").symlink_to(python.name)
    if not _probe(str(python), "import venv") or _probe(str(python), "import ensurepip") \
            or _probe(str(python), "import pip"):
        pytest.skip("the system Python does not run from a copy of its binary beside a standard library")
    return str(prefix / "bin")


@pytest.mark.parametrize("left_over", [False, True], ids=["first set-up", "after a venv left half made"])
def test_a_python_without_ensurepip_and_no_uv_names_the_package_to_install(tmp_path: Path, bin_without_ensurepip: str,
                                                                           left_over: bool) -> None:
    project, data, path = tmp_path / "project", tmp_path / "data", bin_without_ensurepip
    (project / ".claude").mkdir(parents=True)
    if left_over:  # what `venv` leaves when ensurepip is missing, and an earlier set-up kept
        subprocess.run([f"{path}/python3", "-m", "venv", "--without-pip", str(data / "venv")], check=True)
    first = run_hook("SessionStart", project, data, path)
    assert first.returncode == 0 and first.stderr == b""
    failure = wait_for_failure(data)
    version = subprocess.run([f"{path}/python3", "-I", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    assert f"sudo apt install python{version}-venv" in failure["error"], failure["error"]
    assert "\n" not in failure["error"] and "Traceback" not in (data / "setup.log").read_text()
    assert not (data / "venv").exists(), "no environment is left half made"
    second = json.loads(run_hook("SessionStart", project, data, path).stdout)
    assert failure["error"] in second["systemMessage"]
