"""The protective settings and how the user's value and a project's combine: the project may only tighten.

A repository's `.claude/playbook.settings.json` comes with code the user may not trust, so for the
settings below it can move the user's choice toward the safer side, never away from it; where the
user set nothing, the default is the user's choice. Every other setting is the project's when it
gives one. Standard library only: `playbook.quick.quick_hook` decides with this table before the log's
machinery is imported, `playbook.wiring.settings` merges the learning settings with it, and
`projections.config.setting_number` the numeric settings the lean context reads.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: the standard-library-only hook path does not pay for importing it
if TYPE_CHECKING:
    from collections.abc import Callable


def off_wins(user: object, project: object) -> object:
    """A switch that lets something happen: on only while both leave it on."""
    return bool(user) and bool(project)


def on_wins(user: object, project: object) -> object:
    """A switch that holds something back: on when either turns it on."""
    return bool(user) or bool(project)


def lower_limit(user: object, project: object) -> object:
    """A limit where 0 is none: the lower of the two, and no limit only when neither sets one."""
    assert isinstance(user, float) and isinstance(project, float)
    if user <= 0:
        return project
    return user if project <= 0 else min(user, project)


def lower_share(user: object, project: object) -> object:
    """A share above which something is held back (0: hold it always): the lower of the two."""
    assert isinstance(user, float) and isinstance(project, float)
    return min(user, project)


def both_lists(user: object, project: object) -> object:
    """A list of exclusions: the project's adds to the user's, never clears it."""
    assert isinstance(user, tuple) and isinstance(project, tuple)
    return tuple(dict.fromkeys((*user, *project)))


COMBINE: dict[str, Callable[[object, object], object]] = {
    "playbook_update_on_exit": off_wins,
    "playbook_update_on_clear": off_wins,
    "playbook_update_on_subagent_stop": off_wins,
    "playbook_update_on_precompact": off_wins,
    "playbook_review": on_wins,
    "playbook_daily_token_budget": lower_limit,
    "playbook_preferences_per_project": on_wins,
    "playbook_never_learn": both_lists,
    "playbook_collapse_max_removed_share": lower_share,
    "playbook_collapse_max_shrink_share": lower_share,
}
"""Protective setting -> (the user's value, the project's) -> the value in force."""
