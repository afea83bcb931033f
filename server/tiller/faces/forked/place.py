"""Where the template listens, and what makes it the right one.

- The directory: ``$XDG_RUNTIME_DIR/tiller`` when the runtime dir is the user's own (the
  XDG spec: owned by the user, mode 0700), else ``/tmp/tiller-UID``. Either is created with
  mode 0700 and then checked with ``lstat``: a real directory (not a symlink), owned by this
  user, with no access for group or others. Anything else is refused (`WarmError`): the
  caller then spawns its server the plain way.
- The socket ``ID.sock`` and its lock ``ID.lock``: ``ID`` names the installation (the
  interpreter and the ``tiller`` package's folder), so two virtual environments never share
  a template.
- The stamp: the version of what is installed there (``__version__``, and the size and
  modification time of every module of ``tiller`` and of the SDK's folders). A client whose
  stamp differs from the template's has it replaced (``template.py``).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import socket
import stat
import struct
import sys
from dataclasses import dataclass
from pathlib import Path

from tiller.errors import TillerError

PACKAGE = Path(__file__).resolve().parent.parent  # the tiller package's folder
SDK_FOLDERS = ("anthropic", "pygls", "acp", "httpx", "pydantic")
_UCRED = struct.Struct("3i")  # struct ucred: pid, uid, gid
# How a client's interpreter made one of its standard streams, for the fork that runs its
# command (``client.stdio_streams``, ``template.ForkRequest``): encoding, error handler, line
# buffering, write-through.
StreamSpec = tuple[str, str, bool, bool]


class WarmError(TillerError):
    """The warm start cannot be used here (the reason says why); spawn the server instead."""


def _private_dir(path: Path) -> Path:
    """``path``, made if missing, checked: a directory of ours that nobody else can enter."""
    try:
        path.mkdir(mode=0o700, exist_ok=True)
        info = path.lstat()
    except OSError as err:
        raise WarmError(f"cannot make {path}: {err.strerror}") from err
    return checked_dir(path, info)


def checked_dir(path: Path, info: os.stat_result) -> Path:
    if not stat.S_ISDIR(info.st_mode):
        raise WarmError(f"{path} is not a directory (a symlink?)")
    if info.st_uid != os.getuid():
        raise WarmError(f"{path} belongs to uid {info.st_uid}, not to this user")
    if info.st_mode & 0o077:
        raise WarmError(f"{path} has mode {oct(info.st_mode & 0o777)}: others can enter it")
    return path


def runtime_dir(env: dict[str, str] | None = None) -> Path:
    """The private folder of the template's socket (see the module's doc)."""
    source = os.environ if env is None else env
    xdg = source.get("XDG_RUNTIME_DIR", "")
    if xdg and os.path.isabs(xdg):
        try:
            return _private_dir(checked_dir(Path(xdg), Path(xdg).lstat()) / "tiller")
        except (OSError, WarmError):
            pass  # not the user's own runtime dir: the /tmp one
    return _private_dir(Path("/tmp") / f"tiller-{os.getuid()}")


@dataclass(frozen=True)
class Place:
    """The template's socket, lock and log in a checked private folder."""

    directory: Path

    @property
    def ident(self) -> str:
        return installation_id()

    @property
    def socket(self) -> Path:
        return self.directory / f"{self.ident}.sock"

    @property
    def lock(self) -> Path:
        return self.directory / f"{self.ident}.lock"

    @property
    def log(self) -> Path:
        return self.directory / f"{self.ident}.log"

    @classmethod
    def find(cls, env: dict[str, str] | None = None) -> Place:
        return cls(runtime_dir(env))

    def checked_socket(self) -> Path:
        """The socket, refused unless it is ours and only ours (mode 0600 or tighter)."""
        checked_dir(self.directory, self.directory.lstat())
        info = self.socket.lstat()  # FileNotFoundError: no template yet
        if not stat.S_ISSOCK(info.st_mode):
            raise WarmError(f"{self.socket} is not a socket")
        if info.st_uid != os.getuid():
            raise WarmError(f"{self.socket} belongs to uid {info.st_uid}, not to this user")
        if info.st_mode & 0o077:
            raise WarmError(f"{self.socket} has mode {oct(info.st_mode & 0o777)}: refused")
        return self.socket


def installation_id() -> str:
    """Which interpreter and which ``tiller``: one template per installation."""
    where = f"{sys.executable}\0{PACKAGE}".encode()
    return hashlib.sha256(where).hexdigest()[:16]


def version_stamp() -> str:
    """What is installed: a template whose stamp differs is replaced."""
    from tiller import __version__

    digest = hashlib.sha256(f"{__version__}\0{sys.version}".encode())
    for root, dirs, files in os.walk(PACKAGE):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                info = os.stat(os.path.join(root, name))
                digest.update(f"{root}/{name}\0{info.st_size}\0{info.st_mtime_ns}\0".encode())
    for entry in sys.path:  # an upgraded dependency replaces its folder and dist-info
        for folder in SDK_FOLDERS:
            with contextlib.suppress(OSError):
                mtime = os.stat(os.path.join(entry or ".", folder)).st_mtime_ns
                digest.update(f"{entry}/{folder}\0{mtime}\0".encode())
    return digest.hexdigest()[:32]


def peer_uid(sock: socket.socket) -> int:
    """The uid of the process at the other end of a Unix socket (``SO_PEERCRED``, Linux)."""
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size)
    return int(_UCRED.unpack(raw)[1])
