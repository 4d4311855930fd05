"""The plugin installed Claude Code's way, with the real CLI (pinned) and the fake Messages API.

In a scratch HOME: `claude plugin marketplace add <repository>`, `claude plugin install`, then
sessions with no PLAYBOOK_PYTHON and no prepared environment. The first session starts the
plugin's set-up in the background and shows no traceback anywhere; once it is ready a session gets
the playbook and, at its end, learns. The project holds look-alike `playbook/`, `msgspec/`, ...
packages and puts itself on PYTHONPATH through its settings: none of them may run.
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

from projections.repository import PlaybookRepository
from tests.fake_anthropic import FakeAnthropic, Reply, reply_text, reply_tool_use, request_texts
from tests.test_e2e_claude_code import CLAUDE, CURATION, claude_code_requests, respond, wait_for_learning
from tests.test_hooks_isolation import plant_packages, tracked_copy
from tests.test_system_python import bin_without_ensurepip  # noqa: F401  (a fixture)

ROOT = Path(__file__).resolve().parent.parent
MARKETPLACE = json.loads((ROOT / ".claude-plugin" / "marketplace.json").read_text())
PLUGIN = f"{MARKETPLACE['plugins'][0]['name']}@{MARKETPLACE['name']}"
UV = shutil.which("uv") or shutil.which("uv", path=os.path.dirname(sys.executable))

pytestmark = [pytest.mark.slow, pytest.mark.skipif((CLAUDE is None or UV is None) and os.environ.get("CI") != "true",
                                reason="needs Claude Code (npm install @anthropic-ai/claude-code) and uv")]


BASE_PYTHON = getattr(sys, "_base_executable", sys.executable)  # in CI a pyenv build, as a python.org one
SYSTEM_PYTHON = "/usr/bin/python3"


def probe(python: str, code: str) -> bool:
    try:
        return subprocess.run([python, "-I", "-c", code], capture_output=True, timeout=60).returncode == 0
    except OSError:
        return False


def system_python() -> str:
    """The distribution's own python3 (Debian's and Ubuntu's patch `site`, and ship ensurepip apart), when it is
    a Python 3.11+; else the test is skipped."""
    if not (os.access(SYSTEM_PYTHON, os.X_OK)
            and probe(SYSTEM_PYTHON, "import sys; assert sys.version_info >= (3, 11)")):
        pytest.skip(f"no Python 3.11+ at {SYSTEM_PYTHON}")
    return SYSTEM_PYTHON


# The interpreters users have, and what the set-up then installs with (as its log shows: `$ <program> ...`).
ROUTES = {
    "base python, uv": ("base", "uv"),
    f"{SYSTEM_PYTHON} with pip, no uv": ("system", "pip"),
    f"{SYSTEM_PYTHON} without ensurepip, uv": ("system without ensurepip", "uv"),
}


def route_python(python: str, request: pytest.FixtureRequest) -> str:
    if python == "base":
        return BASE_PYTHON
    system = system_python()
    if python == "system without ensurepip":  # Debian's and Ubuntu's python3 without python3-venv
        return str(Path(request.getfixturevalue("bin_without_ensurepip")) / "python3")
    if not (probe(system, "import ensurepip") or probe(system, "import pip")):
        pytest.skip(f"{system} has neither pip nor ensurepip (python3-venv)")
    return system


def tool_path(tmp_path: Path, python3: str = BASE_PYTHON, uv: bool = True) -> str:
    """PATH with Claude Code, uv (unless not wanted) and a bare python3 (by default the interpreter this venv was
    made from), and no interpreter that has this project installed."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    assert CLAUDE is not None and UV is not None
    for name, target in (("claude", CLAUDE), ("uv", UV if uv else None), ("python3", python3)):
        if target is not None:
            (bin_dir / name).symlink_to(target)
    assert uv or not any(os.access(f"{directory}/uv", os.X_OK) for directory in ("/usr/bin", "/bin"))
    return f"{bin_dir}:/usr/bin:/bin"


def network_env() -> dict[str, str]:
    """The machine's proxy and certificate settings, which a user's Claude Code passes to its hooks too."""
    return {k: v for k, v in os.environ.items()
            if k.upper().endswith(("PROXY", "_CA_BUNDLE", "_CA_CERTS")) or k.startswith(("SSL_CERT", "PIP_", "UV_"))}


SHOW_PROMPT = "Run playbook show for me."


def respond_with_the_cli(body: dict) -> Reply:
    """The model of the sessions: asked to, it runs `playbook show` through the Bash tool."""
    text = request_texts(body)
    last = (body.get("messages") or [{}])[-1]
    if SHOW_PROMPT in text and "You are the reflector" not in text and "You are the curator" not in text:
        if any(isinstance(block, dict) and block.get("type") == "tool_result" for block in last.get("content") or []):
            return reply_text("That is the playbook.")
        return reply_tool_use("Bash", {"command": "playbook show", "description": "Show the playbook"})
    return respond(body)


@pytest.mark.parametrize("route", ROUTES)
def test_the_plugin_installs_from_its_marketplace_sets_itself_up_and_learns(tmp_path, route, request):
    python, installer = ROUTES[route]
    python3 = route_python(python, request)
    home, project, markers = tmp_path / "home", tmp_path / "project", tmp_path / "markers"
    config = home / ".claude"
    for directory in (home, project / ".claude", markers):
        directory.mkdir(parents=True)
    repository = tracked_copy(tmp_path / "repository")
    env = network_env() | {"PATH": tool_path(tmp_path, python3, uv=installer == "uv"), "HOME": str(home),
           "CLAUDE_CONFIG_DIR": str(config), "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
           "DISABLE_AUTOUPDATER": "1", "LANG": "C.UTF-8",
           # The set-up downloads from PyPI once; tests share uv's and pip's caches so later runs do not.
           "UV_CACHE_DIR": os.environ.get("UV_CACHE_DIR") or str(Path.home() / ".cache" / "uv"),
           "PIP_CACHE_DIR": os.environ.get("PIP_CACHE_DIR") or str(Path.home() / ".cache" / "pip"),
           "UV_PYTHON_DOWNLOADS": "never"}

    def claude(*args: str, **extra: str) -> subprocess.CompletedProcess:
        return subprocess.run(["claude", *args], cwd=project, env=env | extra, capture_output=True, text=True,
                              timeout=180)

    added = claude("plugin", "marketplace", "add", str(repository))
    assert added.returncode == 0, added.stdout + added.stderr
    installed = claude("plugin", "install", PLUGIN)
    assert installed.returncode == 0, installed.stdout + installed.stderr

    (project / ".claude" / "playbook.json").write_text(json.dumps(
        {"version": "1.0", "sections": {"PROJECT CONTEXT": [
            {"name": "ctx-001", "text": "the API lives in server/", "helpful": 2, "harmful": 0}]}}))
    (project / ".claude" / "playbook.settings.json").write_text(json.dumps({"playbook_update_on_exit": True}))
    (project / ".claude" / "settings.json").write_text(json.dumps({"env": {"PYTHONPATH": str(project)}}))
    plant_packages(project, markers)
    data = config / "plugins" / "data"

    with FakeAnthropic(respond_with_the_cli) as api:
        api_env = {"ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "sk-test-e2e"}
        first = claude("-p", "Where is the API?", "--output-format", "json", **api_env)
        assert first.returncode == 0, first.stderr
        assert "Traceback" not in first.stdout + first.stderr
        ready = wait_for_ready(data)
        notices = [record for record in transcript_records(config)
                   if record.get("attachment", {}).get("type") == "hook_success"
                   and "setting up its Python environment" in record["attachment"].get("stdout", "")]
        assert len(notices) == 1, "the first session says, once, that the plugin is setting itself up"

        second = claude("-p", "Where is the API now?", "--output-format", "json", **api_env)
        assert second.returncode == 0, second.stderr
        assert any("[ctx-001] helpful=2 harmful=0 :: the API lives in server/" in t
                   for t in claude_code_requests(api)[-1:]), "the second session is given the playbook"
        repo = PlaybookRepository(project / ".claude")
        wait_for_learning(repo, 1)

        # The plugin's bin/ is on the PATH of Claude Code's shell: `playbook` runs in its environment.
        shown = claude("-p", SHOW_PROMPT, "--allowedTools", "Bash(playbook:*)", "--output-format", "json", **api_env)
        assert shown.returncode == 0, shown.stderr
        tool_output = json.dumps([block.get("content") for block in api.message_bodies()[-1]["messages"][-1]["content"]
                                  if isinstance(block, dict) and block.get("type") == "tool_result"])
        assert "log at seq" in tool_output and "the API lives in server/" in tool_output, tool_output

    # The learned preference is the user's: in the user-level playbook under CLAUDE_CONFIG_DIR.
    snapshot = json.loads((config / "playbook" / "playbook.json").read_text())
    added_text = CURATION["operations"][0]["text"]
    assert [e["text"] for e in snapshot["sections"]["USER PREFERENCES"]] == [added_text]
    outputs = [first.stdout, first.stderr, second.stdout, second.stderr, shown.stdout, shown.stderr,
               (ready.parent / "setup.log").read_text(), (project / ".claude" / "playbook.learn.log").read_text(),
               *(json.dumps(record) for record in transcript_records(config))]
    assert not [text for text in outputs if "Traceback" in text]
    assert sorted(p.name for p in markers.iterdir()) == []
    programs = {os.path.basename(line.split()[1]) for line in (ready.parent / "setup.log").read_text().splitlines()
                if line.startswith("$ ")}
    assert ("uv" in programs) == (installer == "uv"), programs


def test_the_installed_plugin_holds_only_what_it_runs_even_from_a_used_clone(tmp_path):
    """A clone where README's commands ran (its .venv, the test tools, caches): Claude Code copies the
    marketplace's plugin folder into its cache, and none of that comes with it."""
    home = tmp_path / "home"
    home.mkdir()
    repository = tracked_copy(tmp_path / "repository")
    (repository / ".venv" / "lib").mkdir(parents=True)
    (repository / ".venv" / "lib" / "wheel.so").write_bytes(os.urandom(20 * 2**20))
    (repository / ".venv" / "bin").mkdir()
    (repository / ".venv" / "bin" / "python").symlink_to(BASE_PYTHON)
    for junk in (".ci-node/node_modules/claude.exe", ".ci-venv/pyvenv.cfg", ".pytest_cache/v/cache/lastfailed",
                 "__pycache__/conftest.cpython-311.pyc", "tests/__pycache__/test_x.cpython-311.pyc",
                 ".mypy_cache/3.11/cache.db", "event_sourced_playbook.egg-info/PKG-INFO",
                 # Bytecode beside the packages comes along (the links name whole folders): the interpreter's own
                 # cache, checked against the sources it was compiled from.
                 "playbook/__pycache__/api.cpython-311.pyc"):
        (repository / junk).parent.mkdir(parents=True, exist_ok=True)
        (repository / junk).write_bytes(os.urandom(2**20))
    env = {"PATH": tool_path(tmp_path), "HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude"),
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1", "LANG": "C.UTF-8"}
    for args in (("marketplace", "add", str(repository)), ("install", PLUGIN)):
        done = subprocess.run(["claude", "plugin", *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=180)
        assert done.returncode == 0, done.stdout + done.stderr

    [installed] = (home / ".claude" / "plugins" / "cache").glob("*/*/*")
    files = [path for path in installed.rglob("*") if path.is_file()]
    assert sum(path.stat().st_size for path in files) < 10 * 2**20
    assert sorted(path.name for path in installed.iterdir()) == sorted(
        [".claude-plugin", "LICENSE", "bin", "commands", "evals", "eventlog", "hooks", "playbook", "projections",
         "prompts", "pyproject.toml"])
    assert not [path for path in installed.rglob("*") if path.is_symlink() or path.name == "pyvenv.cfg"]
    assert not (installed / "tests").exists() and not (installed / "benchmarks").exists()
    # What the set-up and the hooks read: real files, the Python packages with them.
    for name in ("pyproject.toml", ".claude-plugin/plugin.json", "hooks/hooks.json", "hooks/playbook-hook",
                 "bin/playbook", "playbook/quick/launch.py", "playbook/wiring/provision.py", "eventlog/__init__.py",
                 "projections/__init__.py", "prompts/curator.txt", "playbook/rendering/web",
                 "evals/scaffold.sh", "evals/project-context/test-command/case.yaml"):
        assert (installed / name).exists(), name
    assert all(os.access(installed / name, os.X_OK) for name in ("hooks/playbook-hook", "bin/playbook"))


def wait_for_ready(data: Path, timeout: float = 240) -> Path:
    """The plugin's environment (its venv under the data directory) once its set-up has finished."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        stamps = list(data.glob("*/venv/playbook-ready"))
        if stamps:
            return stamps[0].parent
        failed = list(data.glob("*/setup-failed.json"))
        assert not failed, failed[0].read_text() + (failed[0].parent / "setup.log").read_text()
        time.sleep(0.05)
    logs = "".join(log.read_text() for log in data.glob("*/setup.log"))
    raise AssertionError(f"the plugin's environment was not set up in {timeout} s: {logs}")


def transcript_records(config: Path) -> list[dict]:
    records = []
    for path in (config / "projects").rglob("*.jsonl"):
        records += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return records


def test_claude_plugin_validate_finds_nothing_to_fix(tmp_path):
    """No problem, no warning, no finding of the plugin directory's checks, even with --strict: in the
    marketplace (the clone) and in the plugin folder it names."""
    assert CLAUDE is not None
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "DISABLE_AUTOUPDATER": "1"}

    def validate(*args: str) -> dict:
        result = subprocess.run([CLAUDE, "plugin", "validate", "--strict", "--json", *args], env=env,
                                capture_output=True, text=True, timeout=120)
        report = json.loads(result.stdout)
        assert result.returncode == 0 and report["success"], result.stdout
        return report

    marketplace = validate(str(ROOT))
    assert (marketplace["manifest"]["type"], marketplace["manifest"]["errors"], marketplace["manifest"]["warnings"]) \
        == ("marketplace", [], [])
    assert MARKETPLACE["plugins"][0]["source"] == "./plugin"
    report = validate("--profile", "directory", str(ROOT / "plugin"))
    assert [content["warnings"] for content in report["contents"] if content["warnings"]] == []
    assert (report["manifest"]["errors"], report["manifest"]["warnings"]) == ([], [])
    assert report["directory"]["findings"] == [] and report["directory"]["undecided"] == []
    assert report["hosts"]["declared"]["plugin"] is True  # the model API, and PyPI for the set-up
    assert {h["host"] for h in report["hosts"]["named"]} >= {"api.anthropic.com", "pypi.org", "files.pythonhosted.org"}
