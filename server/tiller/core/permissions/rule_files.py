"""Where permission rules are kept: the ``permissions`` object of every settings file
(``extend/settings_layer.py``: user, workspace, local scopes, Claude Code's files and
Tiller's; an untrusted workspace's files give their deny and ask rules only), plus the
session's own rules. Read fresh whenever calls are judged, so an edit to a
file (or ``/permissions add``) counts from the next call on.

``/permissions add`` writes Tiller's own files only: ``.tiller/settings.local.json`` by default
(local scope, the user's own: git is told to ignore it, ``workspace/git_exclude.py``, as Claude
Code does for its ``.claude/settings.local.json``), ``.tiller/settings.json`` (workspace) or the
user's Tiller file.
Claude Code's ``.claude`` files are read, never rewritten: removing a rule kept there names the
file to edit. Any tool call that writes one of the settings files is asked, whatever the mode
or rules (see core/permissions/modes.py): the model can never widen a rule by itself.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from tiller.core.permissions.rules import (
    Effect,
    Rule,
    RuleBook,
    RuleError,
    parse_rule,
    rules_of,
    unreadable_deny,
)
from tiller.extend.settings_files import (
    claude_json_path,
    read_settings_file,
    settings_paths,
    tiller_user_dir,
)
from tiller.extend.settings_layer import Settings, read_settings, shown
from tiller.extend.trust import Trust, trust_file
from tiller.workspace.git_exclude import keep_out_of_git

WritableScope = Literal["local", "workspace", "user"]
_SETTINGS_NAMES = frozenset({"settings.json", "settings.local.json"})


UNREADABLE = "its permission rules cannot be read"
UNTRUSTED_ALLOW = (
    "{files}: allow rules left out: the folder is not trusted (deny and ask rules apply; "
    "trust it with /trust or `tiller trust`)"
)


def book_of(settings: Settings) -> RuleBook:
    """Every rule of the settings' sources, lowest scope first. A source that may not widen
    grants (a file of an untrusted workspace) gives its deny and ask rules, never its allow
    rules."""
    rules: list[Rule] = []
    problems: list[str] = list(settings.problems)
    withheld: list[str] = []
    for source in settings.sources:
        if source.unreadable:  # its deny rules are unknown: every call asks until it is fixed
            rules.append(unreadable_deny(UNREADABLE, source.scope, source.shown))
            problems.append(f"{source.shown}: {UNREADABLE}: until it is fixed, every call is asked")
            continue
        permissions = source.settings.permissions
        found, wrong = rules_of(permissions.rules(), source.scope, source.shown)
        problems.extend(wrong)
        if not source.trusted and any(r.effect == "allow" for r in found):
            withheld.append(source.shown)
        rules.extend(r for r in found if source.trusted or r.effect != "allow")
    if withheld:
        problems.append(UNTRUSTED_ALLOW.format(files=", ".join(withheld)))
    return RuleBook(tuple(rules), tuple(problems))


def load_rule_book(workspace: Path, trust: Trust, env: Mapping[str, str] | None = None) -> RuleBook:
    """Every rule the settings files hold now, lowest scope first."""
    return book_of(read_settings(workspace, trust, env))


def is_rules_file(path: str, workspace: Path, env: Mapping[str, str] | None = None) -> bool:
    """Whether writing ``path`` (as a tool call names it) would change permission rules or
    what the user trusts: a settings file, ``.mcp.json``, the user's trust record, Claude
    Code's ``~/.claude.json`` (with the workspace at home, these lie inside it)."""
    target = os.path.normpath(os.path.join(workspace, os.path.expanduser(path)))
    places = {os.path.normpath(p) for _, p in settings_paths(workspace, env)}
    places |= {str(trust_file(env)), str(claude_json_path(env)), str(workspace / ".mcp.json")}
    try:  # a link may change while it is resolved (a folder swapped for a symlink)
        candidates = {target, os.path.realpath(target)}
        places |= {os.path.realpath(p) for p in places}
    except OSError:
        return True  # cannot tell where the write lands: ask, as for a rules file
    if candidates & places:
        return True
    # any settings file under a .claude or .tiller folder (a nested one, a new name)
    return any(
        Path(c).name in _SETTINGS_NAMES and Path(c).parent.name in (".claude", ".tiller")
        for c in candidates
    )


def target_file(workspace: Path, scope: WritableScope) -> Path:
    match scope:
        case "workspace":
            return workspace / ".tiller" / "settings.json"
        case "user":
            return tiller_user_dir() / "settings.json"
        case _:
            return workspace / ".tiller" / "settings.local.json"


def add_rule(workspace: Path, effect: Effect, text: str, scope: WritableScope = "local") -> Rule:
    """Append a rule to one of Tiller's settings files (created if missing); RuleError for a
    rule that cannot be read or a file that is not a JSON object."""
    path = target_file(workspace, scope)
    rule = parse_rule(text, effect, scope, shown(path, workspace))
    data = _read_for_update(path, workspace)
    permissions = data.setdefault("permissions", {})
    if not isinstance(permissions, dict):
        raise RuleError(f"{shown(path, workspace)}: permissions is not an object")
    listed = permissions.setdefault(effect, [])
    if not isinstance(listed, list):
        raise RuleError(f"{shown(path, workspace)}: permissions.{effect} is not a list")
    if rule.text not in listed:
        listed.append(rule.text)
    _write(path, data)
    if scope == "local":
        keep_out_of_git(path)
    return rule


LOCAL_RULES = ".tiller/settings.local.json"


def keep_rules(workspace: Path, rules: tuple[Rule, ...]) -> tuple[list[str], list[str]]:
    """ "Always allow" for a command: each segment's exact rule added to the local file. A
    segment with a ``*`` stays a session rule (in a file, ``*`` is a wildcard: it would match
    more than was shown). Returns the rules kept and what could not be kept, and why."""
    kept: list[str] = []
    said: list[str] = []
    for rule in rules:
        if "*" in (rule.specifier or ""):
            said.append(f"{rule.text} is allowed for this session only: in a rules file its * "
                        "would be a wildcard and allow more than was shown")  # fmt: skip
            continue
        try:
            kept.append(add_rule(workspace, "allow", rule.text).text)
        except RuleError as err:
            said.append(f"{rule.text} is allowed for this session only: {err.message}")
    return kept, said


def remove_rule(workspace: Path, text: str) -> tuple[list[str], list[str]]:
    """Remove a rule (every effect) from Tiller's files. Returns the files changed and the
    Claude Code files that still hold it (to be edited by hand)."""
    changed: list[str] = []
    elsewhere: list[str] = []
    wanted = text.strip()
    for _, path in settings_paths(workspace):
        found = read_settings_file("local", path)
        if found is None or found.problem is not None:
            continue
        permissions = found.data.get("permissions")
        if not isinstance(permissions, dict):
            continue
        holds = any(isinstance(v, list) and wanted in v for v in permissions.values())
        if not holds:
            continue
        if path.parent.name == ".claude":
            elsewhere.append(shown(path, workspace))
            continue
        for effect, listed in permissions.items():
            if isinstance(listed, list):
                permissions[effect] = [r for r in listed if r != wanted]
        _write(path, found.data)
        changed.append(shown(path, workspace))
    return changed, elsewhere


def _read_for_update(path: Path, workspace: Path) -> dict[str, object]:
    found = read_settings_file("local", path)
    if found is None:
        return {}
    if found.problem is not None:
        raise RuleError(f"{found.problem}; fix it before adding rules")
    return dict(found.data)


def _write(path: Path, data: Mapping[str, object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)
