"""The reflector's and curator's prompts, built from a transcript's messages and a playbook.

No model is called here (and the model client is not loaded): `playbook bootstrap --dry-run` and
the benchmarks measure these prompts without sending them. A transcript longer than
`MAX_TRANSCRIPT_CHARS` once rendered keeps its most recent part.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from eventlog.decide import content_state
from eventlog.domain import PlaybookState
from projections.render import format_state, load_template
from projections.scrub import scrub

MAX_TRANSCRIPT_CHARS = 200_000


def render_messages(messages: Sequence[Any]) -> str:
    """A transcript as `User:` / `Assistant:` turns, keeping the most recent text when it is long."""
    turns = []
    for message in messages:
        role = message.get("role") if isinstance(message, dict) else getattr(message, "role", "")
        content = message.get("content") if isinstance(message, dict) else getattr(message, "content", "")
        # Scrubbed turn by turn as well: cutting a long transcript to its end can leave half a
        # secret at the cut, which the scrub of the whole prompt would no longer recognise.
        turns.append(f"{'Assistant' if role == 'assistant' else 'User'}: {scrub(str(content))}")
    text = "\n\n".join(turns)
    return text if len(text) <= MAX_TRANSCRIPT_CHARS else "[earlier turns omitted]\n" + text[-MAX_TRANSCRIPT_CHARS:]


Playbook = PlaybookState | Mapping[str, Any]
"""The learner hands its state; the spec's functions hand a playbook dict (read with the legacy rules)."""


def _playbook_text(playbook: Playbook) -> str:
    state = playbook if isinstance(playbook, PlaybookState) else content_state(playbook)[0]
    return format_state(state) or "(the playbook is empty)"


def reflector_prompt(messages: Sequence[Any], playbook: Playbook, cited_ids: Sequence[str]) -> str:
    """The reflector's prompt: the playbook, the key points the session cited, and the session."""
    return load_template("reflector.txt").format(
        playbook=_playbook_text(playbook), cited_ids=", ".join(cited_ids) or "(none)",
        trajectories=render_messages(messages),
    )


def curator_prompt(reflector_output: dict[str, Any], playbook: Playbook) -> str:
    """The curator's prompt: the reflector's output and the playbook (after the reflector's tags)."""
    return load_template("curator.txt").format(
        reflector_output=json.dumps(reflector_output, ensure_ascii=False, indent=2),
        playbook=_playbook_text(playbook),
    )
