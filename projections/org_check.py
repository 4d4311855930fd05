"""Whether a fetched copy of an org's log may be injected: its chain whole, every head this machine accepted
before still in it (a history rewritten since, even with a recomputed chain, is forged), every anchor the org
repository ships held, and no secret in any key point. A copy that fails one is refused, whole, with one line."""

from __future__ import annotations

from pathlib import Path

from eventlog.domain import PlaybookState
from eventlog.errors import CorruptLogError, PlaybookError
from eventlog.store import LogReader, Position

from .anchor_proof import check
from .anchors import AnchorFileError


class OrgRefused(PlaybookError):
    """A fetched org log that is not injected: `reason` says why, in a few words."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def verified(log: Path, accepted: Path, shipped: Path | None) -> tuple[PlaybookState, Position]:
    """The state and end of the org log at `log`, checked against the heads in `accepted` (this machine's
    anchors of the copies it took before) and `shipped` (the org repository's anchors file, if it has one);
    `OrgRefused` when it fails a check."""
    state = PlaybookState()
    reader = LogReader(log, strict=True)
    try:
        reader.fold(state, seqs=True)
    except CorruptLogError as exc:
        raise OrgRefused(f"its log is damaged at line {exc.line}: {exc.reason}") from exc
    size = log.stat().st_size
    if reader.torn is not None or reader.position.offset != size:
        raise OrgRefused(f"its log does not end with a whole transaction (byte {reader.position.offset} of {size})")
    if not reader.position.line:
        raise OrgRefused("its log holds no transaction")
    for anchors, whose in ((accepted, "the copy accepted before"), (shipped, "the org repository's anchors")):
        if anchors is None:
            continue
        try:
            report = check(log, anchors)
        except AnchorFileError as exc:
            raise OrgRefused(f"{whose} cannot be read: {exc.reason}") from exc
        except CorruptLogError as exc:  # pragma: no cover - the strict fold above read it whole
            raise OrgRefused(f"its log is damaged at line {exc.line}: {exc.reason}") from exc
        if report.problem is not None:
            raise OrgRefused(f"its history differs from {whose} at line {report.problem.line} (forged or "
                             "rewritten)")
    secret = first_secret(state)
    if secret is not None:
        raise OrgRefused(secret)
    return state, reader.position


def first_secret(state: PlaybookState) -> str | None:
    """`a secret (KIND) in key point ID` for the first key point whose text holds one, else None."""
    from .scrub import find_secrets

    for _section, kp in state.entries():
        found = find_secrets(kp.text)
        if found:
            return f"a secret ({found[0].kind}) in key point {kp.name}"
    return None
