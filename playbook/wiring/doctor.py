"""`playbook doctor`: whether what the hooks need works, one check per part, each with its fix.

Each check is a small function of the `Setting` it runs in, returning `Check`s: its name, whether it
is fine, what it found, the fix when it is not, and whether that keeps learning or injection from
working at all (`blocks`, which makes the command exit 1). The parts outside the project come first:
the hooks' Pythons as the hooks start them, how the hooks are wired into Claude Code, the backend;
then the project's own (`playbook.wiring.doctor_project`, which runs them all in order): learning,
the budget, the files, the log and the injection. Nothing here writes a file; the one check that costs a network call (the API's
models endpoint, which costs no tokens) is skipped `offline`.
"""

from __future__ import annotations

import glob
import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import msgspec

from projections.config import read_settings, user_config_dir

PLUGIN = "event-sourced-playbook"
"""The plugin's name in `enabledPlugins` (`<plugin>@<marketplace>`) and in its data directory's name."""
ROOT = str(Path(__file__).resolve().parents[2])
"""The directory this package runs from: where the tool's own hooks find it."""
MIN_PYTHON = (3, 11)
PROBE_TIMEOUT = 60.0
PROBE = (
    "import sys\n"
    "root = sys.argv[1]\n"
    "if root:\n"
    "    sys.path.insert(0, root)\n"
    "    from playbook.quick.launcher import search_path\n"
    "    found = search_path()\n"
    "    sys.path[:] = found + [entry for entry in sys.path if entry not in found]\n"
    "import msgspec, playbook.wiring.hooks\n"
    "print(*sys.version_info[:3], msgspec.__version__)\n"
)
"""What a hook imports, found as `playbook/quick/launch.py` finds it (`-I -S`, the package beside the script);
for a hook command of an older shape, with no script, what `-I` alone finds."""


class Check(msgspec.Struct, frozen=True):
    """One line of the doctor's report."""

    name: str
    ok: bool
    detail: str
    fix: str = ""
    blocks: bool = False
    """Failing, it keeps learning or injection from working: the command exits 1."""


class Setting(msgspec.Struct, frozen=True):
    """What every check runs against: the project, the environment the hooks get, and whether to stay offline."""

    project: Path
    env: Mapping[str, str]
    offline: bool = False


def ok(name: str, detail: str) -> Check:
    return Check(name, True, detail)


def failed(name: str, detail: str, fix: str, blocks: bool = True) -> Check:
    return Check(name, False, detail, fix, blocks)


# --- the hooks' Pythons ------------------------------------------------------------------------------------


class Interpreter(msgspec.Struct, frozen=True):
    """A Python a hook runs, the package root it runs the hook scripts from, and who uses it."""

    python: str
    root: str | None
    users: tuple[str, ...]
    hooks: bool
    """Hooks run it (else it is only this command's own)."""
    fix: str
    """What mends it, for the way it was chosen."""


def probe(python: str, root: str | None) -> tuple[bool, str]:
    """Start `python` as a hook starts it and load what a hook loads: (True, "3.12.1, msgspec 0.19.0"), or
    (False, why not)."""
    found = shutil.which(python)  # PLAYBOOK_PYTHON may name a command on PATH, as the hook script runs it
    if found is None:
        return False, f"{python} is not there (or not executable)"
    python = found
    # Without PYTHON* variables, as the hooks' `-I` ignores them: a project can set PYTHONPATH for its hooks.
    env = {name: value for name, value in os.environ.items() if not name.startswith("PYTHON")}
    try:
        done = subprocess.run([python, "-I", *(["-S"] if root else []), "-c", PROBE, root or ""],
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=PROBE_TIMEOUT,
                              env=env, cwd=os.path.dirname(os.path.abspath(python)) or "/")
    except (OSError, subprocess.SubprocessError) as exc:
        return False, f"{python} does not start: {exc}"
    lines = [line.strip() for line in (done.stderr or done.stdout).splitlines() if line.strip()]
    if done.returncode != 0:
        return False, f"{python}: {lines[-1] if lines else f'exit {done.returncode}'}"
    parts = done.stdout.split()
    if len(parts) != 4 or not all(part.isdigit() for part in parts[:3]):
        return False, f"{python}: an unexpected answer ({done.stdout.strip()[:80]!r})"
    version = tuple(int(part) for part in parts[:3])
    if version[:2] < MIN_PYTHON:
        return False, f"{python} is Python {'.'.join(parts[:3])}; the playbook needs {'.'.join(map(str, MIN_PYTHON))}+"
    return True, f"{python}, Python {'.'.join(parts[:3])}, msgspec {parts[3]}"


def settings_files(setting: Setting) -> list[Path]:
    """Claude Code's settings files whose hooks and plugins apply to the project, in the order they apply."""
    claude = setting.project / ".claude"
    return [user_config_dir() / "settings.json", claude / "settings.json", claude / "settings.local.json"]


def installed_hooks(path: Path) -> dict[str, list[str]]:
    """Our hooks' commands in the settings file `path`, by event (`playbook install` writes them)."""
    from .install import is_ours

    found: dict[str, list[str]] = {}
    hooks = read_settings(path).get("hooks")
    for event, groups in (hooks.items() if isinstance(hooks, dict) else []):
        for group in groups if isinstance(groups, list) else []:
            for hook in group.get("hooks", []) if isinstance(group, dict) else []:
                if is_ours(hook):
                    found.setdefault(event, []).append(hook["command"])
    return found


def plugin_enabled(setting: Setting) -> bool:
    """Whether the plugin is on for the project: run through the plugin's own `bin/playbook` (which Claude Code puts
    on its shell's PATH only while the plugin is on, `--plugin-dir` included), or `enabledPlugins` of the settings
    files, the last that names it."""
    if setting.env.get("PLAYBOOK_PLUGIN_ROOT"):
        return True
    enabled = False
    for path in settings_files(setting):
        plugins = read_settings(path).get("enabledPlugins")
        for key, value in (plugins.items() if isinstance(plugins, dict) else []):
            if isinstance(key, str) and key.split("@")[0] == PLUGIN and isinstance(value, bool):
                enabled = value
    return enabled


def plugin_data_dirs(setting: Setting) -> list[str]:
    """Where the plugin's environment may be: Claude Code's data directory for it, else the user's cache."""
    env = setting.env
    found = [env["CLAUDE_PLUGIN_DATA"]] if env.get("CLAUDE_PLUGIN_DATA") else []
    found += sorted(glob.glob(os.path.join(glob.escape(str(user_config_dir())), "plugins", "data", f"{PLUGIN}-*")))
    cache = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    found.append(os.path.join(cache, PLUGIN))
    return list(dict.fromkeys(found))


def _ready_root(data: str) -> str | None:
    """The plugin root the environment in `data` was set up for, when it is ready."""
    try:
        with open(os.path.join(data, "venv", "playbook-ready"), encoding="utf-8") as handle:
            return handle.readline().rstrip("\n") or None
    except OSError:
        return None


def interpreters(setting: Setting) -> tuple[list[Interpreter], list[Check]]:
    """Every Python the hooks run (the plugin's, and those installed hooks name) and this command's own; and the
    checks already failed in finding them (a plugin whose environment is not set up)."""
    found: dict[tuple[str, str, str | None], Interpreter] = {}
    problems: list[Check] = []

    def add(python: str, root: str | None, user: str, fix: str, hooks: bool = True) -> None:
        python = shutil.which(python) or python  # a command name, as a shell would find it
        # Two names of one binary in one directory (python, python3) are one environment; a virtual
        # environment's python and the interpreter it links to are not.
        key = (os.path.dirname(os.path.abspath(python)), os.path.realpath(python), root)
        known = found.get(key)
        if known is None:
            found[key] = Interpreter(python, root, (user,), hooks, fix)
        else:  # the first way it was chosen names the fix: the hooks' before this command's own
            found[key] = msgspec.structs.replace(known, users=(*known.users, user), hooks=known.hooks or hooks)

    reinstall = "reinstall the tool (uv tool install --reinstall, or pipx reinstall), then `playbook install` again"
    if chosen := setting.env.get("PLAYBOOK_PYTHON"):
        add(chosen, setting.env.get("PLAYBOOK_PLUGIN_ROOT") or ROOT, "the plugin, by PLAYBOOK_PYTHON",
            f"install the playbook into it ({chosen} -m pip install {ROOT}), or unset PLAYBOOK_PYTHON")
    elif plugin_enabled(setting):
        ready = [(data, root) for data in plugin_data_dirs(setting) if (root := _ready_root(data)) is not None]
        for data, root in ready:
            add(os.path.join(data, "venv", "bin", "python"), root, "the plugin",
                f"remove {os.path.join(data, 'venv')} and start a new session: the plugin sets it up again")
        if not ready:
            problems.append(_not_set_up(setting))
    for path in settings_files(setting):
        for command in {command for commands in installed_hooks(path).values() for command in commands}:
            python, root = _command_python(command)
            if python is not None:
                add(python, root, f"the hooks in {path}", reinstall)
    add(sys.executable, ROOT, "this command", "reinstall the tool in an environment of its own (uv tool install, or "
        "pipx install)", hooks=False)
    return list(found.values()), problems


def _command_python(command: str) -> tuple[str | None, str | None]:
    """The interpreter an installed hook's command runs, and the package root its script lies in (None for a
    command of an older shape, `python -m playbook hook EVENT`)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None, None
    if not words:
        return None, None
    script = next((word for word in words[1:] if word.endswith(".py")), None)
    parents = Path(script).parents if script else ()
    return words[0], (str(parents[2]) if len(parents) > 2 else None)  # <root>/playbook/quick/inject.py


def _not_set_up(setting: Setting) -> Check:
    """The plugin is enabled but its environment is not ready: being set up, or failed."""
    for data in plugin_data_dirs(setting):
        try:
            with open(os.path.join(data, "setup-failed.json"), encoding="utf-8") as handle:
                failure = json.load(handle)
        except (OSError, ValueError):
            continue
        if isinstance(failure, dict):
            return failed("python (the plugin)", f"its set-up failed: {failure.get('error')}",
                          f"see {os.path.join(data, 'setup.log')}; it is tried again within the hour at a session "
                          "start, or set PLAYBOOK_PYTHON to a Python with the playbook installed")
    return failed("python (the plugin)", "its environment is not set up yet",
                  "start a Claude Code session: the plugin sets it up in the background (a minute or so)")


def check_pythons(setting: Setting) -> list[Check]:
    """Each Python the hooks run starts as they start it (`-I -S`) and loads the playbook and msgspec."""
    found, checks = interpreters(setting)
    for interpreter in found:
        name = f"python ({', '.join(interpreter.users)})"
        works, detail = probe(interpreter.python, interpreter.root)
        checks.append(ok(name, detail) if works else failed(name, detail, interpreter.fix, blocks=interpreter.hooks))
    return checks


# --- the hooks in Claude Code ------------------------------------------------------------------------------


def check_hooks(setting: Setting) -> list[Check]:
    """The hooks are wired once: by the plugin or by `playbook install`, not both, and Claude Code runs hooks."""
    from .install import HOOK_EVENTS

    plugin = plugin_enabled(setting)
    counts = dict.fromkeys(HOOK_EVENTS, int(plugin))
    wired = ["the plugin"] if plugin else []
    for path in settings_files(setting):
        installed = installed_hooks(path)
        for event, commands in installed.items():
            if event in counts:
                counts[event] += len(commands)
        if installed:
            wired.append(str(path))
        if read_settings(path).get("disableAllHooks") is True:
            return [failed("hooks", f"{path} turns every hook off (disableAllHooks)",
                           f"remove disableAllHooks from {path}")]
    if not wired:
        return [failed("hooks", "not wired: the plugin is not enabled and no settings file holds the hooks",
                       "`claude plugin install event-sourced-playbook@playbook`, or `playbook install --user`")]
    twice = [event for event, count in counts.items() if count > 1]
    if twice:
        return [failed("hooks", f"wired more than once ({', '.join(wired)}): {', '.join(twice)} run twice",
                       "keep one: `playbook uninstall` (or `--user`) to keep the plugin, or disable the plugin",
                       blocks=False)]
    missing = [event for event, count in counts.items() if count == 0]
    if missing:
        return [failed("hooks", f"wired by {wired[0]}, without {', '.join(missing)}",
                       "`playbook install` again (with --user for the user's settings)", blocks=False)]
    return [ok("hooks", f"wired once, by {wired[0]}")]


# --- the backend --------------------------------------------------------------------------------------------


def check_backend(setting: Setting) -> list[Check]:
    """The learner has a way to the model: a key the API accepts, or Claude Code's CLI logged in."""
    from playbook.learner.backend import describe, model_config

    config = model_config(setting.env)
    if config is None:
        off = " (PLAYBOOK_CLAUDE= turns the CLI off)" if setting.env.get("PLAYBOOK_CLAUDE") == "" else ""
        return [failed("backend", f"none: no API key and no Claude Code CLI{off}",
                       "set ANTHROPIC_API_KEY (or AGENTIC_CONTEXT_API_KEY), or install Claude Code and log in")]
    what = describe(config, setting.env)
    if setting.offline:
        return [ok("backend", f"{what} (not checked: --offline)")]
    if config.backend == "cli" and config.claude is not None:
        return [_cli_login(config.claude, what)]
    return [_api_answers(config.base_url, config.api_key, config.auth_token, config.model, what)]


def _cli_login(claude: str, what: str) -> Check:
    """`claude auth status`: whether the CLI has a login, asked locally, at no cost."""
    try:
        done = subprocess.run([claude, "auth", "status"], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=30)
        status = json.loads(done.stdout)
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        return failed("backend", f"{what}; cannot tell whether it is logged in ({exc})",
                      f"run `{claude} auth status`", blocks=False)
    if isinstance(status, dict) and status.get("loggedIn") is True:
        return ok("backend", f"{what}, logged in ({status.get('authMethod', 'login')})")
    return failed("backend", f"{what}, not logged in", f"run `{claude}` and /login, or set ANTHROPIC_API_KEY")


def _api_get(url: str, headers: dict[str, str]) -> int:
    """The HTTP status a GET of `url` answers; OSError when the endpoint cannot be reached."""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=15) as answer:
            status: int = answer.status
            return status
    except urllib.error.HTTPError as exc:
        return exc.code


def _api_answers(base_url: str | None, key: str | None, token: str | None, model: str, what: str) -> Check:
    """The API knows the key and the model: its models endpoint, which costs no tokens."""
    from urllib.parse import quote

    base = (base_url or "https://api.anthropic.com").rstrip("/")
    headers = {"anthropic-version": "2023-06-01", **({"x-api-key": key} if key else {}),
               **({"authorization": f"Bearer {token}"} if token else {})}
    try:
        status = _api_get(f"{base}/v1/models/{quote(model, safe='')}", headers)
        if status == 404 and _api_get(f"{base}/v1/models?limit=1", headers) != 200:
            return ok("backend", f"{what}; the endpoint lists no models, so the key is not checked")
    except OSError as exc:
        reason = getattr(exc, "reason", exc)
        return failed("backend", f"{what}; {base} cannot be reached ({reason})",
                      "check the network, or ANTHROPIC_BASE_URL; `--offline` skips this check")
    if status == 200:
        return ok("backend", f"{what}; the API accepts the key and knows the model")
    if status in (401, 403):
        return failed("backend", f"{what}; the API refuses the key (HTTP {status})",
                      "set a valid key (ANTHROPIC_API_KEY or AGENTIC_CONTEXT_API_KEY)")
    if status == 404:
        return failed("backend", f"{what}; the API does not know the model {model}",
                      "set AGENTIC_CONTEXT_MODEL (or ANTHROPIC_MODEL) to a model the key can use")
    return failed("backend", f"{what}; the API answered HTTP {status}", "try again later; `--offline` skips this "
                  "check", blocks=False)
