"""`playbook doctor`'s check of the orgs' playbooks: each org's last fetch, and whether the org projection the
session start reads can be read. A refused or failed fetch never stops injection (the last good copy stays);
it is said here with its fix, without failing the checkup."""

from __future__ import annotations

from projections.orgs import SettingsBroken, org_playbooks, projection_path, read_settings
from projections.quickroads import org_mark

from .doctor import Check, Setting, failed, ok


def check_orgs(setting: Setting) -> list[Check]:
    """One line for each configured org, and one when the org projection cannot be read."""
    try:
        found = read_settings()
    except SettingsBroken as exc:
        return [failed("orgs", f"{exc}: no org is fetched", "remove it and `playbook org add URL` again",
                       blocks=False)]
    if not found.orgs:
        return []
    checks = []
    for org in found.orgs:
        name = f"org {org.name}"
        kept = (f"the last good copy (seq {org.seq}, fetched {org.fetched}) stays injected" if org.fetched
                else "nothing of it is injected")
        if org.error:
            checks.append(failed(name, f"last fetch ({org.attempted}): {org.error}; {kept}",
                                 f"`playbook org fetch {org.name}` once the repository is fixed or reachable; "
                                 f"`playbook org remove {org.name}` stops injecting it", blocks=False))
        elif org.fetched:
            checks.append(ok(name, f"seq {org.seq}, fetched {org.fetched}, verified"))
        else:
            checks.append(failed(name, "never fetched", f"`playbook org fetch {org.name}`", blocks=False))
    injected = {name for name, _state in org_playbooks()[0]}
    good = [org.name for org in found.orgs if org.fetched]
    if good and not (org_mark() and injected):
        checks.append(failed("orgs", f"{projection_path()} cannot be read: no org is injected",
                             "`playbook org fetch` writes it again", blocks=False))
    return checks
