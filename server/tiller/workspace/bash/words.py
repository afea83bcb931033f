"""Words of a shell command as bash passes them: quote removal, ``$'…'`` decoding, and what
makes a word's value a matter of run time (an expansion, an unquoted glob, a brace expansion,
``~user``). ``word_nodes.py`` reads the parse tree's word nodes and hands each word's
pieces here."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["CannotRead", "Piece", "Word", "ansi_c", "double_quoted", "unquoted", "word_of"]

# A quoted array subscript holding a command: builtins that take variable names
# (``test -v``, ``printf -v``, ``read``, ``declare``, ``unset``) evaluate it.
_SUBSCRIPT_CODE = re.compile(r"\[[^\]]*(\$\(|\$\[|`)")


class CannotRead(Exception):
    """Raised while a line is read: it cannot be judged (the message says why)."""


@dataclass(frozen=True)
class Word:
    """One word of a command: as written, and as bash passes it when that is known.

    ``value`` None: bash decides it at run time; ``glob``: its fnmatch pattern when only
    unquoted glob characters make it so; ``assignment``: a ``NAME=value`` before the program.
    """

    text: str
    value: str | None
    glob: str | None = None
    assignment: bool = False

    @property
    def reading(self) -> str | None:
        """The word in a reading: an assignment by its text when its value is dynamic (a
        rule may name it as written), any other word by its value."""
        if self.assignment and self.value is None:
            return self.text
        return self.value


@dataclass(frozen=True)
class Piece:
    """Characters of a word and whether bash still expands them (unquoted)."""

    chars: str
    active: bool


def unquoted(text: str) -> list[Piece]:
    """An unquoted word's text: backslash escapes make the next character literal."""
    if "\\" not in text:
        return [Piece(text, True)]
    pieces: list[Piece] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text):
            if text[i + 1] != "\n":
                pieces.append(Piece(text[i + 1], False))
            i += 2
            continue
        pieces.append(Piece(char, True))
        i += 1
    return pieces


def double_quoted(text: str) -> str:
    """The value of a double-quoted string's inside that holds no expansion."""
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text) and text[i + 1] in '$`"\\\n':
            if text[i + 1] != "\n":
                out.append(text[i + 1])
            i += 2
            continue
        out.append(char)
        i += 1
    return "".join(out)


_C_ESCAPES = {
    **{"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r"},
    **{"t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"},
}
_C_NUMERIC = re.compile(r"[0-7]{1,3}|x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}")


def ansi_c(text: str) -> str | None:
    """The value of ``$'…'``; None for an escape not decoded here (``\\cX``)."""
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char != "\\" or i + 1 >= len(text):
            out.append(char)
            i += 1
            continue
        escape = text[i + 1]
        if escape in _C_ESCAPES:
            out.append(_C_ESCAPES[escape])
            i += 2
            continue
        number = _C_NUMERIC.match(text, i + 1)
        if number is None:
            return None
        digits = number.group()
        code = int(digits, 8) if digits[0].isdigit() else int(digits[1:], 16)
        if code == 0 or code > 0x10FFFF:
            return None  # bash ends the string at a NUL
        out.append(chr(code))
        i = number.end()
    return "".join(out)


def word_of(text: str, pieces: list[Piece] | None, *, assignment: bool = False) -> Word:
    """A word from its pieces: static, a glob, or dynamic (None: an expansion)."""
    if pieces is None:
        return Word(text, None, assignment=assignment)
    value = "".join(p.chars for p in pieces)
    if _SUBSCRIPT_CODE.search(value):
        raise CannotRead("a word names an array subscript that holds a command")
    active = "".join(p.chars if p.active else "\x00" * len(p.chars) for p in pieces)
    if not assignment and _brace_expands(active):
        return Word(text, None)
    if not assignment and active.startswith("~"):
        user = re.match(r"~[^/\x00]*", active)
        if user is not None and user.group() != "~":
            return Word(text, None)  # ~user, ~+, ~-
    if not assignment and _globs(active):
        pattern = "".join(
            p.chars if p.active else "".join(f"[{c}]" if c in "*?[" else c for c in p.chars)
            for p in pieces
        )
        return Word(text, None, glob=pattern)
    return Word(text, value, assignment=assignment)


def _globs(active: str) -> bool:
    if "*" in active or "?" in active:
        return True
    bracket = active.find("[")
    return bracket >= 0 and "]" in active[bracket + 1 :]


def _brace_expands(active: str) -> bool:
    opened = active.find("{")
    while opened >= 0:
        closed = active.find("}", opened + 1)
        if closed < 0:
            return False
        inside = active[opened + 1 : closed]
        if "," in inside or ".." in inside:
            return True
        opened = active.find("{", opened + 1)
    return False
