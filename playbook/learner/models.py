"""The reflector and curator model calls, through the Messages API (`messages_api`) or the Claude Code CLI.

Configuration comes from the environment (see `model_config`). Retries: `MAX_RETRIES`
attempts in total, exponential backoff from `BASE_DELAY` with jitter, honouring
`retry-after` up to a minute; timeouts, connection errors, 408, 409, 429 and 5xx are retried,
other 4xx fail at once.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from collections.abc import Sequence
from typing import Any

from eventlog.commands import ModelCall
from eventlog.errors import PlaybookError
from eventlog.events import encodable_json
from eventlog.values import CallOutcome, ModelRole
from projections.render import load_template
from projections.scrub import scrub, scrub_value

from .backend import DEFAULT_MODEL, ModelConfig, model_config  # noqa: F401  (part of this module's interface)
from .messages_api import CallFailed, ReplyUnreadable, create, headers
from playbook.wiring.diagnostics import is_diagnostic_mode, save_diagnostic, warn
from .prompting import Playbook, curator_prompt, reflector_prompt, render_messages
from .replies import build_playbook_dict, curator_fields, extract_json, parse_extraction_reply

MAX_RETRIES = 3
BASE_DELAY = 2.0
MAX_TOKENS = 4096
REQUEST_TIMEOUT = 120.0
_clock = time.monotonic
"""What a call's latency is measured with."""


class ModelError(PlaybookError):
    """The model could not be reached, refused, or gave an unusable reply."""


def _base_delay() -> float:
    try:
        return float(os.environ.get("PLAYBOOK_RETRY_BASE_DELAY", BASE_DELAY))
    except ValueError:
        return BASE_DELAY


def _count(usage: Any, field: str) -> int:
    value = usage.get(field) if isinstance(usage, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


async def _through_claude(prompt: str, config: ModelConfig, role: ModelRole, calls: list[ModelCall]) -> str:
    """The reply through the Claude Code CLI, one call recorded with the usage and cost its JSON reports."""
    from .claude_cli import CliAnswer, CliError, ask

    def record(spent: CliAnswer | None, started: float, outcome: CallOutcome, error: str | None = None) -> None:
        usage = spent.usage if spent is not None else {}
        calls.append(ModelCall(
            role=role, model=(spent.model if spent is not None and spent.model else config.model), backend="cli",
            attempt=1, outcome=outcome, latency_ms=round((_clock() - started) * 1000), error=error,
            cost_usd=spent.cost_usd if spent is not None else None, **usage))

    started = _clock()
    try:
        answer = await ask(prompt, config)
    except CliError as exc:
        record(exc.spent, started, "error", str(exc))
        raise ModelError(str(exc)) from exc
    except asyncio.CancelledError:
        record(None, started, "cancelled", "deadline")
        raise
    record(answer, started, "ok")
    # ...and never enter the log, whichever way the reply came.
    return scrub(answer.text)


def _measured(role: ModelRole, config: ModelConfig, attempt: int, started: float, reply: Any = None,
              error: str | None = None, outcome: CallOutcome = "ok") -> ModelCall:
    """One attempt as a usage record: the tokens the reply reports (none for a failed attempt)."""
    usage = reply.get("usage") if isinstance(reply, dict) else None
    return ModelCall(
        role=role, model=config.model, backend="api", attempt=attempt,
        outcome=outcome,
        input_tokens=_count(usage, "input_tokens"), output_tokens=_count(usage, "output_tokens"),
        cache_creation_input_tokens=_count(usage, "cache_creation_input_tokens"),
        cache_read_input_tokens=_count(usage, "cache_read_input_tokens"),
        latency_ms=round((_clock() - started) * 1000), error=error,
    )


async def complete(prompt: str, config: ModelConfig, role: ModelRole = "reflector",
                   calls: list[ModelCall] | None = None) -> str:
    """The model's text reply to `prompt`, retried as the module says. Raises ModelError.

    Every attempt, failed or cancelled ones included, is appended to `calls` with what it used."""
    # A lone surrogate (from a transcript, an earlier reply or the playbook) cannot be sent as UTF-8.
    # Secrets never leave the machine: whatever the prompt was built from, it is scrubbed whole here.
    prompt = scrub(encodable_json(prompt))
    calls = [] if calls is None else calls
    if config.backend == "cli":
        return await _through_claude(prompt, config, role, calls)
    sent = headers(config.api_key, config.auth_token)
    for attempt in range(1, MAX_RETRIES + 1):
        text = await _attempt(sent, prompt, config, role, attempt, calls)
        if text is not None:
            # ...and never enter the log: everything the learner records comes from this text.
            return scrub(_redact(text, config))
    raise ModelError("model call failed")  # unreachable: the last attempt returns or raises


async def _attempt(sent: dict[str, str], prompt: str, config: ModelConfig, role: ModelRole,
                   attempt: int, calls: list[ModelCall]) -> str | None:
    """One attempt, appended to `calls`: the reply's text, or None once it is time for the next attempt.

    Raises ModelError for a failure not worth retrying, or the last attempt's."""
    started = _clock()
    payload = {"model": config.model, "max_tokens": MAX_TOKENS, "messages": [{"role": "user", "content": prompt}]}
    try:
        reply = await create(config.base_url, sent, payload, REQUEST_TIMEOUT)
    except CallFailed as exc:
        calls.append(_measured(role, config, attempt, started, error=str(exc), outcome="error"))
        if not exc.retryable or attempt == MAX_RETRIES:
            raise ModelError(f"model call failed after {attempt} attempt(s): {exc}") from exc
        delay = exc.retry_after
        if delay is None:
            base = _base_delay()
            delay = base * 2 ** (attempt - 1) + random.uniform(0, base / 2)
        await asyncio.sleep(delay)
        return None
    except asyncio.CancelledError:
        # The cycle's deadline: the call may still be billed, and the record says it was cut.
        calls.append(_measured(role, config, attempt, started, error="deadline", outcome="cancelled"))
        raise
    except ReplyUnreadable as exc:
        # A 200 whose body is not a Messages reply (not JSON, a list, nested 100k deep): unhandled, it
        # killed the learner and left the request pending for the next learner to die on too.
        calls.append(_measured(role, config, attempt, started, error=type(exc).__name__, outcome="error"))
        raise ModelError(f"the model's reply could not be read: {exc}") from exc
    try:
        text = _reply_text(reply)
    except ModelError as exc:
        calls.append(_measured(role, config, attempt, started, reply, error=str(exc), outcome="error"))
        raise
    calls.append(_measured(role, config, attempt, started, reply))
    return text


REDACTED = "[redacted credential]"


def _redact(text: str, config: ModelConfig) -> str:
    """`text` without the credential it was fetched with.

    A model that saw the key in a transcript (`export ANTHROPIC_API_KEY=...`) can quote it in
    its analysis or in a key point, and everything the learner takes from a reply is written to
    the log (often committed with the project) and injected into later sessions.
    """
    for secret in (config.api_key, config.auth_token):
        if secret and len(secret) >= 8 and secret in text:
            text = text.replace(secret, REDACTED)
    return text


def _reply_text(reply: dict[str, Any]) -> str:
    """The text blocks of a reply, joined; blocks that are not text (or whose text is not a string) are ignored."""
    content = reply.get("content")
    if not isinstance(content, list):
        raise ModelError(f"the model's reply has no content list ({type(content).__name__})")
    return "".join(text for block in content
                   if isinstance(block, dict) and block.get("type") == "text"
                   and isinstance(text := block.get("text"), str))


def _decoded(data: Any) -> Any:
    """A reply's JSON, decoded, with its strings scrubbed again: `complete` scrubbed the reply's text, where a
    JSON escape (`\\u0067hp_...`, `wJalr...\\/K7MD...`) hides a secret that decoding brings back."""
    return scrub_value(data)


async def reflect(messages: Sequence[Any], playbook: Playbook, cited_ids: Sequence[str], config: ModelConfig,
                  as_given: bool = False, calls: list[ModelCall] | None = None) -> dict[str, Any]:
    """The reflector's analysis and tags. Raises ModelError when the reply holds no JSON object.

    With `as_given`, `bullet_tags` is what the reply holds, whatever its type (the learner has
    Evaluate record a value that is not a list, rather than drop it unseen).
    """
    prompt = reflector_prompt(messages, playbook, cited_ids)
    data = _decoded(extract_json(await complete(prompt, config, "reflector", calls)))
    if data is None:
        raise ModelError("the reflector's reply holds no JSON object")
    analysis = data.get("analysis", "")
    tags = data.get("bullet_tags", [])
    return {"analysis": analysis if isinstance(analysis, str) else json.dumps(analysis),
            "bullet_tags": tags if isinstance(tags, list) or as_given else []}


async def curate(reflector_output: dict[str, Any], playbook: Playbook, config: ModelConfig, as_given: bool = False,
                 calls: list[ModelCall] | None = None) -> dict[str, Any]:
    """The curator's reasoning and operations. Raises ModelError when the reply holds no JSON object.

    With `as_given`, `operations` is what the reply holds, whatever its type: the learner hands it
    to ApplyOperations, which records one that is not a list (a lone operation object, a string)
    as skipped; `parse_curator_reply` would have made it [] without a trace.
    """
    prompt = curator_prompt(reflector_output, playbook)
    text = await complete(prompt, config, "curator", calls)
    data = _decoded(extract_json(text))
    if data is None:
        raise ModelError("the curator's reply holds no JSON object")
    # From the scrubbed reply, not decoded and scrubbed again (a megabyte reply took seconds a pass); a reasoning
    # that is not a string is dumped from scrubbed parts, and the dump is scrubbed in case it joined any.
    curation = curator_fields(data)
    if not isinstance(data.get("reasoning", ""), str):
        curation["reasoning"] = scrub(curation["reasoning"])
    if as_given:
        curation["operations"] = data.get("operations", [])
    return curation


async def run_reflector(messages: Sequence[Any], playbook: dict[str, Any], cited_ids: Sequence[str]) -> dict[str, Any]:
    """`{"analysis", "bullet_tags"}` for a session; empty on any failure."""
    empty = {"analysis": "", "bullet_tags": []}
    config = model_config()
    if config is None:
        return empty
    try:
        return await reflect(messages, playbook, cited_ids, config)
    except Exception as exc:  # the spec's boundary: never raises, records what it caught
        _caught("run_reflector", exc)
        return empty


async def run_curator(reflector_output: dict[str, Any], playbook: dict[str, Any]) -> dict[str, Any]:
    """`{"reasoning", "operations"}` from the reflector's output; never raises (REQ-CUR-010..012)."""
    empty = {"reasoning": "", "operations": []}
    try:
        config = model_config()
        if config is None:
            return empty
        output = reflector_output if isinstance(reflector_output, dict) else {}
        normalized = {"analysis": output.get("analysis", ""), "bullet_tags": output.get("bullet_tags", [])}
        return await curate(normalized, playbook, config)
    except Exception as exc:  # the spec's boundary (REQ-CUR-012): never raises, records what it caught
        _caught("run_curator", exc)
        return empty


async def extract_keypoints(messages: Sequence[Any], playbook: dict[str, Any]) -> dict[str, Any]:
    """The single-call path (REQ-CUR-001): evaluations plus operations or new_key_points."""
    empty: dict[str, list[Any]] = {"new_key_points": [], "evaluations": []}
    try:
        config = model_config()
        if config is None:
            return empty
        prompt = load_template("reflection.txt").format(
            playbook=json.dumps(build_playbook_dict(playbook), ensure_ascii=False, indent=2),
            trajectories=render_messages(messages),
        )
        extracted: dict[str, Any] = _decoded(parse_extraction_reply(await complete(prompt, config, "extraction")))
        return extracted
    except Exception as exc:  # the spec's boundary: never raises, records what it caught
        _caught("extract_keypoints", exc)
        return empty


def _caught(call: str, exc: Exception) -> None:
    """What a never-raising call caught: one line on stderr and, in diagnostic mode, a diagnostic file."""
    line = f"{call} failed: {type(exc).__name__}: {scrub(str(exc))}"
    warn(line)
    try:
        if is_diagnostic_mode():
            save_diagnostic(line + "\n", f"{call}_error")
    except OSError as error:
        warn(f"{call}: the diagnostic file could not be written: {error}")
