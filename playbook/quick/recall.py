"""UserPromptSubmit hook: add the few left-out key points most relevant to the prompt. Standard library only.

Run as a script (`python -I -S .../playbook/quick/recall.py`): it imports nothing of this
project and nothing from the current directory. It reads the index projected ahead
of time (`projections/recall.py`), finds the prompt's words in it, adds their BM25
weights, and prints at most `top` key points within `max_chars`. A missing or stale index,
recall turned off, a prompt that matches nothing well, or any failure: it prints
nothing and exits 0.
"""

import os
import sys

# The package's root, beside this file, for the quick roads' contract: absolute, never the current directory.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from projections.quickroads import (LOG_NAME, MAX_INDEX_BYTES, RECALL_FORMAT, RECALL_NAME, claude_outside,
                                    current_body, exit_now, terms, too_large_to_fold)
from projections.quickjson import json_quote, json_string, top_level_strings

MAX_PROMPT_CHARS = 20_000
MIN_SCORE = 2.5
"""A key point below this BM25 score is not relevant enough to interrupt with (one common word is not)."""


def _index(project: str, follow: bool = False) -> "bytes | None":
    """The index after its header, if it reflects the log and settings as they are now; through links only
    with `follow`, once `playbook.wiring.project.claude_dir` has found that none leads out of the project."""
    if claude_outside(project) is not None:  # nothing is read there; SessionStart says why
        return None
    return current_body(os.path.join(project, ".claude"), RECALL_NAME, MAX_INDEX_BYTES, follow)


def _seek(data: bytes, lo: int, hi: int, key: bytes) -> bytes | None:
    """What follows `key` + TAB on the line of `data[lo:hi]` that starts with it; the lines there are
    sorted by that key. A binary search: a few short finds, whatever the size of the index."""
    while lo < hi:
        mid = (lo + hi) // 2
        start = data.rfind(b"\n", lo, mid) + 1 or lo
        if start < lo:
            start = lo
        end = data.find(b"\n", start, hi)
        end = hi if end < 0 else end
        tab = data.find(b"\t", start, end)
        found = data[start:tab if tab >= 0 else end]
        if found == key:
            return data[tab + 1:end] if tab >= 0 else b""
        if found < key:
            lo = end + 1
        else:
            hi = start
    return None


def recall(prompt: str, body: bytes) -> list[str]:
    """The key point lines most relevant to `prompt`, best first, within the index's limits."""
    first, _, _rest = body.partition(b"\n")
    fields = first.split()
    if len(fields) != 5 or fields[0] != RECALL_FORMAT:  # another version's index: nothing until it is re-projected
        return []
    top, max_chars, count, terms_offset = (int(field) for field in fields[1:])
    if top <= 0 or count <= 0:
        return []
    docs_at = len(first) + 1
    terms_at = docs_at + terms_offset
    scores: dict[int, float] = {}
    for term in set(terms(prompt[:MAX_PROMPT_CHARS])):
        found = _seek(body, terms_at, len(body), term.encode())
        for posting in (found or b"").split():
            doc, _, weight = posting.partition(b":")
            scores[int(doc)] = scores.get(int(doc), 0.0) + float(weight)
    chosen: list[str] = []
    used = 0
    for number, score in sorted(scores.items(), key=lambda item: (-item[1], item[0])):
        if len(chosen) >= top or score < MIN_SCORE:
            break
        found = _seek(body, docs_at, terms_at, b"%07d" % number) if 0 <= number < count else None
        if found is None:
            continue
        line = json_string(found.decode("utf-8"))
        if used + len(line) + 1 > max_chars:
            continue
        chosen.append(line)
        used += len(line) + 1
    return chosen


def _refreshed(project: str) -> "bytes | None":  # a string: the plugin runs this under any Python 3
    """The index after the full machinery has brought it up to date, for a project with a log.

    A write leaves the index behind (it is a pass over every left-out key point): the first prompt
    after it pays for it. Only now are site-packages brought in, and never this script's directory."""
    claude_dir = os.path.join(project, ".claude")
    if claude_outside(project) is not None or not os.path.isfile(os.path.join(claude_dir, LOG_NAME)):
        return None
    if too_large_to_fold(claude_dir) is not None:  # SessionStart says why; a prompt is never held up by a fold
        return None
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    import site

    site.main()
    from pathlib import Path

    from playbook.wiring.project import repository

    repo = repository(Path(project))
    repo.refresh()
    if repo.diverged is not None:  # playbook.json holds what the log does not: nothing is recalled from either
        return None
    try:
        return _index(project, follow=True)  # `repository` refused any link out of the project
    except (OSError, ValueError):
        return None


def main() -> int:
    try:
        try:
            payload = top_level_strings(sys.stdin.buffer.read(1 << 20).decode("utf-8", "replace"))
        except (ValueError, IndexError, RecursionError, SystemError):
            # SystemError: the C scanner's way of failing while `json.decoder`, which holds its error
            # type, is not imported. Either way: not the hook input Claude Code sends, nothing to add.
            return 0
        prompt = payload.get("prompt")
        if not prompt or not prompt.strip():
            return 0
        project = os.environ.get("CLAUDE_PROJECT_DIR") or payload.get("cwd") or os.getcwd()
        try:
            index = _index(project)
        except (OSError, ValueError):  # no index yet, or one of another log position: nothing to add
            index = None
        if index is None:
            index = _refreshed(project)
        chosen = recall(prompt, index) if index else []
        if not chosen:
            return 0
        text = ("Key points from this project's playbook that may bear on this request (left out at the session's "
                "start to save context); cite them as [id] when you apply them:\n" + "\n".join(chosen))
        sys.stdout.write('{"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": '
                         + json_quote(text) + "}}\n")
    except Exception as exc:  # a prompt must go through whatever is wrong with the index
        print(f"playbook: no key points recalled for this prompt: {type(exc).__name__}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    exit_now(main())
