"""A lean context: what the injection budget gives the next session, and what it leaves out."""

from __future__ import annotations

from typing import Any

import msgspec

from eventlog import similarity
from eventlog.collapse import HoldCuration, Limits, collapse_reason, loss
from eventlog.commands import Absorb
from eventlog.decide import ApplyOperations, Command, Evaluate, SweepStale, decide
from eventlog.domain import PlaybookState
from eventlog.events import Cause, Event
from eventlog.evolve import fold
from projections.injection import Injection, injection_budget, plan
from projections.repository import PlaybookRepository

from playbook.wiring.settings import LeanSettings


class _Output(msgspec.Struct):
    additionalContext: str = ""


class _HookOutput(msgspec.Struct):
    hookSpecificOutput: _Output = msgspec.field(default_factory=_Output)


def current_plan(repo: PlaybookRepository, state: PlaybookState | None = None) -> Injection:
    """The injection plan for the playbook now, under the budget in force for the project."""
    state = repo.state() if state is None else state
    if repo.user_level:
        return plan(PlaybookState(), injection_budget(repo.claude_dir.parent), state)
    return plan(state, injection_budget(repo.claude_dir.parent), repo.user_playbook()[0])


def injected_context(repo: PlaybookRepository) -> Injection:
    """Exactly what the next session receives: the projected hook output, brought up to date first."""
    state = repo.refresh()
    planned = current_plan(repo, state)
    try:
        output = repo.injection_path.read_bytes().partition(b"\n")[2]
    except OSError:
        output = b""
    text = msgspec.json.decode(output, type=_HookOutput).hookSpecificOutput.additionalContext if output.strip() else ""
    return msgspec.structs.replace(planned, text=text)


def left_out_state(repo: PlaybookRepository) -> PlaybookState:
    """The playbook now, keeping only the key points the budget leaves out of the injection."""
    state = repo.state()
    return _only(state, set(current_plan(repo, state).left_out))


# --- the learner's hooks: collapse guard, near-duplicates of what the curator adds, staleness ----------


def absorbing(settings: LeanSettings) -> Absorb:
    """How learning absorbs the near-duplicates the curator adds: by the similarity measure in use, at the
    project's `playbook_dedup_threshold` or that measure's own."""
    using = similarity.method()
    threshold = similarity.THRESHOLDS[using] if settings.dedup_threshold is None else settings.dedup_threshold
    return Absorb(threshold=threshold, method=using)


def curation_commands(state: PlaybookState, evaluations: Any, operations: Any,
                      settings: LeanSettings) -> tuple[list[Command], str | None]:
    """The commands that carry out a curator reply on `state`, and why it was held (None when applied).

    A reply that would delete or merge away, or shrink the text by, more than the settings allow is
    held: one `HoldCuration` instead of its operations. Otherwise its operations, each ADD of a
    near-duplicate absorbed into the key point it repeats.
    """
    tagged = fold(decide(state, Evaluate(evaluations)), state)
    curating = ApplyOperations(operations, absorb=absorbing(settings))
    held = guarded(tagged, decide(tagged, curating), operations, settings)
    if held is not None:
        return [held], held.reason
    return [curating], None


def guarded(before: PlaybookState, events: list[Event], operations: Any,
            settings: LeanSettings) -> HoldCuration | None:
    """The collapse guard over curator `events` decided on `before`: the `HoldCuration` to record instead of
    them when they would collapse the playbook, else None."""
    found = loss(before, fold(events, before))
    reason = collapse_reason(found, Limits(settings.max_removed_share, settings.max_shrink_share))
    return None if reason is None else HoldCuration(operations=operations, reason=reason, loss=found)


def duplicates_in(state: PlaybookState, threshold: float | None = None) -> list[tuple[str, str, float]]:
    """Near-duplicate pairs across the whole playbook, most alike first, each key point in one pair at
    most: (kept, duplicate, similarity), keeping the better track record (then the older one)."""
    entries = [kp for _section, kp in state.entries()]
    order = {kp.name: index for index, kp in enumerate(entries)}
    pairs: list[tuple[str, str, float]] = []
    taken: set[str] = set()
    for i, j, score in similarity.duplicate_pairs([kp.text for kp in entries], threshold):
        a, b = entries[i], entries[j]
        if a.name in taken or b.name in taken:
            continue
        kept, duplicate = sorted((a, b), key=lambda kp: (-(kp.helpful - kp.harmful), order[kp.name]))
        pairs.append((kept.name, duplicate.name, score))
        taken.update((a.name, b.name))
    return pairs


def sweep_stale(repo: PlaybookRepository, settings: LeanSettings, session: str | None = None) -> list[Any]:
    """Mark and retire stale key points as a transaction of its own (so it can be reverted alone)."""
    if not settings.stale_after and not settings.retire_after:
        return []
    committed = repo.append([SweepStale(stale_after=settings.stale_after, retire_after=settings.retire_after)],
                            Cause(source="stale", session=session,
                                  note=f"unused for {settings.stale_after} sessions: stale; "
                                       f"for {settings.retire_after}: retired"))
    return [] if committed is None else list(committed.events)


# --- proof of use ---------------------------------------------------------------------------------------


class UsageRow(msgspec.Struct, frozen=True):
    """One key point's record of use: sessions it was injected into and cited in, its ratings, idleness."""

    name: str
    section: str
    injected: int
    cited: int
    helpful: int
    harmful: int
    idle_sessions: int
    stale: bool
    text: str


def usage_rows(state: PlaybookState) -> list[UsageRow]:
    rows = []
    for section, kp in state.entries():
        used = state.usage.get(kp.name)
        last = used.last_used if used is not None else 0
        rows.append(UsageRow(
            name=kp.name, section=section, injected=used.injected if used else 0, cited=used.cited if used else 0,
            helpful=kp.helpful, harmful=kp.harmful, idle_sessions=max(state.sessions - last, 0),
            stale=bool(used and used.stale), text=kp.text,
        ))
    return rows


def usage_lines(state: PlaybookState, width: int) -> list[str]:
    """`playbook stats`' table of use, one key point a line."""
    from playbook.rendering.safe_text import clean

    rows = usage_rows(state)
    stale = sum(row.stale for row in rows)
    never = sum(row.cited == 0 for row in rows)
    lines = ["", f"use per key point ({state.sessions} learned sessions; {stale} stale, {never} never cited)"]
    if not rows:
        return [*lines, "  (none)"]
    name_width = max(len(clean(row.name)) for row in rows)
    lines.append(f"  {'key point':<{name_width}}  injected  cited  helpful  harmful  idle  ")
    for row in rows:
        head = (f"  {clean(row.name):<{name_width}}  {row.injected:>8}  {row.cited:>5}  {row.helpful:>7}  "
                f"{row.harmful:>7}  {row.idle_sessions:>4}  {'stale ' if row.stale else '      '}")
        text = clean(row.text)
        room = max(width - len(head), 10)
        lines.append(head + (text if len(text) <= room else text[: room - 1] + "…"))
    return lines


def unused_state(repo: PlaybookRepository) -> PlaybookState:
    """The playbook now, keeping only the key points no session ever cited."""
    state = repo.state()
    return _only(state, {name for name in state.where
                         if (used := state.usage.get(name)) is None or used.cited == 0})


def _only(state: PlaybookState, names: set[str]) -> PlaybookState:
    kept = state.copy()
    for section, entries in kept.sections.items():
        kept.sections[section] = {name: kp for name, kp in entries.items() if name in names}
    kept.where = {name: section for name, section in kept.where.items() if name in names}
    return kept
