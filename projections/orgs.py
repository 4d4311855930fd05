"""The organisations' playbooks as this machine keeps them: read-only layers injected in every project.

Under `<user_dir>/org/`: `orgs.json` says which org repositories are configured (name, URL, when each was last
fetched and what that fetch found); `<name>/` holds the last good copy of an org's log (`playbook.events.jsonl`,
verified before it took that name), its folded `playbook.json`, the heads this machine has accepted
(`playbook.anchors`: a later copy must extend them) and, when a fetch was refused, what it brought
(`refused/`). `playbook.org.json` (`quickroads.ORG_PROJECTION`) holds every org's key points as injected: scrubbed,
in the order the orgs were added. It is written when an org is added, fetched or removed, never by a hook; the
SessionStart quick road only takes its size and time (`quickroads.org_mark`), and a projection whose mark differs
is projected again from it. A missing or unreadable one injects no org: `playbook doctor` says so. A session
start that finds orgs.json (and `fetch.started`) a day old starts `playbook org fetch --due --quiet`, detached.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import msgspec

from eventlog.domain import SECTION_SLUGS, KeyPoint, PlaybookState
from eventlog.safefiles import write_file

from .quickroads import ORG_DIR, ORG_PROJECTION, ORG_SETTINGS, org_mark, read_capped, user_dir

SETTINGS_NAME = ORG_SETTINGS
REFUSED_DIR = "refused"
ORG_PREFIX = "org:"
"""How an org's key points are named in the injected text: `[org:<name>/<id>]`."""
MAX_ORG_PROJECTION = 16 << 20
MAX_ORG_ENTRIES = MAX_ORG_PROJECTION // 8
"""The most an org's key points may hold (as JSON) to be injected: eight orgs at it fit the projection, which is
not read past MAX_ORG_PROJECTION (an org over it would leave every org out)."""
NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}")
"""An org's name: a directory name and a part of every id injected from it."""


class OrgEntry(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One configured org repository and what its last fetch found."""

    name: str
    url: str
    added: str
    fetched: str | None = None
    """When the copy injected now was fetched and accepted."""
    attempted: str | None = None
    """When a fetch was last tried (the background fetch waits a day after it)."""
    error: str | None = None
    """Why the last fetch was refused or failed, while the copy before it stays injected."""
    seq: int = 0
    head: str = ""


class OrgSettings(msgspec.Struct, kw_only=True):
    orgs: list[OrgEntry] = []


class OrgEntries(msgspec.Struct, frozen=True):
    name: str
    sections: dict[str, list[tuple[str, str, int, int]]]
    """Section -> (id, text, helpful, harmful), scrubbed, in the org playbook's order."""


class OrgProjection(msgspec.Struct, frozen=True):
    format: str
    orgs: list[OrgEntries]


FORMAT = "org-1"


def org_root() -> Path:
    return Path(user_dir()) / ORG_DIR


def org_dir(name: str) -> Path:
    return org_root() / name


def settings_path() -> Path:
    return org_root() / SETTINGS_NAME


def projection_path() -> Path:
    return org_root() / ORG_PROJECTION


def read_settings() -> OrgSettings:
    """The configured orgs; none when the file is missing. An unreadable file is said by `SettingsBroken`."""
    try:
        raw = read_capped(str(settings_path()), 1 << 20, os.O_NOFOLLOW)
    except FileNotFoundError:
        return OrgSettings(orgs=[])
    except OSError as exc:
        raise SettingsBroken(f"{settings_path()} cannot be read: {exc.strerror or exc}") from exc
    if raw is None:
        raise SettingsBroken(f"{settings_path()} is not a regular file of at most 1 MiB")
    try:
        found = msgspec.json.decode(raw, type=OrgSettings)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise SettingsBroken(f"{settings_path()} is not an orgs file ({exc})") from exc
    for org in found.orgs:
        if not NAME.fullmatch(org.name):  # a name is a directory under org/: never `..` or a path
            raise SettingsBroken(f"{settings_path()}: {org.name!r} is not an org name")
    return found


class SettingsBroken(ValueError):
    """orgs.json cannot be read."""


def write_settings(settings: OrgSettings) -> None:
    data = msgspec.json.format(msgspec.json.encode(settings), indent=2) + b"\n"
    write_file(settings_path(), data, Path(user_dir()))


def write_projection(projection: OrgProjection) -> None:
    """Replace the org projection (every project's next session start projects its injection again)."""
    path = projection_path()
    if not projection.orgs:
        from eventlog.safefiles import remove_file

        remove_file(path, Path(user_dir()))
        return
    data = msgspec.json.encode(projection) + b"\n"
    try:
        if read_capped(str(path), MAX_ORG_PROJECTION, os.O_NOFOLLOW) == data:
            return  # unchanged: every project's projection stays current
    except OSError:
        pass
    write_file(path, data, Path(user_dir()))


def entries_of(name: str, state: PlaybookState, scrub: bool = True) -> OrgEntries:
    """An org's key points as injected: every text through the secret scrubber."""
    from .scrub import scrub as scrubbed

    clean = scrubbed if scrub else (lambda text: text)
    return OrgEntries(name, {section: [(kp.name, clean(kp.text), kp.helpful, kp.harmful)
                                       for kp in state.sections[section].values()]
                             for section in SECTION_SLUGS if state.sections[section] and not state.disabled})


def read_projection() -> OrgProjection | None:
    """The org projection, or None when there is none or it cannot be read (never followed through a link)."""
    try:
        raw = read_capped(str(projection_path()), MAX_ORG_PROJECTION, os.O_NOFOLLOW)
    except OSError:
        return None
    if raw is None:
        return None
    try:
        found = msgspec.json.decode(raw, type=OrgProjection)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    return found if found.format == FORMAT else None


def org_playbooks() -> tuple[list[tuple[str, PlaybookState]], str]:
    """Each org's playbook as injected (name, state), in order, and the `org_mark` taken before it was read."""
    mark = org_mark()
    if not mark:
        return [], mark
    projection = read_projection()
    if projection is None:
        return [], mark
    found = []
    for org in projection.orgs:
        state = PlaybookState()
        for section, entries in org.sections.items():
            if section not in state.sections:
                continue
            for name, text, helpful, harmful in entries:
                state.sections[section][name] = KeyPoint(name, text, helpful, harmful)
                state.where[name] = section
        found.append((org.name, state))
    return found, mark


def org_left_out(orgs: list[tuple[str, PlaybookState]], names: list[str]) -> list[tuple[str, KeyPoint]]:
    """The orgs' key points named `<org>/<id>` in `names` (an injection's `org_left_out`), each with the id the
    injection gives it (`org:<org>/<id>`): what a prompt may recall of them."""
    states = dict(orgs)
    found = []
    for name in names:
        org, _slash, kp_name = name.partition("/")
        kp = states[org].get(kp_name) if org in states else None
        if kp is not None:
            found.append((f"{ORG_PREFIX}{name}", kp))
    return found
