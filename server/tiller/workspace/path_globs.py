"""Gitignore-style path globs, one dialect for the whole server, compiled by pathspec.

Permission rules' paths (``Read(src/**)``, ``Edit(//etc/**)``), the ``glob`` of list_files and
grep, and the workspace's .gitignore files are all matched here. The dialect is gitignore's
(git-scm.com/docs/gitignore), which Claude Code documents for its Read and Edit rules: ``*``
and ``?`` within a name, ``[a-z]`` one of a class, ``\\`` quotes the next character, ``**`` as
a whole name any number of folders; a pattern with no ``/`` (a trailing one aside) names a
file or folder at any depth, any other is anchored where its patterns start. pathspec turns
each pattern into a matcher: nothing here translates a glob by hand. (Single names, such as
tool names, MCP tool patterns and environment variables, are matched with ``fnmatch`` where
they are used: they are not paths.)

Two readings of a pattern, both pathspec's:

- ``file_glob``: a glob that picks files (list_files, grep) reads a pattern as gitignore
  documents it: ``src/*`` is what lies directly in src, ``*.{ts,tsx}`` is two patterns.
- ``rule_glob`` and ``IgnoreFile``: a rule or a .gitignore reads it as git applies it: a
  matched folder covers everything in it (``src/*`` covers ``src/a/b.py``).

A permission rule reads its pattern with Tiller's own additions, each a rewrite of the pattern
text before pathspec sees it (``rule_glob``):

- a trailing ``/**`` names the folder itself as well as what is in it (``Read(build/**)``
  covers listing ``build``): the pattern without it;
- a leading ``!`` or ``#`` is a plain character: a rule neither negates nor comments;
- a deny or ask rule (``wide``) fails closed: it matches whatever either of two readings
  matches, gitignore's and Tiller's plain one, where ``[``, ``]`` and ``\\`` are plain
  characters and a ``**`` inside a name (``src/**.py``: to gitignore a ``*``) also spans
  folders (each such ``**`` read both ways; past four, the text from the fourth to the last
  may be anything). A deny or ask rule may match more than gitignore says, never less.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import pathspec
from pathspec.patterns.gitignore import GitIgnorePatternError
from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

from tiller.errors import TillerError


class GlobError(TillerError):
    """A glob pathspec cannot read (a trailing ``\\``); the message names it."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code="glob")


@dataclass(frozen=True)
class PathGlob:
    """Gitignore patterns matched as one .gitignore file would be: the last pattern that
    matches a path decides. Paths are ``/``-separated and relative to where the patterns are
    anchored; a leading ``/`` is dropped, so an absolute path is matched from the root."""

    patterns: tuple[str, ...]
    spec: pathspec.PathSpec[pathspec.Pattern]

    def matches(self, path: str) -> bool:
        return self.spec.match_file(path)


@dataclass(frozen=True)
class EveryPath:
    """What a rule naming the filesystem root matches (``//``, ``//**``): every path, the
    root itself included (which no pathspec pattern matches: it is the empty relative path)."""

    def matches(self, path: str) -> bool:
        return True


EVERY_PATH = EveryPath()
RuleGlob = PathGlob | EveryPath


def file_glob(pattern: str) -> PathGlob:
    """A glob that picks files (list_files, grep): braces expanded, a leading ``./`` dropped,
    gitignore's patterns as documented. GlobError if it is blank or pathspec cannot read it."""
    patterns = tuple(p.removeprefix("./") for p in expand_braces(pattern.strip()) if p)
    if not patterns:
        raise GlobError("pattern must not be blank")
    try:
        return PathGlob(patterns, pathspec.PathSpec.from_lines("gitignore", patterns))
    except GitIgnorePatternError:
        raise GlobError(f"{pattern!r} is not a glob (a trailing \\ quotes nothing)") from None


def expand_braces(pattern: str) -> list[str]:
    """``*.{ts,tsx}`` → ``*.ts``, ``*.tsx`` (innermost first, nesting allowed)."""
    match = re.search(r"\{([^{}]*,[^{}]*)\}", pattern)
    if match is None:
        return [pattern]
    head, tail = pattern[: match.start()], pattern[match.end() :]
    return [p for alt in match.group(1).split(",") for p in expand_braces(head + alt + tail)]


def literal(text: str) -> str:
    """A pattern matching ``text`` alone: its wildcards and quotes quoted, and a trailing
    space too (gitignore drops unquoted trailing spaces)."""
    quoted = GitIgnoreSpecPattern.escape(text)
    return quoted[:-1] + "\\ " if quoted.endswith(" ") else quoted


@functools.lru_cache(maxsize=4096)
def rule_glob(pattern: str, *, folder: str | None, wide: bool) -> RuleGlob:
    """How a permission rule reads ``pattern``. ``folder``: the absolute folder the pattern
    is anchored in, taken literally (the glob then matches absolute paths); None: a name
    pattern, with no ``/`` (matched against paths relative to the workspace). ``wide``: a
    deny or ask rule's reading, which adds Tiller's plain reading to gitignore's (see the
    module's notes). A reading pathspec cannot read (a trailing ``\\``) matches nothing; the
    plain one always can."""
    if folder is None:
        name = pattern.rstrip("/")
        names = (name, _plain_characters(name)) if wide else (name,)
        readings = [_plain_start(n) for n in names]
    else:
        rooted = _folder_itself("".join(f"/{name}" for name in pattern.split("/") if name))
        spans = _spanning(_plain_characters(rooted)) if wide else ()
        readings = [literal(folder.rstrip("/")) + rest for rest in (rooted, *spans)]
        if not readings[0]:
            return EVERY_PATH
    unique = tuple(dict.fromkeys(readings))
    return PathGlob(unique, pathspec.GitIgnoreSpec(list(_compiled(unique))))


def _compiled(patterns: Iterable[str]) -> Iterator[GitIgnoreSpecPattern]:
    """Each pattern pathspec can read, in order."""
    for pattern in patterns:
        try:
            yield GitIgnoreSpecPattern(pattern)
        except GitIgnorePatternError:
            continue


def _folder_itself(pattern: str) -> str:
    """``build/**`` → ``build``: the folder and everything in it (gitignore's ``build/**``
    leaves the folder itself out)."""
    while pattern.endswith("/**"):
        pattern = pattern[:-3]
    return pattern


def _plain_start(pattern: str) -> str:
    """A leading ``!`` or ``#`` quoted: to gitignore they negate or comment a line."""
    return "\\" + pattern if pattern.startswith(("!", "#")) else pattern


def _plain_characters(pattern: str) -> str:
    """Tiller's plain reading: ``\\`` and ``[`` quoted, so only ``*`` and ``?`` are wildcards."""
    return pattern.replace("\\", "\\\\").replace("[", "\\[")


def _spanning(pattern: str) -> tuple[str, ...]:
    """Each ``**`` inside a name read within the name (``*``) and across folders
    (``*/**/*``), in every combination: ``/a/x**y`` → ``/a/x*y`` and ``/a/x*/**/*y``. Past
    ``_MOST_SPANS`` of them, the text from the last one read so (the fourth) to the last of
    them is any text: more, never less."""
    pieces = [""]  # the text around each such ``**``
    for i, segment in enumerate(pattern.split("/")):
        pieces[-1] += "/" if i else ""
        if segment == "**" or "**" not in segment:
            pieces[-1] += segment
            continue
        for stars, run in itertools.groupby(segment, key=lambda c: c == "*"):
            text = "".join(run)
            if stars and len(text) > 1:
                pieces.append("")
            else:
                pieces[-1] += text
    if len(pieces) > _MOST_SPANS + 1:
        pieces = [*pieces[:_MOST_SPANS], pieces[-1]]
    readings = []
    for ways in itertools.product(("*", "*/**/*"), repeat=len(pieces) - 1):
        readings.append(pieces[0] + "".join(w + p for w, p in zip(ways, pieces[1:], strict=True)))
    return tuple(readings)


_MOST_SPANS = 4  # 2**4 readings at most


@dataclass(frozen=True)
class IgnoreFile:
    """The rules of one .gitignore file, as git applies them (pathspec's GitIgnoreSpec): the
    last rule that matches decides, ``!`` includes again, a matched folder covers what is in
    it. A line pathspec cannot read (a trailing ``\\``) is left out, never the whole file."""

    spec: pathspec.GitIgnoreSpec

    @staticmethod
    def of(text: str) -> IgnoreFile:
        return IgnoreFile(pathspec.GitIgnoreSpec(list(_compiled(text.splitlines()))))

    def verdict(self, path: str) -> bool | None:
        """True: ignored; False: included again by a ``!`` rule; None: no rule speaks of it.
        ``path`` is relative to the file's folder, a folder's with a trailing ``/``."""
        return self.spec.check_file(path).include
