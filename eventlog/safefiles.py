"""Every file the playbook writes, reached from a trusted root without following a link. Standard library only.

A repository decides what its `.claude/` holds: any name there may be a link to a directory or file of
the user's (`~/.bashrc.d`), a FIFO, a directory. So every file the hooks and commands create, write,
append to, rename or remove is reached here, and only here: its directory from a root the user or
Claude Code named (the project, Claude Code's own directory, a directory a setting names), one
component at a time with `O_NOFOLLOW`, then the file by its name relative to that directory, never
through a link and never anything but a regular file. A refusal is an `Unsafe` (an OSError), so every
caller that already survives a failed write survives it too.

The root itself is taken as given, links and all: it is the user's. Below it a link is followed only
as far as its target is still inside the root (a project keeping its `.claude` in `config/claude`):
the directory is resolved first, and the walk then opens the resolved components, so a link put in
place meanwhile is refused rather than followed.
"""

from __future__ import annotations

import errno
import os
import stat

from .files import DIR_MODE, FILE_MODE

TYPE_CHECKING = False  # not typing's: the quick paths import this module and pay for nothing more than `os`
if TYPE_CHECKING:
    from typing import Union

    PathLike = Union[str, "os.PathLike[str]"]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_NO_LINK = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class Unsafe(OSError):
    """A place the playbook does not write: a link out of its root, or not the kind of file it must be."""

    def __init__(self, path: PathLike, why: str) -> None:
        super().__init__(errno.ELOOP, why, os.fspath(path))

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}"


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(os.path.join(root, ""))


def open_dir(path: PathLike, root: PathLike, create: bool = False) -> int:
    """A descriptor of the directory `path`, reached from `root`; missing directories made when `create`.

    Follows no link below `root`: `path` must resolve inside it, and each resolved component is opened
    with O_NOFOLLOW relative to the one before; each directory made is made there, with DIR_MODE."""
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    if not _inside(real, real_root):
        raise Unsafe(path, f"leads to {real}, outside {real_root}: the playbook writes nothing there")
    if create:
        _no_dangling_link(os.path.abspath(path), os.path.abspath(root))
    fd = _open_root(real_root, create)
    for part in os.path.relpath(real, real_root).split(os.sep) if real != real_root else ():
        fd = _step(fd, part, path, create)  # closes the one before, whatever happens
    return fd


def _no_dangling_link(path: str, root: str) -> None:
    """Refuse to make a directory a link below `root` points at: what a link names is not ours to create."""
    probe = path
    while _inside(probe, root) and probe != root:
        if os.path.islink(probe) and not os.path.exists(probe):
            raise Unsafe(path, f"{probe} is a link to nothing: the playbook makes nothing through it")
        probe = os.path.dirname(probe)


def _open_root(root: str, create: bool) -> int:
    """The root opened as the user named it; made with its missing parents when `create` (it is theirs)."""
    try:
        return os.open(root, _DIR_FLAGS)
    except FileNotFoundError:
        if not create:
            raise
    missing = []
    while not os.path.exists(root) and root != os.path.dirname(root):
        missing.append(root)
        root = os.path.dirname(root)
    for directory in reversed(missing):
        try:
            os.mkdir(directory, DIR_MODE)
        except FileExistsError:
            pass
    return os.open(missing[0] if missing else root, _DIR_FLAGS)


def _step(parent: int, name: str, path: PathLike, create: bool) -> int:
    """The directory `name` inside `parent` (closed here), never through a link."""
    try:
        try:
            return os.open(name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=parent)
        except FileNotFoundError:
            if not create:
                raise
        try:
            os.mkdir(name, DIR_MODE, dir_fd=parent)
        except FileExistsError:
            pass
        return os.open(name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=parent)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            kind = "a link" if _is_link(parent, name) else "not a directory"
            raise Unsafe(path, f"{name} in it is {kind}: the playbook writes nothing there") from None
        raise
    finally:
        os.close(parent)


def _is_link(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


class _Opened:
    """A directory descriptor for the length of a `with` block (contextlib costs a quick path its imports)."""

    def __init__(self, path: PathLike, root: PathLike, create: bool) -> None:
        self._where = path, root, create
        self._fd = -1

    def __enter__(self) -> int:
        self._fd = open_dir(*self._where)
        return self._fd

    def __exit__(self, *_exc: object) -> None:
        os.close(self._fd)


def directory(path: PathLike, root: PathLike, create: bool = False) -> _Opened:
    """`open_dir` for the length of a `with` block, which gets the descriptor; closed after it.

    Follows no link below `root` (`open_dir`)."""
    return _Opened(path, root, create)


def _fault(name: str) -> None:
    """`eventlog.faults.point`, imported only when a crash test names a point (it is not free to import)."""
    if "PLAYBOOK_FAULT" in os.environ:
        from .faults import point

        point(name)


def _name(name: str) -> str:
    if not name or name in (".", "..") or os.sep in name:
        raise ValueError(f"{name!r} is not a file name")
    return name


def create(dir_fd: int, name: str, *, append: bool = False, truncate: bool = False, exclusive: bool = False,
           read: bool = False, mode: int = FILE_MODE) -> int:
    """A descriptor for writing the regular file `name` in `dir_fd`, created (with `mode`) when missing.

    Follows no link; never opens a FIFO, device or directory (`Unsafe`), and never waits on one: a
    repository can carry any of them under the name. `truncate` empties the file only once it is
    known to be a regular file."""
    flags = (os.O_RDWR if read else os.O_WRONLY) | os.O_CREAT | _NO_LINK
    flags |= (os.O_APPEND if append else 0) | (os.O_EXCL if exclusive else 0)
    return _checked(dir_fd, _name(name), flags, mode, truncate)


def create_new(dir_fd: int, name: str, mode: int = FILE_MODE) -> int:
    """A descriptor for writing a new, empty regular file `name` in `dir_fd`: a temporary name of the caller's.

    Follows no link: whatever held the name (a file a killed writer left, a link a repository planted) is
    removed first, and the file is then created exclusively."""
    remove(dir_fd, name)
    return create(dir_fd, name, exclusive=True, mode=mode)


def open_existing(dir_fd: int, name: str, read: bool = True) -> int:
    """A descriptor for changing the existing regular file `name` in `dir_fd` (read and write, or write only).

    Follows no link; never opens a FIFO, device or directory (`Unsafe`)."""
    return _checked(dir_fd, _name(name), (os.O_RDWR if read else os.O_WRONLY) | _NO_LINK, 0, False)


def _checked(dir_fd: int, name: str, flags: int, mode: int, truncate: bool) -> int:
    try:
        fd = os.open(name, flags, mode, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise Unsafe(name, "is a link: the playbook writes through no link") from None
        if exc.errno in (errno.EISDIR, errno.ENXIO, errno.ENODEV, errno.ETXTBSY):
            raise Unsafe(name, "is not a regular file: the playbook writes nothing there") from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise Unsafe(name, "is not a regular file: the playbook writes nothing there")
        if truncate:
            os.ftruncate(fd, 0)
    except BaseException:
        os.close(fd)
        raise
    return fd


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of `data` to `fd` (a short write to a regular file is finished)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def write_atomically(dir_fd: int, name: str, data: bytes, durable_name: bool = True, mode: int = FILE_MODE,
                     exact_mode: int | None = None) -> None:
    """Replace `name` in `dir_fd` with `data`: readers see the old file or the new one, never a mix.

    Follows no link: the data goes to a new temporary name beside it (created without following a link),
    is fsynced, and is renamed over `name` inside the same directory, which replaces a link there rather
    than writing through it. The new file is created with `mode` (the umask applies), or given
    `exact_mode` (a file the user had keeps its own). With `durable_name` the directory is fsynced too and
    the new file survives a crash once this returns; a derived file does without (after a crash it is the
    previous one, which its readers take for out of date)."""
    temp = f".{_name(name)}.{os.getpid()}.tmp"
    fd = create_new(dir_fd, temp, mode)
    try:
        try:
            if exact_mode is not None:
                os.fchmod(fd, exact_mode)
            write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        _fault("before-replace")
        os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        remove(dir_fd, temp)
        raise
    if durable_name:
        os.fsync(dir_fd)


def replace(dir_fd: int, name: str, target: str, target_dir_fd: int | None = None) -> None:
    """Rename `name` in `dir_fd` to `target` (in `target_dir_fd`, else the same directory), replacing it.

    Follows no link: both names are taken inside directories reached without one; a link under either
    name is itself renamed or replaced, never what it points to."""
    os.replace(_name(name), _name(target), src_dir_fd=dir_fd,
               dst_dir_fd=dir_fd if target_dir_fd is None else target_dir_fd)


def link(dir_fd: int, name: str, target: str, target_dir_fd: int) -> None:
    """A second name `target` (in `target_dir_fd`) for the file `name` in `dir_fd`; FileExistsError if taken.

    Follows no link: a link under `name` is refused rather than followed to the file it names."""
    os.link(_name(name), _name(target), src_dir_fd=dir_fd, dst_dir_fd=target_dir_fd, follow_symlinks=False)
    if stat.S_ISLNK(os.stat(target, dir_fd=target_dir_fd, follow_symlinks=False).st_mode):
        remove(target_dir_fd, target)
        raise Unsafe(name, "is a link: the playbook writes through no link")


def remove(dir_fd: int, name: str) -> bool:
    """Remove the name `name` from `dir_fd` (a link itself, never what it points to); False when absent."""
    try:
        os.unlink(_name(name), dir_fd=dir_fd)
    except FileNotFoundError:
        return False
    return True


def write_file(path: PathLike, data: bytes, root: PathLike, durable_name: bool = True, mode: int = FILE_MODE,
               exact_mode: int | None = None) -> None:
    """`write_atomically` of the file `path` under `root`, its directory made when missing.

    Follows no link below `root` (`open_dir`, then `write_atomically`)."""
    parent, name = os.path.split(os.fspath(path))
    with directory(parent, root, create=True) as dir_fd:
        write_atomically(dir_fd, name, data, durable_name, mode, exact_mode)


def remove_file(path: PathLike, root: PathLike) -> bool:
    """Remove the file `path` under `root`; False when it or its directory is absent.

    Follows no link below `root`: a link under the name is removed itself."""
    parent, name = os.path.split(os.fspath(path))
    try:
        with directory(parent, root) as dir_fd:
            return remove(dir_fd, name)
    except FileNotFoundError:
        return False


def _clear(dir_fd: int) -> None:
    """Remove everything in the directory `dir_fd`, depth first; a link is removed itself, never followed."""
    for name in os.listdir(dir_fd):
        if stat.S_ISDIR(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
            inner = os.open(name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=dir_fd)
            try:
                _clear(inner)
            finally:
                os.close(inner)
            os.rmdir(name, dir_fd=dir_fd)
        else:
            os.unlink(name, dir_fd=dir_fd)


def remove_tree(path: PathLike, root: PathLike) -> bool:
    """Remove the directory `path` under `root` and all it holds; False when it is absent.

    Follows no link below `root`, and none inside the tree: a link in it is removed itself."""
    parent, name = os.path.split(os.fspath(path))
    try:
        with directory(parent, root) as dir_fd:
            try:
                inner = os.open(_name(name), _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=dir_fd)
            except FileNotFoundError:
                return False
            try:
                _clear(inner)
            finally:
                os.close(inner)
            os.rmdir(name, dir_fd=dir_fd)
    except FileNotFoundError:
        return False
    return True
