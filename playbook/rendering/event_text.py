"""How each event type reads on the terminal: one line per event, and what it did to one entry.

An event type's rendering is one function in `PARTS` (mark, label, detail, colour), and,
when it changes or names an entry, one in `HISTORY` (kind, what happened to that entry).
A type without a function here is shown by its tag, so a new type is never lost.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from eventlog import events as ev
from eventlog.registry import tag_of

from .safe_text import clean
from .terminal import counters, quote

Parts = tuple[str, str, str, str]
"""(mark, label, detail, colour) of one event."""


def _added(e: ev.KeyPointAdded) -> Parts:
    extra = ""
    if e.requested_section is not None:
        extra += f"  (asked for section {quote(e.requested_section)})"
    if e.proposed_name is not None:
        extra += f"  (asked for name {clean(e.proposed_name)})"
    count = f"  {counters(e.helpful, e.harmful)}" if e.helpful or e.harmful else ""
    return "+", "added", f"{clean(e.name)}{count}  {clean(e.section)}: {quote(e.text)}{extra}", "green"


def _imported(e: ev.KeyPointImported) -> Parts:
    origin = [clean(e.source_format)]
    if e.original_name is not None:
        origin.append(f"was {clean(e.original_name)}")
    if e.original_section is not None:
        origin.append(f"from section {quote(e.original_section)}")
    return ("+", "imported", f"{clean(e.name)}  {counters(e.helpful, e.harmful)}  "
            f"({', '.join(origin)})  {clean(e.section)}: {quote(e.text)}", "green")


def _playbook_imported(e: ev.PlaybookImported) -> Parts:
    detail = f"{clean(e.path)}: {clean(e.file_format)} format, {e.entries} entries"
    if e.ignored_key_points:
        detail += f", {e.ignored_key_points} key_points ignored"
    if e.moved_aside:
        detail += f", moved aside to {clean(e.moved_aside)}"
    if e.error:
        detail += f" ({clean(e.error)})"
    return "+", "imported", detail, "green"


def _updated(e: ev.KeyPointUpdated) -> Parts:
    return "~", "updated", f"{clean(e.name)}  {quote(e.previous_text)} -> {quote(e.text)}", "yellow"


def _merged(e: ev.KeyPointsMerged) -> Parts:
    detail = f"{', '.join(clean(s) for s in e.sources)} -> {clean(e.name)}"
    if e.missing_sources:
        detail += f" (unknown sources: {', '.join(clean(s) for s in e.missing_sources)})"
    detail += f"  {counters(e.helpful, e.harmful)}  {clean(e.section)}: {quote(e.text)}"
    if e.similarity is not None:
        detail += f"  (near-duplicates: similarity {e.similarity:.2f} by {clean(e.method or '?')})"
    return "*", "merged", detail, "cyan"


def _absorbed(e: ev.KeyPointAbsorbed) -> Parts:
    return ("*", "absorbed", f"{clean(e.name)}  {quote(e.absorbed)}  (a near-duplicate of {quote(e.text)}: "
            f"similarity {e.similarity:.2f} by {clean(e.method)})", "cyan")


def _deleted(e: ev.KeyPointDeleted) -> Parts:
    reason = f"  ({clean(e.reason)})" if e.reason else ""
    return "-", "deleted", f"{clean(e.name)}{reason}  {quote(e.text)}", "red"


def _evaluated(e: ev.KeyPointEvaluated) -> Parts:
    rationale = f"  ({clean(e.rationale)})" if e.rationale else ""
    colour = {"helpful": "green", "harmful": "red"}.get(e.rating, "dim")
    detail = f"{clean(e.name)}  {clean(e.rating)} -> {counters(e.helpful, e.harmful)}{rationale}"
    return "=", "evaluated", detail, colour


def _pruned(e: ev.KeyPointPruned) -> Parts:
    return ("-", "pruned", f"{clean(e.name)}  {counters(e.helpful, e.harmful)}  ({clean(e.rule)})  {quote(e.text)}",
            "red")


def _moved(e: ev.KeyPointMoved) -> Parts:
    return ">", "moved", f"{clean(e.name)}  {clean(e.from_section)} -> {clean(e.to_section)}", "yellow"


def _counters_set(e: ev.CountersSet) -> Parts:
    return ("#", "counters", f"{clean(e.name)}  {counters(e.previous_helpful, e.previous_harmful)}"
            f" -> {counters(e.helpful, e.harmful)}", "yellow")


def _reordered(e: ev.SectionReordered) -> Parts:
    return ".", "reordered", f"{clean(e.section)}: {', '.join(clean(n) for n in e.names)}", "dim"


def _version(e: ev.VersionSet) -> Parts:
    return ".", "version", f"{clean(e.previous)} -> {clean(e.version)}", "dim"


def _skipped(e: ev.OperationSkipped) -> Parts:
    where = f" #{e.index}" if e.index is not None else ""
    detail = f"{clean(e.kind)}{where}: {clean(e.reason)}"
    if e.detail:
        detail += f": {clean(e.detail)}"
    return "!", "skipped", detail, "magenta"


def _repaired(e: ev.TailRepaired) -> Parts:
    return ("!", "repaired", f"cut {e.bytes_cut} bytes of an unfinished write at byte {e.offset}, "
            f"kept in {clean(e.kept_at)}", "magenta")


def _rewritten(e: ev.HistoryRewritten) -> Parts:
    why = "secrets the detector found" if e.reason == "secrets" else "a text named on the command line"
    kept = f"; the original kept at {clean(e.kept_original)}" if e.kept_original else ""
    seqs = ", ".join(str(seq) for seq in e.seqs[:8]) + (", ..." if len(e.seqs) > 8 else "")
    return ("!", "rewritten", f"{e.redactions} redaction(s) of {why} in seq {seqs}; chain head "
            f"{clean(e.head_before)[:12]} -> {clean(e.head_after)[:12]}{kept}", "magenta")


def _set_aside(e: ev.SnapshotSetAside) -> Parts:
    what = "unreadable playbook.json" if e.kind == "unreadable" else "playbook.json ahead of the log"
    return "!", "set aside", f"{what} moved to {clean(e.moved_to)}: {clean(e.error)}", "magenta"


def _requested(e: ev.LearningRequested) -> Parts:
    reason = f" ({clean(e.reason)})" if e.reason else ""
    return ".", "learning", f"requested {clean(e.request)} by {clean(e.hook)}{reason}: {clean(e.transcript)}", "blue"


def _completed(e: ev.LearningCompleted) -> Parts:
    cited = f", cited {', '.join(clean(c) for c in e.cited)}" if e.cited else ""
    return (".", "learning", f"completed {clean(e.request)}: lines {e.from_line}-{e.through_line} "
            f"of {clean(e.transcript)}{cited}", "blue")


def _failed(e: ev.LearningFailed) -> Parts:
    again = f" (attempt {e.attempt}; stays pending)" if e.attempt is not None else ""
    return "!", "learning", f"failed {clean(e.request)}{again}: {clean(e.error)}", "red"


def _given_up(e: ev.LearningGivenUp) -> Parts:
    return "!", "given up", f"{clean(e.request)} after {e.attempts} failed attempts: {clean(e.error)}", "red"


def _disabled(e: ev.PlaybookDisabled) -> Parts:
    reason = f": {clean(e.reason)}" if e.reason else ""
    return "-", "disabled", f"injection and learning turned off{reason}", "yellow"


def _enabled(e: ev.PlaybookEnabled) -> Parts:
    reason = f": {clean(e.reason)}" if e.reason else ""
    return "+", "enabled", f"injection and learning turned on{reason}", "green"


def _learning_skipped(e: ev.LearningSkipped) -> Parts:
    return ".", "learning", f"skipped {clean(e.request)}: {clean(e.reason)}", "blue"


def _model_call(e: ev.ModelCallRecorded) -> Parts:
    tokens = f"{e.input_tokens} in, {e.output_tokens} out"
    if e.cache_creation_input_tokens or e.cache_read_input_tokens:
        tokens += f", cache {e.cache_creation_input_tokens} written, {e.cache_read_input_tokens} read"
    outcome = "" if e.outcome == "ok" else f"  {clean(e.outcome)}{': ' + clean(e.error) if e.error else ''}"
    detail = (f"{clean(e.role)} via {clean(e.backend)} ({clean(e.model)}), attempt {e.attempt}: {tokens}, "
              f"{e.latency_ms} ms{outcome}")
    return "$", "model call", detail, "dim" if e.outcome == "ok" else "red"


def _value(e: ev.ValueMeasured) -> Parts:
    from projections.pageops import value_line

    return "=", "value", clean(value_line(e)), "green" if e.with_score >= e.without_score else "yellow"


def _deferred(e: ev.LearningDeferred) -> Parts:
    return ".", "learning", f"deferred {clean(e.request)}: {clean(e.reason)}", "blue"


def _marked_stale(e: ev.KeyPointMarkedStale) -> Parts:
    return "z", "stale", f"{clean(e.name)}  neither rated nor cited in {e.idle_sessions} sessions", "dim"


def _held(e: ev.CurationHeld) -> Parts:
    return "!", "held", f"curator reply not applied: {clean(e.reason)}", "magenta"


def _branches_merged(e: ev.BranchesMerged) -> Parts:
    detail = f"heads {', '.join(clean(h) for h in e.heads)}"
    detail += f" over ancestor {clean(e.ancestor)}" if e.ancestor else " (no common ancestor)"
    detail += f": {e.appended} transaction(s) after seq {e.shared_seq} appended in time order"
    if e.reverted:
        detail += f"; reverted {', '.join(clean(t) for t in e.reverted)}"
    return "&", "branches merged", detail, "cyan"


def _conflict(e: ev.MergeConflictResolved) -> Parts:
    lost = f"  (lost: {quote(e.lost_text)})" if e.lost_text is not None else ""
    return ("!", "conflict", f"{clean(e.name)}  {clean(e.conflict)}: {clean(e.rule)}; kept {clean(e.kept_tx)}, "
            f"lost {clean(e.lost_tx)}{lost}", "magenta")


def describe_operation(op: Any) -> str:
    """A curator operation in one line: `ADD PROJECT CONTEXT: "text"`, `UPDATE pat-001: "text"`, ..."""
    if not isinstance(op, dict):
        return clean(repr(op))
    kind = op.get("type")
    if kind == "ADD":
        return f"ADD {clean(op.get('section') or 'OTHERS')}: {quote(str(op.get('text')))}"
    if kind == "UPDATE":
        return f"UPDATE {clean(op.get('target_id'))}: {quote(str(op.get('text')))}"
    if kind == "DELETE":
        reason = f" ({clean(op['reason'])})" if op.get("reason") else ""
        return f"DELETE {clean(op.get('target_id'))}{reason}"
    if kind == "MERGE":
        sources = op.get("source_ids")
        names = ", ".join(clean(s) for s in sources) if isinstance(sources, list) else clean(sources)
        return f"MERGE {names}: {quote(str(op.get('merged_text')))}"
    return clean(repr(op))


def _proposed(e: ev.ProposalRecorded) -> Parts:
    return "?", "proposed", f"{clean(e.proposal)}: {describe_operation(e.operation)}", "cyan"


def _accepted(e: ev.ProposalAccepted) -> Parts:
    edited = f" (edited: {describe_operation(e.edited)})" if e.edited is not None else ""
    return "+", "accepted", f"{clean(e.proposal)}{edited}", "green"


def _rejected(e: ev.ProposalRejected) -> Parts:
    return "-", "refused" if e.by == "check" else "rejected", f"{clean(e.proposal)}: {clean(e.reason)}", "red"


def _expired(e: ev.ProposalExpired) -> Parts:
    detail = f"{clean(e.proposal)}: unreviewed for {e.age_days:.1f} days (limit {e.max_age_days:g})"
    return "-", "expired", detail, "dim"


def _unknown(e: ev.UnknownRecord) -> Parts:
    return "?", "unknown", f"{clean(e.type)} (written by a newer version; not applied)", "dim"


PARTS: dict[type, Callable[[Any], Parts]] = {
    ev.KeyPointAdded: _added, ev.KeyPointImported: _imported, ev.PlaybookImported: _playbook_imported,
    ev.KeyPointUpdated: _updated, ev.KeyPointsMerged: _merged, ev.KeyPointAbsorbed: _absorbed,
    ev.KeyPointDeleted: _deleted,
    ev.KeyPointEvaluated: _evaluated, ev.KeyPointPruned: _pruned, ev.KeyPointMoved: _moved,
    ev.CountersSet: _counters_set, ev.SectionReordered: _reordered, ev.VersionSet: _version,
    ev.OperationSkipped: _skipped, ev.TailRepaired: _repaired, ev.SnapshotSetAside: _set_aside, ev.HistoryRewritten: _rewritten,
    ev.LearningRequested: _requested, ev.LearningCompleted: _completed, ev.LearningFailed: _failed,
    ev.LearningSkipped: _learning_skipped, ev.KeyPointMarkedStale: _marked_stale, ev.CurationHeld: _held,
    ev.BranchesMerged: _branches_merged, ev.MergeConflictResolved: _conflict,
    ev.LearningGivenUp: _given_up, ev.PlaybookDisabled: _disabled, ev.PlaybookEnabled: _enabled,
    ev.ProposalRecorded: _proposed, ev.ProposalAccepted: _accepted, ev.ProposalRejected: _rejected,
    ev.ProposalExpired: _expired,
    ev.ModelCallRecorded: _model_call, ev.LearningDeferred: _deferred, ev.ValueMeasured: _value,
    ev.UnknownRecord: _unknown,
}
"""Each event type's one-line rendering, by its exact type."""


def event_parts(event: ev.Event | ev.UnknownRecord) -> Parts:
    """(mark, label, detail, colour) describing one event."""
    render = PARTS.get(type(event))
    return render(event) if render is not None else ("?", tag_of(event), "", "dim")


# --- what an event did to one entry ---------------------------------------------------------------------

Kind = tuple[str, str]
"""(kind, what happened) of one history item."""


def _h_added(e: ev.KeyPointAdded, name: str, session: str | None) -> Kind:
    how = f" (by {clean(e.origin)})" if e.origin not in ("operation", "new_key_point") else ""
    return "created", f"created in {clean(e.section)}{how}: {quote(e.text)}"


def _h_imported(e: ev.KeyPointImported, name: str, session: str | None) -> Kind:
    return "imported", f"imported into {clean(e.section)} ({clean(e.source_format)}): {quote(e.text)}"


def _h_updated(e: ev.KeyPointUpdated, name: str, session: str | None) -> Kind:
    return "reworded", f"re-worded {quote(e.previous_text)} -> {quote(e.text)}"


def _h_evaluated(e: ev.KeyPointEvaluated, name: str, session: str | None) -> Kind:
    rationale = f" ({clean(e.rationale)})" if e.rationale else ""
    return "rated", f"rated {clean(e.rating)}{rationale}"


def _h_counters(e: ev.CountersSet, name: str, session: str | None) -> Kind:
    return "counters_set", (f"counters set {counters(e.previous_helpful, e.previous_harmful)} -> "
                            f"{counters(e.helpful, e.harmful)}")


def _h_moved(e: ev.KeyPointMoved, name: str, session: str | None) -> Kind:
    return "moved", f"moved {clean(e.from_section)} -> {clean(e.to_section)}"


def _h_merged(e: ev.KeyPointsMerged, name: str, session: str | None) -> Kind:
    if e.name == name:
        return "merged_from", f"merged from {', '.join(clean(s) for s in e.sources)}: {quote(e.text)}"
    return "merged_into", f"merged into {clean(e.name)}"


def _h_absorbed(e: ev.KeyPointAbsorbed, name: str, session: str | None) -> Kind:
    how = f" (by {clean(e.origin)})" if e.origin not in ("operation", "new_key_point") else ""
    return "absorbed", f"absorbed a near-duplicate{how}, similarity {e.similarity:.2f}: {quote(e.absorbed)}"


def _h_deleted(e: ev.KeyPointDeleted, name: str, session: str | None) -> Kind:
    return "deleted", f"deleted ({clean(e.reason)})" if e.reason else "deleted"


def _h_pruned(e: ev.KeyPointPruned, name: str, session: str | None) -> Kind:
    return "pruned", f"pruned ({clean(e.rule)})"


def _h_skipped(e: ev.OperationSkipped, name: str, session: str | None) -> Kind:
    detail = f": {clean(e.detail)}" if e.detail else ""
    return "skipped", f"skipped {clean(e.kind)} aimed at it: {clean(e.reason)}{detail}"


def _h_stale(e: ev.KeyPointMarkedStale, name: str, session: str | None) -> Kind:
    return "stale", f"marked stale: neither rated nor cited in {e.idle_sessions} sessions"


def _h_conflict(e: ev.MergeConflictResolved, name: str, session: str | None) -> Kind:
    lost = f"; the losing text was {quote(e.lost_text)}" if e.lost_text is not None else ""
    return "conflict", f"changed on both sides of a merge ({clean(e.conflict)}): {clean(e.rule)}{lost}"


def _h_cited(e: ev.LearningCompleted, name: str, session: str | None) -> Kind:
    return "cited", f"cited by session {clean(session) if session else '(unknown)'}"


HISTORY: dict[type, Callable[[Any, str, str | None], Kind]] = {
    ev.KeyPointAdded: _h_added, ev.KeyPointImported: _h_imported, ev.KeyPointUpdated: _h_updated,
    ev.KeyPointEvaluated: _h_evaluated, ev.CountersSet: _h_counters, ev.KeyPointMoved: _h_moved,
    ev.KeyPointsMerged: _h_merged, ev.KeyPointAbsorbed: _h_absorbed, ev.KeyPointDeleted: _h_deleted,
    ev.KeyPointPruned: _h_pruned,
    ev.OperationSkipped: _h_skipped, ev.LearningCompleted: _h_cited, ev.KeyPointMarkedStale: _h_stale,
    ev.MergeConflictResolved: _h_conflict,
}
"""What an event type did to the entry a history is about; others read as their one-line form."""


def history_kind(event: ev.Event, name: str, session: str | None) -> Kind:
    """(kind, what happened) to entry `name` by `event`, committed by `session`."""
    render = HISTORY.get(type(event))
    if render is not None:
        return render(event, name, session)
    _mark, label, detail, _colour = event_parts(event)
    return tag_of(event), f"{label}: {detail}"
