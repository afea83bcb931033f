"""What one settings file may say, as a typed value, checked key by key by one cattrs converter.

The keys are Claude Code's (``code.claude.com/docs/en/settings``) plus Tiller's own
(``languageServers`` and its enablement, ``mcpServers`` in Tiller's files). Each key is checked
on its own, and so is each member of ``permissions``: a key of the wrong type is a problem that
names the file and the key, and only that key is left out — a broken ``additionalDirectories``
never costs the file its ``deny`` rules. What each entry of a section says (a rule, a hook, an
MCP server, a language server) is its consumer's to read, entry by entry, for the same reason.

A key Tiller does not know is a notice in Tiller's own files; in Claude Code's files it is
Claude Code's business (its settings have many keys Tiller has no use for) and passes silently.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any, TypeVar, cast, get_args, get_origin, get_type_hints

from cattrs import Converter

from tiller.jsontypes import JSON
from tiller.protocol import wire_name
from tiller.strict_structure import strict_converter

T = TypeVar("T")


@dataclass(frozen=True)
class PermissionsSettings:
    """``permissions``: the rules (their entries read by ``permission_rules.rules_of``, each on
    its own) and the extra folders."""

    allow: Any = None  # as written (None: left out): ``rules_of`` says what is wrong with it
    ask: Any = None  # (a deny list that is not a list fails closed there)
    deny: Any = None
    additional_directories: tuple[str, ...] = ()
    default_mode: str | None = None  # Claude Code's; Tiller's mode comes from its clients

    def rules(self) -> JSON:
        """The lists written, in the shape ``rules_of`` reads."""
        written = {"allow": self.allow, "ask": self.ask, "deny": self.deny}
        return {effect: listed for effect, listed in written.items() if listed is not None}


@dataclass(frozen=True)
class FileSettings:
    """One settings file's content, typed. Sections whose entries are read one by one by their
    consumer stay JSON objects here (``hooks``, ``mcpServers``, ``languageServers``)."""

    permissions: PermissionsSettings = PermissionsSettings()
    hooks: JSON | None = None
    disable_all_hooks: bool = False
    mcp_servers: JSON = field(default_factory=dict)
    enable_all_project_mcp_servers: bool = False
    enabled_mcpjson_servers: tuple[str, ...] = ()
    disabled_mcpjson_servers: tuple[str, ...] = ()
    language_servers: JSON = field(default_factory=dict)
    enable_all_project_language_servers: bool = False
    enabled_language_servers: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)  # for the commands Tiller runs
    sandbox: JSON | None = None  # Claude Code's sandbox section (read, not yet used)
    web_search: Any = None  # Tiller's: read by ``web_settings.web_tools``, which says what is
    web_fetch: Any = None  # wrong with it (``true``/``false`` or the option's object)


NO_SETTINGS = FileSettings()


def web_settings_of(settings: FileSettings) -> list[tuple[str, Any]]:
    """The web tools' keys a file holds, as written: (``webSearch``/``webFetch``, value)."""
    written = {"webSearch": settings.web_search, "webFetch": settings.web_fetch}
    return [(key, value) for key, value in written.items() if value is not None]


def web_setting_value(raw: Any) -> Any:
    """A file's ``webSearch``/``webFetch`` in the option's shape: ``true``/``false`` stand for
    ``{"enabled": true}``/``{"enabled": false}``."""
    return {"enabled": raw} if isinstance(raw, bool) else raw


def turns_off(raw: Any) -> bool:
    """Whether a file's ``webSearch``/``webFetch`` only turns the tool off: all that a file
    of a folder not trusted yet may say of it."""
    return bool(web_setting_value(raw) == {"enabled": False})


def keys_of(cls: type[Any]) -> frozenset[str]:
    """The wire names of a settings dataclass's fields."""
    return frozenset(wire_name(f.name) for f in dataclasses.fields(cls))


def structure_file(raw: JSON, where: str) -> tuple[FileSettings, list[str], list[str]]:
    """A settings file's object as ``FileSettings``; the problems (one per key left out, naming
    ``where`` and the key), and the keys it does not know (for the caller to tell or not)."""
    return structure_tolerant(FileSettings, raw, where)


def structure_tolerant(
    cls: type[T], raw: Mapping[str, Any], where: str
) -> tuple[T, list[str], list[str]]:
    """``raw`` as ``cls`` (a frozen dataclass with defaults), key by key: a key whose value does
    not fit keeps the default and is a problem; a dataclass member is structured the same way
    (its good keys kept). Returns the value, the problems and the unknown keys."""
    hints = _hints(cast(Hashable, cls))
    values: dict[str, Any] = {}
    problems: list[str] = []
    known = set()
    for member in dataclasses.fields(cls):  # type: ignore[arg-type]  # cls is a dataclass
        key = wire_name(member.name)
        known.add(key)
        if key not in raw:
            continue
        hint = hints[member.name]
        value = raw[key]
        if dataclasses.is_dataclass(hint) and isinstance(hint, type):
            if not isinstance(value, dict):
                problems.append(f"{where}: {key} must be an object: left out")
                continue
            inner, more, unknown = structure_tolerant(hint, value, f"{where}: {key}")
            values[member.name] = inner
            problems += more
            problems += [f"{where}: {key}.{u}: not a key Tiller knows: ignored" for u in unknown]
            continue
        try:
            values[member.name] = _converter().structure(value, hint)
        except Exception:  # cattrs raises TypeError, ValueError or its validation groups
            problems.append(f"{where}: {key} must be {describe(hint)}: left out")
    unknown = sorted(str(k) for k in raw if k not in known)
    return cls(**values), problems, unknown


@cache
def _hints(cls: Hashable) -> dict[str, Any]:
    """A settings dataclass's field types, evaluated once."""
    return get_type_hints(cls)


def describe(hint: Any) -> str:
    """What a value of type ``hint`` must be, as a phrase."""
    origin, args = get_origin(hint), get_args(hint)
    if hint is bool:
        return "true or false"
    if hint is str:
        return "a string"
    if origin is tuple:
        return "a list of strings" if args and args[0] is str else "a list"
    if origin in (dict, Mapping) or hint is JSON or origin is type(None):
        return "an object of strings" if args and args[-1] is str else "an object"
    if type(None) in args:
        kinds = [describe(a) for a in args if a is not type(None)]
        return " or ".join(kinds) + " or null"
    return "an object"


def _origin(hint: Any) -> Any:
    return get_origin(hint)


@cache
def _converter() -> Converter:
    """Strict: a string is not a list, ``1`` is not ``true``, a list holds what it says."""
    converter = strict_converter()

    def json_object(value: Any, _: Any) -> Any:
        if not isinstance(value, dict):
            raise TypeError("expected an object")
        return value

    converter.register_structure_hook_func(lambda hint: _origin(hint) is dict, json_object)

    def string_map(value: Any, _: Any) -> Any:
        if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()
        ):
            raise TypeError("expected an object of strings")
        return dict(value)

    converter.register_structure_hook_func(lambda hint: _origin(hint) is Mapping, string_map)

    def listing(value: Any, hint: Any) -> Any:
        if not isinstance(value, list):
            raise TypeError("expected a list")
        item = get_args(hint)[0]
        if item is object:  # entries read one by one by their consumer
            return tuple(value)
        return tuple(converter.structure(v, item) for v in value)

    converter.register_structure_hook_func(lambda hint: _origin(hint) is tuple, listing)
    return converter
