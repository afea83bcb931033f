"""glibc's allocator as the server sets it (``tiller.allocator``, issue 36): a big buffer freed
does not pull the next ones into the heap, where a long session's changing request bodies
left its RSS growing without end (``bench/soak.py``).

Each case runs in a fresh Python process: glibc's dynamic threshold is per process, and this
one's has long been raised by whatever ran before.
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys

import pytest

from tiller import allocator

pytestmark = pytest.mark.skipif(
    platform.libc_ver()[0] != "glibc", reason="mallopt's knobs are glibc's"
)

CHILD = """
import ctypes, json, os, sys
from tiller import allocator

class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]

libc = ctypes.CDLL(None)
libc.mallinfo2.restype = MallInfo2
tuned = allocator.tune(json.loads(sys.argv[1])) if sys.argv[1] != "untuned" else []
first = bytearray(1 << 20)  # above the threshold: a mapping of its own
del first  # untuned, glibc raises its threshold to 1 MiB here
before = libc.mallinfo2().hblks
second = bytearray(600 * 1024)  # a smaller body, the next step's
print(json.dumps({"tuned": list(tuned), "mapped": libc.mallinfo2().hblks - before}))
"""


def run_child(environ: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, environ], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    answer: dict[str, object] = json.loads(done.stdout)
    return answer


def test_a_big_buffer_freed_does_not_pull_the_next_ones_into_the_heap() -> None:
    assert run_child("{}") == {"tuned": ["mmap_threshold", "arena_max"], "mapped": 1}


def test_untuned_glibc_puts_the_next_big_buffer_in_the_heap() -> None:
    """The premise of the tuning (so the test above guards it): glibc's dynamic threshold."""
    assert run_child("untuned") == {"tuned": [], "mapped": 0}


def test_a_knob_the_user_set_in_the_environment_is_left_alone() -> None:
    answer = run_child(json.dumps({"MALLOC_MMAP_THRESHOLD_": "1048576"}))
    assert answer["tuned"] == ["arena_max"]
    assert allocator.user_set({"MALLOC_ARENA_MAX": "4"}) == {"arena_max"}
    tunables = "glibc.malloc.mmap_threshold=65536:glibc.malloc.arena_max=1"
    assert allocator.user_set({"GLIBC_TUNABLES": tunables}) == {"mmap_threshold", "arena_max"}
    assert allocator.user_set({"GLIBC_TUNABLES": "glibc.pthread.rseq=0"}) == frozenset()
