"""Permission rules: ``allow`` / ``ask`` / ``deny`` over tools and their arguments, written
in Claude Code's syntax, and which rule (if any) decides a call.

A rule is ``Tool`` or ``Tool(specifier)``. Every tool name Claude Code documents is understood
(``VOCABULARY``): each covers the Tiller tools that do its work, and its specifier names what
it names in Claude Code. Tiller's own tool names (``bash``, ``read_file``, ``task``, ...) cover
that tool alone, with the specifier of its family (``bash(rm:*)`` is ``Bash(rm:*)``).

- ``Bash(git diff:*)``: the words ``git diff``, alone or followed by more words (a word
  boundary: not ``git diffx``); ``Bash(npm install)``: exactly that command;
  ``Bash(git * main)``: ``*`` stands for any text, and a trailing `` *`` may match nothing
  (``Bash(ls *)`` matches ``ls``); ``Bash`` or ``Bash(*)``: every command.
  A command is judged per segment (``workspace/bash/segments.py``): each simple command must be
  matched on its own, so ``Bash(git status:*)`` never covers ``git status && rm -rf x``.
- ``Read(src/**)``, ``Edit(docs/**)``: gitignore-style paths (``path_rule_matches``, read by
  ``workspace/path_globs.py``): ``//abs`` from the filesystem root, ``~/x`` from the home
  directory, ``/x`` and ``./x`` and ``x/y`` from the workspace root; ``*``, ``?`` and ``[a-z]``
  within a name, ``**`` across directories; a pattern with no ``/`` matches a name at any
  depth; a deny or ask rule also matches Tiller's wider plain reading. ``Read`` covers
  read_file, grep and list_files; ``Edit`` (and ``Write``, ``MultiEdit``) covers edit_file and
  write_file; ``NotebookEdit`` and ``NotebookRead`` the same tools on ``*.ipynb`` files only.
- ``WebFetch(domain:example.com)``: a fetch of that host (``*.example.com``: its subdomains);
  domains are compared in one spelling (``model/web_domains.py``: IDNA, no port, no scheme).
- ``Agent(Explore)`` / ``Task(explore)``: the task tool starting that kind of agent (case
  folded: Claude Code's ``Explore`` is Tiller's ``explore``); ``Skill(name)``: loading that
  skill. ``WebSearch``, ``TodoWrite``, ``ExitPlanMode``, ... take no specifier.
- ``mcp__server`` or ``mcp__server__*``: every tool of that MCP server; ``mcp__server__tool``:
  one tool.

A rule that cannot be read is a problem (a notice); a **deny** rule that cannot be read fails
closed: it stands as an ask rule over its tool's family (``Bash(rm:*`` lacks its parenthesis:
every Bash call asks), or over every tool when not even the tool can be read.

Precedence is Claude Code's: a matching deny rule wins, then an ask rule, then an allow
rule, whatever their scope or how specific they are. Rules never give more than the mode
allows in plan mode (see core/permissions/modes.py).
"""

from __future__ import annotations

import fnmatch
import functools
import json
import os
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from tiller.errors import TillerError
from tiller.extend.agents import GENERAL
from tiller.jsontypes import JSON
from tiller.model.web_domains import WILDCARD, host_of, host_pattern_of
from tiller.workspace.bash.readings import program_name
from tiller.workspace.bash.segments import Segment, rough_words
from tiller.workspace.path_globs import rule_glob

Effect = Literal["allow", "ask", "deny"]
EFFECTS: tuple[Effect, ...] = ("deny", "ask", "allow")  # precedence order
RuleScope = Literal["user", "workspace", "local", "session"]

# What a rule's parentheses name: a command line, a path, a domain, an agent kind, a skill,
# a slash command; "none": the tool takes no specifier; "any": a tool Tiller does not have
# (its rules are understood and match no call, whatever their specifier).
SpecifierKind = Literal["command", "path", "domain", "agent", "skill", "slash", "none", "any"]


@dataclass(frozen=True)
class ToolFamily:
    """The Tiller tools a rule's tool name covers, and what its specifier names."""

    tools: frozenset[str]
    specifier: SpecifierKind
    suffix: str | None = None  # only paths ending so (NotebookEdit: ".ipynb")


def _family(kind: SpecifierKind, *tools: str, suffix: str | None = None) -> ToolFamily:
    return ToolFamily(frozenset(tools), kind, suffix)


_READS = ("read_file", "grep", "list_files")
_WRITES = ("edit_file", "write_file")
_NOTEBOOK = ".ipynb"
# Claude Code's tools that Tiller does not have (yet): understood, matching no call.
_NOT_IN_TILLER = (
    "BashOutput", "KillShell", "KillBash", "AskUserQuestion", "CronCreate", "CronDelete",
    "CronList", "EnterWorktree", "ExitWorktree", "ListMcpResourcesTool", "ReadMcpResourceTool",
    "LSP", "Monitor", "PowerShell", "SendMessage", "TaskCreate", "TaskGet", "TaskList",
    "TaskOutput", "TaskStop", "TaskUpdate",
)  # fmt: skip
_PLAIN_TILLER_TOOLS = ("web_search", "todo_write", "enter_plan_mode", "exit_plan_mode",
                       "tool_search")  # fmt: skip
# Claude Code's tool names (code.claude.com/docs/en/tools-reference), then Tiller's own.
VOCABULARY: Mapping[str, ToolFamily] = {
    "Bash": _family("command", "bash"),
    "Read": _family("path", *_READS),
    "Grep": _family("path", "grep"),
    "Glob": _family("path", "list_files"),
    "LS": _family("path", "list_files"),
    "Edit": _family("path", *_WRITES),
    "Write": _family("path", *_WRITES),
    "MultiEdit": _family("path", *_WRITES),
    "NotebookEdit": _family("path", *_WRITES, suffix=_NOTEBOOK),
    "NotebookRead": _family("path", "read_file", suffix=_NOTEBOOK),
    "WebFetch": _family("domain", "web_fetch"),
    "WebSearch": _family("none", "web_search"),
    "TodoWrite": _family("none", "todo_write"),
    "Task": _family("agent", "task"),
    "Agent": _family("agent", "task"),
    "Skill": _family("skill", "skill"),
    "ExitPlanMode": _family("none", "exit_plan_mode"),
    "EnterPlanMode": _family("none", "enter_plan_mode"),
    "ToolSearch": _family("none", "tool_search"),
    # Tiller's model cannot run a slash command itself: such rules match no call today.
    "SlashCommand": _family("slash"),
    **{name: _family("any") for name in _NOT_IN_TILLER},
    "bash": _family("command", "bash"),
    **{name: _family("path", name) for name in (*_READS, *_WRITES)},
    "web_fetch": _family("domain", "web_fetch"),
    "task": _family("agent", "task"),
    "skill": _family("skill", "skill"),
    **{name: _family("none", name) for name in _PLAIN_TILLER_TOOLS},
}
# Claude Code's tool names and the Tiller tools each covers.
FAMILIES: Mapping[str, frozenset[str]] = {
    name: family.tools for name, family in VOCABULARY.items() if not name.islower()
}
EVERY_TOOL = "*"  # the tool of an unreadable deny whose tool cannot be read either
DOMAIN = "domain:"
_TOOL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*(__\*)?")


class RuleError(TillerError):
    """A rule that cannot be read; the message names the rule (and its file, when loaded)."""


@dataclass(frozen=True)
class Rule:
    """One rule as written, where it came from, and what it matches."""

    effect: Effect
    text: str  # as written: "Bash(git diff:*)"
    tool: str  # "Bash", "Read", "mcp__github", "write_file", ...; EVERY_TOOL: see unreadable
    specifier: str | None  # inside the parentheses; None: the whole tool
    scope: RuleScope
    source: str  # the file as shown (~ for home), or "session"
    exact: bool = False  # matches one segment's text exactly ("allow for session" makes it)
    # A deny rule that could not be read, standing as an ask rule over what it may have meant
    # (its tool's family, or every tool): a deny that cannot be read fails closed.
    unreadable: bool = False

    def describe(self) -> str:
        """Who decided, as ``toolStarted.permission.by`` shows it."""
        where = self.scope if self.scope == "session" else f"{self.scope} {self.source}"
        if self.unreadable:
            return f"unreadable deny rule: {self.text} ({where})"
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
        return Rule(effect, stripped, tool.removesuffix("__*"), None, scope, source)
    family = VOCABULARY.get(tool)
    if family is None:
        raise RuleError(f"{text!r}: unknown tool {tool!r} (known: Claude Code's tool names "
                        f"such as {', '.join(list(FAMILIES)[:12])}, ...; Tiller's, such as "
                        "bash or read_file; or mcp__server__tool)")  # fmt: skip
    if specifier is not None:
        specifier = _read_specifier(text, tool, family.specifier, specifier)
    return Rule(effect, stripped, tool, specifier, scope, source)


def _read_specifier(text: str, tool: str, kind: SpecifierKind, specifier: str) -> str | None:
    """The specifier as matched (None: the whole tool); RuleError if ``tool`` cannot take it."""
    match kind:
        case "command":
            body = specifier[:-2] if specifier.endswith(":*") else specifier
            if ":*" in body:
                raise RuleError(f"{text!r}: ':*' may only end a Bash rule")
            try:
                shlex.split(body.replace("*", "x"))
            except ValueError as e:
                raise RuleError(f"{text!r}: {e}") from None
            return specifier
        case "domain":
            if not specifier.startswith(DOMAIN):
                raise RuleError(f"{text!r}: WebFetch rules are WebFetch(domain:example.com)")
            written = specifier[len(DOMAIN) :].strip()
            if written == "*":
                return None  # every domain: the whole tool
            pattern = host_pattern_of(written)
            if pattern is None:
                raise RuleError(f"{text!r}: {written!r} is not a host (example.com, "
                                "*.example.com)")  # fmt: skip
            return DOMAIN + pattern
        case "skill":  # Claude Code's Skill(name:*) / Skill(name *): the skill, any arguments
            name = specifier.removesuffix(":*").removesuffix(" *").strip()
            return name or None
        case "none":
            raise RuleError(f"{text!r}: {tool} takes no specifier (write {tool})")
        case "path" | "agent" | "slash" | "any":
            return specifier


def unreadable_deny(text: str, scope: RuleScope, source: str) -> Rule:
    """What a deny rule that cannot be read stands for: an ask rule over its tool's family
    when the tool part names a known tool (``Bash(rm:*``: every Bash call), else over every
    tool. Its ``describe`` names the rule as written."""
    name = text.strip().partition("(")[0].strip()
    if name.startswith("mcp__") and _TOOL_NAME.fullmatch(name):
        tool = name.removesuffix("__*")
    else:
        tool = name if name in VOCABULARY else EVERY_TOOL
    return Rule("ask", text.strip(), tool, None, scope, source, unreadable=True)


def _failing_closed(rule: Rule) -> str:
    what = "every tool call" if rule.tool == EVERY_TOOL else f"every {rule.tool} call"
    return f"; until it is fixed, {what} is asked"


def rules_of(permissions: JSON, scope: RuleScope, source: str) -> tuple[list[Rule], list[str]]:
    """The rules of one ``permissions`` object (``{allow, ask, deny}``) and the problems of
    those that cannot be read, each naming the source and the rule. An entry that cannot be
    read never stops the others; a deny entry that cannot be read is kept as
    ``unreadable_deny`` (a deny list that is not a list: over every tool)."""
    rules: list[Rule] = []
    problems: list[str] = []
    for effect in EFFECTS:
        listed = permissions.get(effect, [])
        if not isinstance(listed, list):
            where = f"{source}: permissions.{effect} is not a list"
            if effect == "deny":
                closed = unreadable_deny(f"permissions.deny: {_shown(listed)}", scope, source)
                rules.append(closed)
                where += _failing_closed(closed)
            problems.append(where)
            continue
        for i, entry in enumerate(listed):
            where = f"{source}: permissions.{effect}[{i}]"
            if isinstance(entry, str) and not entry.strip():
                problems.append(f"{where}: an empty rule")  # it names nothing to deny
                continue
            if isinstance(entry, str):
                try:
                    rules.append(parse_rule(entry, effect, scope, source))
                    continue
                except RuleError as e:
                    problem, written = f"{where}: {e}", entry
            else:
                problem, written = f"{where} is not a string", _shown(entry)
            if effect == "deny":
                closed = unreadable_deny(written, scope, source)
                rules.append(closed)
                problem += _failing_closed(closed)
            problems.append(problem)
    return rules, problems


def _shown(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:59] + "…"


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
    """Whether ``rule``'s tool name covers the Tiller tool ``tool_name``."""
    if rule.tool == EVERY_TOOL:
        return True
    if rule.tool.startswith("mcp__"):
        return tool_name == rule.tool or tool_name.startswith(rule.tool + "__")
    family = VOCABULARY.get(rule.tool)
    return family is not None and tool_name in family.tools


def matches_call(rule: Rule, tool_name: str, tool_input: JSON, place: Place) -> bool:
    """Whether ``rule`` matches a (non-bash) call as a whole."""
    if not covers_tool(rule, tool_name):
        return False
    family = VOCABULARY.get(rule.tool)
    kind = family.specifier if family is not None else None
    if kind == "path":
        raw = tool_input.get("path")
        return path_rule_matches(rule, raw if isinstance(raw, str) and raw else ".", place)
    if rule.specifier is None:
        return True
    match kind:
        case "domain":
            url = tool_input.get("url")
            host = host_of(url) if isinstance(url, str) else None
            if host is None:
                return rule.effect != "allow"  # a host that cannot be read: only allow misses
            return _domain_matches(rule.specifier.removeprefix(DOMAIN), host)
        case "agent":
            wanted = tool_input.get("subagent_type") or GENERAL.name
            return isinstance(wanted, str) and wanted.casefold() == rule.specifier.casefold()
        case "skill":
            name = tool_input.get("name")
            return isinstance(name, str) and name.casefold() == rule.specifier.casefold()
        case _:
            return False  # a Bash rule's command is matched per segment (matches_segment)


def path_rule_matches(rule: Rule, path: str, place: Place) -> bool:
    """Whether ``rule`` covers ``path`` as a call or a command names it (relative to the
    workspace, ``~/…`` or absolute). Only path rules (``Read``, ``Edit``, ``NotebookEdit``,
    ``read_file``, ...) match a path: a bare one every path (a notebook rule every ``.ipynb``),
    a rule of another kind none, the stand-in of an unreadable deny over every tool all.

    Deny and ask rules match when any spelling of the path matches (as written, or with its
    symlinks resolved; or the rule's folder named by its own resolved name), allow rules only
    when every spelling does under the rule as written: a symlink into a denied folder is
    denied by either name, and never allowed by the name it was reached through alone."""
    if rule.tool == EVERY_TOOL:
        return True
    family = VOCABULARY.get(rule.tool)
    if family is None or family.specifier != "path":
        return False
    if rule.specifier is None and family.suffix is None:
        return True  # every path, however it is spelt
    allow = rule.effect == "allow"
    spellings = _spellings(path, place)
    if spellings is None:  # where it lands cannot be told: only allow misses
        return not allow
    hits = [_spelling_matches(rule, family.suffix, s, place) for s in spellings]
    return all(hits) if allow else any(hits)


def _spelling_matches(rule: Rule, suffix: str | None, path: str, place: Place) -> bool:
    if suffix is not None and not path.lower().endswith(suffix):
        return False
    if rule.specifier is None:
        return True
    return _path_matches(rule.specifier, path, place, wide=rule.effect != "allow")


def _spellings(path: str, place: Place) -> list[str] | None:
    """The absolute path as written and with its symlinks resolved; None if it cannot be
    resolved (a folder swapped while it is read, a NUL byte)."""
    if path == "~" or path.startswith("~/"):
        path = place.home + path[1:]
    try:
        joined = os.path.normpath(os.path.join(place.workspace, os.path.expanduser(path)))
        real = os.path.realpath(joined)
    except (OSError, ValueError):
        return None
    return [joined] if real == joined else [joined, real]


def _anchor(pattern: str, place: Place) -> tuple[str | None, str]:
    """The folder a pattern is anchored in and the rest of it; no folder for a pattern with
    no ``/`` but a trailing one: it names a file or folder at any depth."""
    if pattern.startswith("//"):
        return "/", pattern[2:]
    if pattern.startswith("~/"):
        return place.home, pattern[2:]
    if pattern.startswith("./"):
        return str(place.workspace), pattern[2:]
    if pattern.startswith("/"):
        return str(place.workspace), pattern[1:]
    if "/" not in pattern.rstrip("/"):
        return None, pattern
    return str(place.workspace), pattern


def _path_matches(pattern: str, path: str, place: Place, *, wide: bool) -> bool:
    """``wide`` (deny and ask): the pattern's wide reading (``path_globs.rule_glob``), the
    rule's folder counts under its resolved name too, and a name pattern matches outside the
    workspace."""
    folder, rest = _anchor(pattern, place)
    if folder is None:
        relative = _relative(path, place, outside=wide)
        return relative is not None and rule_glob(rest, folder=None, wide=wide).matches(relative)
    anchors = [(folder, rest), *_resolved_head(folder, rest)] if wide else [(folder, rest)]
    return any(rule_glob(r, folder=f, wide=wide).matches(path) for f, r in anchors)


def _relative(path: str, place: Place, *, outside: bool) -> str | None:
    """What a pattern without ``/`` is matched against: the path below the workspace (its
    own folders' names never count), or for a path outside it, the whole path if
    ``outside``."""
    root = str(place.workspace).rstrip("/") + "/"
    if path.startswith(root):
        return path[len(root) :]
    if not outside or not path.strip("/") or path == root.rstrip("/"):
        return None
    return path


def _resolved_head(folder: str, rest: str) -> list[tuple[str, str]]:
    """The anchor with the folders before the pattern's first wildcard resolved, if that
    differs (a rule naming a symlinked folder also covers the folder by its own name)."""
    parts = rest.rstrip("/").split("/") if rest.strip("/") else []
    first = next((i for i, p in enumerate(parts) if any(c in p for c in _WILD)), len(parts))
    head = os.path.join(folder, *parts[:first]).rstrip("/") or "/"
    try:
        real = os.path.realpath(head)
    except (OSError, ValueError):
        return []
    return [] if real == head else [(real, "/".join(parts[first:]))]


_WILD = "*?[\\"  # a name with one of these is a pattern, in gitignore's reading or Tiller's


def _domain_matches(pattern: str, host: str) -> bool:
    """Whether a WebFetch rule's domain covers ``host``: that host, or with ``*.``, its
    subdomains (never the apex); both sides in one spelling (``model/web_domains.py``)."""
    wanted, got = host_pattern_of(pattern), host_of(host)
    if wanted is None or got is None:
        return False
    if wanted.startswith(WILDCARD):
        return got.endswith("." + wanted.removeprefix(WILDCARD))
    return got == wanted


def matches_segment(rule: Rule, segment: Segment) -> bool:
    """Whether a Bash rule matches one command of a command line (``workspace/bash/segments.py``).

    Any rule matches the segment's text exactly as shown. A deny or ask rule matches any of
    its readings for deny (``workspace/bash/readings.py``: wrappers, assignments and program paths
    stripped), a word bash decides at run time standing for any words: it could be what the
    rule names. An allow rule matches the segment as written or through the wrappers Claude
    Code's docs name, never a reading only an exact rule may allow (``exact_only``), and never
    with a word decided at run time standing for a word the rule writes out."""
    if not covers_tool(rule, "bash"):
        return False
    if rule.specifier is None:
        return True
    spec = rule.specifier
    if spec == segment.text:
        return True  # exactly what was shown
    if rule.exact:
        return False
    if rule.effect == "allow":
        return any(r.exact_only is None and _allows(spec, r.words) for r in segment.allow_readings)
    return any(_may_match(spec, words) for words in segment.deny_readings)


_DYNAMIC = "\x00"  # a word decided at run time, in a reading's text: only ``*`` matches it


def _allows(spec: str, words: tuple[str | None, ...]) -> bool:
    """An allow rule against one reading: its words exactly (a dynamic word equals none)."""
    if spec.endswith(":*"):
        prefix = _words(spec[:-2])
        return prefix is not None and words[: len(prefix)] == prefix
    if "*" in spec:
        return _wildcard(spec, " ".join(_DYNAMIC if w is None else w for w in words))
    return _words(spec) == words


def _may_match(spec: str, words: tuple[str | None, ...]) -> bool:
    """A deny or ask rule against one reading: whether some value of its dynamic words
    makes it match (each may be any words, or none)."""
    if None not in words:
        return _allows(spec, words)
    if spec.endswith(":*") or "*" not in spec:
        body = spec[:-2] if spec.endswith(":*") else spec
        pattern: list[object] = list(_words(body) or body.split())
        if spec.endswith(":*"):
            pattern.append(_ANY)
        return _may_equal(pattern, [_ANY if w is None else w for w in words])
    text: list[object] = []
    for i, word in enumerate(words):
        if i:
            text.append(" ")
        text.extend([_ANY] if word is None else list(word))
    body = spec[:-2] if spec.endswith(" *") and spec.count("*") == 1 else spec
    tails = ("", " *") if body != spec else ("",)
    return any(_may_equal([_ANY if c == "*" else c for c in body + tail], text) for tail in tails)


_ANY = object()  # any run of tokens, maybe none


def _may_equal(pattern: Sequence[object], text: Sequence[object]) -> bool:
    """Whether one sequence matches both ``pattern`` and ``text``, each a list of tokens and
    ``_ANY`` (any run of tokens, maybe none): a simulation over ``pattern``'s positions."""
    end = len(pattern)

    def closure(states: set[int]) -> set[int]:
        out = set(states)
        stack = list(states)
        while stack:
            at = stack.pop()
            if at < end and pattern[at] is _ANY and at + 1 not in out:
                out.add(at + 1)
                stack.append(at + 1)
        return out

    states = closure({0})
    for token in text:
        if token is _ANY:  # any run of text can stand for any stretch of the pattern
            states = set(range(min(states), end + 1))
        else:
            states = closure(
                {at if pattern[at] is _ANY else at + 1 for at in states
                 if at < end and (pattern[at] is _ANY or pattern[at] == token)}
            )  # fmt: skip
        if not states:
            return False
    return end in states


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


def _names_a_word(spec: str, words: frozenset[str]) -> bool:
    """Whether a Bash rule's program is among ``words`` (a ``*`` in it: any that fits)."""
    body = spec[:-2] if spec.endswith(":*") else spec
    split = _words(body) or tuple(body.split())
    first = split[0] if split else ""
    if "*" in first:
        return first == "*" or any(fnmatch.fnmatchcase(w, first) for w in words)
    return first in words or program_name(first) in words


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
        """The deciding rule for a line the parser cannot read. Only deny and ask rules
        decide it (it never runs unasked): a bare one, one naming the whole line, or one whose
        program appears among the line's words (``bash_segments.rough_words``: fail closed)."""
        text = command.strip()
        words = rough_words(command)
        return self.deciding([r for r in self.rules if r.effect != "allow"
                              and covers_tool(r, "bash") and (r.specifier in (None, text)
                              or _names_a_word(r.specifier, words))])  # fmt: skip
