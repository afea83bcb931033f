"""Permission rules: ``allow`` / ``ask`` / ``deny`` over tools and their arguments, written
in Claude Code's syntax, and which rule (if any) decides a call.

A rule is ``Tool`` or ``Tool(specifier)``:

- ``Bash(git diff:*)``: the words ``git diff``, alone or followed by more words (a word
  boundary: not ``git diffx``); ``Bash(npm install)``: exactly that command;
  ``Bash(git * main)``: ``*`` stands for any text, and a trailing `` *`` may match nothing
  (``Bash(ls *)`` matches ``ls``); ``Bash`` or ``Bash(*)``: every command.
  A command is judged per segment (``bash_segments.py``): each simple command must be
  matched on its own, so ``Bash(git status:*)`` never covers ``git status && rm -rf x``.
- ``Read(src/**)``, ``Edit(docs/**)``: gitignore-style paths: ``//abs`` from the filesystem
  root, ``~/x`` from the home directory, ``/x`` and ``x`` and ``./x`` from the workspace root;
  ``*`` within a name, ``**`` across directories; a pattern with no ``/`` matches a name at
  any depth. ``Read`` covers read_file, grep and list_files; ``Edit`` (and ``Write``,
  ``MultiEdit``) covers edit_file and write_file.
- ``WebFetch(domain:example.com)``: a fetch of that host (``*.example.com``: its subdomains).
- ``mcp__server`` or ``mcp__server__*``: every tool of that MCP server; ``mcp__server__tool``:
  one tool. Tiller's own tool names (``bash``, ``write_file``, ...) name those tools.

Precedence is Claude Code's: a matching deny rule wins, then an ask rule, then an allow
rule, whatever their scope or how specific they are. Rules never give more than the mode
allows in plan mode (see permissions.py).
"""

from __future__ import annotations

import functools
import os
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from tiller.errors import TillerError
from tiller.jsontypes import JSON
from tiller.workspace.tools.bash_segments import Segment

Effect = Literal["allow", "ask", "deny"]
EFFECTS: tuple[Effect, ...] = ("deny", "ask", "allow")  # precedence order
RuleScope = Literal["user", "workspace", "local", "session"]

# Claude Code's tool names and the Tiller tools each covers.
FAMILIES: Mapping[str, frozenset[str]] = {
    "Bash": frozenset({"bash"}),
    "Read": frozenset({"read_file", "grep", "list_files"}),
    "Grep": frozenset({"grep"}),
    "Glob": frozenset({"list_files"}),
    "LS": frozenset({"list_files"}),
    "Edit": frozenset({"edit_file", "write_file"}),
    "Write": frozenset({"edit_file", "write_file"}),
    "MultiEdit": frozenset({"edit_file", "write_file"}),
    "WebFetch": frozenset({"web_fetch"}),
    "WebSearch": frozenset({"web_search"}),
}
_TOOL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*(__\*)?")
_PATH_TOOLS = frozenset({"Read", "Grep", "Glob", "LS", "Edit", "Write", "MultiEdit"})


class RuleError(TillerError):
    """A rule that cannot be read; the message names the rule (and its file, when loaded)."""


@dataclass(frozen=True)
class Rule:
    """One rule as written, where it came from, and what it matches."""

    effect: Effect
    text: str  # as written: "Bash(git diff:*)"
    tool: str  # "Bash", "Read", "mcp__github", "write_file", ...
    specifier: str | None  # inside the parentheses; None: the whole tool
    scope: RuleScope
    source: str  # the file as shown (~ for home), or "session"
    exact: bool = False  # matches one segment's text exactly ("allow for session" makes it)

    def describe(self) -> str:
        """Who decided, as ``toolStarted.permission.by`` shows it."""
        where = self.scope if self.scope == "session" else f"{self.scope} {self.source}"
        return f"rule: {self.text} ({where})"

    def to_wire(self) -> JSON:
        return {
            "effect": self.effect,
            "rule": self.text,
            "scope": self.scope,
            "source": self.source,
        }


def parse_rule(text: str, effect: Effect, scope: RuleScope, source: str) -> Rule:
    """A rule from its text; RuleError naming what is wrong."""
    stripped = text.strip()
    if not stripped:
        raise RuleError("an empty rule")
    tool, paren, rest = stripped.partition("(")
    tool = tool.strip()
    if not _TOOL_NAME.fullmatch(tool):
        raise RuleError(f"{text!r}: {tool!r} is not a tool name (Bash, Read, Edit, mcp__x, ...)")
    specifier: str | None = None
    if paren:
        if not rest.endswith(")"):
            raise RuleError(f"{text!r}: no closing parenthesis")
        specifier = rest[:-1].strip()
        if specifier in ("", "*"):
            specifier = None  # Bash() and Bash(*) are Bash
    if tool.startswith("mcp__"):
        if specifier is not None:
            raise RuleError(f"{text!r}: MCP rules name tools, without parentheses")
        if tool.endswith("__*"):
            tool = tool[:-3]
    elif tool not in FAMILIES and not tool.islower():
        known = ", ".join(FAMILIES)
        raise RuleError(f"{text!r}: unknown tool {tool!r} (known: {known}, mcp__..., or a "
                        "Tiller tool name)")  # fmt: skip
    if specifier is not None:
        _check_specifier(text, tool, specifier)
    return Rule(effect, stripped, tool, specifier, scope, source)


def _check_specifier(text: str, tool: str, specifier: str) -> None:
    if tool == "WebFetch" and not specifier.startswith("domain:"):
        raise RuleError(f"{text!r}: WebFetch rules are WebFetch(domain:example.com)")
    if tool in ("Bash", "bash"):
        body = specifier[:-2] if specifier.endswith(":*") else specifier
        if ":*" in body:
            raise RuleError(f"{text!r}: ':*' may only end a Bash rule")
        try:
            shlex.split(body.replace("*", "x"))
        except ValueError as e:
            raise RuleError(f"{text!r}: {e}") from None


def rules_of(permissions: JSON, scope: RuleScope, source: str) -> tuple[list[Rule], list[str]]:
    """The rules of one ``permissions`` object (``{allow, ask, deny}``) and the problems of
    those that cannot be read, each naming the source and the rule."""
    rules: list[Rule] = []
    problems: list[str] = []
    for effect in EFFECTS:
        listed = permissions.get(effect, [])
        if not isinstance(listed, list):
            problems.append(f"{source}: permissions.{effect} is not a list")
            continue
        for i, text in enumerate(listed):
            if not isinstance(text, str):
                problems.append(f"{source}: permissions.{effect}[{i}] is not a string")
                continue
            try:
                rules.append(parse_rule(text, effect, scope, source))
            except RuleError as e:
                problems.append(f"{source}: permissions.{effect}[{i}]: {e}")
    return rules, problems


# --- matching ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Place:
    """Where paths resolve: the workspace and the home directory."""

    workspace: Path
    home: str

    @staticmethod
    def of(workspace: Path) -> Place:
        return Place(workspace, os.environ.get("HOME") or str(Path.home()))


def covers_tool(rule: Rule, tool_name: str) -> bool:
    if rule.tool.startswith("mcp__"):
        return tool_name == rule.tool or tool_name.startswith(rule.tool + "__")
    family = FAMILIES.get(rule.tool)
    return tool_name in family if family is not None else tool_name == rule.tool


def matches_call(rule: Rule, tool_name: str, tool_input: JSON, place: Place) -> bool:
    """Whether ``rule`` matches a (non-bash) call as a whole."""
    if not covers_tool(rule, tool_name):
        return False
    if rule.specifier is None:
        return True
    if rule.tool in _PATH_TOOLS:
        raw = tool_input.get("path")
        path = raw if isinstance(raw, str) and raw else "."
        candidates = _resolved(path, place)
        hits = [_path_matches(rule.specifier, c, place) for c in candidates]
        # deny and ask: any spelling of the path; allow: every one (a symlink into a denied
        # folder is denied, and never allowed by the name it was reached through alone)
        return all(hits) if rule.effect == "allow" else any(hits)
    if rule.tool == "WebFetch":
        url = tool_input.get("url")
        host = urlsplit(url).hostname if isinstance(url, str) else None
        return host is not None and _domain_matches(rule.specifier[len("domain:") :], host)
    return False  # a specifier Tiller does not know for this tool never matches


def _resolved(path: str, place: Place) -> list[str]:
    joined = os.path.normpath(os.path.join(place.workspace, os.path.expanduser(path)))
    real = os.path.realpath(joined)
    return [joined] if real == joined else [joined, real]


def _anchor(pattern: str, place: Place) -> tuple[str, bool]:
    """The absolute pattern, and whether it was anchored (a pattern with no ``/`` is not)."""
    if pattern.startswith("//"):
        return pattern[1:], True
    if pattern.startswith("~/"):
        return os.path.join(place.home, pattern[2:]), True
    root = str(place.workspace)
    if pattern.startswith("./"):
        pattern = pattern[2:]
    elif pattern.startswith("/"):
        pattern = pattern[1:]
    elif "/" not in pattern.rstrip("/"):
        return pattern, False
    return os.path.join(root, pattern), True


def _path_matches(pattern: str, path: str, place: Place) -> bool:
    absolute, anchored = _anchor(pattern, place)
    if not anchored:
        return any(_glob(absolute, part) for part in Path(path).parts)
    return _glob(absolute.rstrip("/"), path) or _glob(absolute.rstrip("/") + "/**", path)


def _glob(pattern: str, path: str) -> bool:
    """gitignore-style: ``**`` spans directories, ``*`` and ``?`` stay within one."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("/**", i) and pattern.endswith("/**") and i == len(pattern) - 3:
            out.append("(/.*)?")
            i += 3
        elif pattern.startswith("**/", i):
            out.append("(.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.fullmatch("".join(out), path) is not None


def _domain_matches(pattern: str, host: str) -> bool:
    host = host.lower().rstrip(".")
    pattern = pattern.lower().rstrip(".")
    if pattern.startswith("*."):
        return host.endswith(pattern[1:])
    return host == pattern


def matches_segment(rule: Rule, segment: Segment) -> bool:
    """Whether a Bash rule matches one simple command of a command line."""
    if not covers_tool(rule, "bash"):
        return False
    if rule.specifier is None:
        return True
    spec = rule.specifier
    if spec == segment.text:
        return True  # exactly what was shown
    if rule.exact:
        return False
    if segment.exact_only is not None:
        return False
    if spec.endswith(":*"):
        prefix = _words(spec[:-2])
        return prefix is not None and segment.words[: len(prefix)] == prefix
    if "*" in spec:
        return _wildcard(spec, " ".join(segment.words))
    return _words(spec) == segment.words


@functools.lru_cache(maxsize=4096)  # a rule's words, split once (shlex is slow)
def _words(text: str) -> tuple[str, ...] | None:
    try:
        return tuple(shlex.split(text))
    except ValueError:
        return None


def _wildcard(spec: str, text: str) -> bool:
    return _wildcard_regex(spec).fullmatch(text) is not None


@functools.lru_cache(maxsize=4096)
def _wildcard_regex(spec: str) -> re.Pattern[str]:
    body = spec[:-2] if spec.endswith(" *") and spec.count("*") == 1 else spec
    optional_tail = body != spec
    regex = ".*".join(re.escape(part) for part in body.split("*"))
    if optional_tail:
        regex += "( .*)?"
    return re.compile(regex, re.DOTALL)


# --- the rules in force ----------------------------------------------------------------------


@dataclass(frozen=True)
class RuleBook:
    """Every rule in force (files, then session), and the problems of those not read."""

    rules: tuple[Rule, ...] = ()
    problems: tuple[str, ...] = ()

    def with_rules(self, more: Iterable[Rule]) -> RuleBook:
        return RuleBook((*self.rules, *more), self.problems)

    def first(self, effect: Effect, matches: Iterable[Rule]) -> Rule | None:
        return next((r for r in matches if r.effect == effect), None)

    def deciding(self, matched: Sequence[Rule]) -> Rule | None:
        """The rule that decides among those that matched: deny, then ask, then allow."""
        for effect in EFFECTS:
            found = self.first(effect, matched)
            if found is not None:
                return found
        return None

    def for_call(self, tool_name: str, tool_input: JSON, place: Place) -> Rule | None:
        matched = [r for r in self.rules if matches_call(r, tool_name, tool_input, place)]
        return self.deciding(matched)

    def for_segment(self, segment: Segment) -> Rule | None:
        return self.deciding([r for r in self.rules if matches_segment(r, segment)])

    def for_unparsed(self, command: str) -> Rule | None:
        """The deciding rule for a line the parser could not split: only bare ``Bash`` rules
        and rules naming the whole line exactly match it."""
        text = command.strip()
        return self.deciding([r for r in self.rules if covers_tool(r, "bash")
                              and r.specifier in (None, text)])  # fmt: skip
