"""git for the org layer: fetch an org repository into a private bare repository, read its playbook's files
out of the fetched tree, and push a proposal. Credentials are git's own (its helpers, the ssh agent).

Nothing the org repository holds runs or is followed: no work tree is ever checked out (a link in the tree is
a mode, refused, never a file on disk), the URL is fetched as given with no remote configured, hooks and
fsmonitor are off, the `ext` transport is refused, every object is checked (`fsckObjects`), and each file is
read by its blob id only when the tree says it is a regular file under the size cap.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from eventlog.errors import PlaybookError

FETCHED = "refs/playbook/fetched"
"""Where the fetched head is kept in the private repository."""
TIMEOUT = 300.0
MAX_LOG_BYTES = 64 << 20
"""The largest org log taken: far above any playbook's, far below what a hostile repository can ship."""
MAX_ANCHORS_BYTES = 16 << 20
LOG_PATHS = (".claude/playbook.events.jsonl", "playbook.events.jsonl")
"""Where an org repository keeps its log: as a project does, or at its root."""
SAFE = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "protocol.ext.allow=never",
        "-c", "protocol.fd.allow=never", "-c", "transfer.fsckObjects=true", "-c", "fetch.recurseSubmodules=false")


class GitFailed(PlaybookError):
    """git could not do it: the reason is git's last line."""


def git(git_dir: Path, *args: str, data: bytes | None = None, quiet: bool = False,
        timeout: float = TIMEOUT, env: dict[str, str] | None = None) -> bytes:
    """Run git on the private repository `git_dir`; its stdout, or `GitFailed` with git's last line.

    `quiet`: no prompt for credentials (a background fetch must never wait on a terminal)."""
    env = {**_environment(), "GIT_DIR": str(git_dir), "GIT_NO_REPLACE_OBJECTS": "1", **(env or {})}
    if quiet:
        env["GIT_TERMINAL_PROMPT"] = "0"
    try:
        done = subprocess.run(["git", *SAFE, *args], input=data, capture_output=True, env=env, timeout=timeout,
                              cwd=git_dir, stdin=None if data is not None else subprocess.DEVNULL if quiet else None)
    except FileNotFoundError as exc:
        raise GitFailed("git is not installed") from exc
    except subprocess.TimeoutExpired as exc:
        raise GitFailed(f"git {args[0]} did not finish in {timeout:.0f} s") from exc
    if done.returncode != 0:
        lines = [line.strip() for line in done.stderr.decode("utf-8", "replace").splitlines() if line.strip()]
        said = [line for line in lines if line.startswith(("fatal:", "error:"))]  # not the advice after it
        raise GitFailed(said[0] if said else lines[-1] if lines else f"git {args[0]} failed (exit {done.returncode})")
    return done.stdout


def _environment() -> dict[str, str]:
    """The environment git runs in: the user's, without the GIT_ variables a caller (a git hook) may have set
    for another repository, but for the ones that reach the user's credentials and ssh. The system's and the
    user's git configuration are theirs (credential helpers, proxies) and apply; the org repository's never does."""
    kept = ("GIT_SSH", "GIT_SSH_COMMAND", "GIT_ASKPASS", "GIT_TERMINAL_PROMPT", "GIT_CONFIG_GLOBAL")
    return {name: value for name, value in os.environ.items() if not name.startswith("GIT_") or name in kept}


def init(git_dir: Path) -> None:
    """The private bare repository the org is fetched into (created once)."""
    if (git_dir / "HEAD").is_file():
        return
    try:
        done = subprocess.run(["git", "init", "--quiet", "--bare", str(git_dir)], capture_output=True,
                              timeout=60, stdin=subprocess.DEVNULL, env=_environment())
    except (FileNotFoundError, subprocess.TimeoutExpired) as exc:
        raise GitFailed("git is not installed" if isinstance(exc, FileNotFoundError) else "git init hung") from exc
    if done.returncode != 0:
        raise GitFailed(done.stderr.decode("utf-8", "replace").strip().splitlines()[-1])


def check_url(url: str) -> str:
    """`url` when git may be given it as a repository: never an option, never the `ext::` transport."""
    if not url or url.startswith("-") or "\n" in url or "\0" in url:
        raise PlaybookError(f"{url!r} is not a git repository URL")
    if url.split("::", 1)[0].lower() in ("ext", "fd") and "::" in url:
        raise PlaybookError(f"{url!r}: the {url.split('::')[0]} transport runs commands; give an ssh, https or path URL")
    return url


def fetch(git_dir: Path, url: str, quiet: bool) -> str:
    """Fetch the org repository's HEAD into FETCHED; its commit id."""
    git(git_dir, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--force", "--", url,
        f"+HEAD:{FETCHED}", quiet=quiet)
    return git(git_dir, "rev-parse", "--verify", "--quiet", f"{FETCHED}^{{commit}}").decode().strip()


class Blob:
    """One file of the fetched tree: its path, mode, object id and size."""

    def __init__(self, path: str, mode: str, oid: str, size: int) -> None:
        self.path, self.mode, self.oid, self.size = path, mode, oid, size


def entry(git_dir: Path, commit: str, path: str) -> Blob | None:
    """The tree entry `path` of `commit` (every directory on its way must be a directory, not a link), or None."""
    tree, parts = commit, path.split("/")
    for depth, part in enumerate(parts):
        listed = git(git_dir, "ls-tree", "-z", "--long", f"{tree}", "--", part)
        if not listed:
            return None
        meta, _tab, _name = listed.rstrip(b"\0").partition(b"\t")
        mode, kind, oid, size = meta.decode().split()
        if depth < len(parts) - 1:
            if kind != "tree":
                what = "a link" if mode == "120000" else f"a {kind}"
                raise GitFailed(f"{'/'.join(parts[:depth + 1])} is {what} in the repository, not a directory")
            tree = oid
            continue
        return Blob(path, mode, oid, int(size) if size.isdigit() else -1)
    return None


def read_blob(git_dir: Path, blob: Blob, limit: int) -> bytes:
    """The bytes of `blob`, a regular file of at most `limit` bytes; GitFailed (with why) otherwise."""
    if blob.mode == "120000":
        raise GitFailed(f"{blob.path} is a link in the repository")
    if blob.mode not in ("100644", "100755"):
        raise GitFailed(f"{blob.path} is not a regular file in the repository (mode {blob.mode})")
    if not 0 <= blob.size <= limit:
        raise GitFailed(f"{blob.path} is {blob.size:,} bytes, more than the {limit:,} taken")
    data = git(git_dir, "cat-file", "blob", blob.oid)
    if len(data) != blob.size:
        raise GitFailed(f"{blob.path} does not have the size its tree says")
    return data
