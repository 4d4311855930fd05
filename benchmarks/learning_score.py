"""The learning benchmark's score: what each cycle did, and what the playbook holds at the end, against the labels.

A `Tracker` is shown the live key points (the project's and the user-level playbook's, the latter
named `user:ID`) before and after each cycle, with the cycle's outcome and model calls, and keeps:

- lessons captured: each lesson some session teaches is held, at the end, by a key point whose text
  it is found in (`Lesson.found_in`);
- false lessons: key points a session of nothing to learn added, or whose text holds a lesson some
  session must not teach, at any point of the run;
- duplicates left: at the end, key points beyond the first holding the same lesson;
- ids changed: each time a lesson, once captured, is no longer under the id it was first captured
  under (a merge or a re-add gave it a new one);
- tokens spent, per cycle and in all, as the learner recorded its model calls.
"""

from __future__ import annotations

import msgspec

from benchmarks.learning_labels import Case, Labels


class CycleRow(msgspec.Struct, frozen=True):
    """One session learned: the transcript's size, what the cycle did and cost, and what it added."""

    case: str
    kind: str
    transcript_bytes: int
    transcript_tokens: int
    """Estimated tokens (UTF-8 bytes / 4) of the session as the reflector is sent it."""
    status: str
    detail: str
    calls: int
    tokens: int
    """Every token the cycle's model calls used (input, output and cache)."""
    cost_usd: float
    added: list[str]
    teaches: list[str]
    learned: list[str]
    """Of `teaches`, the lessons a key point holds after the cycle."""


class Target(msgspec.Struct, frozen=True):
    what: str
    figure: str
    target: str
    met: bool


class LearningReport(msgspec.Struct, frozen=True):
    """What `benchmarks.learning.run` measured: the cycles, the end state's score, and the targets."""

    mode: str
    model: str
    cycles: list[CycleRow]
    lessons: list[str]
    """Every lesson some session teaches."""
    missing: list[str]
    """Of `lessons`, those no key point holds at the end."""
    false_lessons: list[str]
    """Each as `ID: text (why)`."""
    duplicates: list[str]
    """Each as `lesson: ID, ID...` for a lesson held by more than one key point at the end."""
    id_changes: list[str]
    """Each as `lesson: OLD -> NEW`."""
    other: list[str]
    """Key points added that no label names (neither taught nor false): shown, not scored."""
    injected_tokens: int
    injected_budget: int
    key_points: int
    tokens_spent: int
    cost_usd: float
    targets: list[Target]

    @property
    def all_met(self) -> bool:
        return all(target.met for target in self.targets)


Live = dict[str, str]
"""Key point id (`user:ID` for the user-level playbook) -> its text."""


class Tracker:
    def __init__(self, labels: Labels) -> None:
        self.labels = labels
        self.taught = list(dict.fromkeys(key for case in labels.cases for key in case.teaches))
        self.first_id: dict[str, str] = {}
        self.current_id: dict[str, str] = {}
        self.id_changes: list[str] = []
        self.false: dict[str, str] = {}
        self.other: dict[str, str] = {}
        self.rows: list[CycleRow] = []

    def holders(self, key: str, live: Live) -> list[str]:
        lesson = self.labels.lesson(key)
        return [name for name, text in live.items() if lesson.found_in(text)]

    def cycle(self, case: Case, before: Live, after: Live, *, status: str, detail: str, size: tuple[int, int],
              calls: int, tokens: int, cost: float) -> CycleRow:
        added = [name for name in after if name not in before]
        for name in added:
            text = after[name]
            if case.kind in ("nothing", "commands"):
                self.false.setdefault(name, f"{text} (added from {case.name}, a session with nothing to learn)")
            elif not any(self.labels.lesson(key).found_in(text) for key in self.taught):
                self.other.setdefault(name, f"{text} (from {case.name})")
        for name, text in after.items():
            wrong = [lesson.key for lesson in self.labels.false_lessons if lesson.found_in(text)]
            if wrong and not any(self.labels.lesson(key).found_in(text) for key in self.taught):
                self.false.setdefault(name, f"{text} (the false lesson {wrong[0]})")
                self.other.pop(name, None)
        for key in self.taught:
            holders = self.holders(key, after)
            if not holders:
                continue
            if key not in self.first_id:
                self.first_id[key] = self.current_id[key] = holders[0]
            elif self.current_id[key] not in holders:
                self.id_changes.append(f"{key}: {self.current_id[key]} -> {holders[0]} (after {case.name})")
                self.current_id[key] = holders[0]
        row = CycleRow(case=case.name, kind=case.kind, transcript_bytes=size[0], transcript_tokens=size[1],
                       status=status, detail=detail, calls=calls, tokens=tokens, cost_usd=cost, added=added,
                       teaches=list(case.teaches),
                       learned=[key for key in case.teaches if self.holders(key, after)])
        self.rows.append(row)
        return row

    def report(self, mode: str, model: str, live: Live, injected: tuple[int, int]) -> LearningReport:
        missing = [key for key in self.taught if not self.holders(key, live)]
        duplicates = [f"{key}: {', '.join(holders)}" for key in self.taught
                      if len(holders := self.holders(key, live)) > 1]
        rows = self.rows
        commands = [row for row in rows if row.kind == "commands"]
        teaching = [row for row in rows if row.teaches]
        spent, cost = sum(row.tokens for row in rows), sum(row.cost_usd for row in rows)
        targets = [
            Target("labelled lessons captured", f"{len(self.taught) - len(missing)}/{len(self.taught)}", "all",
                   not missing),
            Target("false lessons", str(len(self.false)), "0", not self.false),
            Target("duplicates left", str(len(duplicates)), "0", not duplicates),
            Target("ids changed over the run", str(len(self.id_changes)), "0", not self.id_changes),
            Target("sessions with a labelled lesson learned (cycle run, not skipped)",
                   f"{sum(row.status == 'completed' for row in teaching)}/{len(teaching)}", "all",
                   all(row.status == "completed" for row in teaching)),
            Target("model calls for sessions of only the plugin's commands",
                   f"{sum(row.calls for row in commands)} ({len(commands)} sessions, "
                   f"{sum(row.status == 'skipped' for row in commands)} skipped)", "0",
                   all(row.calls == 0 and row.status == "skipped" for row in commands)),
        ]
        return LearningReport(
            mode=mode, model=model, cycles=rows, lessons=self.taught, missing=missing,
            false_lessons=[f"{name}: {why}" for name, why in self.false.items()], duplicates=duplicates,
            id_changes=self.id_changes, other=[f"{name}: {why}" for name, why in self.other.items()],
            injected_tokens=injected[0], injected_budget=injected[1], key_points=len(live), tokens_spent=spent,
            cost_usd=cost, targets=targets)


def render(report: LearningReport) -> str:
    """The report as the table `python -m benchmarks.learning` prints: one line per cycle, then the targets."""
    head = ("#", "session", "kind", "file B", "sent tk", "cycle", "calls", "tokens", "new key points / lessons")
    lines = []
    for number, row in enumerate(report.cycles, 1):
        learned = (f"; learned {len(row.learned)}/{len(row.teaches)}" if row.teaches else "")
        status = row.status if row.status != "skipped" else f"skipped: {row.detail}"
        lines.append((str(number), row.case, row.kind, f"{row.transcript_bytes:,}", f"{row.transcript_tokens:,}",
                      status, str(row.calls), f"{row.tokens:,}", f"{', '.join(row.added) or '-'}{learned}"))
    widths = [max(len(line[i]) for line in [head, *lines]) for i in range(len(head))]
    out = ["  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() for line in [head, *lines]]
    out.insert(1, "  ".join("-" * width for width in widths))
    cost = f", ${report.cost_usd:.4f} at list prices" if report.cost_usd and report.mode != "scripted" else ""
    out += ["", f"tokens spent: {report.tokens_spent:,} over {sum(r.calls for r in report.cycles)} model calls{cost}; "
                f"injected at the end: {report.injected_tokens:,} tokens of {report.injected_budget:,} "
                f"({report.key_points} key points)", ""]
    width = max(len(target.what) for target in report.targets)
    figures = max(len(target.figure) for target in report.targets)
    for target in report.targets:
        verdict = "met" if target.met else "NOT met"
        out.append(f"{target.what.ljust(width)}  {target.figure.ljust(figures)}  target {target.target:<4} {verdict}")
    for title, items in (("missing", report.missing), ("false lessons", report.false_lessons),
                         ("duplicates", report.duplicates), ("ids changed", report.id_changes),
                         ("other key points (not scored)", report.other)):
        out += [f"{title}: {item}" for item in items]
    return "\n".join(out)
