"""Learning from sessions: hooks record requests in the log; a background process runs them.

A hook only appends a `LearningRequested` event and starts a detached
`playbook learn --pending`, so it returns at once. The learner holds a learning
lock (not the log's) for its whole run, so cycles of one project run one at a
time and never learn the same turns twice; the model calls happen without the
log's lock, which is taken only for the final append. One cycle is one
transaction: the reflector's tags as evaluations, the curator's operations, the
prune, and the request's completion, or nothing but a failure or skip record.
A learner that dies leaves its request pending for the next one.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import msgspec

from eventlog.decide import CompleteLearning, Evaluate, FailLearning, Prune, RequestLearning, SkipLearning, decide
from eventlog.decide import decide_all
from eventlog.domain import PendingLearning, PlaybookState
from eventlog.errors import PlaybookError
from eventlog.events import Cause
from eventlog.evolve import fold
from eventlog.store import FILE_MODE
from projections.repository import PlaybookRepository

from .lean import curation_commands, current_plan, lean_settings, sweep_stale
from .project import repository
from .settings import load_settings, never_learn_match
from .transcript import TranscriptError, cited_ids, read_transcript

DEFAULT_DEADLINE = 300.0
LEARN_LOCK = "playbook.learn.lock"
LEARN_LOG = "playbook.learn.log"


class Outcome(msgspec.Struct, frozen=True):
    """What one cycle did: completed | failed | skipped | gone (finished elsewhere)."""

    request: str
    status: str
    detail: str = ""


def request_learning(project: Path, hook: str, transcript: str, session: str | None, reason: str | None = None) -> str:
    """Record a learning request in the log; durable when it returns. Returns its id."""
    request = uuid.uuid4().hex[:16]
    repository(project).append(
        [RequestLearning(request=request, hook=hook, transcript=transcript, session=session, reason=reason)],
        Cause(source=f"hook:{hook}", session=session),
    )
    return request


def spawn_learner(project: Path) -> None:
    """Start `playbook learn --pending` for `project`, detached: it outlives the hook and Claude Code."""
    log_path = project / ".claude" / LEARN_LOG
    with os.fdopen(os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, FILE_MODE), "ab") as log:
        subprocess.Popen(
            # -I: the learner runs in the project's directory, whose own `playbook/` must not be imported.
            [sys.executable, "-I", "-m", "playbook", "--project", str(project), "learn", "--pending"],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, close_fds=True,
            cwd=str(project),
        )


@contextmanager
def learning_lock(project: Path) -> Iterator[None]:
    fd = os.open(project / ".claude" / LEARN_LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, FILE_MODE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _deadline() -> float:
    try:
        return float(os.environ.get("PLAYBOOK_LEARN_DEADLINE", DEFAULT_DEADLINE))
    except ValueError:
        return DEFAULT_DEADLINE


def learn_pending(project: Path) -> list[Outcome]:
    """Run every pending learning request of `project`, oldest first, one at a time."""
    repo = repository(project)
    outcomes: list[Outcome] = []
    with learning_lock(project):
        done: set[str] = set()
        while True:
            state = repo.state()
            waiting = [p for p in state.pending.values() if p.request not in done]
            if not waiting:
                return outcomes
            pending = min(waiting, key=lambda p: p.requested_at)
            done.add(pending.request)
            outcomes.append(run_cycle(repo, pending))


def _finish(repo: PlaybookRepository, command: FailLearning | SkipLearning, pending: PendingLearning,
            model: str | None = None) -> None:
    repo.append([command], Cause(source=f"hook:{pending.hook}", session=pending.session, model=model))


def run_cycle(repo: PlaybookRepository, pending: PendingLearning) -> Outcome:
    """One learning cycle for `pending`: transcript, reflector, tags, curator, operations, prune."""
    from .models import ModelError, model_config  # anthropic is imported by the learner only

    state = repo.state()
    if pending.request not in state.pending:
        return Outcome(pending.request, "gone")
    path = pending.transcript
    start = state.progress.get(path, 0)
    if (pattern := never_learn_match(path, load_settings(repo.claude_dir.parent))) is not None:
        reason = f"transcript excluded from learning by playbook_never_learn ({pattern})"
        _finish(repo, SkipLearning(request=pending.request, reason=reason, transcript=path), pending)
        return Outcome(pending.request, "skipped", reason)
    try:
        transcript = read_transcript(Path(path), start_line=start)
    except TranscriptError as exc:
        _finish(repo, SkipLearning(request=pending.request, reason=str(exc), transcript=path), pending)
        return Outcome(pending.request, "skipped", str(exc))
    if not transcript.messages:
        _finish(repo, SkipLearning(request=pending.request, reason="nothing new in the transcript", transcript=path,
                                   through_line=transcript.lines), pending)
        return Outcome(pending.request, "skipped", "nothing new in the transcript")
    config = model_config()
    if config is None:
        reason = "no API key (set AGENTIC_CONTEXT_API_KEY, ANTHROPIC_AUTH_TOKEN or ANTHROPIC_API_KEY)"
        _finish(repo, SkipLearning(request=pending.request, reason=reason, transcript=path), pending)
        return Outcome(pending.request, "skipped", reason)
    cited = cited_ids(transcript.messages)
    try:
        import asyncio  # here, not at the top: the hooks import this module and never need it

        reflection, evaluations, curation = asyncio.run(
            asyncio.wait_for(_ask_models(transcript.messages, state, cited, config), timeout=_deadline())
        )
    except (ModelError, TimeoutError) as exc:
        error = str(exc) or f"no answer within the {_deadline():.0f} s deadline"
        _finish(repo, FailLearning(request=pending.request, error=error, transcript=path), pending, config.model)
        return Outcome(pending.request, "failed", error)
    except Exception as exc:
        # Anything else a hostile reply provokes is this cycle's failure, recorded: a learner that
        # died here left the request pending, and every later learner would take it first and die too.
        error = f"learning failed: {type(exc).__name__}"
        _finish(repo, FailLearning(request=pending.request, error=error, transcript=path), pending, config.model)
        return Outcome(pending.request, "failed", error)

    lean = lean_settings(repo.claude_dir.parent)
    held: list[str] = []

    def decider(fresh: PlaybookState) -> list:
        if pending.request not in fresh.pending:
            return []
        if fresh.progress.get(path, 0) != start:
            return decide(fresh, SkipLearning(request=pending.request, reason="transcript learned meanwhile",
                                              transcript=path))
        curating, why_held = curation_commands(fresh, evaluations, curation["operations"], lean)
        held[:] = [why_held] if why_held else []
        return decide_all(fresh, [
            Evaluate(evaluations), *curating, Prune(),
            CompleteLearning(request=pending.request, transcript=path, from_line=start,
                             through_line=transcript.lines, cited=cited,
                             injected=current_plan(repo, fresh).included),
        ])

    cause = Cause(source=f"hook:{pending.hook}", session=pending.session, model=config.model,
                  analysis=reflection["analysis"] or None, reasoning=curation["reasoning"] or None)
    try:
        repo.append(decider, cause)
    except PlaybookError:
        raise  # the log cannot be written at all: the request stays pending for a later learner
    except Exception as exc:
        # Deciding on this reply failed: recorded as this cycle's failure, or the request would stay
        # pending and every later learner would take it first and fail the same way.
        error = f"learning failed while applying the reply: {type(exc).__name__}"
        _finish(repo, FailLearning(request=pending.request, error=error, transcript=path), pending, config.model)
        return Outcome(pending.request, "failed", error)
    if held:
        print(f"playbook: learning {pending.request}: the curator's reply was held, not applied: {held[0]}",
              flush=True)
    sweep_stale(repo, lean, pending.session)
    return Outcome(pending.request, "completed", f"held: {held[0]}" if held else "")


async def _ask_models(messages: list, state: PlaybookState, cited: list[str], config) -> tuple[dict, object, dict]:
    from .models import curate, reflect

    reflection = await reflect(messages, state, cited, config, as_given=True)
    # Tags (and the list of them) that are not what they should be go to Evaluate as they are, which
    # records each as skipped (not_an_object, not_a_list); filtered out here, they vanished unseen.
    tags = reflection["bullet_tags"]
    evaluations = [
        {"name": tag.get("name"), "rating": tag.get("tag"), "rationale": tag.get("rationale")}
        if isinstance(tag, dict) else tag
        for tag in tags
    ] if isinstance(tags, list) else tags
    # The curator sees the counters after this session's tags.
    tagged = fold(decide(state, Evaluate(evaluations)), state)
    curation = await curate(reflection, tagged, config, as_given=True)
    return reflection, evaluations, curation
