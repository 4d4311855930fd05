"""The `playbook` subcommands that keep the log whole and lean: verify, anchor, import, stats, dedup,
rebuild, recover, purge.

`playbook.commands.cli` parses the arguments and dispatches here; the work itself is `projections`' and
`playbook.commands.audit`'s.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from eventlog.errors import PlaybookError

from .output import out, out_json, stdout_style
from playbook.wiring.project import playbook_of


def add_checks(add: Callable[..., argparse.ArgumentParser]) -> None:
    """Register verify, anchor, import, stats and dedup with the parser's `add`."""
    verify = add("verify", cmd_verify,
                 "check the log's hashes, sequence and transactions, and the snapshot; exit 1 on any problem")
    verify.add_argument("--anchor", action="store_true",
                        help="also prove the log extends every head `playbook anchor` recorded (and name the first "
                             "line that differs)")
    add("anchor", cmd_anchor, "record the log's head in .claude/playbook.anchors, a file to commit or keep apart")

    imp = add("import", cmd_import, "append a legacy playbook.json (any format) to the log")
    imp.add_argument("file", metavar="FILE")

    add("stats", cmd_stats, "counts per section and event type, most helpful and harmful entries, learning outcomes, "
        "and each key point's use (sessions injected, cited, rated)")
    dedup = add("dedup", cmd_dedup, "find near-duplicate key points; merge them with --apply (a dry run without)")
    dedup.add_argument("--apply", action="store_true", help="merge the pairs found, as one transaction")
    dedup.add_argument("--threshold", type=float, metavar="T", help="similarity from 0 to 1 (default: the method's)")


def add_repairs(add: Callable[..., argparse.ArgumentParser]) -> None:
    """Register rebuild, recover and purge with the parser's `add`."""
    add("rebuild", cmd_rebuild, "rewrite playbook.json from the log and clear the checkpoints")
    recover = add("recover", cmd_recover, "take back into the log what a playbook.json ahead of it holds, as events "
                  "of a recovery (playbook.json itself when it is ahead, else the newest playbook.json.ahead-*)")
    recover.add_argument("file", metavar="FILE", nargs="?", help="a kept playbook.json (default: see above)")
    purge = add("purge", cmd_purge, "take a secret out of the log's whole history: the lines holding it are "
                "rewritten with a redaction and the rewrite is recorded")
    purge.add_argument("--secrets", action="store_true", help="redact what the secret detector finds anywhere in the log")
    purge.add_argument("--match", metavar="TEXT", help="redact every occurrence of TEXT")
    purge.add_argument("--keep-original", metavar="PATH", help="keep the original log at PATH (default: removed)")


def cmd_verify(args: argparse.Namespace) -> int:
    from projections.verify import only_behind, reports_divergence, verify

    from playbook.rendering import report_changes as changes

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
    from .recover import waiting_line

    if (line := waiting_line(repo)) is not None:
        result.notes.append(line)
    if reports_divergence(result):
        from playbook.wiring.project import told_divergence

        told_divergence(repo)  # one of the report's problems: no closing line on stderr repeats it
    if args.anchor:
        from projections.verify import verify_anchors

        verify_anchors(repo, result)
    if args.json:
        out_json(changes.verify_json(result))
    else:
        out(changes.verify_lines(result, stdout_style()))
    return 0 if result.ok else 1


def cmd_anchor(args: argparse.Namespace) -> int:
    from eventlog.errors import CorruptLogError
    from projections.anchor_proof import AnchoredLogDiffers, record
    from projections.anchors import AnchorFileError, anchors_path

    repo = playbook_of(args)
    path = anchors_path(repo.claude_dir)
    if not repo.store.exists():
        raise PlaybookError("no log yet: nothing to anchor")
    try:
        with repo.store.locked():
            anchor = record(repo.log_path, path, root=repo.root)
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
    from playbook.rendering import report_changes as changes
    from .audit import stats

    from playbook.learner.lean import usage_lines, usage_rows

    from playbook.rendering import cost_report

    repo = playbook_of(args)
    result, spent = stats(repo)
    state = repo.current()[0]
    from playbook.learner.backend import describe, model_config

    result.backend = describe(model_config())
    from playbook.wiring.settings import override_line, resolve_settings

    # a project's settings that gave way to the user's protective choices; the user-level playbook has none
    overrides = [] if repo.user_level else resolve_settings(repo.claude_dir.parent)[1]
    if args.json:
        import msgspec

        out_json({**changes.stats_json(result), "sessions": state.sessions,
                   "usage": msgspec.to_builtins(usage_rows(state)), "model_usage": cost_report.usage_json(spent),
                   "settings_overridden": msgspec.to_builtins(overrides)})
    else:
        style = stdout_style()
        line = override_line(overrides)
        out(changes.stats_lines(result, style) + ([] if line is None else ["", line])
            + usage_lines(state, style.width) + cost_report.usage_lines(spent, style))
    return 0


def cmd_dedup(args: argparse.Namespace) -> int:
    from eventlog import similarity
    from eventlog.decide import MergeDuplicates
    from eventlog.events import Cause

    from playbook.learner.lean import duplicates_in
    from playbook.rendering.safe_text import clean

    threshold = args.threshold
    if threshold is not None and not 0 < threshold <= 1:
        from playbook.errors import UsageError

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
        out_json({"method": using, "threshold": chosen, "applied": committed is not None,
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
    out(lines + [f"{verdict} ({using}, threshold {chosen:g})"])
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from playbook.rendering import report_changes as changes
    from .audit import import_file

    result = import_file(playbook_of(args), args.file)
    if args.json:
        out_json(changes.import_json(result))
    else:
        out(changes.import_lines(result, stdout_style()))
    return 0


def cmd_recover(args: argparse.Namespace) -> int:
    from playbook.rendering import report_changes as changes
    from .recover import recover

    result = recover(playbook_of(args), args.file)
    if args.json:
        out_json(changes.recover_json(result))
    else:
        out(changes.recover_lines(result, stdout_style()))
    return 0


def cmd_rebuild(args: argparse.Namespace) -> int:
    from projections.timeline import Timeline

    repo = playbook_of(args)
    removed = Timeline(repo).clear_checkpoints()  # checkpoints and the commit index; rebuild writes new ones
    position = repo.rebuild()
    if args.json:
        out_json({"snapshot": str(repo.snapshot_path), "seq": position.seq, "lines": position.line,
                   "checkpoints_removed": removed})
        return 0
    print(f"rebuilt {repo.snapshot_path} from {position.line} log lines (seq {position.seq})")
    if removed:
        print(f"removed {removed} checkpoint file(s) (derived data, written again as needed)")
    return 0


def cmd_purge(args: argparse.Namespace) -> int:
    from .purge import cmd_purge as run

    return run(args)
