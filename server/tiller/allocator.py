"""The C allocator's settings for a server that lives for hours (glibc only; issue 36).

Every model request of a session makes big buffers of changing sizes: the body the SDK
encodes (hundreds of KB once the history is long, small again after a compaction), the
response, tool outputs. glibc gives a buffer above its mmap threshold (128 KiB) a mapping of
its own, returned to the system when it is freed; but the first such free raises the
threshold to that buffer's size (its "dynamic threshold", up to 32 MiB). From then on these
buffers come from the heap, where the small objects allocated between them pin its pages. In
``bench/soak.py`` (faults, tool calls, compactions) the heap held 7-11 MiB free while what
was in use stayed flat, and crept up with it (issue 36). With the threshold fixed at glibc's
own default (no dynamic raise) and two arenas (the worker threads' frees not spread over
arenas of their own, eight per core by default), it holds 2.5-3 MiB free and stays at its
size after the warm-up; the server's RSS after the warm-up is 3.5-5.4 MiB lower.

``tune`` applies both with ``mallopt``, at start (before the server allocates much), in every
process that serves: ``python -m tiller`` and the warm template, whose forks inherit them. A
knob the user set (``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_ARENA_MAX``, or a ``glibc.malloc``
tunable in ``GLIBC_TUNABLES``) is left as they set it. Stdlib only; ``ctypes`` loads on use.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from typing import Final

log = logging.getLogger(__name__)

M_MMAP_THRESHOLD: Final = -3  # malloc.h
M_ARENA_MAX: Final = -8
MMAP_THRESHOLD: Final = 128 * 1024  # glibc's default, kept fixed
ARENA_MAX: Final = 2

# knob -> (its value, the environment variable and the tunable that set it instead)
KNOBS: Final[dict[str, tuple[int, int, str, str]]] = {
    "mmap_threshold": (
        M_MMAP_THRESHOLD,
        MMAP_THRESHOLD,
        "MALLOC_MMAP_THRESHOLD_",
        "glibc.malloc.mmap_threshold",
    ),
    "arena_max": (M_ARENA_MAX, ARENA_MAX, "MALLOC_ARENA_MAX", "glibc.malloc.arena_max"),
}


def user_set(environ: Mapping[str, str]) -> frozenset[str]:
    """The knobs the environment sets already (they are left alone)."""
    tunables = environ.get("GLIBC_TUNABLES", "")
    return frozenset(
        knob
        for knob, (_, _, variable, tunable) in KNOBS.items()
        if variable in environ or tunable in tunables
    )


def tune(environ: Mapping[str, str] = os.environ) -> tuple[str, ...]:
    """Fix glibc's mmap threshold and arena count for this process (see the module); the
    knobs set. Nothing elsewhere than on glibc."""
    if not sys.platform.startswith("linux"):
        return ()
    import ctypes

    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018  (glibc's alone: musl's mallopt does nothing)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return ()
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    skipped = user_set(environ)
    done: list[str] = []
    for knob, (option, value, _, _) in KNOBS.items():
        if knob in skipped:
            continue
        if mallopt(option, value) == 1:
            done.append(knob)
        else:
            log.warning("mallopt(%s, %s) failed", knob, value)
    return tuple(done)
