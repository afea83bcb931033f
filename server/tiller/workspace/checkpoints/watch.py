"""Which workspace files changed since the last snapshot, told by the kernel (Linux inotify),
so an incremental snapshot looks at those files only instead of every file.

A ``FolderWatch`` watches the folders a full scan walked. ``drain`` reads what the kernel
queued since (without blocking) and says which files changed, or that the watch cannot tell
(``lost``): the kernel's queue overflowed, a folder was created, moved or deleted, an ignore
file or a nested repository's ``.git`` changed, a watch could not be added. Then the next
snapshot scans everything again, which also watches afresh. Changes made while no watch
existed (before the server started) are the full scan's to find: a watch is only trusted from
the scan that began after it was set up.

Where the kernel cannot tell (not Linux, a network or FUSE file system, where another machine
may write) there is no watch and every snapshot scans. Out of inotify instances or watches
(``max_user_instances``, ``max_user_watches``), likewise. What inotify never reports: a write
made only through a shared memory map, and a change to the user's global git excludes file;
the next full scan (a new server, or anything above) sees those.

Everything here is blocking: callers run it in a worker thread.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import struct
import sys
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

_MODIFY, _ATTRIB, _CLOSE_WRITE = 0x2, 0x4, 0x8
_MOVED_FROM, _MOVED_TO, _CREATE, _DELETE = 0x40, 0x80, 0x100, 0x200
_DELETE_SELF, _MOVE_SELF, _UNMOUNT, _OVERFLOW, _IGNORED = 0x400, 0x800, 0x2000, 0x4000, 0x8000
_ONLYDIR, _DONT_FOLLOW, _EXCL_UNLINK, _ISDIR = 0x01000000, 0x02000000, 0x04000000, 0x40000000
_MASK = (
    _MODIFY | _ATTRIB | _CLOSE_WRITE | _MOVED_FROM | _MOVED_TO | _CREATE | _DELETE
    | _DELETE_SELF | _MOVE_SELF | _ONLYDIR | _DONT_FOLLOW | _EXCL_UNLINK
)  # fmt: skip
_FOLDER_CHANGES = _DELETE_SELF | _MOVE_SELF | _UNMOUNT | _OVERFLOW | _IGNORED
_EVENT = struct.Struct("iIII")
_IGNORE_FILES = (".gitignore", ".tillerignore", ".gitattributes")
# File systems whose changes all go through this kernel: another machine never writes them.
LOCAL_FILE_SYSTEMS = frozenset(
    {"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "overlay", "zfs", "f2fs", "bcachefs",
     "jfs", "reiserfs", "ramfs"}
)  # fmt: skip


@dataclass(frozen=True)
class Drained:
    """What changed since the last drain: workspace paths of files written, created or
    deleted; or ``lost`` when the watch cannot tell (scan everything)."""

    paths: frozenset[str] = frozenset()
    lost: bool = False


def file_system_of(path: Path) -> str | None:
    """The type of the file system ``path`` lies on (``/proc/self/mountinfo``), or None."""
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    target = os.path.realpath(path)
    best, kind = -1, None
    for line in lines:
        fields = line.split(" ")
        if " - " not in line or len(fields) < 5:
            continue
        mount = fields[4].encode().decode("unicode_escape")  # \040 for a space
        inside = target == mount or target.startswith(mount.rstrip("/") + "/")
        if inside and len(mount) > best:
            best, kind = len(mount), line.split(" - ", 1)[1].split(" ")[0]
    return kind


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    with contextlib.suppress(OSError):
        # The C library the interpreter is linked with, as hardening.py opens it:
        # ``find_library`` would run ``ldconfig -p`` in a child process at each watch.
        return ctypes.CDLL(None, use_errno=True)
    return None


@dataclass
class FolderWatch:
    """An inotify instance over the folders of one workspace. Mutable (the watched folders);
    its descriptor is closed when it is collected or ``close``d."""

    workspace: Path
    fd: int
    _libc: ctypes.CDLL
    _folders: dict[int, str] = field(default_factory=dict)  # watch descriptor -> folder
    _lost: bool = False
    _closer: weakref.finalize[[int], FolderWatch] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._closer = weakref.finalize(self, os.close, self.fd)

    @staticmethod
    def start(workspace: Path) -> FolderWatch | None:
        """A watch with no folder yet, or None where the kernel cannot tell every change."""
        libc = _libc()
        if libc is None or file_system_of(workspace) not in LOCAL_FILE_SYSTEMS:
            return None
        fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            return None  # out of instances: scan every time
        return FolderWatch(workspace, fd, libc)

    def close(self) -> None:
        self._closer()

    def watch(self, folders: Iterable[str]) -> bool:
        """Watch ``folders`` (workspace paths, "" the root) from now on, in place of those
        watched before; False when one could not be watched (the watch then tells nothing)."""
        for wd in list(self._folders):
            self._libc.inotify_rm_watch(self.fd, wd)
        self._folders.clear()
        self.drain()  # what was queued before is the new scan's to see
        self._lost = False
        for folder in folders:
            path = os.fsencode(self.workspace / folder if folder else self.workspace)
            wd = self._libc.inotify_add_watch(self.fd, path, _MASK)
            if wd < 0:
                if ctypes.get_errno() == errno.ENOENT:
                    continue  # gone meanwhile: the scan that follows sees it so
                self._lost = True  # out of watches (ENOSPC), or no access
                return False
            self._folders[wd] = folder
        return True

    def drain(self) -> Drained:
        """Everything the kernel queued since the last drain."""
        paths: set[str] = set()
        lost = self._lost
        while True:
            try:
                data = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                break
            except OSError:
                lost = True
                break
            lost = self._parse(data, paths) or lost
        self._lost = lost
        return Drained(frozenset(paths), lost)

    def _parse(self, data: bytes, paths: set[str]) -> bool:
        """Add the changed paths in ``data`` to ``paths``; True when the watch lost track."""
        lost = False
        offset = 0
        while offset + _EVENT.size <= len(data):
            wd, mask, _cookie, size = _EVENT.unpack_from(data, offset)
            raw = data[offset + _EVENT.size : offset + _EVENT.size + size].rstrip(b"\0")
            offset += _EVENT.size + size
            if mask & _FOLDER_CHANGES:
                lost = lost or not (mask & _IGNORED and wd not in self._folders)
                continue
            folder = self._folders.get(wd)
            if folder is None:
                continue  # a watch removed since
            name = raw.decode("utf-8", "surrogateescape")
            if folder == ".git/info":
                lost = lost or name == "exclude"  # what the user's git ignores may change
                continue
            if mask & _ISDIR:
                # A folder created, moved or deleted: its content is unknown (or its watches
                # now name another place). Attribute changes of a folder change no file.
                lost = lost or not (mask & _ATTRIB and not mask & (_CREATE | _DELETE))
                continue
            if name in _IGNORE_FILES or name == ".git":
                lost = True  # what is ignored may have changed; a nested repository appeared
                continue
            paths.add(f"{folder}/{name}" if folder else name)
        return lost
