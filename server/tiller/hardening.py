"""What the server does to its own process so that the commands it runs cannot take its key.

Approved commands run in a PID namespace of their own where bubblewrap works
(``workspace/sandbox.py``): the server does not exist for them. Where they do not (no bubblewrap,
``sandbox: "off"``, an editor's terminal), a command could walk up from ``$PPID`` to the
server and read ``/proc/<server>/environ`` and ``/proc/<server>/mem``. So:

- :func:`make_undumpable`, at start: the process is not dumpable (``PR_SET_DUMPABLE`` 0). Its
  ``/proc/<pid>`` files then belong to root, and no process of the same (non-root) user can
  read its environment or memory, or attach a debugger to it. Root, with ``CAP_SYS_PTRACE``,
  still can: see docs/security.md.
- :func:`forget_credentials`, once the API client holds its own copy of the key: the
  credential variables are blanked in ``os.environ``, and their values overwritten in the
  environment block the kernel shows as ``/proc/<pid>/environ`` (``unsetenv`` alone leaves
  that block as it was at ``exec``). The names stay, empty: the ACP terminal blanks, in the
  editor's environment, every name the server has that tools must not see.

Both are Linux-only and do nothing elsewhere. ``ctypes`` loads on first use, not at import.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterable

from tiller.proc_stat import stat_fields

ALWAYS_HIDDEN = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")  # never given to a tool, ever

log = logging.getLogger(__name__)

PR_SET_DUMPABLE = 4
PR_GET_DUMPABLE = 3
# /proc/<pid>/stat fields 50 and 51 (env_start, env_end), counted from the state (field 3).
_ENV_START = 50 - 3
_ENV_END = 51 - 3


def _linux() -> bool:
    return sys.platform.startswith("linux")


def _prctl(option: int, value: int) -> int:
    """``prctl(option, value)``; raises OSError when it fails."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    result: int = libc.prctl(option, value, 0, 0, 0)
    if result < 0:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno))
    return result


def make_undumpable() -> bool:
    """Make this process non-dumpable; whether it now is."""
    if not _linux():
        return False
    try:
        _prctl(PR_SET_DUMPABLE, 0)
    except (OSError, AttributeError) as err:
        log.warning("could not make the server non-dumpable: %s", err)
        return False
    return True


def is_dumpable() -> bool:
    """Whether this process is dumpable (always True off Linux)."""
    return not _linux() or _prctl(PR_GET_DUMPABLE, 0) != 0


def forget_credentials(names: Iterable[str] = ALWAYS_HIDDEN) -> None:
    """Blank ``names`` in the environment, and in the block ``/proc/<pid>/environ`` shows."""
    names = list(names)
    for name in names:
        if os.environ.get(name):
            os.environ[name] = ""  # setenv: the C environment no longer points into the block
    if _linux():
        _wipe_initial_environment({name.encode() for name in names})


def _wipe_initial_environment(names: set[bytes]) -> None:
    """Overwrite with NULs the values of ``names`` in the environment block of ``exec``.

    The block's bounds come from ``/proc/self/stat`` (readable by the process itself, even
    when it is not dumpable); it lies on the initial stack, which stays writable.
    """
    try:
        fields = stat_fields("self")
        start, end = int(fields[_ENV_START]), int(fields[_ENV_END])
    except (OSError, ValueError, IndexError) as err:
        log.warning("could not find the environment block: %s", err)
        return
    if not 0 < start < end:
        return
    import ctypes

    block = ctypes.string_at(start, end - start)
    offset = 0
    for entry in block.split(b"\0"):
        name, equals, value = entry.partition(b"=")
        if equals and name in names and value:
            ctypes.memset(start + offset + len(name) + 1, 0, len(value))
        offset += len(entry) + 1
