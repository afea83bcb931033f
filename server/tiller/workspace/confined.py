"""Files of the workspace opened by directory descriptor, beneath the root, never by path.

A path given by the model is never handed to the kernel whole. It is walked one component at a
time from a descriptor of the workspace root: every directory is opened with ``O_DIRECTORY |
O_NOFOLLOW`` relative to its parent's descriptor, and the final file with ``O_NOFOLLOW |
O_NONBLOCK``. So a directory swapped for a symbolic link in the middle of a call makes that
call fail; it can never lead the call outside the workspace (the swap race of issue 7).

Symbolic links are resolved here, component by component, the way ``openat2`` with
``RESOLVE_BENEATH`` resolves them: a link whose target stays beneath the root is followed (a
relative target from the link's directory, ``..`` walks back up the descriptors already held;
an absolute target only when it names a place under the workspace root); a link that leads
outside, or ``..`` above the root, is refused. At most ``MAX_SYMLINKS`` links per path.

Writes never open an existing file for writing: the new content goes to a temporary file in
the same directory (``O_CREAT | O_EXCL | O_NOFOLLOW``) that replaces the name with
``rename(2)`` relative to the same directory descriptor, which never follows a link.

Files with more than one hard link are refused by the callers (``refuse_hard_links``): the
other name may be outside the workspace, and nothing inside can tell.

Not covered (see docs/security.md): a directory the walk already holds open being moved out
of the workspace by another process during the call; the walk then keeps working inside it.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from tiller.errors import ToolInputError

MAX_SYMLINKS = 40  # like the kernel's limit for one path

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
OPEN_ROOT = os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC  # the root itself is trusted as configured
OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC
# O_NONBLOCK: opening a FIFO never waits for a writer; a regular file ignores the flag.
OPEN_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | _CLOEXEC
OPEN_TEMP = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | _CLOEXEC


class Outside(ToolInputError):
    """The path leads outside the workspace (by ``..``, an absolute path or a symlink)."""


class MissingDirectory(ToolInputError):
    """A directory on the way to the path does not exist (``make_parents`` would create it)."""


class Changed(ToolInputError):
    """The file system changed under the call (a name became a symbolic link meanwhile)."""


@dataclass(frozen=True)
class Label:
    """How paths beneath one root are shown to the model (see ``workspace/roots.py``).

    One root: relative to it. Several: ``prefix`` in front (the folder's name and a slash, or
    its absolute path and a slash), or, for the primary root, ``./`` in front of a path whose
    first component is in ``escape`` (a folder name: without it the path would name that
    folder)."""

    prefix: str = ""
    escape: frozenset[str] = frozenset()

    def of(self, parts: tuple[str, ...]) -> str:
        body = "/".join(parts)
        if self.prefix:
            return f"{self.prefix}{body}".rstrip("/") or "/"
        if parts and parts[0] in self.escape:
            return f"./{body}"
        return body or "."


@dataclass(frozen=True)
class Spot:
    """A name inside a directory of the workspace, resolved beneath the root.

    ``dir_fd`` is open while the ``locate`` block that produced it runs. ``name`` is never a
    symbolic link at the moment it was resolved (or it does not exist); it is ``"."`` when the
    path named a directory itself (the root, or a path ending in ``..``). ``parts`` is the
    path from the root after every link was resolved.
    """

    dir_fd: int
    name: str
    parts: tuple[str, ...]
    label: Label = Label()

    @property
    def shown(self) -> str:
        """The path as the model sees it: relative to the root (folder-qualified when the
        workspace has several roots)."""
        return self.label.of(self.parts)

    def lstat(self) -> os.stat_result | None:
        """The name's own status (links not followed), or None when it does not exist."""
        try:
            return os.stat(self.name, dir_fd=self.dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return None


@dataclass(frozen=True)
class Root:
    """The workspace root a tool may touch, and how paths are located beneath it."""

    path: Path  # the root with every symlink resolved
    given: Path  # the root as configured, for absolute paths spelled that way
    label: Label = Label()  # how paths beneath it are shown
    strip: str | None = None  # the folder name a relative path starts with (then dropped)

    @staticmethod
    def of(workspace: Path) -> Root:
        return Root(Path(os.path.realpath(workspace)), Path(os.path.abspath(workspace)))

    def absolute(self, parts: tuple[str, ...]) -> Path:
        """The absolute path of ``parts`` (as the session's read ledger keys files)."""
        return self.path.joinpath(*parts)

    def show(self, relative: str) -> str:
        """A path relative to the root (``a/b``) as the model sees it."""
        return self.label.of(tuple(p for p in relative.split("/") if p))

    def parts_of(self, raw: str) -> list[str]:
        """The components of ``raw`` relative to the root (``..`` kept), or an error."""
        if "\x00" in raw:
            raise ToolInputError("path contains a NUL byte; give a file path without one")
        if not os.path.isabs(raw):
            parts = raw.split("/")
            return parts[1:] if self.strip is not None and parts[0] == self.strip else parts
        inside = self._relative_of(raw)
        if inside is None:
            raise Outside(
                f"path {raw!r} is outside the workspace {self.path}; use a path inside it"
            )
        return inside

    def _relative_of(self, absolute: str) -> list[str] | None:
        norm = os.path.normpath(absolute)
        for base in (str(self.path), str(self.given)):
            if norm == base:
                return []
            if norm.startswith(base.rstrip("/") + "/"):
                return norm[len(base.rstrip("/")) + 1 :].split("/")
        return None

    @contextmanager
    def locate(self, raw: str, *, make_parents: bool = False) -> Iterator[Spot]:
        """The spot ``raw`` names: its directory open, the final name not followed.

        ``make_parents`` creates missing directories on the way (never through a link that
        leads outside). Raises ToolInputError (``Outside`` included) or OSError.
        """
        parts = self.parts_of(raw)
        root_fd = os.open(self.path, OPEN_ROOT)
        walk = _Walk(self, root_fd)
        try:
            yield walk.run(raw, parts, make_parents=make_parents)
        finally:
            walk.close()


class _Walk:
    """Descriptors of the directories from the root down to the current one."""

    def __init__(self, root: Root, root_fd: int) -> None:
        self.root = root
        self.fds = [root_fd]
        self.names: list[str] = []
        self.links = 0

    def close(self) -> None:
        for fd in reversed(self.fds):
            with suppress(OSError):
                os.close(fd)
        self.fds = []

    def _back_to_root(self) -> None:
        while len(self.fds) > 1:
            os.close(self.fds.pop())
        self.names = []

    def _up(self, raw: str) -> None:
        if not self.names:
            raise Outside(
                f"path {raw!r} is outside the workspace {self.root.path}; use a path inside it"
            )
        os.close(self.fds.pop())
        self.names.pop()

    def run(self, raw: str, parts: list[str], *, make_parents: bool) -> Spot:
        pending = deque(parts)
        while pending:
            part = pending.popleft()
            if part in ("", "."):
                continue
            if part == "..":
                self._up(raw)
                continue
            here = self.fds[-1]
            if not any(p not in ("", ".") for p in pending):  # the final component
                st = _lstat(here, part)
                if st is not None and stat.S_ISLNK(st.st_mode):
                    pending.extendleft(reversed(self._follow(here, part)))
                    continue
                return Spot(here, part, (*self.names, part), self.root.label)
            fd = self._enter(here, part, make_parents)
            if fd is None:  # a symbolic link: its target replaces it
                pending.extendleft(reversed(self._follow(here, part)))
                continue
            self.fds.append(fd)
            self.names.append(part)
        return Spot(self.fds[-1], ".", tuple(self.names), self.root.label)

    def _enter(self, here: int, part: str, make: bool) -> int | None:
        """The directory ``part`` of ``here`` opened, or None when it is a symbolic link."""
        for _ in range(3):  # a concurrent mkdir or removal may need another try
            try:
                return os.open(part, OPEN_DIR, dir_fd=here)
            except FileNotFoundError:
                if not make:
                    raise MissingDirectory(f"{self._shown(part)} does not exist") from None
                try:
                    os.mkdir(part, 0o777, dir_fd=here)
                except FileExistsError:
                    pass
                except FileNotFoundError:  # the directory held open was removed meanwhile
                    raise Changed(f"{self._shown(part)} changed meanwhile; try again") from None
            except OSError as exc:
                if exc.errno not in (errno.ENOTDIR, errno.ELOOP):
                    raise
                st = _lstat(here, part)
                if st is not None and stat.S_ISLNK(st.st_mode):
                    return None
                if st is None or stat.S_ISDIR(st.st_mode):  # it changed back meanwhile
                    continue
                raise ToolInputError(f"{self._shown(part)} is a file, not a directory") from None
        raise Changed(f"{self._shown(part)} kept changing while it was opened; try again")

    def _follow(self, here: int, part: str) -> list[str]:
        """The components a symbolic link stands for; refuses links that leave the root."""
        self.links += 1
        shown = self._shown(part)
        if self.links > MAX_SYMLINKS:
            raise ToolInputError(f"{shown}: too many symbolic links (more than {MAX_SYMLINKS})")
        try:
            target = os.readlink(part, dir_fd=here)
        except OSError as exc:  # gone, or no longer a link (EINVAL)
            if exc.errno not in (errno.ENOENT, errno.EINVAL):
                raise
            raise Changed(f"{shown} changed while it was opened; try again") from None
        if not os.path.isabs(target):
            return target.split("/")
        inside = self.root._relative_of(target)
        if inside is None:
            raise Outside(
                f"{shown} is a symbolic link to {target}, outside the workspace; file tools "
                "do not follow it"
            )
        self._back_to_root()
        return inside

    def _shown(self, part: str) -> str:
        return self.root.label.of((*self.names, part))


def _lstat(dir_fd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def open_dir_at(dir_fd: int, name: str, shown: str) -> int:
    """Open the directory ``name`` of ``dir_fd`` without following a link, or say why not."""
    try:
        return os.open(name, OPEN_DIR, dir_fd=dir_fd)
    except FileNotFoundError:
        raise ToolInputError(f"{shown} does not exist") from None
    except OSError as exc:
        if exc.errno not in (errno.ENOTDIR, errno.ELOOP):
            raise
        st = _lstat(dir_fd, name)
        if st is not None and stat.S_ISLNK(st.st_mode):
            raise Changed(
                f"{shown} became a symbolic link while it was opened; try again"
            ) from None
        if st is None or stat.S_ISDIR(st.st_mode):
            raise Changed(f"{shown} changed while it was opened; try again") from None
        raise ToolInputError(f"{shown} is a file, not a directory") from None


@contextmanager
def open_regular(spot: Spot) -> Iterator[tuple[int, os.stat_result]]:
    """The file at ``spot`` opened for reading with its status; only regular files.

    Never blocks (a FIFO is opened non-blocking, then refused) and never follows a link;
    devices, FIFOs and sockets are refused before they are opened (opening some devices acts).
    """
    before = spot.lstat()
    if before is not None and stat.S_ISDIR(before.st_mode):
        raise ToolInputError(f"{spot.shown} is a directory")
    if before is not None and not stat.S_ISREG(before.st_mode) and not stat.S_ISLNK(before.st_mode):
        raise not_regular(spot.shown)
    try:
        fd = os.open(spot.name, OPEN_READ, dir_fd=spot.dir_fd)
    except FileNotFoundError:
        raise ToolInputError(f"{spot.shown} does not exist") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise Changed(f"{spot.shown} became a symbolic link while it was opened") from None
        if exc.errno in (errno.ENXIO, errno.EOPNOTSUPP):  # a socket, or a FIFO without reader
            raise not_regular(spot.shown) from None
        raise
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise ToolInputError(f"{spot.shown} is a directory")
        if not stat.S_ISREG(st.st_mode):
            raise not_regular(spot.shown)
        yield fd, st
    finally:
        os.close(fd)


def not_regular(shown: str) -> ToolInputError:
    return ToolInputError(
        f"{shown} is not a regular file (a device, FIFO or socket); file tools only read and "
        "write regular files"
    )


def refuse_hard_links(st: os.stat_result, shown: str, action: str) -> None:
    """Refuse a file that has other names: one of them may be outside the workspace."""
    if st.st_nlink <= 1:
        return
    others = st.st_nlink - 1
    also = "another name" if others == 1 else f"{others} other names"
    copy = f"{shown}.copy"
    raise ToolInputError(
        f"{shown} has {also} (hard links), which may be outside the workspace, so {action} "
        "refuses it. Tell the user; if they confirm its content may be used, they can make it "
        f"a plain file of its own (e.g. `cp {shown} {copy} && mv {copy} {shown}`) and ask again."
    )


def read_all(fd: int, limit: int) -> bytes:
    """At most ``limit`` bytes of ``fd`` from its current offset."""
    chunks: list[bytes] = []
    left = limit
    while left > 0:
        block = os.read(fd, min(left, 1 << 20))
        if not block:
            break
        chunks.append(block)
        left -= len(block)
    return b"".join(chunks)


def replace_file(spot: Spot, data: bytes, like: os.stat_result | None) -> os.stat_result:
    """Put ``data`` at ``spot`` atomically; the new file's status (mode kept from ``like``).

    A temporary file in the same directory takes the content and is renamed over the name:
    rename never follows a link, so nothing outside the directory is ever written.
    """
    temp = f".{spot.name[:100]}.{secrets.token_hex(6)}.tiller-tmp"
    try:
        fd = os.open(temp, OPEN_TEMP, 0o666, dir_fd=spot.dir_fd)
    except FileNotFoundError:  # the directory held open was removed meanwhile
        raise Changed(f"the directory of {spot.shown} was removed meanwhile; try again") from None
    try:
        try:
            if like is not None:
                os.fchmod(fd, stat.S_IMODE(like.st_mode))
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
            written = os.fstat(fd)
        finally:
            os.close(fd)
        try:
            os.replace(temp, spot.name, src_dir_fd=spot.dir_fd, dst_dir_fd=spot.dir_fd)
        except FileNotFoundError:
            raise Changed(
                f"the directory of {spot.shown} was removed meanwhile; try again"
            ) from None
    except BaseException:
        with suppress(OSError):
            os.unlink(temp, dir_fd=spot.dir_fd)
        raise
    return written


def writable(spot: Spot) -> bool:
    """Whether the user may write the existing file at ``spot`` (its mode says so)."""
    return os.access(spot.name, os.W_OK, dir_fd=spot.dir_fd, follow_symlinks=False)


def read_beneath(root: Root, raw: str, limit: int) -> tuple[bytes, os.stat_result]:
    """At most ``limit`` bytes of the regular file ``raw`` names beneath ``root`` (links followed
    only while they stay beneath it), and its status. Raises what ``Root.locate`` and
    ``open_regular`` raise (``Outside`` for a link or ``..`` that leads out)."""
    with root.locate(raw) as spot, open_regular(spot) as (fd, st):
        return read_all(fd, limit), st


def status_beneath(root: Root, raw: str) -> os.stat_result | None:
    """The status of what ``raw`` names beneath ``root``, every link on the way resolved beneath
    it (None: nothing there). Raises what ``Root.locate`` raises."""
    with root.locate(raw) as spot:
        return os.fstat(spot.dir_fd) if spot.name == "." else spot.lstat()


def names_beneath(root: Root, raw: str) -> list[str]:
    """The names in the directory ``raw`` names beneath ``root``, sorted. Raises what
    ``Root.locate`` and ``open_dir_at`` raise."""
    with root.locate(raw) as spot:
        if spot.name == ".":
            return sorted(os.listdir(spot.dir_fd))
        fd = open_dir_at(spot.dir_fd, spot.name, spot.shown)
        try:
            return sorted(os.listdir(fd))
        finally:
            os.close(fd)
