"""The house's rules, read from the source: no import circle inside a package, imports point down the
layers, the hook roads import only the standard library and the quick roads' contract, and the design
notes list every module there is."""

from __future__ import annotations

import ast
import functools
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("eventlog", "projections", "playbook")
LAYER = {"eventlog": 0, "projections": 1, "playbook": 2}


def modules(package: str) -> dict[str, Path]:
    found = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


KNOWN = {name: path for package in PACKAGES for name, path in modules(package).items()}


def imported(name: str, path: Path) -> set[str]:
    """Every module of ours `name` imports, at the top or inside a function (a lazy import closes a circle too)."""
    here = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = here.split(".")[: len(here.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in KNOWN else base)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {module for module in found if module in KNOWN and module != name}


@functools.cache
def graph() -> dict[str, set[str]]:
    """Which modules of ours each imports; parsed when a test first asks, not while the run collects."""
    return {name: imported(name, path) for name, path in KNOWN.items()}


def circles(names: set[str]) -> list[list[str]]:
    """The strongly connected groups of more than one module among `names` (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph()[node] & names):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(names):
        if node not in index:
            visit(node)
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_circle_inside_a_package(package: str) -> None:
    names = {name for name in KNOWN if name.split(".")[0] == package}
    assert circles(names) == []


def test_circles_are_found_when_there_is_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(graph(), "eventlog.domain", graph()["eventlog.domain"] | {"eventlog.registry"})
    names = {name for name in KNOWN if name.startswith("eventlog")}
    assert any("eventlog.domain" in group and "eventlog.registry" in group for group in circles(names))


def test_imports_point_down_the_layers() -> None:
    upward = [(name, target) for name, targets in graph().items() for target in targets
              if LAYER[target.split(".")[0]] > LAYER[name.split(".")[0]]]
    assert upward == []


CONTRACT = ("projections.quickroads", "projections.quicknotice", "projections.quickjson")
"""The quick roads' contract: standard-library-only modules the hook scripts and the full code share."""
HOOK_SCRIPTS = ("playbook.quick.inject", "playbook.quick.recall", "playbook.quick.launch", "playbook.wiring.provision")
"""Run by path as `python -I -S SCRIPT`: they import nothing of ours at the top but the quick roads' contract."""


@pytest.mark.parametrize("script", HOOK_SCRIPTS)
def test_a_hook_script_imports_only_the_standard_library_and_the_contract(script: str) -> None:
    tree = ast.parse(KNOWN[script].read_text(encoding="utf-8"))
    top = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module:
            top.add(node.module.split(".")[0] if not node.level else "<relative>")
        elif isinstance(node, ast.Import):
            top.update(alias.name.split(".")[0] for alias in node.names)
    ours = {module for module in top if module in PACKAGES or module == "<relative>"}
    assert ours <= {"projections"}, ours
    contract = {node.module for node in tree.body if isinstance(node, ast.ImportFrom) and node.module
                and node.module.startswith("projections")}
    assert contract <= set(CONTRACT), contract


def test_nothing_imports_a_script() -> None:
    importers = {name: sorted(targets & set(HOOK_SCRIPTS) - {"playbook.quick.launch"})
                 for name, targets in graph().items()}
    assert {name: targets for name, targets in importers.items() if targets} == {}


@pytest.mark.parametrize("module", CONTRACT)
def test_the_contract_is_standard_library_only(module: str) -> None:
    tree = ast.parse(KNOWN[module].read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            assert f"projections.{node.module}" in CONTRACT, node.module  # one part of the contract uses another
        elif isinstance(node, ast.ImportFrom) and node.module:
            assert node.module.split(".")[0] in sys.stdlib_module_names, node.module
        elif isinstance(node, ast.Import):
            assert all(alias.name.split(".")[0] in sys.stdlib_module_names for alias in node.names)


def test_the_design_notes_list_every_module() -> None:
    text = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    layout = text.split("```", 2)[1]
    listed, folder = set(), ""
    for line in layout.splitlines():
        match = re.match(r"^(\s*)(\S+)", line)
        if not match:
            continue
        entry = match.group(2)
        if entry.endswith("/"):
            folder = entry if not match.group(1) else folder.split("/")[0] + "/" + entry
            continue
        if entry.endswith(".py"):
            listed.add(folder + entry)
    present = {str(path.relative_to(ROOT)) for path in KNOWN.values()}
    assert sorted(present - listed) == [] and sorted(listed - present) == []


MAX_LINES = 400
"""A module that outgrows this holds more than one job: it is split where its jobs part."""


def test_every_module_stays_under_the_line_cap() -> None:
    long = {name: count for name, path in KNOWN.items()
            if (count := len(path.read_text(encoding="utf-8").splitlines())) >= MAX_LINES}
    assert long == {}


def test_every_package_is_installed() -> None:
    """A package the build leaves out is missing from every install but an editable one (the plugin's included)."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"])
    found = {".".join(init.parent.relative_to(ROOT).parts) for package in PACKAGES
             for init in (ROOT / package).rglob("__init__.py")}
    assert found - listed == set()
