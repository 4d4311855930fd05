"""The private git repository a sync works through: `<user-level dir>/sync/git`, bare, never checked out.

Everything passes through git's plumbing: the remote's log is read as a blob (a regular file's,
never a link's or a submodule's) and written to a file of ours; the merged log goes back as a
blob in a commit on `main` whose parents are ours and the remote's. No work tree exists, so
nothing the remote holds is ever put on disk as it named it. git runs with no hooks, no `ext::`
transport and no terminal prompt in the background; what it reads of configuration is the
user's and this repository's own (a fetch never brings configuration). Credentials are git's:
its helpers and the ssh agent, nothing stored here.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

from eventlog.errors import PlaybookError
from eventlog.safefiles import remove_file

BRANCH = "main"
REMOTE_REF = f"refs/remotes/origin/{BRANCH}"
LOCAL_REF = f"refs/heads/{BRANCH}"
LOG_BLOB = "playbook.events.jsonl"
"""The log's name at the top of the remote's tree."""
SAFE = ("-c", "core.hooksPath=/dev/null", "-c", "protocol.ext.allow=never", "-c", "protocol.fd.allow=never",
        "-c", "core.fsmonitor=false",
        "-c", "fetch.fsckObjects=true", "-c", "credential.interactive=false", "-c", "core.symlinks=false")
_DROPPED = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES",
            "GIT_NAMESPACE", "GIT_COMMON_DIR", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT",
            "GIT_PREFIX", "GIT_QUARANTINE_PATH", "GIT_EXEC_PATH", "GIT_TEMPLATE_DIR")
NETWORK_TIMEOUT = 300.0
LOCK_WAITS, LOCK_PAUSE = 40, 0.25
_LOCK_FILE = re.compile(r"Unable to create '([^']+\.lock)': File exists")
LOCAL_TIMEOUT = 120.0


class GitFailed(PlaybookError):
    """git did not do what was asked: the command's last line of error."""


class Offline(GitFailed):
    """The remote could not be reached (or refused us): learning goes on, and the next sync merges."""


class Rejected(GitFailed):
    """The push was refused because the remote moved meanwhile: fetch and merge again."""


def _env(quiet: bool) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in _DROPPED and not key.startswith("GIT_CONFIG_")}
    env.update(GIT_AUTHOR_NAME="playbook", GIT_AUTHOR_EMAIL="playbook@localhost", GIT_COMMITTER_NAME="playbook",
               GIT_COMMITTER_EMAIL="playbook@localhost", GIT_TEMPLATE_DIR="", LC_ALL="C")
    if quiet:
        env["GIT_TERMINAL_PROMPT"] = "0"  # and no terminal: a detached sync's ssh has none to ask on either
    return env


class SyncGit:
    """git over the bare repository at `path`."""

    def __init__(self, path: Path, quiet: bool = True) -> None:
        self.path = path
        self.quiet = quiet

    def run(self, *args: str, stdin: bytes | None = None, timeout: float = LOCAL_TIMEOUT, stdout: int | None = None,
            check: bool = True) -> subprocess.CompletedProcess[bytes]:
        for _wait in range(LOCK_WAITS):
            try:
                done = subprocess.run(["git", *SAFE, "--git-dir", str(self.path), *args], input=stdin,
                                      env=_env(self.quiet), stdout=subprocess.PIPE if stdout is None else stdout,
                                      stderr=subprocess.PIPE, timeout=timeout, cwd=str(self.path),
                                      stdin=None if stdin is not None or not self.quiet else subprocess.DEVNULL)
            except FileNotFoundError as exc:
                raise GitFailed("git is not installed (sync runs through git)") from exc
            except subprocess.TimeoutExpired as exc:
                raise Offline(f"git {args[0]} took more than {int(timeout)} s") from exc
            if done.returncode == 0 or not self._locked_out(done.stderr):
                break
        if check and done.returncode != 0:
            raise GitFailed(f"git {args[0]}: {last_line(done.stderr)}")
        return done

    def _locked_out(self, stderr: bytes) -> bool:
        """Whether git found one of its lock files in place: a git a killed sync started may still be finishing
        (the sync's own lock keeps every other one out), so wait for it; a lock older than any git a sync runs is
        left by a git that was killed itself, and is removed."""
        found = _LOCK_FILE.search(stderr.decode("utf-8", "replace"))
        if found is None:
            return False
        lock = Path(found.group(1))
        try:
            stale = time.time() - lock.lstat().st_mtime > NETWORK_TIMEOUT + 60
        except OSError:
            return True  # gone meanwhile: try again
        if stale and lock.is_relative_to(self.path):
            remove_file(lock, self.path)
        else:
            time.sleep(LOCK_PAUSE)
        return True

    def text(self, *args: str) -> str:
        return self.run(*args).stdout.decode("utf-8", "replace").strip()

    def init(self, url: str) -> None:
        """Make the bare repository (when missing) and point its `origin` at `url`."""
        if not (self.path / "HEAD").is_file():
            done = subprocess.run(["git", *SAFE, "init", "-q", "--bare", str(self.path)], env=_env(True),
                                  capture_output=True, timeout=LOCAL_TIMEOUT, stdin=subprocess.DEVNULL)
            if done.returncode != 0:
                raise GitFailed(f"git init: {last_line(done.stderr)}")
        self.run("config", "remote.origin.url", url)
        self.run("config", "remote.origin.fetch", f"+refs/heads/{BRANCH}:{REMOTE_REF}")
        self.run("config", "core.hooksPath", "/dev/null")
        self.run("config", "gc.auto", "100")  # each sync leaves a log's blob loose: packed (as deltas) early

    def forget(self) -> None:
        """Forget the last sync and the remote's branch as last fetched."""
        for ref in (LOCAL_REF, REMOTE_REF):
            self.run("update-ref", "-d", ref, check=False)

    def url(self) -> str | None:
        if not (self.path / "HEAD").is_file():
            return None
        done = self.run("config", "--get", "remote.origin.url", check=False)
        return done.stdout.decode("utf-8", "replace").strip() or None

    def fetch(self) -> None:
        done = self.run("fetch", "-q", "--no-tags", "--no-recurse-submodules", "origin", timeout=NETWORK_TIMEOUT,
                        check=False)
        if done.returncode != 0:
            err = last_line(done.stderr)
            if "couldn't find remote ref" in err:
                self.run("update-ref", "-d", REMOTE_REF)
                return  # an empty remote: the first push makes its branch
            raise Offline(f"fetch: {err}")

    def rev(self, ref: str) -> str | None:
        done = self.run("rev-parse", "-q", "--verify", f"{ref}^{{commit}}", check=False)
        return done.stdout.decode().strip() or None if done.returncode == 0 else None

    def is_ancestor(self, older: str, newer: str) -> bool:
        return self.run("merge-base", "--is-ancestor", older, newer, check=False).returncode == 0

    def merge_base(self, a: str, b: str) -> str | None:
        done = self.run("merge-base", a, b, check=False)
        return done.stdout.decode().strip() or None if done.returncode == 0 else None

    def log_entry(self, commit: str) -> tuple[str, str] | None:
        """(mode, blob id) of the log in `commit`'s tree, or None when it has none."""
        listed = self.run("ls-tree", "-z", commit, "--", LOG_BLOB).stdout.split(b"\0")[0]
        if not listed:
            return None
        meta, _tab, _name = listed.partition(b"\t")
        mode, kind, blob = meta.decode().split()
        return mode if kind == "blob" else kind, blob

    def blob_size(self, blob: str) -> int:
        return int(self.text("cat-file", "-s", blob))

    def write_blob_to(self, blob: str, fd: int) -> None:
        """The blob's bytes into the open file `fd`."""
        self.run("cat-file", "blob", blob, stdout=fd)

    def tree_with_log(self, data: bytes, over: str | None) -> str:
        """A tree holding `data` as the top's log, and the other files of commit `over`'s tree."""
        blob = self.run("hash-object", "-w", "--stdin", stdin=data).stdout.decode().strip()
        entries = b""
        if over is not None:
            mine = b"\t" + LOG_BLOB.encode()
            entries = b"".join(entry + b"\0" for entry in self.run("ls-tree", "-z", over).stdout.split(b"\0")
                               if entry and not entry.endswith(mine))
        entries += f"100644 blob {blob}\t{LOG_BLOB}".encode() + b"\0"
        return self.run("mktree", "-z", stdin=entries).stdout.decode().strip()

    def commit(self, tree: str, parents: list[str], message: str) -> str:
        args = ["commit-tree", tree, "-m", message]
        for parent in parents:
            args += ["-p", parent]
        return self.text(*args)

    def tree_of(self, commit: str) -> str:
        return self.text("rev-parse", f"{commit}^{{tree}}")

    def set_local(self, commit: str) -> None:
        self.run("update-ref", LOCAL_REF, commit)

    def push(self) -> None:
        done = self.run("push", "-q", "--no-verify", "origin", f"{LOCAL_REF}:refs/heads/{BRANCH}",
                        timeout=NETWORK_TIMEOUT, check=False)
        if done.returncode == 0:
            self.run("update-ref", REMOTE_REF, self.text("rev-parse", LOCAL_REF))
            return
        err = done.stderr.decode("utf-8", "replace")
        if any(word in err for word in ("non-fast-forward", "fetch first", "[rejected]", "stale info")):
            raise Rejected(f"push: {last_line(done.stderr)}")
        raise Offline(f"push: {last_line(done.stderr)}")


def last_line(stderr: bytes) -> str:
    """What git said went wrong: its first `fatal:` or `error:` line (the advice after it left out), else its last."""
    lines = [line.strip() for line in stderr.decode("utf-8", "replace").splitlines() if line.strip()]
    said = [line for line in lines if line.startswith(("fatal:", "error:"))]
    return (said or lines or ["failed"])[0 if said else -1]


__all__ = ["BRANCH", "LOG_BLOB", "GitFailed", "Offline", "Rejected", "SyncGit", "last_line"]
