"""What the permission rules say about one tool call, before the mode has its say.

A command line is judged per segment (``bash_segments.py``): a deny rule on any segment denies
the command, an ask rule on any segment asks, and the rules allow it only when every segment
is allowed by a rule or is provably read-only by itself (``bash_readonly.py``; not after a
``cd``, which moves where the later segments read). Anything else is left to the mode, with the
split kept for the approval card. A line that cannot be parsed is matched by bare ``Bash``
rules only. Other calls are matched as a whole (paths, domains, MCP names).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from tiller.core.permission_rules import Effect, Place, Rule, RuleBook
from tiller.core.rule_files import is_rules_file
from tiller.jsontypes import JSON
from tiller.workspace.tools.bash_segments import Segment, split_segments

_MOVES = frozenset({"cd", "pushd", "popd"})
# A command line that names a settings file (and is not proved read-only) may write rules.
RULES_FILE_NAMED = re.compile(r"(\.claude|\.tiller|tiller)/+['\"]?settings(\.local)?\.json")

ReadOnlyCheck = Callable[[str], bool]


@dataclass(frozen=True)
class JudgedSegment:
    """One segment, what decided it (a rule or ``read-only``) and how; ``decision`` None:
    nothing covers it, the mode decides."""

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
    unparsable); ``protected``: the call writes a permission-rules file."""

    effect: Effect | None = None
    by: str | None = None
    segments: tuple[JudgedSegment, ...] | None = None
    protected: bool = False
    unparsed: str | None = None  # a command line the parser could not split

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
) -> Ruled:
    """What ``book`` says about one call (in a worker thread: it may parse and stat)."""
    if kind == "bash":
        command = tool_input.get("command")
        line = command if isinstance(command, str) else ""
        ruled = judge_command(line, book, read_only)
        if RULES_FILE_NAMED.search(line) and not read_only(line):
            return replace(ruled, protected=True)  # may write a rules file: always asked
        return ruled
    place = Place.of(workspace)
    rule = book.for_call(tool_name, tool_input, place)
    path = tool_input.get("path")
    protected = kind == "edit" and isinstance(path, str) and is_rules_file(path, workspace)
    if rule is None:
        return Ruled(protected=protected)
    return Ruled(rule.effect, rule.describe(), protected=protected)


def judge_command(command: str, book: RuleBook, read_only: ReadOnlyCheck) -> Ruled:
    segments = split_segments(command)
    if segments is None:
        whole = book.for_unparsed(command)
        if whole is None:
            return Ruled(unparsed=command)
        return Ruled(whole.effect, whole.describe(), unparsed=command)
    proofs_hold = not any(s.program in _MOVES for s in segments)
    judged = tuple(_segment(s, book, read_only if proofs_hold else None) for s in segments)
    for effect in ("deny", "ask"):
        found = next((j for j in judged if j.decision == effect), None)
        if found is not None:
            return Ruled(found.decision, found.by, judged)
    if all(j.decision == "allow" for j in judged) and any(j.by != "read-only" for j in judged):
        deciders = list(dict.fromkeys(str(j.by) for j in judged))
        return Ruled("allow", "; ".join(deciders), judged)
    return Ruled(None, None, judged)


def _segment(segment: Segment, book: RuleBook, read_only: ReadOnlyCheck | None) -> JudgedSegment:
    rule = book.for_segment(segment)
    if rule is not None:
        return JudgedSegment(segment, rule.effect, rule.describe())
    if read_only is not None and read_only(segment.text):
        return JudgedSegment(segment, "allow", "read-only")
    return JudgedSegment(segment, None, None)


def session_rules_for(ruled: Ruled) -> tuple[Rule, ...]:
    """The rules "allow for session" adds for a command: one per segment the rules did not
    already allow, naming exactly the text shown (never a program's prefix); for a line the
    parser could not split, the whole line exactly."""
    if ruled.unparsed is not None:
        return (exact_rule(ruled.unparsed.strip()),)
    if ruled.segments is None:
        return ()
    return tuple(exact_rule(j.segment.text) for j in ruled.segments if j.decision != "allow")


def exact_rule(text: str) -> Rule:
    """A rule that matches one segment's text exactly (even with ``*`` or ``:*`` in it)."""
    return Rule("allow", f"Bash({text})", "Bash", text, "session", "session", exact=True)
