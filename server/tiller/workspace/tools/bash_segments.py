"""A command line split into the simple commands bash will run: what permission rules judge.

Every simple command is a segment, wherever it stands: across pipes, ``&&``, ``||``, ``;``
and ``&``, inside subshells, brace groups, ``if``/``for``/``while`` bodies and function
bodies, and inside command substitutions (``$(...)``, backticks) and process substitutions
(``<(...)``), which are segments of their own next to the command whose word holds them.

A segment keeps its source text (what the user is shown), its words as bash sees them
before expansion (assignment prefixes such as ``FOO=1`` included: they change what a program
does, so ``Bash(rm:*)`` never matches ``FOO=1 rm x``), and ``exact_only``: why no prefix or
wildcard rule may match it, only a rule naming the segment exactly. That is so when:

- it writes a file through a redirection (``git diff > out.txt``: a rule for ``git diff``
  allowed a program, not writing anywhere);
- its program runs another program named in its arguments (``sudo``, ``env``, ``xargs``,
  ``timeout``, ``nohup``, ``sh -c``, ``eval``, ``find -exec`` ...): ``Bash(find:*)`` must
  not allow ``find . -exec rm {} +``;
- a word holds an arithmetic expansion (``$(( ))``), whose inner commands the parser does
  not split.

A compound command with a redirection to a file (``(a; b) > out``) adds a segment for the
whole compound, exact only. A line the parser cannot read has no segments (None): it is
asked, never matched piecemeal.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["Segment", "split_segments"]

MAX_SEGMENTED_BYTES = 16 * 1024

# bashlex keeps parser state while parsing: one parse at a time (bash_readonly has its own
# lock for the same reason; the two never nest).
_PARSER_LOCK = threading.Lock()

Node = Any  # bashlex nodes are untyped objects with a ``kind`` tag

# Programs that run a program named in their arguments (or a string of shell code).
RUNNERS = frozenset(
    {
        *("sudo", "doas", "su", "env", "xargs", "nohup", "timeout", "time", "nice", "ionice"),
        *("command", "builtin", "exec", "eval", "source", ".", "sh", "bash", "zsh", "dash"),
        *("ksh", "fish", "csh", "tcsh", "busybox", "watch", "parallel", "strace", "ltrace"),
        *("chroot", "setsid", "stdbuf", "unbuffer", "script", "flock", "chrt", "taskset"),
        *("systemd-run", "runuser", "sg", "newgrp", "unshare", "nsenter", "fakeroot"),
    }
)
_FIND_RUNS = ("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fls")
_HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})
_WRITE_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", ">&", "<>"})


@dataclass(frozen=True)
class Segment:
    """One simple command: its source text, its words, and why only an exact rule may
    match it (None: prefix and wildcard rules may)."""

    text: str
    words: tuple[str, ...]
    exact_only: str | None = None

    @property
    def program(self) -> str:
        """The program's name as written (after any assignment prefixes); "" if none."""
        return next((w for w in self.words if not _is_assignment(w)), "")


def _is_assignment(word: str) -> bool:
    name, eq, _ = word.partition("=")
    return bool(eq) and name.isidentifier()


def split_segments(command: str) -> tuple[Segment, ...] | None:
    """The simple commands of ``command`` in source order; None when it cannot be parsed
    (or is empty, or too long to judge cheaply)."""
    if not command.strip() or "\x00" in command or len(command) > MAX_SEGMENTED_BYTES:
        return None
    try:
        with _PARSER_LOCK:
            trees = importlib.import_module("bashlex").parse(command)
        walker = _Walker(command)
        segments = tuple(s for tree in trees for s in walker.walk(tree))
    except Exception:  # bashlex raises many kinds (ParsingError, NotImplementedError, ...)
        return None
    return segments or None


@dataclass(frozen=True)
class _Walker:
    source: str

    def text(self, node: Node) -> str:
        start, end = node.pos
        return str(self.source[start:end])

    def walk(self, node: Node) -> Iterator[Segment]:
        match node.kind:
            case "command":
                yield from self.command(node)
            case "compound":
                for child in node.list:
                    yield from self.walk(child)
                redirects = getattr(node, "redirects", None) or []
                for redirect in redirects:
                    yield from self.inner(redirect)
                if any(self.writes(r) for r in redirects):
                    words = (self.text(node),)
                    yield Segment(self.text(node), words, "writes a file through a redirection")
            case "word" | "assignment" | "redirect":
                yield from self.inner(node)
            case "commandsubstitution" | "processsubstitution":
                yield from self.walk(node.command)
            case "operator" | "pipe" | "reservedword" | "parameter" | "tilde" | "heredoc":
                return
            case _:  # list, pipeline, if, for, while, until, function: their parts
                for child in getattr(node, "parts", None) or []:
                    yield from self.walk(child)

    def inner(self, node: Node) -> Iterator[Segment]:
        """The substitutions inside a word or a redirection's target."""
        if node.kind == "redirect":
            target = node.output
            if hasattr(target, "kind"):
                yield from self.inner(target)
            return
        for part in getattr(node, "parts", None) or []:
            yield from self.walk(part)

    def command(self, node: Node) -> Iterator[Segment]:
        words: list[str] = []
        exact_only: str | None = None
        for part in node.parts:
            match part.kind:
                case "word" | "assignment":
                    words.append(str(part.word))
                    if "$((" in self.text(part) or "$[" in self.text(part):
                        exact_only = "holds an arithmetic expansion"
                case "redirect" if self.writes(part):
                    exact_only = "writes a file through a redirection"
                case _:
                    pass
        segment_words = tuple(words)
        runs = _runs_other(segment_words)
        if runs is not None:
            exact_only = runs
        yield Segment(self.text(node).strip(), segment_words, exact_only)
        for part in node.parts:
            yield from self.inner(part)

    def writes(self, redirect: Node) -> bool:
        if redirect.type not in _WRITE_REDIRECTS:
            return False
        target = redirect.output
        if isinstance(target, int) or target == "-":
            return False  # fd duplication or closing: 2>&1, >&-
        return not (hasattr(target, "word") and target.word in _HARMLESS_TARGETS)


def _runs_other(words: tuple[str, ...]) -> str | None:
    program = next((w for w in words if not _is_assignment(w)), "")
    name = program.rsplit("/", 1)[-1]
    if name in RUNNERS:
        return f"{name} runs another program"
    if name == "find" and any(w.startswith(_FIND_RUNS) for w in words):
        return "find runs a program or deletes"
    if name == "git" and any(w in ("-c", "--config-env") for w in _leading_options(words)):
        return "git -c can name a program to run"
    return None


def _leading_options(words: tuple[str, ...]) -> Iterator[str]:
    """The options before a program's first operand (its global options)."""
    for word in words[1:]:
        if not word.startswith("-"):
            return
        yield word
