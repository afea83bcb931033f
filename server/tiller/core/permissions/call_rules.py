"""What the permission rules say about one tool call, before the mode has its say.

A command line is split into every command bash would run (``workspace/bash/segments.py``)
and judged per segment:

- a deny rule matching any reading of any segment denies the command
  (``workspace/bash/readings.py``: wrappers, assignments, program paths stripped; a word
  decided at run time may be anything); an ask rule asks;
- a ``Read`` deny or ask rule matching a path a segment names (its operands, an option's
  ``=value`` or attached value (``-o.env``), globs expanded in the workspace, ``< file``)
  denies or asks; so does an ``Edit`` rule matching what it writes (``> file``, and the
  operands of a segment not proved read-only). A path decided at run time (an expansion, a
  glob over budget, a relative path after ``cd``) asks while such a rule is in force: it
  cannot be told;
- the rules allow the command only when every segment is allowed by a rule or is provably
  read-only by itself (``workspace/bash/readonly.py``; not after a ``cd``, which moves where the
  later segments read). A git command a rule allowed must pass the classifier's git-config check
  (``repository_is_inert``), else the call is asked.

Anything else is left to the mode, with the split kept for the approval card. A line the
parser cannot read is decided by deny and ask rules only (a bare one, or one whose program is
a word of the line), and otherwise asked: no allow rule ever allows it. Other calls are matched
as a whole (paths, domains, MCP names).
"""

from __future__ import annotations

import fnmatch
import os
import re
import string
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from tiller.core.permissions.rule_files import is_rules_file
from tiller.core.permissions.rules import (
    VOCABULARY,
    Effect,
    Place,
    Rule,
    RuleBook,
    covers_tool,
    path_rule_matches,
)
from tiller.jsontypes import JSON
from tiller.workspace.bash.readings import program_name, strip_assignments
from tiller.workspace.bash.readonly import git_repository_inert
from tiller.workspace.bash.segments import Segment, Unreadable, split_command
from tiller.workspace.bash.words import Word

_MOVES = frozenset({"cd", "pushd", "popd"})
_PRINTERS = frozenset({"echo", "printf"})  # their operands name no file
GLOB_SCAN_BUDGET = 5_000  # directory entries a segment's globs may look at
GLOB_MATCH_BUDGET = 500  # names they may expand to
CLUSTER_LETTERS = 32  # letters of a short option cluster whose tails are tried as paths
_OPTION_LETTERS = string.ascii_letters + string.digits
# A command line that names a settings file, .mcp.json, the user's trust record or Claude
# Code's state file (and is not proved read-only) may write rules or trust: always asked.
RULES_FILE_NAMED = re.compile(
    r"(\.claude|\.tiller|tiller)/+['\"]?settings(\.local)?\.json"
    r"|trusted-folders\.json|\.claude\.json|\.mcp\.json"
)

ReadOnlyCheck = Callable[[str], bool]


@dataclass(frozen=True)
class JudgedSegment:
    """One segment, what decided it (a rule, a path rule, or ``read-only``) and how;
    ``decision`` None: nothing covers it, the mode decides."""

    segment: Segment
    decision: Effect | None
    by: str | None

    def to_wire(self) -> JSON:
        wire: JSON = {"text": self.segment.text, "decision": self.decision or "mode"}
        if self.by is not None:
            wire["rule"] = self.by
        if self.segment.exact_only is not None:
            wire["exactOnly"] = self.segment.exact_only
        return wire


@dataclass(frozen=True)
class Ruled:
    """What the rules decided about a call: ``effect`` None when they leave it to the mode;
    ``by``: the deciding rule(s); ``segments``: a command's split (None: not a command, or
    unreadable); ``protected``: the call writes a permission-rules file; ``unparsed``: a
    command line the parser could not read (it never runs unasked)."""

    effect: Effect | None = None
    by: str | None = None
    segments: tuple[JudgedSegment, ...] | None = None
    protected: bool = False
    unparsed: str | None = None

    def segments_to_wire(self) -> list[JSON] | None:
        return None if self.segments is None else [s.to_wire() for s in self.segments]


NOT_RULED = Ruled()


def judge(
    tool_name: str,
    kind: str,
    tool_input: JSON,
    book: RuleBook,
    workspace: Path,
    read_only: ReadOnlyCheck,
    others: Sequence[Path] = (),
) -> Ruled:
    """What ``book`` says about one call (in a worker thread: it may parse and stat).
    ``others``: the workspace's other roots."""
    place = Place.of(workspace)
    if kind == "bash":
        command = tool_input.get("command")
        line = command if isinstance(command, str) else ""
        ruled = _git_checked(judge_command(line, book, read_only, place), workspace, others)
        if RULES_FILE_NAMED.search(line) and not read_only(line):
            return replace(ruled, protected=True)  # may write a rules file: always asked
        return ruled
    rule = book.for_call(tool_name, tool_input, place)
    path = tool_input.get("path")
    protected = kind == "edit" and isinstance(path, str) and is_rules_file(path, workspace)
    if rule is None:
        return Ruled(protected=protected)
    return Ruled(rule.effect, rule.describe(), protected=protected)


def judge_command(
    command: str, book: RuleBook, read_only: ReadOnlyCheck, place: Place | None = None
) -> Ruled:
    """What ``book`` says about a command line run in ``place`` (default: here)."""
    split = split_command(command)
    if isinstance(split, Unreadable):
        whole = book.for_unparsed(command)
        if whole is None:
            return Ruled(unparsed=command)
        return Ruled(whole.effect, whole.describe(), unparsed=command)
    moved = any(_moves(s) for s in split)
    paths = _PathRules.of(book, place or Place.of(Path.cwd()), moved=moved)
    commands = RuleBook(tuple(r for r in book.rules if covers_tool(r, "bash")))
    judged = tuple(_segment(s, commands, None if moved else read_only, paths) for s in split)
    across = _across_segments(book, command)
    for effect in ("deny", "ask"):
        found = next((j for j in judged if j.decision == effect), None)
        if found is not None:
            return Ruled(found.decision, found.by, judged)
        if across is not None and across.effect == effect:
            return Ruled(effect, across.describe(), judged)
    if all(j.decision == "allow" for j in judged) and any(j.by != "read-only" for j in judged):
        deciders = list(dict.fromkeys(str(j.by) for j in judged))
        return Ruled("allow", "; ".join(deciders), judged)
    return Ruled(None, None, judged)


_OPERATOR = re.compile(r"\s*(\|\||&&|\|&|\||;)\s*")


def _across_segments(book: RuleBook, command: str) -> Rule | None:
    """A deny or ask rule that names a pipeline or list (``Bash(curl * | bash)``): no one
    segment can match it, so it is looked for in the whole line (spaces around ``|``,
    ``&&``, ``||`` and ``;`` do not count)."""
    line = _OPERATOR.sub(r" \1 ", command.strip())
    matched: list[Rule] = []
    for rule in book.rules:
        spec = rule.specifier
        if rule.effect == "allow" or spec is None or not covers_tool(rule, "bash"):
            continue
        if not _OPERATOR.search(spec):
            continue
        body = _OPERATOR.sub(r" \1 ", spec.removesuffix(":*"))
        regex = ".*".join(re.escape(part) for part in body.split("*"))
        if re.search(regex, line, re.DOTALL):
            matched.append(rule)
    return book.deciding(matched)


def _moves(segment: Segment) -> bool:
    """Whether some reading of ``segment`` changes the directory later segments run in."""
    for reading in segment.deny_readings:
        rest = strip_assignments(reading)
        if rest and (rest[0] is None or program_name(rest[0]) in _MOVES):
            return True
    return False


def _segment(
    segment: Segment, book: RuleBook, read_only: ReadOnlyCheck | None, paths: _PathRules
) -> JudgedSegment:
    rule = book.for_segment(segment)
    if rule is not None and rule.effect == "deny":
        return JudgedSegment(segment, "deny", _why(rule, segment))
    proof: list[bool] = []

    def proved() -> bool:  # the classifier runs at most once per segment, and only if needed
        if not proof:
            proof.append(read_only is not None and read_only(segment.text))
        return proof[0]

    path = paths.judge(segment, proved)
    if path is not None and path[0] == "deny":
        return JudgedSegment(segment, "deny", path[1])
    if rule is not None and rule.effect == "ask":
        return JudgedSegment(segment, "ask", _why(rule, segment))
    if path is not None:
        return JudgedSegment(segment, path[0], path[1])
    if rule is not None:
        return JudgedSegment(segment, rule.effect, rule.describe())
    if proved():
        return JudgedSegment(segment, "allow", "read-only")
    return JudgedSegment(segment, None, None)


def _why(rule: Rule, segment: Segment) -> str:
    """The deny or ask rule, and when the segment holds a word decided at run time, that
    it may have matched through it."""
    if rule.specifier is not None and any(None in r for r in segment.deny_readings):
        return f"{rule.describe()}; a word decided at run time may make it match"
    return rule.describe()


# --- paths a command reads and writes, against Read and Edit rules ----------------------------


def _path_rules(book: RuleBook, tool: str) -> tuple[Rule, ...]:
    """The deny and ask rules over paths that cover ``tool``, deny rules first."""
    found = [
        r
        for r in book.rules
        if r.effect != "allow"
        and r.tool in VOCABULARY
        and VOCABULARY[r.tool].specifier == "path"
        and covers_tool(r, tool)
    ]
    return tuple(sorted(found, key=lambda r: r.effect != "deny"))


@dataclass(frozen=True)
class _PathRules:
    """The ``Read`` and ``Edit`` deny/ask rules, and where the command's paths resolve."""

    read: tuple[Rule, ...]
    edit: tuple[Rule, ...]
    place: Place
    moved: bool  # a cd in the line: where a relative path lands cannot be told
    # What each rule said of each path in this line (resolving a path stats the disk).
    seen: dict[tuple[Rule, str], bool] = field(default_factory=dict, compare=False)

    @staticmethod
    def of(book: RuleBook, place: Place, *, moved: bool) -> _PathRules:
        edit = tuple(dict.fromkeys((*_path_rules(book, "write_file"),
                                    *_path_rules(book, "edit_file"))))  # fmt: skip
        return _PathRules(_path_rules(book, "read_file"), edit, place, moved)

    def judge(self, segment: Segment, proved: Callable[[], bool]) -> tuple[Effect, str] | None:
        """A deny or ask from a path rule for what ``segment`` reads or writes, with why."""
        verdicts: list[tuple[Effect, str]] = []
        if self.read:
            named = (*_operands(segment), *segment.reads)
            verdicts.extend(self.check(named, self.read))
        if self.edit and (segment.writes or segment.operands):
            written = list(segment.writes)
            if segment.operands and not proved():
                written.extend(_operands(segment))
            verdicts.extend(self.check(written, self.edit))
        return next((v for v in verdicts if v[0] == "deny"), None) or next(iter(verdicts), None)

    def check(self, words: Sequence[Word], rules: Sequence[Rule]) -> Iterator[tuple[Effect, str]]:
        unknown = False
        for word in words:
            places = self.paths_of(word)
            if places is None:
                unknown = True
                continue
            for path in places:
                rule = next((r for r in rules if self.matches(r, path)), None)
                if rule is not None:
                    yield rule.effect, rule.describe()
        if unknown:
            yield "ask", f"{rules[0].describe()} may match a path decided at run time"

    def matches(self, rule: Rule, path: str) -> bool:
        key = (rule, path)
        if key not in self.seen:
            self.seen[key] = path_rule_matches(rule, path, self.place)
        return self.seen[key]

    def paths_of(self, word: Word) -> list[str] | None:
        """The paths a word names (a glob expanded as bash would); None: not known now."""
        if word.value is not None:
            value = word.value
            relative = not value.startswith(("/", "~"))
            return None if self.moved and relative else [value]
        if word.glob is None or (self.moved and not word.glob.startswith(("/", "~"))):
            return None
        return _expand(word.glob, self.place)


def _operands(segment: Segment) -> Iterator[Word]:
    """The words of a segment that may name files: its operands, and the values its options
    may carry (every word after the program: a wrapper's operands hold its command's)."""
    if segment.program in _PRINTERS:
        return
    for word in segment.operands:
        value = word.value
        if value is None:
            yield word
        elif value.startswith("-") and value != "-":
            yield from _option_values(word, value)
        elif value:
            yield word


def _option_values(word: Word, option: str) -> Iterator[Word]:
    """The paths an option may carry: its ``=value`` (``--output=F``, Go's
    ``-coverprofile=F``) and, in a cluster of short options, each tail that one of its
    letters may take as its value (``-o.env``, ``-rf.env``: which letters take a value, only
    the program knows). A cluster too long to try every tail of is a path decided at run time."""
    _name, equals, given = option.partition("=")
    if equals and given:
        yield Word(word.text, given)
    if option.startswith("--"):
        return
    cluster = option[1:]
    letters = len(cluster) - len(cluster.lstrip(_OPTION_LETTERS))
    if letters > CLUSTER_LETTERS:
        yield Word(word.text, None)
        return
    for start in range(2, min(letters + 2, len(option))):
        yield Word(word.text, option[start:])


def _expand(pattern: str, place: Place) -> list[str] | None:
    """The names bash gives an unquoted glob in the workspace (dot files only for a part
    that starts with a dot); None when that takes more than the budget."""
    if pattern.startswith("~/"):
        pattern = place.home.rstrip("/") + pattern[1:]
    found = ["/"] if pattern.startswith("/") else [""]
    scanned = 0
    for part in pattern.split("/"):
        if not part:
            continue
        literal = re.sub(r"\[([*?\[])\]", r"\1", part)
        if not re.search(r"[*?]|\[.*\]", re.sub(r"\[[*?\[]\]", "", part)):
            found = [os.path.join(f, literal) for f in found]
            continue
        matched: list[str] = []
        for folder in found:
            where = os.path.join(place.workspace, folder) if not folder.startswith("/") else folder
            try:
                with os.scandir(where or ".") as entries:
                    for entry in entries:
                        scanned += 1
                        if scanned > GLOB_SCAN_BUDGET:
                            return None
                        hidden = entry.name.startswith(".") and not part.startswith(".")
                        if not hidden and fnmatch.fnmatchcase(entry.name, part):
                            matched.append(os.path.join(folder, entry.name))
            except OSError:
                continue
        if len(matched) > GLOB_MATCH_BUDGET:
            return None
        found = matched
    return found


# --- git that runs because a rule allowed it ----------------------------------------------------


def _git_checked(ruled: Ruled, workspace: Path, others: Sequence[Path]) -> Ruled:
    """A command the rules allow whose git (by any reading) could run a program the
    repository's configuration names is asked instead, saying why: the classifier's
    git-config check, for git that runs without the user's yes."""
    if ruled.effect != "allow" or ruled.segments is None:
        return ruled
    moved = any(_moves(j.segment) for j in ruled.segments)
    for index, judged in enumerate(ruled.segments):
        if judged.by == "read-only":
            continue  # the classifier checked its git already
        for reading in judged.segment.deny_readings:
            rest = strip_assignments(reading)
            if not rest or rest[0] is None or program_name(rest[0]) != "git":
                continue
            args = rest[1:]
            known = [a for a in args if a is not None]
            if moved or len(known) < len(args) or not git_repository_inert(known, workspace,
                                                                            others):  # fmt: skip
                why = (
                    "the git repository's configuration may run a program, or git may find a "
                    f"repository outside the workspace (allowed by {judged.by})"
                )
                asked = replace(judged, decision="ask", by=why)
                segments = (*ruled.segments[:index], asked, *ruled.segments[index + 1 :])
                return Ruled("ask", why, segments, ruled.protected, ruled.unparsed)
    return ruled


# --- allow for session ----------------------------------------------------------------------------


def session_rules_for(ruled: Ruled) -> tuple[Rule, ...]:
    """The rules "allow for session" adds for a command: one per segment the rules did not
    already allow, naming exactly the text shown (never a program's prefix). A line the
    parser could not read gets none: no rule ever allows it, it is asked each time."""
    if ruled.unparsed is not None or ruled.segments is None:
        return ()
    return tuple(exact_rule(j.segment.text) for j in ruled.segments if j.decision != "allow")


def exact_rule(text: str) -> Rule:
    """A rule that matches one segment's text exactly (even with ``*`` or ``:*`` in it)."""
    return Rule("allow", f"Bash({text})", "Bash", text, "session", "session", exact=True)
