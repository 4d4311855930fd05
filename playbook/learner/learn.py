"""Learning from sessions: hooks record requests in the log; a background process runs them.

A hook only appends a `LearningRequested` event and starts a detached
`playbook learn --pending`, so it returns at once. The learner holds a learning
lock (not the log's) for its whole run, so cycles of one project run one at a
time and never learn the same turns twice; the model calls happen without the
log's lock, which is taken only for the final append. One cycle is one
transaction: the reflector's tags as evaluations, the curator's operations, the
prune, and the request's completion, or nothing but a failure or skip record.
A learner that dies leaves its request pending for the next one.

A cycle that fails (model unreachable, unusable reply, deadline) leaves its request
pending: later learners (each learning hook starts one) try it again once
`retry_delay(attempts)` has passed since the last failure, and after `max_attempts()`
failures it is recorded as given up. `playbook learn --retry` tries at once.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from eventlog.commands import ModelCall
from eventlog.decide import CompleteLearning, DeferLearning, Evaluate, FailLearning, Prune, RecordModelCalls
from eventlog.decide import SkipLearning, decide
from eventlog.decide import decide_all
from eventlog.domain import PendingLearning, PlaybookState
from eventlog.errors import PlaybookError
from eventlog.events import Cause
from eventlog.evolve import fold
from eventlog.storage import utc_now
from projections.repository import PlaybookRepository

from .lean import curation_commands, current_plan, sweep_stale
from .review import cycle_commands
from playbook.wiring.project import claude_dir, repository
from .retries import due, env_number, max_attempts, next_try
from playbook.wiring.settings import LeanSettings, Settings, lean_settings, load_settings, never_learn_match
from .made_here import made_here
from .budget import Spent, budget_spent
from .requests import learning_lock
from .sessions import claude_config_dir, inside_project_sessions, project_sessions
from .transcript import Transcript, TranscriptError, cited_ids, nothing_to_learn, read_transcript
from .user_level import learn_preferences, split_preferences

if TYPE_CHECKING:
    from .backend import ModelConfig

DEFAULT_DEADLINE = 300.0


class Outcome(msgspec.Struct, frozen=True):
    """What one cycle did: completed | failed | skipped | deferred (the daily budget) | gone (finished elsewhere)."""

    request: str
    status: str
    detail: str = ""


def _deadline() -> float:
    return env_number("PLAYBOOK_LEARN_DEADLINE", DEFAULT_DEADLINE)


def learn_pending(project: Path, retry_now: bool = False, ignore_budget: bool = False) -> list[Outcome]:
    """Run every pending learning request of `project` that is due, oldest first, one at a time.

    A request whose last cycle failed waits for its retry delay, unless `retry_now`. Once the
    day's token budget is spent, the requests left are deferred (recorded once a day each, and
    left pending) unless `ignore_budget`.
    """
    if not os.path.lexists(claude_dir(project)):
        return []  # no log, so no request: nothing to learn, and no directory made for a lock
    try:
        return _learn_pending(project, retry_now, ignore_budget)
    except PlaybookError as exc:
        from playbook.wiring.notice import record_failure

        # Said at the next session start; the error line itself is the learner's own output (the learn log).
        record_failure(project, "learner", exc, log=False)
        raise


def _learn_pending(project: Path, retry_now: bool, ignore_budget: bool) -> list[Outcome]:
    from playbook.wiring.notice import update_learning, update_notice

    repo = repository(project)
    outcomes: list[Outcome] = []
    with learning_lock(project):
        done: set[str] = set()
        while True:
            state = repo.state()
            waiting = sorted((p for p in state.pending.values() if p.request not in done and (retry_now or due(p))),
                             key=lambda p: p.requested_at)
            if not waiting:
                update_notice(project, state)
                update_learning(repo, None, cycles=any(o.status in RAN for o in outcomes))
                return outcomes
            if not ignore_budget and (spent := budget_spent(repo)) is not None:
                outcomes.extend(defer(repo, waiting, spent))
                update_learning(repo, (spent.used, spent.budget), cycles=any(o.status in RAN for o in outcomes))
                return outcomes
            pending = waiting[0]
            done.add(pending.request)
            outcomes.append(run_cycle(repo, pending))


RAN = frozenset({"completed", "failed", "given up"})
"""The outcomes of a cycle that asked the models: what tells whether learning keeps failing."""


def waiting_for_retry(project: Path) -> list[tuple[PendingLearning, datetime | None]]:
    """Pending requests that failed before, with when each is due again."""
    state = repository(project).state()
    return [(p, next_try(p)) for p in state.pending.values() if p.attempts]


def defer(repo: PlaybookRepository, waiting: list[PendingLearning], spent: Spent) -> list[Outcome]:
    """Record each waiting request as deferred (once a day), as one transaction; each stays pending."""
    commands = [DeferLearning(request=p.request, reason=spent.reason, transcript=p.transcript,
                              used_tokens=spent.used, budget_tokens=spent.budget)
                for p in waiting if p.request not in spent.deferred]
    if commands:
        repo.append(commands, Cause(source="learn:budget"))
    return [Outcome(p.request, "deferred", spent.reason) for p in waiting]


def _finish(repo: PlaybookRepository, command: FailLearning | SkipLearning, pending: PendingLearning,
            model: str | None = None, calls: list[ModelCall] | None = None) -> None:
    """Close `pending` with `command`, and what its model calls used, as one transaction."""
    usage = [RecordModelCalls(list(calls))] if calls else []
    repo.append([*usage, command], Cause(source=f"hook:{pending.hook}", session=pending.session, model=model))


def _fail(repo: PlaybookRepository, pending: PendingLearning, error: str, path: str, model: str | None,
          calls: list[ModelCall] | None = None) -> Outcome:
    """Record a failed cycle, with what its model calls used: pending for a later retry, or given up after
    `max_attempts()`."""
    attempt = pending.attempts + 1
    give_up = attempt >= max_attempts()
    _finish(repo, FailLearning(request=pending.request, error=error, transcript=path, attempt=attempt,
                               give_up=give_up), pending, model, calls)
    return Outcome(pending.request, "given up" if give_up else "failed", error)


def _skip(repo: PlaybookRepository, pending: PendingLearning, reason: str,
          through_line: int | None = None) -> Outcome:
    """Record that `pending` was skipped, for `reason`."""
    _finish(repo, SkipLearning(request=pending.request, reason=reason, transcript=pending.transcript,
                               through_line=through_line), pending)
    return Outcome(pending.request, "skipped", reason)


def run_cycle(repo: PlaybookRepository, pending: PendingLearning) -> Outcome:
    """One learning cycle for `pending`: transcript, reflector, tags, curator, operations, prune."""
    state = repo.state()
    if pending.request not in state.pending:
        return Outcome(pending.request, "gone")
    settings = load_settings(repo.claude_dir.parent)
    start = state.progress.get(pending.transcript, 0)
    ready = _ready(repo, state, pending, settings, start)
    if isinstance(ready, Outcome):
        return ready
    cycle = _Cycle(repo, pending, settings, start, *ready)
    failed = cycle.ask(state)
    return failed or cycle.apply()


def _ready(repo: PlaybookRepository, state: PlaybookState, pending: PendingLearning, settings: Settings,
           start: int) -> tuple[Transcript, ModelConfig] | Outcome:
    """What is new in the transcript and the model to ask, or the skip recorded when there is nothing to learn."""
    from .backend import model_config

    path = pending.transcript
    # The request names the file to read and send to the model, and a log a repository carries can
    # hold any request: only requests this machine made are run, and only for this project's own
    # sessions in Claude Code's directory, by their resolved path.
    project = repo.claude_dir.parent
    if not made_here(project, pending.request, path):
        return _skip(repo, pending, f"request {pending.request} was not made on this machine (the log came from "
                                    f"elsewhere); transcript {path} not learned from")
    directory = claude_config_dir()
    try:
        resolved = inside_project_sessions(path, project, directory)
    except ValueError:  # no file can have this path
        resolved = None
    if resolved is None:
        sessions = project_sessions(project, directory)[0]
        return _skip(repo, pending, f"transcript {path} is outside {sessions}, this project's sessions; "
                                    "not learned from")
    if (pattern := never_learn_match(path, settings)) is not None:
        return _skip(repo, pending, f"transcript excluded from learning by playbook_never_learn ({pattern})")
    try:
        transcript = read_transcript(Path(resolved), start_line=start)
    except TranscriptError as exc:
        return _skip(repo, pending, str(exc))
    if not transcript.messages:
        return _skip(repo, pending, "nothing new in the transcript", through_line=transcript.lines)
    if (nothing := nothing_to_learn(transcript)) is not None:
        return _skip(repo, pending, nothing, through_line=transcript.lines)
    if state.disabled:
        return _skip(repo, pending, "the playbook is disabled in this project (playbook enable)")
    config = model_config()
    if config is None:
        from projections.quickroads import NO_BACKEND

        return _skip(repo, pending, NO_BACKEND)
    return transcript, config


def _names_used(evaluations: object, operations: object) -> set[str]:
    """Every key point name the reflector's ratings and the curator's operations refer to."""
    names: set[str] = set()
    for item in [*(evaluations if isinstance(evaluations, list) else []),
                 *(operations if isinstance(operations, list) else [])]:
        if not isinstance(item, dict):
            continue
        for key in ("name", "target_id"):
            if isinstance(item.get(key), str):
                names.add(item[key])
        sources = item.get("source_ids")
        if isinstance(sources, list):
            names.update(source for source in sources if isinstance(source, str))
    return names


class _Cycle:
    """One cycle once there is something to learn: the models' replies, then one transaction deciding on them."""

    def __init__(self, repo: PlaybookRepository, pending: PendingLearning, settings: Settings, start: int,
                 transcript: Transcript, config: ModelConfig) -> None:
        self.repo = repo
        self.pending = pending
        self.settings = settings
        self.start = start
        self.transcript = transcript
        self.config = config
        self.cited = cited_ids(transcript.messages)
        self.calls: list[ModelCall] = []  # every attempt's usage, recorded in this cycle's transaction whatever its end
        self.reflection: dict[str, Any] = {}
        self.evaluations: object = []
        self.curation: dict[str, Any] = {}
        self.held: list[str] = []
        self.proposed: list[str] = []  # with review on: why the guard would have held the reply, if it would
        self.stale: str | None = None
        self.meant: dict[str, str | None] = {}  # each name the replies use: the text it had when they were asked

    def _fail(self, error: str) -> Outcome:
        return _fail(self.repo, self.pending, error, self.pending.transcript, self.config.model, self.calls)

    def ask(self, state: PlaybookState) -> Outcome | None:
        """Ask the reflector and the curator; the failure recorded when no usable reply came in time."""
        from .models import ModelError

        try:
            import asyncio  # here, not at the top: the hooks import this module and never need it

            self.reflection, self.evaluations, self.curation = asyncio.run(asyncio.wait_for(
                _ask_models(self.transcript.messages, state, self.cited, self.config, self.calls),
                timeout=_deadline()))
        except (ModelError, TimeoutError) as exc:
            return self._fail(str(exc) or f"no answer within the {_deadline():.0f} s deadline")
        except Exception as exc:
            # Anything else a hostile reply provokes is this cycle's failure, recorded: a learner that
            # died here left the request pending, and every later learner would take it first and die too.
            return self._fail(f"learning failed: {type(exc).__name__}")
        self.meant = {name: (kp.text if (kp := state.get(name)) is not None else None)
                      for name in _names_used(self.evaluations, self.curation.get("operations"))}
        return None

    def renamed(self, fresh: PlaybookState) -> str | None:
        """The first name the replies use that means another key point in `fresh` than when they were asked (a
        merge that came in meanwhile renamed entries), else None: the replies are then asked again."""
        for name, text in self.meant.items():
            kp = fresh.get(name)
            if (kp.text if kp is not None else None) != text:
                return name
        return None

    def decide(self, fresh: PlaybookState, lean: LeanSettings) -> list[Any]:
        """The cycle's events against the log as it is under the lock."""
        pending, path, calls = self.pending, self.pending.transcript, RecordModelCalls(list(self.calls))
        if pending.request not in fresh.pending:
            return decide(fresh, calls)  # finished elsewhere; what was spent still counts
        if fresh.progress.get(path, 0) != self.start:
            return decide_all(fresh, [calls, SkipLearning(
                request=pending.request, reason="transcript learned meanwhile", transcript=path)])
        if (moved := self.renamed(fresh)) is not None:
            # Ratings and operations name key points as the models saw them: applied to a name that now
            # means another entry, they would land on it. Asked again against the playbook as it is now.
            self.stale = f"the playbook changed while the models answered ({moved} means another key point now)"
            return decide_all(fresh, [calls, FailLearning(request=pending.request, error=self.stale, transcript=path,
                                                          attempt=pending.attempts + 1,
                                                          give_up=pending.attempts + 1 >= max_attempts())])
        operations = self.curation["operations"]
        curating, why_held = curation_commands(fresh, self.evaluations, operations, lean)
        complete = CompleteLearning(request=pending.request, transcript=path, from_line=self.start,
                                    through_line=self.transcript.lines, cited=self.cited,
                                    injected=current_plan(self.repo, fresh).included)
        if self.settings.playbook_review:
            # Ratings still count (and the prune they lead to); the operations wait for review, a reply
            # the guard would hold included: each of its operations is the user's to accept or not.
            self.proposed[:] = [why_held] if why_held else []
            return decide_all(fresh, [
                calls,
                *cycle_commands(self.evaluations, operations, prefix=pending.request[:8],
                                request=pending.request, held=why_held, now=utc_now(),
                                max_age_days=self.settings.playbook_review_expiry_days),
                complete,
            ])
        self.held[:] = [why_held] if why_held else []
        return decide_all(fresh, [calls, Evaluate(self.evaluations), *curating, Prune(), complete])

    def apply(self) -> Outcome:
        """Append the cycle's transaction; its failure recorded when deciding on the replies fails."""
        pending, lean = self.pending, lean_settings(self.repo.claude_dir.parent)
        cause = Cause(source=f"hook:{pending.hook}", session=pending.session, model=self.config.model,
                      analysis=self.reflection["analysis"] or None, reasoning=self.curation["reasoning"] or None)
        self._route_preferences(cause)
        try:
            self.repo.append(lambda fresh: self.decide(fresh, lean), cause)
        except PlaybookError:
            raise  # the log cannot be written at all: the request stays pending for a later learner
        except Exception as exc:
            # Deciding on this reply failed: recorded as this cycle's failure, or the request would stay
            # pending and every later learner would take it first and fail the same way.
            return self._fail(f"learning failed while applying the reply: {type(exc).__name__}")
        if self.stale is not None:
            return Outcome(pending.request, "failed", self.stale)
        if self.held:
            print(f"playbook: learning {pending.request}: the curator's reply was held, not applied: "
                  f"{self.held[0]}", flush=True)
        elif self.proposed:
            print(f"playbook: learning {pending.request}: the curator's reply would be held ({self.proposed[0]}); "
                  "its operations wait for review", flush=True)
        sweep_stale(self.repo, lean, pending.session)
        return Outcome(pending.request, "completed", f"held: {self.held[0]}" if self.held else "")

    def _route_preferences(self, cause: Cause) -> None:
        """The curator's new USER PREFERENCES go to the user-level playbook, before the project's transaction: a
        learner that dies in between leaves the request pending, and the cycle run again finds them there.
        With review on, every operation waits for the user, preferences included: none is routed past it."""
        if self.settings.playbook_review:
            return
        project = self.repo.claude_dir.parent
        preferences, self.curation["operations"] = split_preferences(self.curation["operations"], project)
        if not preferences:
            return
        try:
            learn_preferences(preferences, cause, project)
        except PlaybookError as exc:
            print(f"playbook: learning {self.pending.request}: the user-level playbook cannot be written ({exc}); "
                  "its preferences stay in the project's", flush=True)
            self.curation["operations"] = [*self.curation["operations"], *preferences]


async def _ask_models(messages: list[Any], state: PlaybookState, cited: list[str], config: ModelConfig,
                      calls: list[ModelCall]) -> tuple[dict[str, Any], object, dict[str, Any]]:
    from .models import curate, reflect

    reflection = await reflect(messages, state, cited, config, as_given=True, calls=calls)
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
    curation = await curate(reflection, tagged, config, as_given=True, calls=calls)
    return reflection, evaluations, curation
