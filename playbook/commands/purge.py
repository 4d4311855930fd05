"""`playbook purge --secrets | --match TEXT`: take a secret out of the log's whole history.

The detector is `projections.scrub`'s, the one the learner runs before anything is sent or
recorded; `--match` redacts a text the user names (recorded as `match`, never quoted).
The rewrite itself is `projections.purge`'s.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from eventlog.errors import PlaybookError, StorageError
from projections.anchors import ANCHORS_NAME
from projections.purge import Purged, Redact, purge
from projections.quickroads import LOG_NAME

from .output import out_json
from playbook.wiring.project import playbook_of
from playbook.rendering.safe_text import clean

MATCH_REDACTION = "[REDACTED:match]"
MIN_MATCH = 4
"""Shorter texts would redact ordinary words all over the log."""


def secrets_redactor() -> Redact:
    from projections.scrub import find_secrets, scrub

    def redact(text: str) -> tuple[str, int]:
        found = find_secrets(text)
        return (scrub(text), len(found)) if found else (text, 0)

    return redact


def match_redactor(needle: str) -> Redact:
    def redact(text: str) -> tuple[str, int]:
        count = text.count(needle)
        return (text.replace(needle, MATCH_REDACTION), count) if count else (text, 0)

    return redact


def still_holding(claude_dir: Path, needle: str | None) -> list[Path]:
    """Files under `.claude/` besides the log that still hold what was purged (kept tails, legacy copies, the
    learner's log): the purge does not rewrite them, the user should look at them."""
    from projections.scrub import find_secrets

    found = []
    for path in sorted(claude_dir.rglob("*")):
        if not path.is_file() or path.is_symlink() or path.name in (LOG_NAME, f"{LOG_NAME}.lock"):
            continue
        try:
            data = path.read_bytes()
        except OSError:
            continue
        if len(data) > (64 << 20):
            continue
        text = data.decode("utf-8", "replace")
        if (needle is not None and needle in text) or (needle is None and find_secrets(text)):
            found.append(path)
    return found


def cmd_purge(args: argparse.Namespace) -> int:
    if bool(args.secrets) == (args.match is not None):
        raise PlaybookError("give one of --secrets or --match TEXT")
    if args.match is not None and len(args.match.strip()) < MIN_MATCH:
        raise PlaybookError(f"--match needs a text of at least {MIN_MATCH} characters")
    repo = playbook_of(args)
    if not repo.store.exists():
        raise PlaybookError("no log yet: nothing to purge")
    redact = match_redactor(args.match) if args.match is not None else secrets_redactor()
    keep = Path(args.keep_original).absolute() if args.keep_original else None

    def progress(what: str) -> None:
        if sys.stderr.isatty():
            print(f"purge: {what}", file=sys.stderr)

    try:
        result = purge(repo, redact, "match" if args.match is not None else "secrets", keep, progress)
    except StorageError as exc:
        raise PlaybookError(str(exc)) from exc
    except OSError as exc:
        raise PlaybookError(f"cannot purge {repo.log_path}: {exc.strerror or exc}") from exc
    leftovers = still_holding(repo.claude_dir, args.match) if result.seqs else []
    in_git = in_git_history(repo.log_path) if result.seqs else None
    if args.json:
        import msgspec

        out_json({**msgspec.to_builtins(result), "still_holding": [str(p) for p in leftovers],
                  "git_history": in_git})
        return 0
    for line in _lines(result, leftovers, repo.claude_dir / ANCHORS_NAME):
        print(line)
    if in_git is not None:
        print(f"git's history still holds the text: commits of {clean(in_git)} keep every earlier version of the log; "
              f"rewrite them with `git filter-repo --path {clean(_quoted(in_git))} --invert-paths` (or "
              "`--replace-text`; git filter-branch does it too), then force-push and have every clone clone again")
    return 0


def in_git_history(log: Path) -> str | None:
    """The log's path in its git work tree when a commit of that repository holds it (git's objects then keep
    every version committed, the purged text included); None when there is none, no repository or no git."""
    directory = log.parent
    try:
        top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=directory, capture_output=True, text=True,
                             timeout=30)
        if top.returncode != 0 or not top.stdout.strip():
            return None
        path = os.path.relpath(os.path.realpath(log), os.path.realpath(top.stdout.strip()))
        if path.startswith(os.pardir):
            return None
        held = subprocess.run(["git", "rev-list", "-n", "1", "--all", "--", path], cwd=top.stdout.strip(),
                              capture_output=True, text=True, timeout=60)
    except (OSError, ValueError, subprocess.SubprocessError):
        return None
    return path if held.returncode == 0 and held.stdout.strip() else None


def _quoted(path: str) -> str:
    """`path` as a shell word."""
    return path if all(ch.isalnum() or ch in "._-/" for ch in path) else "'" + path.replace("'", "'\\''") + "'"


def _lines(result: Purged, leftovers: list[Path], anchors: Path) -> list[str]:
    if not result.seqs:
        return ["nothing to purge: no line of the log holds it"]
    seqs = ", ".join(str(s) for s in result.seqs[:12]) + (", ..." if len(result.seqs) > 12 else "")
    lines = [f"purged {result.redactions} redaction(s) from {len(result.seqs)} line(s) (seq {seqs})",
             f"chain re-stamped from seq {result.seqs[0]}: head {result.head_before} -> {result.head_after}",
             f"recorded as HistoryRewritten at seq {result.record_seq}",
             (f"the original log kept at {clean(result.kept_original)}" if result.kept_original
              else "the original log is removed"),
             "rebuilt playbook.json, the hook's projection, the recall index and the checkpoints"]
    if result.anchored:
        lines.append(f"anchored the rewrite in {clean(str(anchors))}: commit it with the log")
    for path in leftovers:
        lines.append(f"still holds it (not rewritten, look at it): {clean(str(path))}")
    return lines
