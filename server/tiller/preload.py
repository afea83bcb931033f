"""Import slow modules off the event loop, once per process, and start-up imports faster.

- `start` / `imported`: import a module in a daemon thread (never holds up exit) exactly
  once; every waiter awaits the same import. ``AnthropicProvider`` loads the SDK (~1 s) this
  way, and the server warms the bash classifier's parser after ``initialized``.
- `after`: run something once an import has ended (the warm start's template is started
  then, when the server runs in its own process).
- `full_collections_paused`: what ``python -m tiller`` and those threads import under.

Stdlib only and cheap to import.
"""

from __future__ import annotations

import gc
import importlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from types import ModuleType

SDK_MODULE = "tiller.model.anthropic_provider"
log = logging.getLogger(__name__)

_started: dict[str, Future[ModuleType]] = {}
_after: dict[str, list[Callable[[], object]]] = {}  # run once the import, not started yet, ends
_lock = threading.Lock()
_paused = 0  # how many imports are running with full collections paused
_full_threshold = gc.get_threshold()[2]  # what to restore when the last one ends
PAUSED_FULL_THRESHOLD = 1_000  # vs 10 by default: see full_collections_paused


@contextmanager
def full_collections_paused() -> Iterator[None]:
    """Run imports without the collector's full passes.

    An import builds many long-lived objects and little garbage, so the full (oldest
    generation) passes that the growing heap keeps triggering only slow it down: with them
    paused, ``tiller.faces.lsp.rpc`` and the SDK import ~25 % faster (CPU). Young collections still
    run, so what the imports throw away is still freed (pausing the collector entirely would
    keep ~10 MiB more). gc state is per process: the first pause raises the threshold of
    full passes, the last one to end restores it.
    """
    global _paused, _full_threshold
    with _lock:
        young, middle, full = gc.get_threshold()
        if _paused == 0:
            _full_threshold = full
            gc.set_threshold(young, middle, PAUSED_FULL_THRESHOLD)
        _paused += 1
    try:
        yield
    finally:
        with _lock:
            _paused -= 1
            if _paused == 0:
                young, middle, _ = gc.get_threshold()
                gc.set_threshold(young, middle, _full_threshold)


def start(name: str) -> Future[ModuleType]:
    """Start importing ``name`` in a daemon thread (a no-op when already started).

    The thread never holds up process exit; the returned future cannot be cancelled, so a
    waiter that gives up never spoils it for the next one.
    """
    with _lock:
        future = _started.get(name)
        if future is None:
            future = Future()
            future.set_running_or_notify_cancel()  # RUNNING: cancel() is refused from now on
            _started[name] = future
            for callback in _after.pop(name, []):
                future.add_done_callback(_calling(callback))
            thread = threading.Thread(
                target=_import_into, args=(name, future), name=f"import-{name}", daemon=True
            )
            thread.start()
        return future


def _calling(callback: Callable[[], object]) -> Callable[[Future[ModuleType]], None]:
    def done(_: Future[ModuleType]) -> None:
        callback()

    return done


def after(name: str, callback: Callable[[], object]) -> None:
    """Run ``callback`` (on the importing thread) once the import of ``name`` has ended,
    whenever it is started (at once if it has ended already)."""
    with _lock:
        future = _started.get(name)
        if future is None:
            _after.setdefault(name, []).append(callback)
            return
    future.add_done_callback(_calling(callback))


async def imported(name: str) -> ModuleType:
    """``name``, imported off the event loop (started now unless it already was)."""
    import asyncio  # here: the process start must not wait for asyncio to load

    return await asyncio.shield(asyncio.wrap_future(start(name)))


def _import_into(name: str, future: Future[ModuleType]) -> None:
    started = time.perf_counter(), time.thread_time()
    try:
        with full_collections_paused():
            module = importlib.import_module(name)
        wall, cpu = time.perf_counter() - started[0], time.thread_time() - started[1]
        log.info("imported %s in %.0f ms (%.0f ms CPU)", name, wall * 1000, cpu * 1000)
    except BaseException as err:  # reported to whoever awaits it
        future.set_exception(err)
    else:
        future.set_result(module)
