"""The docs hold every command: each subcommand of `playbook` has a README line that names it."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from playbook.commands.cli import build_parser

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def subcommands() -> list[str]:
    parser = build_parser()
    found = [action for action in parser._actions if isinstance(action, argparse._SubParsersAction)]
    return list(found[0].choices)


@pytest.mark.parametrize("name", subcommands())
def test_every_subcommand_has_a_readme_line(name: str) -> None:
    assert re.search(rf"playbook {re.escape(name)}(?![\w-])", README), f"README never says `playbook {name}`"
