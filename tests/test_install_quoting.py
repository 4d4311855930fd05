"""`playbook install` writes hook commands the shell reads back as the very paths they name, whatever
characters those hold."""

from __future__ import annotations

import subprocess

import pytest

from playbook.wiring.install import HOOK_EVENTS, hook_command, is_ours


@pytest.mark.parametrize("python", ['/opt/my "env"/bin/python', "/opt/a$HOME`echo x`b/python", "/opt/it's/python",
                                    "/opt/back\\slash $(true)/python"])
def test_hook_command_names_the_interpreter_as_given(python: str) -> None:
    for event in HOOK_EVENTS:
        command = hook_command(event, python)
        split = subprocess.run(["sh", "-c", f'set -- {command}; printf "%s\\0" "$@"'], capture_output=True,
                               text=True, check=True).stdout.split("\0")[:-1]
        assert split[0] == python, command
        assert is_ours({"command": command})
