"""A restore's writes, confined to the workspace: names are reached by directory descriptor
from the workspace root without following links, new content goes to a temporary file created
exclusively under a fresh name, and the rename stays inside the directory it was created in.

Everything here is blocking: callers run it in a worker thread.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path

from tiller.workspace.checkpoints.git import CheckpointError
from tiller.workspace.confined import OPEN_DIR, OPEN_ROOT, OPEN_TEMP


class RestoreWriter:
    """A restore's writes, confined to the workspace by directory descriptor.

    Every name is reached from a descriptor of the workspace root, one directory at a time
    with ``O_DIRECTORY | O_NOFOLLOW``; where the snapshot has a directory and the workspace
    has something else (a file, a symbolic link planted to lead outside), that entry itself is
    removed and a directory made. New content goes to a temporary file created with
    ``O_CREAT | O_EXCL | O_NOFOLLOW`` under a fresh random name (an entry planted at any name
    is never opened, let alone followed), and ``rename`` relative to that same directory
    descriptor puts it in place: it replaces the name (a symlink or a hard link there
    included), never what the name pointed at.
    """

    def __init__(self, root_fd: int) -> None:
        self.root_fd = root_fd

    @staticmethod
    @contextlib.contextmanager
    def at(workspace: Path) -> Iterator[RestoreWriter]:
        root_fd = os.open(workspace, OPEN_ROOT)  # the root itself is trusted as configured
        try:
            yield RestoreWriter(root_fd)
        finally:
            os.close(root_fd)

    def remove(self, path: str) -> None:
        """Unlink the file or link ``path``, then the directories it leaves empty. A path
        whose directories are gone, or are no longer directories, is not there any more."""
        *dirs, name = _parts(path)
        fds = [self.root_fd]
        try:
            for part in dirs:
                try:
                    fds.append(os.open(part, OPEN_DIR, dir_fd=fds[-1]))
                except OSError as exc:
                    if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
                        return
                    raise
            try:
                os.unlink(name, dir_fd=fds[-1])
            except OSError as exc:
                if exc.errno != errno.ENOENT:
                    if exc.errno == errno.EISDIR:  # a directory meanwhile: not ours to drop
                        return
                    raise
            for depth in range(len(dirs) - 1, -1, -1):
                try:
                    os.rmdir(dirs[depth], dir_fd=fds[depth])
                except OSError:  # not empty (or changed): it stays, and so do its parents
                    return
        finally:
            for fd in fds[1:]:
                os.close(fd)

    def put(self, path: str, mode: str, data: bytes) -> None:
        """Make ``path`` a file with ``mode`` (``100644``, ``100755``) holding ``data``, or a
        symbolic link (``120000``) to ``data``."""
        *dirs, name = _parts(path)
        dir_fd = self._open_dirs(dirs)
        try:
            found = _lstat_at(dir_fd, name)
            if found is not None and stat.S_ISDIR(found.st_mode):
                shutil.rmtree(name, dir_fd=dir_fd)  # fd-based: never follows a link inside
            temp = _new_temp(dir_fd, mode, data)
            try:
                os.rename(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temp, dir_fd=dir_fd)
                raise
        finally:
            if dir_fd != self.root_fd:
                os.close(dir_fd)

    def _open_dirs(self, dirs: Sequence[str]) -> int:
        """The directory ``dirs`` beneath the root, opened; made a real directory on the way."""
        fd = self.root_fd
        try:
            for part in dirs:
                inner = _enter_dir(fd, part)
                if fd != self.root_fd:
                    os.close(fd)
                fd = inner
        except BaseException:
            if fd != self.root_fd:
                os.close(fd)
            raise
        return fd


def _parts(path: str) -> list[str]:
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise CheckpointError(f"refusing to restore {path!r}: not a plain path in the workspace")
    return parts


def _lstat_at(dir_fd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _enter_dir(here: int, part: str) -> int:
    """The directory ``part`` of ``here`` opened without following a link; whatever else is
    there (a file, a symbolic link) is removed and a directory made in its place."""
    for _ in range(5):  # a concurrent change may need another try
        try:
            return os.open(part, OPEN_DIR, dir_fd=here)
        except FileNotFoundError:
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, 0o777, dir_fd=here)
        except OSError as exc:
            if exc.errno not in (errno.ENOTDIR, errno.ELOOP):
                raise
            try:
                os.unlink(part, dir_fd=here)  # the link itself, never its target
            except OSError as gone:
                if gone.errno not in (errno.ENOENT, errno.EISDIR):
                    raise
    raise CheckpointError(f"{part} kept changing while the restore made it a directory")


def _new_temp(dir_fd: int, mode: str, data: bytes) -> str:
    """A new entry in ``dir_fd`` holding ``data`` (a file, or a symbolic link for mode
    ``120000``), created exclusively under a fresh name; its name."""
    for _ in range(5):
        temp = f".{secrets.token_hex(8)}.tiller-restore"
        try:
            if mode == "120000":
                os.symlink(data.decode("utf-8", "surrogateescape"), temp, dir_fd=dir_fd)
                return temp
            fd = os.open(temp, OPEN_TEMP, 0o600, dir_fd=dir_fd)
        except FileExistsError:
            continue
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fchmod(fd, 0o755 if mode == "100755" else 0o644)
            finally:
                os.close(fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=dir_fd)
            raise
        return temp
    raise CheckpointError("the restore found no free name for a temporary file")
