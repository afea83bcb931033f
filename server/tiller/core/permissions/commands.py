"""``/permissions`` (and ``tiller/permissions*``): list, add and remove permission rules.

Only the user gets here (a typed command or a client request): the model has no tool that adds
a rule, and its writes to the rules files are asked (core/permissions/modes.py).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final

from tiller.core.permissions.modes import Grants
from tiller.core.permissions.rule_files import WritableScope, add_rule, book_of, remove_rule
from tiller.core.permissions.rules import EFFECTS, Effect, Rule, RuleBook, RuleError
from tiller.extend.settings_layer import Settings
from tiller.extend.trust import Trust
from tiller.jsontypes import JSON

USAGE: Final = (
    "Usage: /permissions                       list the rules in force, by scope\n"
    "       /permissions add allow|ask|deny RULE [--workspace|--user]\n"
    "                                          add a rule (default: .tiller/settings.local.json)\n"
    "       /permissions remove RULE           remove a rule (Tiller's files and this session)\n"
    "Rules: Bash(git diff:*), Bash(npm test), Read(src/**), Edit(docs/**),\n"
    "       WebFetch(domain:example.com), mcp__server, mcp__server__tool"
)
_SCOPE_FLAGS: Final[dict[str, WritableScope]] = {"--workspace": "workspace", "--user": "user"}


@dataclass(frozen=True)
class ListRules:
    pass


@dataclass(frozen=True)
class AddRule:
    effect: Effect
    text: str
    scope: WritableScope = "local"


@dataclass(frozen=True)
class RemoveRule:
    text: str


@dataclass(frozen=True)
class PermissionsUsage:
    message: str


PermissionsCommand = ListRules | AddRule | RemoveRule | PermissionsUsage


def parse_command(arg: str) -> PermissionsCommand:
    """The words after ``/permissions``."""
    action, _, rest = arg.strip().partition(" ")
    rest = rest.strip()
    match action.lower():
        case "" | "list":
            return ListRules()
        case "add":
            effect, _, text = rest.partition(" ")
            words = text.split()
            scope: WritableScope = "local"
            if words and words[-1] in _SCOPE_FLAGS:
                scope = _SCOPE_FLAGS[words[-1]]
                text = text[: text.rstrip().rfind(" ")]
            if effect not in EFFECTS or not text.strip():
                return PermissionsUsage(USAGE)
            return AddRule(effect, text.strip(), scope)
        case "remove" | "rm" if rest:
            return RemoveRule(rest)
        case _:
            return PermissionsUsage(USAGE)


def rules_in_force(settings: Settings, grants: Grants) -> RuleBook:
    return book_of(settings).with_rules(grants.rules)


def format_rules(book: RuleBook) -> str:
    if not book.rules and not book.problems:
        return "No permission rules. The mode decides; add one with /permissions add.\n" + USAGE
    lines: list[str] = []
    for rule in book.rules:
        where = "session" if rule.scope == "session" else f"{rule.scope} {rule.source}"
        lines.append(f"{rule.effect:5}  {rule.text}  ({where})")
    lines.extend(f"problem: {p}" for p in book.problems)
    return "\n".join(lines)


def listing_to_wire(book: RuleBook) -> JSON:
    return {"rules": [r.to_wire() for r in book.rules], "problems": list(book.problems)}


def add(workspace: Path, trust: Trust, command: AddRule) -> str:
    try:
        rule = add_rule(workspace, command.effect, command.text, command.scope)
    except RuleError as err:
        return err.message
    said = f"Added {rule.effect} {rule.text} to {rule.source}."
    if rule.effect == "allow" and rule.scope != "user" and not trust.trusted:
        said += (
            " It applies once you trust the folder (/trust): until then the workspace's files "
            "cannot widen grants."
        )
    return said


def remove(workspace: Path, grants: Grants, text: str) -> tuple[Grants, str]:
    """Remove ``text`` from Tiller's files and the session; say where it stays."""
    kept: tuple[Rule, ...] = tuple(r for r in grants.rules if r.text != text.strip())
    from_session = len(kept) != len(grants.rules)
    changed, elsewhere = remove_rule(workspace, text)
    said: list[str] = []
    if changed or from_session:
        places = [*changed, *(["this session"] if from_session else [])]
        said.append(f"Removed {text.strip()} from {', '.join(places)}.")
    if elsewhere:
        said.append(
            f"{text.strip()} is also in {', '.join(elsewhere)} (Claude Code's file): Tiller does "
            "not rewrite it; edit it there."
        )
    if not said:
        said.append(f"No rule {text.strip()!r} in Tiller's files or this session.")
    return replace(grants, rules=kept), " ".join(said)
