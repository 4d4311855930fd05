"""Which model the learner asks, and how: an API key if one is set, else Claude Code itself.

Standard library and msgspec only: the hooks and `playbook stats` ask which backend
learning would use without loading the model client (`messages_api`).

- `api`: the Messages API with the first of `AGENTIC_CONTEXT_API_KEY`,
  `ANTHROPIC_AUTH_TOKEN`, `ANTHROPIC_API_KEY`.
- `cli`: the Claude Code CLI (`claude -p`), which runs on the user's own login (a
  Claude subscription needs no key). It is `PLAYBOOK_CLAUDE` if set (an empty value
  turns this backend off), else `claude` on `PATH`, else where Claude Code's
  installers put it (`~/.local/bin/claude`, `~/.claude/local/claude`).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping

import msgspec

from eventlog.values import Backend
from projections.quicknotice import NO_BACKEND

DEFAULT_MODEL = "claude-sonnet-5-5"


class ModelConfig(msgspec.Struct, frozen=True):
    """How to reach the model: `backend` says which of the other fields are used."""

    model: str
    api_key: str | None
    auth_token: str | None
    base_url: str | None
    backend: Backend = "api"
    claude: str | None = None
    """The Claude Code CLI's path (backend `cli`)."""

    def __repr__(self) -> str:  # never show the key
        return f"ModelConfig(backend={self.backend!r}, model={self.model!r}, base_url={self.base_url!r})"


def find_claude(env: Mapping[str, str] | None = None) -> str | None:
    """The Claude Code CLI to learn through, or None (see the module's note)."""
    env = os.environ if env is None else env
    if "PLAYBOOK_CLAUDE" in env:
        chosen = env["PLAYBOOK_CLAUDE"]
        return chosen if chosen and os.path.isfile(chosen) and os.access(chosen, os.X_OK) else None
    found = shutil.which("claude", path=env.get("PATH", os.defpath))
    if found:
        return os.path.abspath(found)
    home = env.get("HOME") or os.path.expanduser("~")
    for candidate in (os.path.join(home, ".local", "bin", "claude"), os.path.join(home, ".claude", "local", "claude")):
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def model_config(env: Mapping[str, str] | None = None) -> ModelConfig | None:
    """Model, backend, credentials and endpoint from the environment; None when learning has no way to run."""
    env = os.environ if env is None else env
    model = (env.get("AGENTIC_CONTEXT_MODEL") or env.get("ANTHROPIC_MODEL") or env.get("ANTHROPIC_DEFAULT_SONNET_MODEL")
             or DEFAULT_MODEL)
    base_url = env.get("AGENTIC_CONTEXT_BASE_URL") or env.get("ANTHROPIC_BASE_URL") or None
    if key := env.get("AGENTIC_CONTEXT_API_KEY"):
        return ModelConfig(model, key, None, base_url)
    if token := env.get("ANTHROPIC_AUTH_TOKEN"):
        return ModelConfig(model, None, token, base_url)
    if key := env.get("ANTHROPIC_API_KEY"):
        return ModelConfig(model, key, None, base_url)
    if claude := find_claude(env):
        return ModelConfig(model, None, None, None, backend="cli", claude=claude)
    return None


def describe(config: ModelConfig | None, env: Mapping[str, str] | None = None) -> str:
    """One line saying how learning reaches the model (never the key itself)."""
    env = os.environ if env is None else env
    if config is None:
        return f"none: {NO_BACKEND}"
    if config.backend == "cli":
        return f"Claude Code CLI on your own login ({config.claude}), {config.model}"
    source = next((name for name in ("AGENTIC_CONTEXT_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_API_KEY")
                   if env.get(name)), "an API key")
    where = " at a custom endpoint (ANTHROPIC_BASE_URL)" if config.base_url else ""
    return f"Anthropic API with {source}{where}, {config.model}"
