"""The injection plan against a straightforward ranking: the same text and names, ties and a user-level
playbook included, whether it ranks the whole playbook or a writer's kept ranking grown by additions."""

from __future__ import annotations

import random

import pytest

from eventlog.domain import SECTION_SLUGS, KeyPoint, PlaybookState, Usage
from eventlog.events import KeyPointAdded, OperationSkipped
from eventlog.evolve import apply
from projections.injection import (PREFERENCES, USER_HEADING, USER_PREFIX, Injection, Ranking, _line, _render,
                                   estimate_tokens, left_out_line, plan)
from projections.render import format_sections, load_template


def reference(state: PlaybookState, budget: int, user: PlaybookState | None = None) -> Injection:
    """`plan` as its docstring says it, without shortcuts: every key point ranked by one sort, every one tried."""
    if state.disabled:
        return Injection("", [], [], budget, 0)
    if user is not None and user.disabled:
        user = None
    playbooks = [state] if user is None else [user, state]
    full = _render(playbooks, [set(p.where) for p in playbooks])
    if budget <= 0 or estimate_tokens(full) <= budget:
        names = [[kp.name for _s, kp in p.entries()] for p in playbooks]
        return Injection(full, names[-1], [], budget, estimate_tokens(full), names[0] if user is not None else [])
    everyone = []
    for which, playbook in enumerate(playbooks):
        for section_index, (section, entries) in enumerate(playbook.sections.items()):
            for position, kp in enumerate(entries.values()):
                used = playbook.usage.get(kp.name, Usage())
                theirs = which == 0 and user is not None
                tier = 3 if used.stale else 0 if theirs else 1 if section == PREFERENCES else 2
                everyone.append(((tier, -(kp.helpful - kp.harmful + used.cited), -used.last_used, position,
                                  section_index, which), kp))
    everyone.sort(key=lambda pair: pair[0])
    frame = estimate_tokens(load_template("playbook.txt").format(key_points=""))
    headings = [""] if user is None else [USER_HEADING, ""]
    frame += sum(estimate_tokens(f"## {s}{h}\n\n") for h in headings for s in SECTION_SLUGS)
    room = budget - frame - estimate_tokens(left_out_line(len(everyone), budget))
    chosen: list[set[str]] = [set() for _ in playbooks]
    blocked, current = False, 0
    for key, kp in everyone:
        if key[0] != current:
            if blocked:
                break
            current = key[0]
        cost = estimate_tokens(_line(kp, USER_PREFIX if key[5] == 0 and user is not None else ""))
        if cost <= room:
            chosen[key[5]].add(kp.name)
            room -= cost
        else:
            blocked = True
    kept, included, left_out = [], [], []
    for which, playbook in enumerate(playbooks):
        prefix = USER_PREFIX if which == 0 and user is not None else ""
        sections = {section: [(prefix + kp.name, kp.text, kp.helpful, kp.harmful) for kp in entries.values()
                              if kp.name in chosen[which]] for section, entries in playbook.sections.items()}
        kept.append({section: rows for section, rows in sections.items() if rows})
        included.append([kp.name for _s, kp in playbook.entries() if kp.name in chosen[which]])
        left_out.append([kp.name for _s, kp in playbook.entries() if kp.name not in chosen[which]])
    text = format_sections(kept[-1], user=kept[0] if user is not None else None)
    text = (text.rstrip("\n") + "\n\n" if text else "") + left_out_line(sum(map(len, left_out)), budget) + "\n"
    return Injection(text, included[-1], left_out[-1], budget, estimate_tokens(text),
                     included[0] if user is not None else [], left_out[0] if user is not None else [])


def generated(rng: random.Random, size: int, slug: str = "") -> PlaybookState:
    """A playbook of `size` key points with many equal track records, some stale, some long."""
    state = PlaybookState(sessions=20)
    sections = list(state.sections)
    for index in range(size):
        section = rng.choice(sections)
        name = f"{slug}{SECTION_SLUGS[section]}-{index:04d}"
        words = rng.choice([2, 5, 8, 40]) if rng.random() < 0.9 else 400
        kp = KeyPoint(name, " ".join(rng.choice(["keep", "hooks", "fast", "ok", "idempotent"]) for _ in range(words)),
                      rng.randint(0, 2), rng.randint(0, 1))
        state.sections[section][name] = kp
        state.where[name] = section
        if rng.random() < 0.8:
            state.usage[name] = Usage(rng.randint(0, 3), rng.randint(0, 2), rng.randint(0, 3), rng.random() < 0.15)
    return state


@pytest.mark.parametrize("seed", range(12))
def test_the_plan_is_the_reference_ranking_s_whatever_the_ties(seed):
    rng = random.Random(seed)
    state = generated(rng, rng.choice([0, 3, 40, 400]))
    user = generated(rng, rng.choice([0, 5, 60]), "u") if seed % 3 else None
    for budget in (0, 40, 300, 1200, 3000):
        expected = reference(state, budget, user)
        assert plan(state, budget, user) == expected
        which = 1 if user is not None else 0
        assert plan(state, budget, user, Ranking.of(state, which)) == expected


@pytest.mark.parametrize("seed", range(6))
def test_a_kept_ranking_grown_by_additions_plans_as_the_whole_playbook(seed):
    rng = random.Random(100 + seed)
    state = generated(rng, 300)
    user = generated(rng, 30, "u") if seed % 2 else None
    ranking = Ranking.of(state, 1 if user is not None else 0)
    before = list(ranking.items)
    for round_ in range(4):
        events = [OperationSkipped(kind="operation", reason="duplicate", detail="")] if round_ == 2 else []
        for index in range(rng.choice([0, 1, 10])):
            section = rng.choice(list(state.sections))
            text = "short" if index % 3 == 0 else "a new key point " * rng.randint(1, 30)
            events.append(KeyPointAdded(section=section, name=f"{SECTION_SLUGS[section]}-n{round_}{index}", text=text,
                                        helpful=rng.randint(0, 1), harmful=0, origin="operation"))
        for event in events:
            apply(state, event)
        grown = ranking.after(state, events)
        assert grown.items == Ranking.of(state, ranking.which).items
        for budget in (300, 3000):
            assert plan(state, budget, user, grown) == reference(state, budget, user)
        ranking = grown
    assert len(ranking.items) > len(before)


def test_a_kept_ranking_is_ranked_again_after_anything_but_additions():
    rng = random.Random(7)
    state = generated(rng, 50)
    ranking = Ranking.of(state)
    name = next(iter(state.where))
    state.sections[state.where[name]][name] = KeyPoint(name, "changed", 9, 0)
    from eventlog.events import CountersSet
    grown = ranking.after(state, [CountersSet(name=name, helpful=9, harmful=0, previous_helpful=0, previous_harmful=0)])
    assert grown.items == Ranking.of(state).items and grown.items != ranking.items
