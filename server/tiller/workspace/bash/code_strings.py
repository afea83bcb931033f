"""The code strings one segment runs: the strings its readings hand to a shell as code
(``sh -c``, ``eval``, ``trap``, ``su -c``, ``watch``, ..., ``bash_readings.code_strings``),
the here-document or here-string a shell reads as its script, and the values of variables
that name a command some program runs (``GIT_SSH_COMMAND=…``, ``PAGER=…``).
``segments.py`` parses each as a command line of its own; its segments join the line's.

A code string decided at run time (an expansion, ``hash -p``, ``source`` of a substitution)
makes the line unreadable, and so does a prompt variable (``PS4=…``) that bash would expand.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tiller.workspace.bash.readings import (
    FROM_INPUT,
    PROMPT_VARIABLES,
    Reading,
    code_strings,
    variable_code,
)
from tiller.workspace.bash.words import CannotRead, Word

__all__ = ["SegmentCode", "segment_code"]

_HIDDEN_CODE = (
    "it runs code the line does not show (a string decided at run time, hash -p, source of "
    "a substitution)"
)


@dataclass(frozen=True)
class SegmentCode:
    """The code strings a segment runs, in order and once each, and whether a shell in it
    runs an input the line does not show (it may then run anything)."""

    strings: tuple[str, ...]
    runs_input: bool


def segment_code(
    words: Iterable[Word], readings: Iterable[Reading], stdin_text: str | None
) -> SegmentCode:
    """The code a segment of ``words`` and deny ``readings`` runs; ``stdin_text``: its
    input's static text, when the line shows it (a here-document, a here-string)."""
    codes: dict[str, None] = {}
    for word in words:
        _variable(word, codes)
    runs_input = False
    for reading in readings:
        for code in code_strings(reading):
            if code is None:
                raise CannotRead(_HIDDEN_CODE)
            if code is FROM_INPUT:
                if stdin_text is None:
                    runs_input = True
                else:
                    codes.setdefault(stdin_text, None)
            elif isinstance(code, str):
                codes.setdefault(code, None)
    return SegmentCode(tuple(codes), runs_input)


def _variable(word: Word, codes: dict[str, None]) -> None:
    """A ``NAME=value`` word whose value some program runs as a command (a code string),
    or a prompt bash expands substitutions in (refused unless plain)."""
    written = word.value if word.value is not None else word.text
    name = written.partition("=")[0].removesuffix("+")
    if "=" not in written or not (name.isidentifier()):
        return
    if name in PROMPT_VARIABLES and (word.value is None or any(c in written for c in "$`")):
        raise CannotRead(f"{name} holds what bash would expand as a prompt")
    code = variable_code(written)
    if code == "":
        return
    if word.value is None:
        raise CannotRead(f"{name} names a command decided at run time")
    codes.setdefault(str(code), None)
