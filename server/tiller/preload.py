"""Import a slow module in the background, once per process, and wait for it where needed.

The ``anthropic`` SDK takes about a second to import. ``python -m tiller`` starts that import
here before it loads anything else, so it overlaps the server's own start-up and the client's
``initialize`` round trip; ``AnthropicProvider`` then awaits the same import instead of
starting it. Stdlib only, and cheap to import: this runs before everything else.
"""

from __future__ import annotations

import gc
import importlib
import threading
from collections.abc import Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from types import ModuleType

SDK_MODULE = "tiller.anthropic_provider"

_started: dict[str, Future[ModuleType]] = {}
_lock = threading.Lock()
_pauses = 0  # how many imports run with the collector paused (gc state is per process)


@contextmanager
def collector_paused() -> Iterator[None]:
    """Run imports with the cyclic garbage collector off: they build many long-lived objects
    and little garbage, so its passes only slow them (the SDK's import by ~20 %, tiller.rpc's
    by ~20 %). When the last paused import is done, what they built is moved out of every
    later collection (``gc.freeze``) and the collector is on again."""
    global _pauses
    with _lock:
        _pauses += 1
        gc.disable()
    try:
        yield
    finally:
        with _lock:
            _pauses -= 1
            if _pauses == 0:
                gc.freeze()
                gc.enable()


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
            thread = threading.Thread(
                target=_import_into, args=(name, future), name=f"import-{name}", daemon=True
            )
            thread.start()
        return future


async def imported(name: str) -> ModuleType:
    """``name``, imported off the event loop (started now unless it already was)."""
    import asyncio  # here: the process start must not wait for asyncio to load

    return await asyncio.shield(asyncio.wrap_future(start(name)))


def _import_into(name: str, future: Future[ModuleType]) -> None:
    try:
        with collector_paused():
            module = importlib.import_module(name)
    except BaseException as err:  # reported to whoever awaits it
        future.set_exception(err)
    else:
        future.set_result(module)
