"""A pytest plugin for the mutation run: which tests execute which lines of one module.

scripts/mutation.sh loads it (``-p line_map``, this folder on PYTHONPATH) in the run over
the unmutated code, with ``MUTATION_TARGET`` naming the module's file and
``MUTATION_LINE_MAP`` the JSON file to write: ``{test node id: [line, ...]}`` for the lines
of the module each test executed (setup, call and teardown, in every thread), and under
``""`` the lines executed outside any test (the module's import while collecting). A mutant
of a line that no test executes cannot fail a test; ``run_mutant.py`` runs only the tests
that execute the mutated lines.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Generator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

TraceFunction = Any  # sys.settrace's callback type is private to typeshed


class _Recorder:
    def __init__(self, target: str) -> None:
        self.target = os.path.realpath(target)
        self.test = ""  # the running test's node id; "" outside any test
        self.lines: dict[str, set[int]] = {}
        self._files: dict[str, bool] = {}

    def _is_target(self, filename: str) -> bool:
        known = self._files.get(filename)
        if known is None:
            known = self._files[filename] = os.path.realpath(filename) == self.target
        return known

    def calls(self, frame: FrameType, event: str, _arg: object) -> TraceFunction:
        if event == "call" and self._is_target(frame.f_code.co_filename):
            return self.lines_of
        return None

    def lines_of(self, frame: FrameType, event: str, _arg: object) -> TraceFunction:
        if event == "line":
            self.lines.setdefault(self.test, set()).add(frame.f_lineno)
        return self.lines_of

    def start(self) -> None:
        threading.settrace(self.calls)
        sys.settrace(self.calls)

    def stop(self) -> None:
        sys.settrace(None)
        threading.settrace(None)

    def write(self, path: Path) -> None:
        path.write_text(json.dumps({test: sorted(lines) for test, lines in self.lines.items()}))


def _recording() -> _Recorder | None:
    target = os.environ.get("MUTATION_TARGET")
    if not (target and os.environ.get("MUTATION_LINE_MAP")):
        return None
    recorder = _Recorder(target)
    recorder.start()
    return recorder


# From the plugin's import on (``-p`` imports it before any conftest): a conftest may import
# the module, and what its import executes must be recorded too.
_recorder = _recording()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    if _recorder is not None:
        _recorder.test = item.nodeid
    try:
        return (yield)
    finally:
        if _recorder is not None:
            _recorder.test = ""


def pytest_unconfigure(config: pytest.Config) -> None:
    if _recorder is not None:
        _recorder.stop()
        _recorder.write(Path(os.environ["MUTATION_LINE_MAP"]))
