"""The confinement race: a thread that keeps swapping ``ws/sub`` between a real directory
and a symbolic link to a folder outside the workspace while the file tools run."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path


class Flipper:
    """Use as a context manager (or ``thread.start()`` / ``halt()``)."""

    def __init__(self, ws: Path, outside: Path) -> None:
        self.ws, self.outside = ws, outside
        self.stop = threading.Event()
        self.as_link = 0  # how many times the link was in place
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        sub, n = self.ws / "sub", 0
        while not self.stop.is_set():
            n += 1
            parked = self.ws / f"parked-{n}"
            try:
                os.rename(sub, parked)
                os.symlink(self.outside, sub)
                self.as_link += 1
                os.unlink(sub)
                os.rename(parked, sub)
                time.sleep(0.0001)  # a moment as a directory too, so some calls succeed
            except OSError:
                continue  # a tool created `sub` meanwhile: park that one next time

    def __enter__(self) -> Flipper:
        self.thread.start()
        return self

    def halt(self) -> None:
        self.stop.set()
        self.thread.join()

    def __exit__(self, *exc: object) -> None:
        self.halt()
