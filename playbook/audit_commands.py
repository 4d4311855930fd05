"""The `playbook` command's views and changes of the log: show, at, log, history, diff, verify, stats,
timeline, serve, revert, dedup, import, recover, rebuild; and the output helpers every subcommand uses.

`playbook.cli` parses the arguments and dispatches here.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from eventlog.errors import PlaybookError

from .project import playbook_of, project_dir


def _out(lines: list[str] | str) -> None:
    text = lines if isinstance(lines, str) else "\n".join(lines)
    sys.stdout.write(text + "\n")


def _out_json(document) -> None:
    """`document` as one JSON document on stdout (`report.to_json`)."""
    from .report import to_json

    try:
        text = to_json(document)
    except UnicodeEncodeError:
        # A lone surrogate, which UTF-8 (and so JSON) cannot hold: a --project path or a name
        # given on a command line that is not UTF-8. It is written as the text `\udcff`.
        import msgspec

        text = to_json(_encodable(msgspec.to_builtins(document)))
    _out(text)


def _encodable(value):
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {_encodable(key): _encodable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_encodable(item) for item in value]
    return value


def _style():
    from .report import Style

    return Style.for_stream(sys.stdout)


def _timeline(args: argparse.Namespace):
    from projections.timeline import Timeline

    return Timeline(playbook_of(args))


# --- read commands ---------------------------------------------------------------------------------------


def cmd_show(args: argparse.Namespace) -> int:
    from . import report
    from .audit import PointState, state_at

    when = getattr(args, "at", None)
    selected = [flag for flag in ("injected", "left_out", "unused") if getattr(args, flag, False)]
    if selected:
        if when is not None or len(selected) > 1:
            from .audit import UsageError

            raise UsageError("--injected, --left-out and --unused show the playbook now, one at a time")
        return _show_injection(args, selected[0])
    if when is None and args.before:
        from .audit import UsageError

        raise UsageError("--before goes with --at WHEN", value="--before")
    if when is None:
        repo = playbook_of(args)
        state = repo.state()  # a legacy or hand-edited playbook.json first, as the hooks do; said by cli.main
        point = PointState(state=state, seq=state.seq, commit=_timeline(args).last_commit())
    else:
        point = state_at(_timeline(args), when, before=args.before)
    label = None if when is None else f"{when} (just before)" if args.before else when
    if args.json:
        _out_json(report.show_json(point, when))
    else:
        _out(report.show_lines(point, _style(), label))
    return 0


def _show_injection(args: argparse.Namespace, what: str) -> int:
    """`show --injected`: exactly the context the next session receives; `--left-out`: what the budget kept out."""
    from . import report
    from .audit import PointState
    from .lean import injected_context, left_out_state, unused_state

    repo = playbook_of(args)
    if what == "injected":
        injection = injected_context(repo)
        if args.json:
            _out_json({"budget": injection.budget, "tokens": injection.tokens, "included": injection.included,
                       "left_out": injection.left_out, "text": injection.text})
        else:
            from .safe_text import clean

            sys.stdout.write("\n".join(clean(line) for line in injection.text.split("\n")))
        return 0
    state = left_out_state(repo) if what == "left_out" else unused_state(repo)
    point = PointState(state=state, seq=state.seq, commit=None)
    if args.json:
        _out_json(report.show_json(point, None))
    else:
        _out(report.show_lines(point, _style()))
    return 0


def cmd_at(args: argparse.Namespace) -> int:
    args.at = args.when
    return cmd_show(args)


def cmd_log(args: argparse.Namespace) -> int:
    from . import report
    from .audit import event_types, select

    types = event_types(args.type)
    selected = select(_timeline(args), n=args.n or None, session=args.session, entry=args.entry, types=types,
                      since=args.since, until=args.until)
    if args.json:
        _out_json(report.log_json(selected))
    else:
        filtered = any(v is not None for v in (args.session, args.entry, types, args.since, args.until))
        _out(report.log_lines(selected, _style(), verbose=args.verbose, filtered=filtered))
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    from . import report

    items = _timeline(args).history(args.entry)
    if args.json:
        _out_json(report.history_json(args.entry, items))
    else:
        _out(report.history_lines(args.entry, items, _style(), verbose=args.verbose))
    return 0


def cmd_diff(args: argparse.Namespace) -> int:
    from projections.diff import diff

    from . import report_changes as changes
    from .audit import end_of_log, state_at

    timeline = _timeline(args)
    a = state_at(timeline, args.a)
    b = state_at(timeline, args.b) if args.b is not None else end_of_log(timeline)
    b_label = args.b if args.b is not None else "now"
    change = diff(a.state, b.state)
    if args.json:
        _out_json(changes.diff_json(change, a, b, args.a, b_label))
    else:
        _out(changes.diff_lines(change, a, b, args.a, b_label, _style()))
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    from projections.verify import only_behind, verify

    from . import report_changes as changes

    repo = playbook_of(args)
    result = verify(repo)
    if only_behind(result):
        # A writer killed between its append and the snapshot's replacement: the log is whole, so catch
        # up here, as the next command would, rather than report a problem that is none.
        behind = result.problems[0].what.split(" (")[0]
        try:
            repo.refresh()
        except PlaybookError:
            pass  # cannot write here: the problem stays reported, saying it is harmless
        else:
            result = verify(repo)
            result.notes.append(f"playbook.json was {behind}: brought up to date (a writer had stopped before "
                                "replacing it; harmless)")
    if args.anchor:
        from projections.verify import verify_anchors

        verify_anchors(repo, result)
    if args.json:
        _out_json(changes.verify_json(result))
    else:
        _out(changes.verify_lines(result, _style()))
    return 0 if result.ok else 1


def cmd_anchor(args: argparse.Namespace) -> int:
    from eventlog.errors import CorruptLogError
    from projections.anchors import AnchoredLogDiffers, AnchorFileError, anchors_path, record

    repo = playbook_of(args)
    path = anchors_path(repo.claude_dir)
    if not repo.store.exists():
        raise PlaybookError("no log yet: nothing to anchor")
    try:
        with repo.store.locked():
            anchor = record(repo.log_path, path)
    except AnchoredLogDiffers as exc:
        raise PlaybookError(f"not anchored: {exc.problem.what} (`playbook verify --anchor` shows it)") from exc
    except AnchorFileError as exc:
        raise PlaybookError(f"not anchored: {exc}") from exc
    except CorruptLogError as exc:
        raise PlaybookError(f"not anchored: the log is damaged at line {exc.line}: {exc.reason}") from exc
    except OSError as exc:
        raise PlaybookError(f"cannot write {path}: {exc.strerror or exc}") from exc
    if anchor is None:
        print(f"already anchored: the log's head is the last anchor in {path}")
        return 0
    print(f"anchored line {anchor.line} (seq {anchor.seq}), head {anchor.head}, in {path}")
    print("commit that file (or copy it where the log's writers cannot reach): `playbook verify --anchor` "
          "proves the log still extends it")
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    from . import report_changes as changes
    from .audit import stats

    from .lean import usage_lines, usage_rows

    from . import cost_report

    repo = playbook_of(args)
    result, spent = stats(repo)
    state = repo.current()[0]
    from .backend import describe, model_config

    result.backend = describe(model_config())
    if args.json:
        import msgspec

        _out_json({**changes.stats_json(result), "sessions": state.sessions,
                   "usage": msgspec.to_builtins(usage_rows(state)), "model_usage": cost_report.usage_json(spent)})
    else:
        style = _style()
        _out(changes.stats_lines(result, style) + usage_lines(state, style.width)
             + cost_report.usage_lines(spent, style))
    return 0


def cmd_timeline(args: argparse.Namespace) -> int:
    from .page import write_page

    repo = playbook_of(args)
    target = Path(args.html)
    if target.is_dir():
        raise PlaybookError(f"{args.html} is a directory: give the page's file name")
    size = write_page(repo, target, progress=_progress(repo.log_path))
    print(f"wrote {target} ({size / 1e6:.1f} MB): open it in a browser, no network needed")
    return 0


def _progress(path: Path):
    """A reporter of bytes read, on stderr when it is a terminal and the log is large enough to wait for."""
    try:
        total = path.stat().st_size
    except OSError:
        return None
    if total < (32 << 20) or not sys.stderr.isatty():
        return None

    def report(done: int) -> None:
        sys.stderr.write(f"\rreading the log: {100 * done // total}%")
        sys.stderr.flush()

    return report


def cmd_serve(args: argparse.Namespace) -> int:
    from .serve import make_server

    try:
        server = make_server(playbook_of(args), args.port)
    except OSError as exc:
        raise PlaybookError(f"cannot listen on 127.0.0.1:{args.port}: {exc.strerror or exc}") from exc
    port = server.server_address[1]
    url = f"http://127.0.0.1:{port}/"
    print(f"serving the playbook's history at {url} (read-only; Ctrl-C stops)", flush=True)
    if args.open:
        import webbrowser

        webbrowser.open(url)
    try:
        server.serve_forever()
    finally:
        server.server_close()
    return 0


# --- write commands --------------------------------------------------------------------------------------


def cmd_revert(args: argparse.Namespace) -> int:
    from projections.revert import RevertConflict

    from . import report_changes as changes
    from .audit import revert

    try:
        result = revert(playbook_of(args), args.target, force=args.force, dry_run=args.dry_run)
    except RevertConflict as exc:
        if args.json:
            _out_json({"transactions": None, "dry_run": args.dry_run, "applied": False, "tx": None,
                       "events": [], "conflicts": exc.conflicts,
                       "error": "later transactions changed the same entries"})
        style = changes.Style.for_stream(sys.stderr)
        lines = [f"playbook: cannot revert {changes.clean(args.target)}: later transactions changed the same entries:",
                 *changes.conflict_lines(exc.conflicts, style),
                 "playbook: nothing was changed; --force reverts the rest and leaves these entries as they are"]
        sys.stderr.write("\n".join(lines) + "\n")
        return 1
    if args.json:
        _out_json(changes.revert_json(result))
    else:
        _out(changes.revert_lines(result, _style()))
    return 0


def cmd_dedup(args: argparse.Namespace) -> int:
    from eventlog import similarity
    from eventlog.decide import MergeDuplicates
    from eventlog.events import Cause

    from .lean import duplicates_in
    from .safe_text import clean

    threshold = args.threshold
    if threshold is not None and not 0 < threshold <= 1:
        from .audit import UsageError

        raise UsageError("--threshold is a similarity between 0 and 1")
    repo = playbook_of(args)
    state = repo.state()
    using = similarity.method()
    chosen = similarity.THRESHOLDS[using] if threshold is None else threshold
    if len(state.where) > 500:
        print(f"playbook: comparing {len(state.where)} key points ({using}, threshold {chosen:g})...", file=sys.stderr)
    pairs = duplicates_in(state, chosen)
    committed = None
    if args.apply and pairs:
        committed = repo.append([MergeDuplicates(pairs=pairs, method=using)],
                                Cause(source="dedup", note=f"near-duplicates at similarity >= {chosen:g} ({using})"))
    if args.json:
        _out_json({"method": using, "threshold": chosen, "applied": committed is not None,
                   "tx": committed.commit.tx if committed is not None else None,
                   "pairs": [{"kept": a, "merged": b, "similarity": round(score, 3)} for a, b, score in pairs]})
        return 0
    lines = []
    for kept, duplicate, score in pairs:
        first, second = state.get(kept), state.get(duplicate)
        lines.append(f"{clean(kept)} ~ {clean(duplicate)}  {score:.2f}  {clean(first.text if first else '')!r} "
                     f"/ {clean(second.text if second else '')!r}")
    verdict = (f"merged {len(pairs)} pair(s) as transaction {committed.commit.tx}" if committed is not None
               else f"{len(pairs)} pair(s) of near-duplicates" + ("; run with --apply to merge them" if pairs else ""))
    _out(lines + [f"{verdict} ({using}, threshold {chosen:g})"])
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from . import report_changes as changes
    from .audit import import_file

    result = import_file(playbook_of(args), args.file)
    if args.json:
        _out_json(changes.import_json(result))
    else:
        _out(changes.import_lines(result, _style()))
    return 0


def cmd_recover(args: argparse.Namespace) -> int:
    from . import report_changes as changes
    from .recover import recover

    result = recover(playbook_of(args), args.file)
    if args.json:
        _out_json(changes.recover_json(result))
    else:
        _out(changes.recover_lines(result, _style()))
    return 0


def cmd_rebuild(args: argparse.Namespace) -> int:
    from projections.timeline import Timeline

    repo = playbook_of(args)
    removed = Timeline(repo).clear_checkpoints()  # checkpoints and the commit index; rebuild writes new ones
    position = repo.rebuild()
    if args.json:
        _out_json({"snapshot": str(repo.snapshot_path), "seq": position.seq, "lines": position.line,
                   "checkpoints_removed": removed})
        return 0
    print(f"rebuilt {repo.snapshot_path} from {position.line} log lines (seq {position.seq})")
    if removed:
        print(f"removed {removed} checkpoint file(s) (derived data, written again as needed)")
    return 0
