"""The reflector's and curator's model call through the Claude Code CLI, on the user's own login.

One `claude -p` per prompt, as a tool-less, isolated child session:

- `--tools ""`: no tool at all, so a transcript quoted in the prompt cannot make it act;
- `--safe-mode`: no hooks, plugins, CLAUDE.md, MCP servers or custom commands (its
  login still works, unlike `--bare`), so this project's hooks never fire in it;
- `--no-session-persistence`: it writes no transcript, so there is nothing to learn from it;
- `--strict-mcp-config`, `--disable-slash-commands`, and an empty temporary working
  directory, so nothing of the project is read;
- `PLAYBOOK_LEARNER=1` in its environment: should a hook of this project run anyway, it
  does nothing (see `playbook.wiring.hooks`).

The prompt goes on stdin (it can be far longer than a command line); the reply is the
`result` of `--output-format json`. Claude Code retries API errors itself
(`CLAUDE_CODE_MAX_RETRIES`, 2 unless set, so 3 attempts as with the API backend).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import tempfile
from typing import Any

import msgspec

from .backend import ModelConfig

LEARNER_MARK = "PLAYBOOK_LEARNER"
CALL_TIMEOUT = 240.0
SYSTEM_PROMPT = ("You are a component of a program, not a chat assistant. Read the request and answer with exactly "
                 "what it asks for (a JSON object), and nothing else. You have no tools.")
# What Claude Code gives its hooks about the running session: the child is a session of its own.
_SESSION_ENV = ("CLAUDECODE", "CLAUDE_PROJECT_DIR", "CLAUDE_ENV_FILE", "CLAUDE_PID", "CLAUDE_CODE_ENTRYPOINT",
                "CLAUDE_CODE_SESSION_ID", "CLAUDE_CODE_SESSION_ATTENDED", "CLAUDE_CODE_CHILD_SESSION",
                "CLAUDE_CODE_CHILD_NOTES_DIR", "CLAUDE_CODE_MESSAGING_SOCKET", "CLAUDE_CODE_MESSAGING_TOKEN",
                "CLAUDE_PLUGIN_ROOT", "CLAUDE_PLUGIN_DATA", "CLAUDE_EFFORT", "AI_AGENT")


USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


class CliAnswer(msgspec.Struct, frozen=True):
    """The text of an answer, and what the child session used as its JSON reports it."""

    text: str
    usage: dict[str, int] = {}
    cost_usd: float | None = None
    model: str | None = None
    """The model that answered, when the JSON names exactly one."""


class CliError(Exception):
    """The CLI could not be run, failed, or gave no usable answer (message for the log, no secrets).

    `spent` is what the child session reported it used before failing, when it reported anything."""

    def __init__(self, message: str, spent: CliAnswer | None = None) -> None:
        super().__init__(message)
        self.spent = spent


def _spent(result: dict[str, Any], text: str = "") -> CliAnswer:
    """What `--output-format json`'s `usage`, `total_cost_usd` and `modelUsage` say the session used."""
    raw = result.get("usage")
    usage = {field: value for field in USAGE_FIELDS
             if isinstance(raw, dict) and isinstance(value := raw.get(field), int) and not isinstance(value, bool)
             and value >= 0}
    cost = result.get("total_cost_usd")
    models = result.get("modelUsage")
    model = next(iter(models)) if isinstance(models, dict) and len(models) == 1 else None
    return CliAnswer(text=text, usage=usage,
                     cost_usd=float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None,
                     model=model if isinstance(model, str) else None)


def command(config: ModelConfig) -> list[str]:
    """The child's command line."""
    # The model is always named: the log records the model of each cycle, and Claude Code's own default
    # (often its largest model) would spend the user's plan on background work the key route does with this one.
    return [str(config.claude), "-p", "--output-format", "json", "--tools", "", "--safe-mode",
            "--no-session-persistence", "--strict-mcp-config", "--disable-slash-commands",
            "--system-prompt", SYSTEM_PROMPT, "--model", config.model]


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _SESSION_ENV}
    env[LEARNER_MARK] = "1"
    env.setdefault("CLAUDE_CODE_MAX_RETRIES", "2")
    return env


def _answer(stdout: bytes, stderr: bytes, returncode: int) -> CliAnswer:
    try:
        result = json.loads(stdout.decode("utf-8", "replace"))
    except ValueError:
        result = None
    if not isinstance(result, dict):
        tail = stderr.decode("utf-8", "replace").strip().splitlines()
        why = tail[-1][:200] if tail else f"exit status {returncode}"
        raise CliError(f"Claude Code gave no JSON answer ({why})")
    if result.get("is_error") or result.get("subtype") not in (None, "success"):
        status = result.get("api_error_status")
        detail = f"HTTP {status}" if status else str(result.get("subtype") or "error")
        text = result.get("result")
        if isinstance(text, str) and text.strip():
            detail += f": {text.strip()[:200]}"
        raise CliError(f"Claude Code answered with an error ({detail})", _spent(result))
    text = result.get("result")
    if not isinstance(text, str):
        raise CliError("Claude Code's answer has no text result", _spent(result))
    return _spent(result, text)


async def complete(prompt: str, config: ModelConfig, timeout: float = CALL_TIMEOUT) -> str:
    """The model's text reply to `prompt` through `claude -p`. Raises CliError."""
    return (await ask(prompt, config, timeout)).text


async def ask(prompt: str, config: ModelConfig, timeout: float = CALL_TIMEOUT) -> CliAnswer:
    """The model's reply to `prompt` through `claude -p`, with what it used. Raises CliError."""
    with tempfile.TemporaryDirectory(prefix="playbook-learner-") as workdir:
        try:
            process = await asyncio.create_subprocess_exec(
                *command(config), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, cwd=workdir, env=child_env(), start_new_session=True,
            )
        except OSError as exc:
            raise CliError(f"cannot run Claude Code ({config.claude}): {exc.strerror or exc}") from exc
        try:
            stdout, stderr = await asyncio.wait_for(process.communicate(prompt.encode("utf-8", "replace")), timeout)
        except TimeoutError as exc:
            raise CliError(f"Claude Code gave no answer within {timeout:.0f} s") from exc
        finally:
            if process.returncode is None:  # timed out or cancelled (the cycle's deadline): no orphan left
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
                await process.wait()
    return _answer(stdout, stderr, process.returncode or 0)
