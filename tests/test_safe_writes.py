"""Every write in the code goes through `eventlog.safefiles`, which follows no link a repository can carry.

The code of eventlog/, projections/ and playbook/ is scanned for every call that creates, writes, appends
to, renames, links or removes a file or directory by its name (`open` for writing, `os.open` with a
writing flag, `os.replace`, `Path.write_text`, `mkdir`, `unlink`, `shutil.copy*`, `tempfile.*`, ...): only
`eventlog/safefiles.py` may make one, and the few places in ALLOWED, each with its reason.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("eventlog", "projections", "playbook")
HELPER = "eventlog/safefiles.py"

ALLOWED: dict[tuple[str, str | None], str] = {
    ("playbook/wiring/provision.py", None):
        "the plugin's set-up script: run by path on whatever Python 3 is on PATH before the package's own "
        "environment exists (so it cannot import it), it writes only in the plugin's data directory Claude Code "
        "names ($CLAUDE_PLUGIN_DATA, else the user's cache directory), never in a project",
    ("playbook/learner/claude_cli.py", "ask"):
        "tempfile.TemporaryDirectory, the model CLI's working directory: a new directory mkdtemp makes in the "
        "system's temporary directory (created exclusively, mode 0700), under a name no repository chose",
    ("playbook/learner/lines.py", "_nonblocking"):
        "the opener of `open(path, 'rb', opener=...)`, which reads a transcript: its flags are the read-only "
        "ones `open` passes for 'rb' (the scan cannot see them), with O_NONBLOCK added",
}
"""(module, function or None for the whole module) -> why it may write without the helper."""

OS_PATH_CALLS = {"replace", "rename", "renames", "remove", "unlink", "rmdir", "removedirs", "mkdir", "makedirs",
                 "link", "symlink", "truncate", "chmod", "lchmod", "chown", "lchown", "mkfifo", "mknod", "utime"}
OS_WRITE_FLAGS = {"O_CREAT", "O_WRONLY", "O_RDWR", "O_APPEND", "O_TRUNC"}
SHUTIL_CALLS = {"copy", "copy2", "copyfile", "copytree", "move", "rmtree", "copymode", "copystat", "unpack_archive",
                "make_archive"}
TEMPFILE_CALLS = {"mkstemp", "mkdtemp", "NamedTemporaryFile", "TemporaryFile", "SpooledTemporaryFile",
                  "TemporaryDirectory"}
PATH_METHODS = {"write_text", "write_bytes", "mkdir", "makedirs", "touch", "unlink", "rmdir", "symlink_to",
                "hardlink_to", "link_to", "chmod", "lchmod"}


def _writing_mode(node: ast.expr | None) -> bool:
    """True when `node`, an `open` mode, may write (a mode that is not a constant counts as writing)."""
    if node is None:
        return False
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return any(c in node.value for c in "wax+")
    return True


def _mode_of(call: ast.Call, position: int) -> ast.expr | None:
    for keyword in call.keywords:
        if keyword.arg == "mode":
            return keyword.value
    return call.args[position] if len(call.args) > position else None


def _is_devnull(call: ast.Call) -> bool:
    first = call.args[0] if call.args else None
    return isinstance(first, ast.Attribute) and first.attr == "devnull"


def _flags_write(node: ast.expr | None) -> bool:
    """True when an `os.open` flags expression names a writing flag, or is neither spelt out nor says O_RDONLY
    (a read with a modifier the caller passes, `O_RDONLY | flags`, is a read)."""
    if node is None:
        return False
    names = {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
    names |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    if names & OS_WRITE_FLAGS:
        return True
    return "O_RDONLY" not in names and not all(name.startswith("O_") or name == "os" for name in names)


def _module_name(node: ast.expr) -> str | None:
    return node.id if isinstance(node, ast.Name) else None


def writes_in(source: str) -> list[tuple[str | None, int, str]]:
    """(enclosing function, line, what) for every raw write primitive called in `source`.

    An `os.open` whose flags are a name assigned once in the same function is judged by that assignment."""
    tree = ast.parse(source)
    found: list[tuple[str | None, int, str]] = []
    assigned: dict[str, ast.expr] = {}

    def visit(node: ast.AST, function: str | None) -> None:
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                assigned.clear()
                for statement in ast.walk(child):
                    if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
                        target = statement.targets[0]
                        if isinstance(target, ast.Name):
                            assigned[target.id] = statement.value
            if isinstance(child, ast.ImportFrom) and child.module in ("os", "shutil", "tempfile"):
                banned = {"os": OS_PATH_CALLS | {"open"}, "shutil": SHUTIL_CALLS, "tempfile": TEMPFILE_CALLS}
                for alias in child.names:
                    if alias.name in banned[child.module]:
                        found.append((function, child.lineno, f"from {child.module} import {alias.name}"))
            if isinstance(child, ast.Call):
                what = _raw_write(child, assigned)
                if what is not None:
                    found.append((function, child.lineno, what))
            visit(child, inner)

    visit(tree, None)
    return found


def _raw_write(call: ast.Call, assigned: dict[str, ast.expr]) -> str | None:
    func = call.func
    if isinstance(func, ast.Name) and func.id == "open":
        return "open for writing" if _writing_mode(_mode_of(call, 1)) and not _is_devnull(call) else None
    if not isinstance(func, ast.Attribute):
        return None
    owner, name = _module_name(func.value), func.attr
    if owner == "os":
        if name == "open":
            flags = call.args[1] if len(call.args) > 1 else None
            if isinstance(flags, ast.Name) and flags.id in assigned:
                flags = assigned[flags.id]
            return "os.open for writing" if _flags_write(flags) and not _is_devnull(call) else None
        return f"os.{name}" if name in OS_PATH_CALLS else None
    if owner == "shutil":
        return f"shutil.{name}" if name in SHUTIL_CALLS else None
    if owner == "tempfile":
        return f"tempfile.{name}" if name in TEMPFILE_CALLS else None
    if name == "open":  # Path.open; a first argument that is no string constant is no mode (webbrowser.open(url))
        mode = _mode_of(call, 0)
        spelt = isinstance(mode, ast.Constant) or any(keyword.arg == "mode" for keyword in call.keywords)
        return ".open for writing" if spelt and _writing_mode(mode) else None
    if name in PATH_METHODS:
        return f".{name}"
    if name in ("replace", "rename") and len(call.args) == 1 and not call.keywords:
        return f".{name} (a rename: str.replace takes two arguments)"
    return None


def _sources() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py"))


def test_the_scan_finds_each_kind_of_write() -> None:
    """The scanner itself: every primitive it must catch is caught, and what only reads is not."""
    caught = """
import os, shutil, tempfile
from pathlib import Path
def f(path, flags, p: Path):
    open(path, "w"); open(path, "ab"); open(path, mode="r+"); open(path, flags)
    os.open(path, os.O_WRONLY | os.O_CREAT, 0o600); os.open(path, os.O_RDWR); os.open(path, flags)
    os.replace(path, path); os.rename(path, path); os.unlink(path); os.remove(path); os.mkdir(path)
    os.makedirs(path); os.link(path, path); os.symlink(path, path); os.truncate(path, 0); os.chmod(path, 0)
    shutil.copyfile(path, path); shutil.copy(path, path); shutil.move(path, path); shutil.rmtree(path)
    tempfile.mkstemp(); tempfile.NamedTemporaryFile(); tempfile.TemporaryDirectory()
    p.write_text(""); p.write_bytes(b""); p.mkdir(); p.touch(); p.unlink(); p.rmdir(); p.rename(path)
    p.replace(path); p.open("w"); p.chmod(0o600); p.symlink_to(path)
    mode = os.O_APPEND; os.open(path, mode)
"""
    assert len(writes_in(caught)) == 36
    assert len(writes_in("from os import replace\nfrom shutil import copyfile\n")) == 2
    reads = """
import os
def f(path, text):
    open(path); open(path, "rb"); os.open(path, os.O_RDONLY | os.O_NOFOLLOW); os.open(os.devnull, os.O_WRONLY)
    open(os.devnull, "w"); text.replace("a", "b"); os.fsync(3); os.ftruncate(3, 0); os.listdir(path)
    msgspec.structs.replace(text, a=1); path.open(); path.read_text(); os.fdopen(3, "wb"); webbrowser.open(text)
    os.open(path, os.O_RDONLY | flags); mode = os.O_RDONLY | os.O_NONBLOCK; os.open(path, mode)
"""
    assert writes_in(reads) == []


def test_every_write_goes_through_the_helper() -> None:
    unexpected = []
    used: set[tuple[str, str | None]] = set()
    for path in _sources():
        module = path.relative_to(ROOT).as_posix()
        if module == HELPER:
            continue
        for function, line, what in writes_in(path.read_text(encoding="utf-8")):
            for key in ((module, function), (module, None)):
                if key in ALLOWED:
                    used.add(key)
                    break
            else:
                unexpected.append(f"{module}:{line} in {function or 'the module'}: {what}")
    assert unexpected == [], "writes that do not go through eventlog.safefiles:\n" + "\n".join(unexpected)
    assert used == set(ALLOWED), f"allowed but no longer there: {set(ALLOWED) - used}"


def test_the_helper_is_standard_library_only() -> None:
    """The quick paths (run with `-S`, or by path) import it: nothing but the standard library and the two
    standard-library-only modules of its own package."""
    tree = ast.parse((ROOT / HELPER).read_text(encoding="utf-8"))
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {f"{'.' * node.level}{node.module}" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert imported <= {"errno", "os", "stat", "__future__", "typing", ".faults", ".files"}, imported


@pytest.mark.parametrize("module", [HELPER, "eventlog/files.py", "eventlog/faults.py"])
def test_the_helpers_own_modules_import_nothing_of_the_project(module: str) -> None:
    tree = ast.parse((ROOT / module).read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0:
            assert node.module and node.module.split(".")[0] not in PACKAGES, (module, node.module)
