"""The Claude Code plugin's own Python environment: used when ready, set up in the background when not.

    python3 -I -S .../playbook/wiring/provision.py hook EVENT     (hooks/playbook-hook runs this)
    python3 -I -S .../playbook/wiring/provision.py setup          (the detached set-up itself)

Standard library only, and written for any Python 3 the user has on PATH, so an old or bare
interpreter still gets a clear line instead of a traceback. The environment is a virtual
environment in the plugin's data directory (`$CLAUDE_PLUGIN_DATA`, else the user's cache
directory) holding the project's dependencies (with `uv` when it is on PATH, else `venv` and
`pip`), a `.pth` line naming the plugin root, and beside its ready stamp the site-packages its
own interpreter names (which the launcher, run without `site`, puts on the path). A hook that finds
it not ready starts the set-up detached (one at a time, under a lock) and returns at once:
SessionStart injects what is already projected, or nothing, and says so once; the learning hooks
say in one line that this session is not learned from. A failed set-up is recorded with its
reason, said once, and tried again after an hour. Every path exits 0.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: this script runs on any Python 3 and imports only what it uses
if TYPE_CHECKING:
    from typing import IO, Any

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import time

READY_NAME = "playbook-ready"
SITE_PACKAGES_NAME = "playbook-site-packages"
FAILED_NAME = "setup-failed.json"
NOTICE_NAME = "notice"
LOG_NAME = "setup.log"
LOCK_NAME = "setup.lock"
PTH_NAME = "event_sourced_playbook_plugin.pth"
RETRY_AFTER = 3600.0
STEP_TIMEOUT = 900.0
MIN_PYTHON = (3, 11)


class SetupError(Exception):
    """One step of the set-up failed; the message is the one line the user sees."""


def plugin_root() -> str:
    configured = os.environ.get("CLAUDE_PLUGIN_ROOT")
    return configured or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def data_dir() -> str:
    """Where the environment lives: Claude Code's data directory for the plugin, else the user's cache."""
    configured = os.environ.get("CLAUDE_PLUGIN_DATA")
    if configured:
        return configured
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "event-sourced-playbook")


def venv_python(data: str) -> str:
    return os.path.join(data, "venv", "bin", "python")


def is_ready(data: str, root: str) -> bool:
    """True when the environment was set up, completely, for this plugin root."""
    try:
        with open(os.path.join(data, "venv", READY_NAME), encoding="utf-8") as handle:
            stamp = handle.readline().rstrip("\n")
    except OSError:
        return False
    return stamp == root and os.access(venv_python(data), os.X_OK)


def _write(path: str, text: str) -> None:
    temporary = f"{path}.{os.getpid()}.tmp"
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(temporary, path)


def _read_json(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _lock(data: str) -> IO[str] | None:
    """The set-up lock, taken without waiting; None when another set-up holds it."""
    handle = open(os.path.join(data, LOCK_NAME), "a")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        return None
    return handle


def setup_running(data: str) -> bool:
    handle = _lock(data)
    if handle is None:
        return True
    handle.close()
    return False


def recent_failure(data: str, root: str) -> dict[str, Any]:
    """The last failed set-up for this root, if it is too recent to try again."""
    failure = _read_json(os.path.join(data, FAILED_NAME))
    at = failure.get("at")
    if failure.get("root") == root and isinstance(at, (int, float)) and time.time() - at < RETRY_AFTER:
        return failure
    return {}


def start_setup(data: str) -> None:
    """Start the set-up detached: it outlives the hook and Claude Code, and holds neither."""
    with open(os.path.join(data, LOG_NAME), "ab") as log:
        subprocess.Popen([sys.executable, "-I", "-S", os.path.abspath(__file__), "setup"],
                         stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=data,
                         start_new_session=True, close_fds=True)


def dependencies(root: str) -> list[str]:
    """The project's runtime dependencies, from the plugin root's pyproject.toml."""
    with open(os.path.join(root, "pyproject.toml"), "rb") as handle:
        raw = handle.read()
    try:
        import tomllib
    except ImportError:  # an older Python: the list is one simple array of strings
        match = re.search(rb"^dependencies\s*=\s*\[(.*?)\]", raw, re.MULTILINE | re.DOTALL)
        return [item.decode() for item in re.findall(rb'"([^"]+)"', match.group(1))] if match else []
    return list(tomllib.loads(raw.decode("utf-8"))["project"]["dependencies"])


def _version(python: str) -> tuple[int, ...]:
    try:
        out = subprocess.run([python, "-I", "-S", "-c", "import sys; print(*sys.version_info[:2])"],
                             capture_output=True, text=True, timeout=30, check=True).stdout
        return tuple(int(part) for part in out.split())
    except (OSError, ValueError, subprocess.SubprocessError):
        return ()


def find_python() -> str | None:
    """An interpreter of at least MIN_PYTHON: this one, else one of the usual names on PATH."""
    if sys.version_info[:2] >= MIN_PYTHON:
        return sys.executable
    for name in ("python3.14", "python3.13", "python3.12", "python3.11"):
        found = shutil.which(name)
        if found and _version(found) >= MIN_PYTHON:
            return found
    return None


def _pip_of(python: str) -> list[str] | None:
    """`python -m pip`, when that pip can install into another environment (pip 22.3 and later)."""
    try:
        out = subprocess.run([python, "-I", "-m", "pip", "--version"], capture_output=True, text=True,
                             timeout=60, check=True).stdout
        version = tuple(int(part) for part in out.split()[1].split(".")[:2])
    except (OSError, ValueError, IndexError, subprocess.SubprocessError):
        return None
    return [python, "-I", "-m", "pip"] if version >= (22, 3) else None


def _imports(python: str, module: str) -> bool:
    try:
        return subprocess.run([python, "-I", "-c", f"import {module}"], stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def _run(command: list[str], what: str, log_output: bool = True) -> str:
    """Run one step, its output going to the set-up log (and returned); a failure is a SetupError."""
    print(f"$ {' '.join(command)}", flush=True)
    # Without PYTHON* variables: a project's settings can set PYTHONPATH to itself for its hooks, and
    # `python -m venv`, pip's own runner and the environment's interpreter would import from it.
    env = {name: value for name, value in os.environ.items() if not name.startswith("PYTHON")}
    try:
        result = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                timeout=STEP_TIMEOUT, env=env)
    except (OSError, subprocess.SubprocessError) as exc:
        raise SetupError(f"{what} failed: {exc}") from exc
    if log_output or result.returncode != 0:
        sys.stdout.write(result.stdout + result.stderr)
        sys.stdout.flush()
    if result.returncode != 0:
        lines = [line.strip() for line in (result.stderr or result.stdout).splitlines() if line.strip()]
        # uv and pip both open their message with "error:"/"ERROR:" and end it with its deepest cause.
        first = next((line for line in lines if line.lower().startswith("error")), "")
        cause = next((line for line in reversed(lines) if line.lower().startswith("cause")), lines[-1] if lines else "")
        detail = " ... ".join(dict.fromkeys(line for line in (first, cause) if line))
        raise SetupError(f"{what} failed (exit {result.returncode}): {detail[:200]}")
    return result.stdout


def build(data: str, root: str) -> None:
    """Create or update the environment for `root`; the ready stamp is written last."""
    venv = os.path.join(data, "venv")
    ready = os.path.join(venv, READY_NAME)
    for stale in (ready, os.path.join(venv, SITE_PACKAGES_NAME)):
        if os.path.exists(stale):
            os.unlink(stale)
    uv = shutil.which("uv")
    python = find_python()
    if python is None and uv is None:
        found = ".".join(map(str, sys.version_info[:2]))
        raise SetupError(f"needs Python {'.'.join(map(str, MIN_PYTHON))}+ or uv on PATH (found Python {found})")
    if os.path.isdir(venv) and _version(venv_python(data)) < MIN_PYTHON:
        shutil.rmtree(venv)  # a broken environment (its interpreter gone) or one of an old Python
    # An interpreter with pip installs into an environment made without it (`pip --python`), which
    # spares the seconds ensurepip takes; otherwise the environment gets its own pip.
    pip = None if uv or python is None else _pip_of(python)
    if not uv and not pip and os.path.isdir(venv) and not _imports(venv_python(data), "pip"):
        shutil.rmtree(venv)  # left without its pip by a `venv` that failed half way: made again below
    if not os.path.isdir(venv):
        if uv:
            _run([uv, "venv", "--quiet", "--python", python or ">=3.11", venv], "creating the environment with uv")
        else:
            assert python is not None  # without uv, find_python found one (checked above)
            # Debian and Ubuntu ship ensurepip apart (python3.X-venv): without it `venv` fails half way.
            if not pip and not _imports(python, "ensurepip"):
                version = ".".join(map(str, _version(python)))
                raise SetupError(f"Python {version} ({python}) cannot make a virtual environment with pip (no "
                                 f"ensurepip, no pip 22.3+ of its own): install python{version}-venv (Debian, "
                                 f"Ubuntu: sudo apt install python{version}-venv), or uv")
            try:
                _run([python, "-m", "venv", *(["--without-pip"] if pip else []), venv], "creating the environment")
            except SetupError:
                shutil.rmtree(venv, ignore_errors=True)  # half made: the next set-up starts afresh
                raise
    packages = dependencies(root)
    what = "installing " + ", ".join(packages)
    if uv:
        _run([uv, "pip", "install", "--quiet", "--python", venv_python(data), *packages], what + " with uv")
    else:
        installer = [*pip, "--python", venv_python(data)] if pip else [venv_python(data), "-m", "pip"]
        _run([*installer, "install", "--quiet", "--disable-pip-version-check", *packages], what + " with pip")
    # Asked of the environment's own interpreter, with its site: under -S a distribution's `site` can name
    # other directories (see `playbook.quick.launcher.site_packages`, which reads this record).
    sites = _run([venv_python(data), "-I", "-c", "import sysconfig; "
                  "print(*dict.fromkeys(sysconfig.get_path(name) for name in ('purelib', 'platlib')), sep='\\n')"],
                 "finding the environment's site-packages").splitlines()
    _write(os.path.join(sites[0], PTH_NAME), root + "\n")
    _write(os.path.join(venv, SITE_PACKAGES_NAME), "".join(site + "\n" for site in sites))
    # As the hooks and the `playbook` command start: isolated, without site, through launch.py.
    _run([venv_python(data), "-I", "-S", os.path.join(root, "playbook", "quick", "launch.py"), "--help"],
         "checking the environment", log_output=False)
    _write(ready, root + "\n")


def setup() -> int:
    """The detached set-up: one at a time; a failure is recorded for the hooks to report once."""
    data, root = data_dir(), plugin_root()
    os.makedirs(data, exist_ok=True)
    lock = _lock(data)
    if lock is None:
        return 0
    with lock:
        if is_ready(data, root):
            return 0
        print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} setting up the environment for {root}", flush=True)
        try:
            build(data, root)
        except Exception as exc:  # recorded, so the hooks report it once instead of retrying at every session
            message = str(exc) if isinstance(exc, SetupError) else f"{type(exc).__name__}: {exc}"
            print(f"set-up failed: {message}", flush=True)
            _write(os.path.join(data, FAILED_NAME), json.dumps({"at": time.time(), "root": root, "error": message}))
            return 0
        failed = os.path.join(data, FAILED_NAME)
        if os.path.exists(failed):
            os.unlink(failed)
        print("ready", flush=True)
    return 0


def _once(data: str, key: str) -> bool:
    """True the first time `key` is asked for (until another key replaces it)."""
    path = os.path.join(data, NOTICE_NAME)
    try:
        with open(path, encoding="utf-8") as handle:
            if handle.read() == key:
                return False
    except OSError:
        pass
    _write(path, key)
    return True


def _projected(root: str) -> bytes | None:
    """What the SessionStart hook prints when the projection is current, by inject.py's own reading."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("_playbook_inject", os.path.join(root, "playbook", "quick", "inject.py"))
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    claude_dir = os.path.join(os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd(), ".claude")
    found: bytes | None = module._fast(claude_dir)
    return found


def session_start(data: str, root: str, notice: str | None) -> bytes:
    """The SessionStart output: the projected playbook if current, with the notice as a systemMessage."""
    output = _projected(root)
    if notice is None:
        return output or b""
    message: dict[str, Any] = {}
    if output:
        try:
            message = json.loads(output)
        except ValueError:
            message = {}
    # The projection's own line for the user (proposals waiting for review) is kept after the notice.
    shown = message.get("systemMessage")
    message["systemMessage"] = f"{notice}\n{shown}" if isinstance(shown, str) and shown else notice
    return json.dumps(message, ensure_ascii=False).encode("utf-8")


def hook(event: str) -> int:
    """A hook while the environment is not ready: start (or await) the set-up, answer without waiting."""
    try:
        sys.stdin.buffer.read()
    except (OSError, ValueError, AttributeError):
        pass
    data, root = data_dir(), plugin_root()
    log = os.path.join(data, LOG_NAME)
    try:
        os.makedirs(data, exist_ok=True)
        failure = recent_failure(data, root)
        if failure:
            state = f"failed {failure.get('at')}"
            notice = (f"playbook: could not set up its Python environment: {failure.get('error')}; "
                      f"it tries again within the hour (log: {log})")
        else:
            if not setup_running(data):
                start_setup(data)
            state = "setting up"
            notice = (f"playbook: setting up its Python environment in the background (first use); until it is "
                      f"ready the playbook is injected as already projected and sessions are not learned from "
                      f"(log: {log})")
        said = _once(data, f"{root}\n{state}")
        if event == "SessionStart":
            sys.stdout.buffer.write(session_start(data, root, notice if said else None))
            sys.stdout.flush()
        elif said:
            print(notice, file=sys.stderr)
        else:
            print(f"playbook: {event}: the plugin's Python environment is not ready; nothing learned", file=sys.stderr)
    except Exception as exc:  # never a traceback into Claude Code
        print(f"playbook: {event}: cannot set up the plugin's Python environment: {type(exc).__name__}: {exc}",
              file=sys.stderr)
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["setup"]:
        try:
            return setup()
        except Exception as exc:  # the log gets one line, never a traceback
            print(f"set-up failed: {type(exc).__name__}: {exc}", flush=True)
            return 0
    if argv[:1] == ["hook"] and len(argv) == 2:
        return hook(argv[1])
    print("usage: provision.py hook EVENT | setup", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
