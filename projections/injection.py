"""The SessionStart hook's output, projected ahead of time so the hook only copies bytes.

File format: one header line `<log size> <playbook.json mtime_ns> <settings stamp>
<user mark>`, then the exact bytes the hook prints (nothing for an empty playbook). The
hook trusts the file only while all four still match; otherwise it takes the slow
path. The user mark (`user_mark`) stands for the user-level playbook, injected ahead of
the project's, so a change there is seen by every project's next session. The settings stamp (see `config.settings_stamp`) changes whenever a setting that
shapes the injection may have changed, so a new budget takes effect at the next
session start.

The injection is held to a budget of estimated tokens: the user's preferences are
taken first, then the other key points by track record, stale ones last; what is
left out is counted in one closing line.
"""

from __future__ import annotations

import heapq
from bisect import insort
from collections.abc import Iterable, Iterator, Sequence
from heapq import heapify, heappop
from itertools import chain, filterfalse, islice
from pathlib import Path

import msgspec

from eventlog.domain import SECTION_SLUGS, KeyPoint, PlaybookState, Usage

from .config import setting_number
from .quickroads import projection_header
from .render import USER_HEADING, format_entry, format_sections, load_template, org_heading

PREFERENCES = "USER PREFERENCES"

BUDGET_KEY = "playbook_injection_budget"
DEFAULT_BUDGET = 3000
"""Estimated tokens of the SessionStart context; 0 injects everything. See README for the measurement."""


class _Output(msgspec.Struct):
    hookEventName: str
    additionalContext: str


class _HookOutput(msgspec.Struct, omit_defaults=True):
    systemMessage: str | None = None
    """For the user, not the model: shown when a session starts. First, so that `playbook/quick/inject.py` can put
    its notice in front of it without parsing the output."""
    hookSpecificOutput: _Output | None = None


def waiting_for_review(state: PlaybookState) -> int:
    """The proposals a session start mentions: none while the project is disabled, as nothing is shown then."""
    return 0 if state.disabled else len(state.proposals)


def review_note(count: int) -> str | None:
    """The one line a session starts with while learned proposals wait for review."""
    if not count:
        return None
    return f"playbook: {count} learned proposal{'s' if count != 1 else ''} waiting for review (run `playbook review`)"


class Injection(msgspec.Struct, frozen=True):
    """What a session is given: `text`, the project's key points in it and those the budget left out, and
    the same for the user-level playbook's (`user_included`, `user_left_out`)."""

    text: str
    included: list[str]
    left_out: list[str]
    budget: int
    tokens: int
    user_included: list[str] = []
    user_left_out: list[str] = []
    org_included: list[str] = []
    """The orgs' key points in the text, as `<org>/<id>`; `org_left_out` those the budget left out."""
    org_left_out: list[str] = []


USER_PREFIX = "user:"
"""How the user-level playbook's key points are named in the injected text, apart from the project's."""
ORG_PREFIX = "org:"
"""How an org's key points are named in the injected text: `[org:<org>/<id>]`."""
Orgs = Sequence[tuple[str, PlaybookState]]
"""The orgs' playbooks injected between the user's and the project's: (org name, its state), in order."""


def estimate_tokens(text: str) -> int:
    """Estimated tokens of `text`: a quarter of its UTF-8 bytes, rounded up (never below the usual count
    for English, and about one per character for CJK text)."""
    return (len(text.encode("utf-8")) + 3) // 4


def score(kp: KeyPoint, used: Usage | None) -> int:
    """A key point's track record: helpful minus harmful ratings, plus the sessions that cited it."""
    return kp.helpful - kp.harmful + (used.cited if used is not None else 0)


def _line(kp: KeyPoint, prefix: str = "") -> str:
    return format_entry(prefix + kp.name, kp.text, kp.helpful, kp.harmful) + "\n"


def left_out_line(count: int, budget: int) -> str:
    return (f"({count} more key point{'s' if count != 1 else ''} left out to keep this within "
            f"{budget} tokens: `playbook show --left-out` lists them.)")


Item = tuple[int, int, int, int, int, int, KeyPoint]
"""A key point's place in the ranking: tier (the user's own 0, preferences 1, the rest 2, stale 3), minus its
`score`, minus its recency, its position in its section, the section's index, the playbook's (the user-level
one 0); the key point last. The first six fields are never all equal, so no KeyPoint is ever compared."""


def _ranked(playbook: PlaybookState, which: int, users: bool, starts: list[int] | None = None
            ) -> tuple[list[Item], int, int]:
    """`playbook`'s items (`users`: it is the user-level playbook, tier 0), unsorted; with `starts`, only those
    from position `starts[i]` of section i on. With them, the length of all their texts and of the shortest
    name and text together (0 for none)."""
    items: list[Item] = []
    add = items.append
    chars, shortest = 0, -1
    usage = playbook.usage
    for section_index, (section, section_entries) in enumerate(playbook.sections.items()):
        tier = 0 if users else 1 if section == PREFERENCES else 2
        first = starts[section_index] if starts is not None else 0
        entries: Iterable[KeyPoint] = islice(section_entries.values(), first, None) if first else section_entries.values()
        for position, kp in enumerate(entries, first):
            chars += len(kp.text)
            length = len(kp.name) + len(kp.text)
            if length < shortest or shortest < 0:
                shortest = length
            used = usage.get(kp.name)  # below, `-score(kp, used)` and `-recency` worked out inline: once per entry
            if used is None:
                add((tier, kp.harmful - kp.helpful, 0, position, section_index, which, kp))
            else:
                add((3 if used.stale else tier, kp.harmful - kp.helpful - used.cited, -used.last_used, position,
                     section_index, which, kp))
    return items, chars, max(shortest, 0)


class Ranking:
    """A playbook's items (`Item`) in rank order, with the length of all its texts (`chars`) and of its
    shortest name and text together (`shortest`): what `plan` needs of it besides the texts it keeps.

    A writer keeps the one of the state it last wrote: `after` ranks only the key points its next transaction
    added, when adding new key points is all that transaction did. Its state must not change in place."""

    __slots__ = ("which", "users", "items", "chars", "shortest", "sizes")

    def __init__(self, which: int, users: bool, items: list[Item], chars: int, shortest: int,
                 sizes: list[int]) -> None:
        self.which, self.users, self.items, self.chars, self.shortest, self.sizes = (
            which, users, items, chars, shortest, sizes)

    @classmethod
    def of(cls, playbook: PlaybookState, which: int = 0, users: bool = False) -> Ranking:
        """The ranking of `playbook` as the playbook of index `which` (`users`: the user-level one)."""
        items, chars, shortest = _ranked(playbook, which, users)
        items.sort()
        return cls(which, users, items, chars, shortest, [len(entries) for entries in playbook.sections.values()])

    def after(self, playbook: PlaybookState, events: Iterable[object]) -> Ranking:
        """The ranking of `playbook`, which is this ranking's playbook after `events`: this one is left as it
        is, and only the added key points are ranked when every event added a new one or skipped an operation."""
        from eventlog.events import KeyPointAdded, OperationSkipped

        added = 0
        for event in events:
            if isinstance(event, KeyPointAdded):
                added += 1
            elif not isinstance(event, OperationSkipped):
                return Ranking.of(playbook, self.which, self.users)
        sizes = [len(entries) for entries in playbook.sections.values()]
        if (len(sizes) != len(self.sizes) or sum(sizes) != sum(self.sizes) + added
                or any(size < before for size, before in zip(sizes, self.sizes))):
            return Ranking.of(playbook, self.which, self.users)  # not all new key points at their sections' ends
        if not added:
            return self
        fresh, chars, shortest = _ranked(playbook, self.which, self.users, self.sizes)
        items = list(self.items)
        for item in fresh:
            insort(items, item)
        return Ranking(self.which, self.users, items, self.chars + chars,
                       min(shortest, self.shortest) if self.items else shortest, sizes)


def plan(state: PlaybookState, budget: int, user: PlaybookState | None = None,
         ranking: Ranking | None = None, orgs: Orgs = ()) -> Injection:
    """What the next session receives under `budget` estimated tokens (0: no budget), with the user-level
    playbook `user` (if any) ahead of the project's, and the orgs' between them. `ranking`, when given, is
    `state`'s (`Ranking.of`).

    Guarantee: the text, closing line included, is within the budget whenever the fixed
    frame (instructions and headers) is; the user-level playbook's key points are taken first,
    then the project's USER PREFERENCES, then the best track record first (`score`, then the
    most recently used), stale key points last; the key points kept appear in their playbook order. An org's
    key points are ranked as the project's are (an org playbook carries no usage of this machine's).
    """
    if state.disabled:  # `playbook disable`: the session is given nothing, and nothing is recalled
        return Injection("", [], [], budget, 0)
    if user is not None and user.disabled:  # `playbook disable --user`: the user-level playbook is left out
        user = None
    orgs = [(name, org) for name, org in orgs if not org.disabled]
    layers = _Layers(user is not None, [name for name, _org in orgs])
    playbooks = [*([user] if user is not None else []), *(org for _name, org in orgs), state]
    mine, theirs, sorted_, chars, shortest = _items(state, playbooks[:-1], layers, ranking)
    # The whole playbook is rendered only when it may fit: its texts alone, at a token per 4 characters at
    # least, already exceed a budget they are over 4 times as long as.
    if budget <= 0 or chars <= 4 * budget:
        whole = _whole(playbooks, layers, budget)
        if whole is not None:
            return whole
    # In rank order, taken as the loop asks: it stops once no line fits, usually a few hundred in.
    ranked: Iterable[Item]
    if sorted_:
        ranked = heapq.merge(_in_order(theirs), mine) if theirs else mine
    else:
        ranked = _in_order(mine + theirs)
    room = budget - _frame(layers, len(mine) + len(theirs), budget)
    picked = _pick(ranked, room, 26 + shortest, layers)
    return _assemble(playbooks, picked, layers, budget)


class _Layers:
    """The playbooks of an injection, in order: the user-level one (`has_user`), the orgs' (`orgs`, their
    names), the project's last; each one's prefix for its ids and heading for its sections."""

    __slots__ = ("has_user", "orgs", "prefixes", "headings")

    def __init__(self, has_user: bool, orgs: list[str]) -> None:
        self.has_user, self.orgs = has_user, orgs
        self.prefixes = [*([USER_PREFIX] if has_user else []), *(f"{ORG_PREFIX}{name}/" for name in orgs), ""]
        self.headings = [*([USER_HEADING] if has_user else []), *(org_heading(name) for name in orgs), ""]

    def split(self, names: list[list[str]]) -> tuple[list[str], list[str], list[str]]:
        """Per-playbook `names` as (the project's, the user's, the orgs' as `<org>/<id>`)."""
        user = names[0] if self.has_user else []
        first = 1 if self.has_user else 0
        org = [f"{name}/{kp}" for name, found in zip(self.orgs, names[first:first + len(self.orgs)]) for kp in found]
        return names[-1], user, org


def _items(state: PlaybookState, others: list[PlaybookState], layers: _Layers, ranking: Ranking | None
           ) -> tuple[list[Item], list[Item], bool, int, int]:
    """The items of `state` (the last playbook) and of `others` (the user's, the orgs'), whether `state`'s are
    sorted already (`ranking` was its), the length of all their texts and of the shortest line's name and text
    together."""
    # Ranking: the user's own first, preferences next, stale last, then track record; the position inside
    # its section breaks ties, so equal records are taken from every section in turn rather than one's tail.
    which = len(others)
    if ranking is not None and ranking.which == which and not ranking.users:
        mine, sorted_ = ranking.items, True
        chars, shortest = ranking.chars, ranking.shortest
    else:
        mine, chars, shortest = _ranked(state, which, False)
        sorted_ = False
    theirs: list[Item] = []
    for index, other in enumerate(others):
        found, their_chars, their_shortest = _ranked(other, index, index == 0 and layers.has_user)
        if found:
            chars += their_chars
            length = their_shortest + len(layers.prefixes[index])
            shortest = min(shortest, length) if mine or theirs else length
            theirs += found
    return mine, theirs, sorted_, chars, shortest


def _whole(playbooks: list[PlaybookState], layers: _Layers, budget: int) -> Injection | None:
    """Every key point of `playbooks`, when they fit in `budget` (or there is none); else None."""
    full = _render(playbooks, [set(p.where) for p in playbooks], layers)
    if budget <= 0 or estimate_tokens(full) <= budget:
        project, user, org = layers.split([[kp.name for _section, kp in p.entries()] for p in playbooks])
        return Injection(full, project, [], budget, estimate_tokens(full), user, org_included=org)
    return None


def _frame(layers: _Layers, count: int, budget: int) -> int:
    """The estimated tokens of everything but the key points' lines: instructions, headings, closing line."""
    frame = estimate_tokens(load_template("playbook.txt").format(key_points=""))
    frame += sum(estimate_tokens(f"## {section}{heading}\n\n") for heading in layers.headings
                 for section in SECTION_SLUGS)
    return frame + estimate_tokens(left_out_line(count, budget))


def _pick(ranked: Iterable[Item], room: int, floor: int, layers: _Layers
          ) -> list[list[tuple[int, int, KeyPoint]]]:
    """For each playbook, the (section index, position, key point) of each item of `ranked` taken, in rank
    order, while their lines fit in `room` tokens; no line is shorter than `floor` characters."""
    picked: list[list[tuple[int, int, KeyPoint]]] = [[] for _ in layers.prefixes]
    blocked, current = False, 0
    for item in ranked:
        if floor > 4 * room:  # no key point's line fits in what is left: none is taken after this
            break
        tier, which, kp = item[0], item[5], item[6]
        if tier != current:
            if blocked:  # a tier is entered only when every key point of the tiers before it fitted
                break
            current = tier
        prefix = layers.prefixes[which]
        if len(prefix) + len(kp.name) + len(kp.text) + 26 > 4 * room:  # its line is longer: more than `room` tokens
            blocked = True
            continue
        cost = estimate_tokens(_line(kp, prefix))
        if cost <= room:
            picked[which].append((item[4], item[3], kp))
            room -= cost
        else:
            blocked = True
    return picked


def _assemble(playbooks: list[PlaybookState], picked: list[list[tuple[int, int, KeyPoint]]], layers: _Layers,
              budget: int) -> Injection:
    """The injection of the `picked` key points, in their playbook order, with the closing line."""
    kept: list[dict[str, list[tuple[str, str, int, int]]]] = []
    included: list[list[str]] = []
    left_out: list[list[str]] = []
    for which, (playbook, found) in enumerate(zip(playbooks, picked)):
        prefix = layers.prefixes[which]
        found.sort(key=lambda entry: entry[:2])  # playbook order: section, then position in it
        chosen = {kp.name for _s, _p, kp in found}
        left_out.append(list(filterfalse(chosen.__contains__, chain.from_iterable(playbook.sections.values()))))
        included.append([kp.name for _s, _p, kp in found])
        sections = list(playbook.sections)
        kept.append({})
        for section_index, _position, kp in found:
            kept[-1].setdefault(sections[section_index], []).append((prefix + kp.name, kp.text, kp.helpful, kp.harmful))
    first = 1 if layers.has_user else 0
    text = format_sections(kept[-1], user=kept[0] if layers.has_user else None,
                           orgs=list(zip(layers.orgs, kept[first:first + len(layers.orgs)])))
    left = sum(len(names) for names in left_out)
    text = (text.rstrip("\n") + "\n\n" if text else "") + left_out_line(left, budget) + "\n"
    project, user, org = layers.split(included)
    project_out, user_out, org_out = layers.split(left_out)
    return Injection(text, project, project_out, budget, estimate_tokens(text), user, user_out, org, org_out)


def _in_order(items: list[Item]) -> Iterator[Item]:
    """`items` in rank order, taken from a heap as they are asked for (the list is used up): the plan
    usually stops after the first few hundred of thousands."""
    heapify(items)
    while items:
        yield heappop(items)


def _render(playbooks: list[PlaybookState], chosen: list[set[str]], layers: _Layers | None = None) -> str:
    """The text of the `chosen` key points of `playbooks` (without `layers`: the user's, if two, and the project's)."""
    if layers is None:
        layers = _Layers(len(playbooks) > 1, [])
    def sections(playbook: PlaybookState, names: set[str], prefix: str) -> dict[str, list[tuple[str, str, int, int]]]:
        return {section: [(prefix + kp.name, kp.text, kp.helpful, kp.harmful)
                          for kp in section_entries.values() if kp.name in names]
                for section, section_entries in playbook.sections.items()}

    rendered = [sections(p, names, prefix) for p, names, prefix in zip(playbooks, chosen, layers.prefixes)]
    first = 1 if layers.has_user else 0
    return format_sections(rendered[-1], user=rendered[0] if layers.has_user else None,
                           orgs=list(zip(layers.orgs, rendered[first:first + len(layers.orgs)])))


def hook_output(state: PlaybookState, budget: int = DEFAULT_BUDGET) -> bytes:
    """What the SessionStart hook prints for `state`: the playbook within `budget` as additional context, and
    one line for the user while proposals wait for review."""
    return output_of(plan(state, budget), waiting_for_review(state))


def output_of(injection: Injection, proposals: int = 0) -> bytes:
    """The SessionStart hook's output for a planned injection and the number of proposals waiting for review
    (nothing for an empty playbook with none waiting)."""
    note = review_note(proposals)
    if not injection.text and note is None:
        return b""
    context = _Output("SessionStart", injection.text) if injection.text else None
    return msgspec.json.encode(_HookOutput(systemMessage=note, hookSpecificOutput=context)) + b"\n"


def injection_file(log_size: int, snapshot_mtime_ns: int, output: bytes, stamp: str = "-",
                   user: str | None = None) -> bytes:
    """A projection's bytes: the header its hook checks (`quickroads.projection_header`), then the output."""
    return projection_header(log_size, snapshot_mtime_ns, stamp, user) + output


def injection_budget(project: Path) -> int:
    """The budget in force for `project`: the environment, then the project's settings, then the user's."""
    return int(setting_number(project, BUDGET_KEY, DEFAULT_BUDGET))
