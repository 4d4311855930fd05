"""`playbook bootstrap`: learn from the project's earlier Claude Code sessions, oldest first.

The sessions are Claude Code's own transcripts of this project,
`<Claude Code's directory>/projects/<the project's path, encoded>/*.jsonl`, and their
subagents' (`<session>/subagents/agent-*.jsonl`), ordered by the time of their first record.
Each one is learned as the hooks learn one: a learning request in the log, then one cycle,
so progress is the log itself. Learning continues from the line the log says a transcript
was learned up to, whoever learned it (a hook or an earlier bootstrap): a transcript is never
counted twice, and a run stopped anywhere (Ctrl-C, kill -9) continues where it stopped, the
request it was working on included. The daily token budget is honoured between cycles.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TextIO

import msgspec

from eventlog.decide import RequestLearning
from eventlog.domain import PendingLearning, PlaybookState
from eventlog.events import Cause
from projections.injection import estimate_tokens
from projections.repository import PlaybookRepository

from .budget import budget_spent
from .learn import Outcome, run_cycle
from .requests import learning_lock
from .made_here import note, noted
from .sessions import project_slugs
from playbook.quick.stops import Terminated
from playbook.wiring.project import repository

HOOK = "bootstrap"
"""The `hook` of the requests bootstrap records (their transactions' source is `hook:bootstrap`)."""
REPLY_TOKENS = 1_000
"""The reflector's and curator's replies together, as a dry run estimates them (measured: 500 to 1,000)."""


class Session(msgspec.Struct, frozen=True):
    """One transcript bootstrap can learn from, and how much of it is new to the log."""

    path: str
    """As the log names it (the hooks' form when they named it first)."""
    started: str
    """The time of its first record (ISO), or its file's modification time."""
    size: int
    lines: int
    learned: int
    """Lines already learned (the log's progress for it)."""
    subagent: bool = False

    @property
    def new(self) -> bool:
        return self.lines > self.learned


def config_dir() -> Path:
    """Claude Code's configuration directory: `$CLAUDE_CONFIG_DIR`, else `~/.claude`."""
    return Path(os.path.realpath(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude"))


def transcripts_dir(project: Path, config: Path | None = None) -> Path:
    """Where Claude Code keeps the project's transcripts: `projects/<project_slug>` of its real path (Claude
    Code names a project by its working directory with links resolved), else the name older versions gave
    (only `/` written as `-`) when that directory is the one there."""
    config = config or config_dir()
    candidates = project_slugs(os.path.realpath(project))
    for slug in candidates:
        if (config / "projects" / slug).is_dir():
            return config / "projects" / slug
    return config / "projects" / candidates[0]


def _first_time(path: Path) -> str:
    """The `timestamp` of the first record that has one (the first few lines), else the file's modification time."""
    try:
        with open(path, "rb") as handle:
            for _ in range(20):
                line = handle.readline(1 << 20)
                if not line:
                    break
                try:
                    record = msgspec.json.decode(line)
                except msgspec.DecodeError:
                    continue
                if isinstance(record, dict) and isinstance(stamp := record.get("timestamp"), str) and stamp:
                    return stamp
        mtime = path.stat().st_mtime
    except OSError:
        return ""
    return datetime.fromtimestamp(mtime, timezone.utc).isoformat().replace("+00:00", "Z")


def _lines(path: Path) -> int:
    """Complete lines (the reader's count of lines to learn up to)."""
    count = 0
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            count += chunk.count(b"\n")
    return count


def _named(state: PlaybookState) -> dict[str, str]:
    """The log's name of each transcript it knows (progress or pending), by resolved path."""
    names: dict[str, str] = {}
    for name in [*state.progress, *(p.transcript for p in state.pending.values())]:
        try:
            names.setdefault(os.path.realpath(name), name)
        except ValueError:
            continue
    return names


def sessions(project: Path, state: PlaybookState, since: datetime | None = None) -> list[Session]:
    """The project's transcripts, oldest first, with what the log already learned of each."""
    directory = transcripts_dir(project)
    if not directory.is_dir():
        return []
    files = [(path, False) for path in directory.glob("*.jsonl")]
    files += [(path, True) for path in directory.glob("*/subagents/agent-*.jsonl")]
    names = _named(state)
    found = []
    for path, subagent in files:
        if not path.is_file() or path.is_symlink():
            continue
        started = _first_time(path)
        if since is not None and started and _moment(started) < since:
            continue
        name = names.get(os.path.realpath(path), str(path))
        try:
            size, lines = path.stat().st_size, _lines(path)
        except OSError:
            continue
        found.append(Session(path=name, started=started, size=size, lines=lines,
                             learned=state.progress.get(name, 0), subagent=subagent))
    return sorted(found, key=lambda s: (s.started, s.path))


def _moment(stamp: str) -> datetime:
    try:
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return datetime.min.replace(tzinfo=timezone.utc)
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)


# --- a dry run ------------------------------------------------------------------------------------------


class Estimate(msgspec.Struct, frozen=True):
    session: Session
    tokens: int
    """Tokens the cycle would send and receive: the reflector's and curator's prompts, and their replies."""
    cost_usd: float | None


def estimate(sessions_: list[Session], state: PlaybookState, model: str) -> list[Estimate]:
    """What learning each session with something new would send, built as the learner builds it; nothing sent."""
    from projections.prices import estimate as price

    from .prompting import curator_prompt, reflector_prompt
    from .transcript import TranscriptError, cited_ids, nothing_to_learn, read_transcript

    curator = estimate_tokens(curator_prompt({"analysis": "", "bullet_tags": []}, state))
    out = []
    for session in sessions_:
        if not session.new:
            continue
        try:
            transcript = read_transcript(session.path, start_line=session.learned)
        except TranscriptError:
            continue
        messages = transcript.messages if nothing_to_learn(transcript) is None else []  # skipped, as learning skips it
        sent = estimate_tokens(reflector_prompt(messages, state, cited_ids(messages))) + curator if messages else 0
        tokens = sent + REPLY_TOKENS if messages else 0
        out.append(Estimate(session, tokens, price(model, sent, REPLY_TOKENS) if messages else 0.0))
    return out


# --- learning -------------------------------------------------------------------------------------------


class Result(msgspec.Struct):
    total: int
    """Sessions with something new when the run started."""
    outcomes: list[tuple[Session, Outcome]] = []
    stopped: str | None = None
    """Why the run stopped before the end (the budget), or None."""
    interrupted: int = 0
    """The exit status of the signal that stopped the run (130 Ctrl-C, 143 SIGTERM), 0 when none did."""
    """Stopped by the user (Ctrl-C): the session being learned keeps its request, for the next run."""


def _request_for(repo: PlaybookRepository, session: Session) -> PendingLearning | None:
    """The pending request for `session` (the hooks' or an earlier run's), else a new one; None when the log
    says nothing is left to learn of it."""
    state = repo.state()
    if state.progress.get(session.path, 0) >= session.lines:
        return None
    # a request a log from elsewhere holds for this path is not run here (`made_here`): a new one is made
    ours = noted(repo.claude_dir.parent)
    waiting = [p for p in state.pending.values() if p.transcript == session.path and (p.request, p.transcript) in ours]
    if waiting:
        return min(waiting, key=lambda p: p.requested_at)
    import uuid

    request = uuid.uuid4().hex[:16]
    reason = "subagent" if session.subagent else "earlier session"
    note(repo.claude_dir.parent, request, session.path)
    repo.append([RequestLearning(request=request, hook=HOOK, transcript=session.path, reason=reason)],
                Cause(source="bootstrap"))
    return repo.state().pending.get(request)


def learn(project: Path, todo: list[Session], ignore_budget: bool = False,
          progress: Callable[[Session, Outcome | None], None] | None = None) -> Result:
    """Learn each session of `todo` in order, one cycle each; stops when the daily token budget is spent, or
    at Ctrl-C."""
    repo = repository(project)
    result = Result(total=len(todo))
    try:
        for session in todo:
            if progress is not None:
                progress(session, None)
            with learning_lock(project):
                if not ignore_budget and (spent := budget_spent(repo)) is not None:
                    result.stopped = spent.reason.replace("playbook learn --ignore-budget",
                                                          "playbook bootstrap --ignore-budget")
                    return result
                pending = _request_for(repo, session)
                outcome = Outcome("-", "already learned") if pending is None else run_cycle(repo, pending)
            result.outcomes.append((session, outcome))
            if progress is not None:
                progress(session, outcome)
    except KeyboardInterrupt as exc:
        result.interrupted = 143 if isinstance(exc, Terminated) else 130
    return result


# --- showing it -----------------------------------------------------------------------------------------


def shown(session: Session, project: Path) -> str:
    """A session's path as short as it reads well: relative to the project's transcripts."""
    try:
        return str(Path(session.path).relative_to(transcripts_dir(project)))
    except ValueError:
        return session.path


class Progress:
    """A progress bar (tqdm) on a terminal, one plain line per session otherwise."""

    def __init__(self, total: int, stream: TextIO, project: Path) -> None:
        self.stream, self.project, self.total, self.done = stream, project, total, 0
        self.bar: Any = None
        if total and stream.isatty():
            try:
                from tqdm import tqdm
            except ImportError:  # an optional dependency: plain lines without it
                tqdm = None
            if tqdm is not None:
                # The terminal's size (COLUMNS and LINES, else its own, else 80 x 24): a pseudo-terminal may
                # report 0 x 0, and tqdm then draws nothing at all.
                size = shutil.get_terminal_size((80, 24))
                self.bar = tqdm(total=total, file=stream, unit="session", desc="bootstrap", ncols=size.columns,
                                nrows=size.lines)

    def __call__(self, session: Session, outcome: Outcome | None) -> None:
        from playbook.rendering.safe_text import clean

        name = clean(shown(session, self.project))
        if self.bar is not None:
            if outcome is None:
                # The session id's start, short enough to leave the bar room on 80 columns, and a prefix the
                # other commands take for the session (6+ characters).
                label = name[:8] + (" subagent" if session.subagent else "")
                self.bar.set_postfix_str(label, refresh=True)
            else:
                self.bar.update(1)
            return
        if outcome is not None:
            self.done += 1
            detail = f": {clean(outcome.detail)}" if outcome.detail else ""
            print(f"bootstrap: {self.done}/{self.total} {name}: {outcome.status}{detail}", file=self.stream,
                  flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def run(project: Path, *, dry_run: bool = False, limit: int | None = None, since: datetime | None = None,
        ignore_budget: bool = False, stream: TextIO | None = None) -> int:
    """The `playbook bootstrap` command: prints what it would do or did (on stdout); returns the exit status."""
    from playbook.rendering.safe_text import clean

    stream = stream if stream is not None else sys.stdout
    repo = repository(project)
    state = repo.current()[0] if dry_run else repo.state()
    found = sessions(project, state, since)
    todo = [s for s in found if s.new]
    if limit is not None:
        todo = todo[:max(limit, 0)]
    where = transcripts_dir(project)
    if not found:
        print(f"bootstrap: no Claude Code sessions of this project in {clean(str(where))}", file=stream)
        return 0
    if dry_run:
        _print_estimates(project, state, found, todo, stream)
        return 0
    return _learn_all(project, repo, todo, ignore_budget, stream)


def _print_estimates(project: Path, state: PlaybookState, found: list[Session], todo: list[Session],
                     stream: TextIO) -> None:
    """`bootstrap --dry-run`: one line per session to learn (size, tokens, cost), then the totals."""
    from .backend import DEFAULT_MODEL, model_config
    from playbook.rendering.safe_text import clean

    config = model_config()
    model = config.model if config is not None else DEFAULT_MODEL
    estimates = estimate(todo, state, model)
    for item in estimates:
        cost = f"${item.cost_usd:.4f}" if item.cost_usd is not None else "unknown cost"
        print(f"{item.session.started[:19].replace('T', ' ')}  {item.session.size:>10,} B  "
              f"~{item.tokens:>8,} tokens  {cost:>10}  {clean(shown(item.session, project))}", file=stream)
    tokens = sum(item.tokens for item in estimates)
    costs = [item.cost_usd for item in estimates if item.cost_usd is not None]
    learned = sum(not s.new for s in found)
    print(f"bootstrap --dry-run: {len(estimates)} of {len(found)} sessions to learn ({learned} already "
          f"learned), about {tokens:,} tokens, about ${sum(costs):.2f} with {clean(model)}; nothing was sent",
          file=stream)


def _learn_all(project: Path, repo: PlaybookRepository, todo: list[Session], ignore_budget: bool,
               stream: TextIO) -> int:
    """Learn `todo` with progress shown, then one line of outcomes and tokens, and what is left; the exit
    status (130 when stopped by Ctrl-C)."""
    from projections.usage import spent_on

    from playbook.rendering.safe_text import clean

    progress = Progress(len(todo), stream, project)
    before = spent_on(repo).tokens
    try:
        result = learn(project, todo, ignore_budget=ignore_budget, progress=progress)
    finally:
        progress.close()
    if result.interrupted:
        print(f"bootstrap: stopped after {len(result.outcomes)} of {len(todo)} sessions; run `playbook bootstrap` "
              "again to continue", file=stream, flush=True)
        return result.interrupted
    counts: dict[str, int] = {}
    for _, outcome in result.outcomes:
        counts[outcome.status] = counts.get(outcome.status, 0) + 1
    spent = max(spent_on(repo).tokens - before, 0)  # 0 across midnight: today's count started again
    summary = ", ".join(f"{n} {status}" for status, n in counts.items()) or "nothing run"
    left = len(todo) - len(result.outcomes)
    print(f"bootstrap: {len(result.outcomes)} of {len(todo)} sessions done ({summary}); {spent:,} tokens today "
          f"by this run", file=stream)
    if result.stopped:
        print(f"bootstrap: stopped with {left} session(s) left: {clean(result.stopped)}", file=stream)
    elif left == 0:
        print("bootstrap: every session of this project is learned", file=stream)
    return 0
