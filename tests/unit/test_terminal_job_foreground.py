"""A fork reading the terminal for a background job waits for ``fg`` the way the kernel would,
and never stops a job that ``fg`` has just continued (the answer typed for it then went to the
shell: ``bash: y: command not found``)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest

from tiller.faces.client import terminal

JOB, SHELL = 4242, 1000


@pytest.fixture
def signals(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[int, int]]]:
    sent: list[tuple[int, int]] = []
    monkeypatch.setattr(terminal, "_job_group", JOB)
    monkeypatch.setattr(os, "isatty", lambda fd: True)
    monkeypatch.setattr(os, "killpg", lambda group, sig: sent.append((group, sig)))
    monkeypatch.setattr(time, "sleep", lambda seconds: None)
    yield sent


def _script(monkeypatch: pytest.MonkeyPatch, states: list[tuple[bool, int]]) -> None:
    """Each poll: whether the job is stopped, then which group holds the terminal."""
    polls = iter(states)
    current: list[tuple[bool, int]] = []

    def stopped(group: int) -> bool:
        current[:] = [next(polls)]
        return current[0][0]

    monkeypatch.setattr(terminal, "_stopped", stopped)
    monkeypatch.setattr(terminal, "_foreground_of", lambda group, fd: current[0][1])


def test_a_stopped_job_waits_for_fg_without_being_signalled_again(
    signals: list[tuple[int, int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Stopped at the shell's prompt, then `fg`: the terminal is the job's before it runs on.
    _script(monkeypatch, [(True, SHELL), (True, SHELL), (True, JOB)])
    terminal._wait_for_the_foreground(0)
    assert signals == []


def test_a_job_continued_in_the_background_is_stopped_again(
    signals: list[tuple[int, int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    _script(monkeypatch, [(False, SHELL), (True, SHELL), (False, JOB)])
    terminal._wait_for_the_foreground(0)
    assert len(signals) == 1 and signals[0][0] == JOB


def test_a_job_that_is_gone_is_not_waited_for(
    signals: list[tuple[int, int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(terminal, "_stopped", lambda group: None)
    monkeypatch.setattr(terminal, "_foreground_of", lambda group, fd: SHELL)
    terminal._wait_for_the_foreground(0)
    assert signals == []
