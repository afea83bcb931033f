"""A custom command's ``allowed-tools`` (Claude Code's syntax): what that command's turn may use
without asking, read as allow rules of that turn and judged exactly as rules are
(``call_rules.judge``). ``Read``, ``Edit``, ``Bash`` name tools (Claude Code's names or
Tiller's); ``Bash(git add:*)`` allows a command line only when every segment is allowed by it or
provably read-only, through the wrappers Claude Code's docs name, never past a writing or
executing option of a reading program (``git diff --output=F``, ``--ext-diff``), git only where
the repository's config names no program, and never a line the parser cannot read.

It only skips the question: what the mode denies (plan mode's writes) stays denied, and a deny
or ask rule, a protected file, or a hook's answer wins (``step_tools``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tiller.core.permissions.call_rules import ReadOnlyCheck, judge
from tiller.core.permissions.rules import Rule, RuleBook, RuleError, parse_rule
from tiller.jsontypes import JSON


def grant_rules(entries: Sequence[str], command: str) -> tuple[Rule, ...]:
    """The entries as allow rules (one that cannot be read grants nothing)."""
    rules = []
    for entry in entries:
        try:
            rules.append(parse_rule(entry, "allow", "session", f"{command} allowed-tools"))
        except RuleError:
            continue
    return tuple(rules)


def grants(
    rules: tuple[Rule, ...],
    tool_name: str,
    kind: str,
    tool_input: JSON,
    workspace: Path,
    read_only: ReadOnlyCheck,
    others: Sequence[Path] = (),
) -> bool:
    """Whether the command's rules alone allow the call (in a worker thread: it may parse)."""
    if not rules:
        return False
    ruled = judge(tool_name, kind, tool_input, RuleBook(rules), workspace, read_only, others)
    return ruled.effect == "allow" and not ruled.protected
