"""`vscode-extension/src/protocol.ts`, generated from `tiller.protocol`.

    uv run --frozen python -m tiller.protocol_ts > vscode-extension/src/protocol.ts
    uv run --frozen python -m tiller.protocol_ts --check vscode-extension/src/protocol.ts

What is emitted, in the module's order: every ``Literal`` alias as a string union (and the
tuples of its values, ``MODES``, as constants); every method name; every ``TypedDict`` as an
interface (``FooWire`` is called ``Foo``); every union of them as a type; every request's params
dataclass as an interface of camelCase members (a member with a default may be left out); and
the method tables as ``ClientRequests``, ``ServerNotifications`` and ``ServerRequests``.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import sys
import types
from pathlib import Path
from typing import (
    Annotated,
    Any,
    Literal,
    NotRequired,
    Required,
    Union,
    get_args,
    get_origin,
    get_type_hints,
    is_typeddict,
)

from tiller import protocol
from tiller.faces.lsp.params import describe
from tiller.protocol import Between, NonBlank, Unset, wire_name

COMMAND = "uv run --frozen python -m tiller.protocol_ts > vscode-extension/src/protocol.ts"
WIDTH = 100

HEADER = f"""\
// GENERATED from server/tiller/protocol.py: do not edit. Regenerate with
//   {COMMAND}
// The Tiller JSON-RPC contract (docs/protocol.md) as TypeScript types. Pure: no vscode import.

export {{ errorMessage, hasErrorCode, INVALID_PARAMS, METHOD_NOT_FOUND }} from "./rpcErrors";
"""

COMPATIBLE = {"Outcome": "OutcomeName"}
"""Names the extension imports that protocol.py spells otherwise: TS name -> generated name."""

TABLES = (
    ("CLIENT_REQUESTS", "ClientRequests", "Client → server requests: method → [params, result]."),
    ("SERVER_NOTIFICATIONS", "ServerNotifications", "Server → client notifications."),
    ("SERVER_REQUESTS", "ServerRequests", "Server → client requests: method → [params, result]."),
)


def ts_name(name: str) -> str:
    return name.removesuffix("Wire") if name.endswith("Wire") and name != "Wire" else name


class Generator:
    def __init__(self) -> None:
        self.params = [entry[0] for entry in protocol.CLIENT_REQUESTS.values()]
        self.params += [  # the parts of params (a prompt's attachments)
            value
            for name, value in vars(protocol).items()
            if name.endswith("Params")
            and isinstance(value, type)
            and dataclasses.is_dataclass(value)
            if value not in self.params
        ]
        self.named: list[tuple[Any, str]] = []  # (Literal alias, union, TypedDict, params) -> name
        for name, value in vars(protocol).items():
            if not name.startswith("_") and (
                get_origin(value) is Literal
                or self.is_shape_union(value)
                or is_typeddict(value)
                or value in self.params
            ):
                self.named.append((value, ts_name(name)))

    def is_shape_union(self, value: Any) -> bool:
        return isinstance(value, types.UnionType) and all(is_typeddict(a) for a in get_args(value))

    def name_of(self, hint: Any) -> str | None:
        for value, name in self.named:
            if value is hint:
                return name
        for value, name in self.named:  # an equal Literal spelled out again
            if get_origin(hint) is Literal and get_origin(value) is Literal and value == hint:
                return name
        return None

    # --- types ----------------------------------------------------------------------------

    def ts(self, hint: Any, *, top: bool = False) -> str:
        """The TypeScript for ``hint``; ``top``: spell out even a named one (its definition)."""
        if not top and (name := self.name_of(hint)) is not None:
            return name
        origin, args = get_origin(hint), get_args(hint)
        if hint is Any or hint is object:
            return "unknown"
        if hint is None or hint is type(None):
            return "null"
        if hint in (str, int, float, bool):
            return {str: "string", int: "number", float: "number", bool: "boolean"}[hint]
        if origin in (NotRequired, Required, Annotated):
            return self.ts(args[0])
        if origin is Literal:
            return " | ".join(json.dumps(arg) for arg in args)
        if origin in (Union, types.UnionType):
            return " | ".join(self.ts(arg) for arg in args if arg is not Unset)
        if origin in (list, tuple):
            item = self.ts(args[0])
            return f"({item})[]" if " | " in item else f"{item}[]"
        if origin is dict:
            return f"Record<string, {self.ts(args[1])}>"
        raise TypeError(f"no TypeScript for {hint!r}")

    # --- declarations ---------------------------------------------------------------------

    def alias(self, name: str, hint: Any) -> str:
        if get_origin(hint) is Literal:
            parts = [json.dumps(arg) for arg in get_args(hint)]
        else:
            parts = [self.ts(arg) for arg in get_args(hint)]
        line = f"export type {name} = {' | '.join(parts)};"
        if len(line) <= WIDTH:
            return line
        return f"export type {name} =\n" + "\n".join(f"  | {part}" for part in parts) + ";"

    def interface(self, name: str, doc: str | None, members: list[tuple[str, str]]) -> str:
        """``members``: (its comment, its declaration)."""
        if not members:
            return f"{comment(doc)}export type {name} = Record<string, never>;"
        body = "".join(f"{comment(note, '  ')}  {line}\n" for note, line in members)
        return f"{comment(doc)}export interface {name} {{\n{body}}}"

    def typed_dict(self, name: str, cls: Any) -> str:
        # (NotRequired is read from the hint: string annotations hide it from __optional_keys__.)
        hints = get_type_hints(cls, include_extras=True)
        members = []
        for key, hint in hints.items():
            optional = get_origin(hint) is NotRequired or (
                key in cls.__optional_keys__ and get_origin(hint) is not Required
            )
            members.append(("", f"{key}{'?' if optional else ''}: {self.ts(hint)};"))
        return self.interface(name, cls.__doc__, members)

    def dataclass(self, name: str, cls: Any) -> str:
        hints = get_type_hints(cls, include_extras=True)
        members = []
        for field in dataclasses.fields(cls):
            hint = hints[field.name]
            optional = field.default is not dataclasses.MISSING
            notes = [f"{describe(hint).capitalize()}."] if marked(hint) else []
            if optional and field.default not in (None, protocol.UNSET):
                notes.append(f"Default: {json.dumps(field.default)}.")
            key = f"{wire_name(field.name)}{'?' if optional else ''}"
            members.append((" ".join(notes), f"{key}: {self.ts(hint)};"))
        doc = None if cls.__doc__.startswith(f"{cls.__name__}(") else cls.__doc__
        return self.interface(name, doc, members)

    def table(self, name: str, doc: str, table: dict[str, Any]) -> str:
        members = []
        for method, shape in table.items():
            if isinstance(shape, tuple):
                members.append(
                    ("", f"{json.dumps(method)}: [{self.ts(shape[0])}, {self.ts(shape[1])}];")
                )
            else:
                members.append(("", f"{json.dumps(method)}: {self.ts(shape)};"))
        methods = f"{name.removesuffix('s')}Method"
        return f"{self.interface(name, doc, members)}\nexport type {methods} = keyof {name};"

    # --- the file -------------------------------------------------------------------------

    def render(self) -> str:
        enums, methods, shapes, params = [], [], [], []
        literals = {get_args(v): n for v, n in self.named if get_origin(v) is Literal}
        for name, value in vars(protocol).items():
            if name.startswith("_"):
                continue
            if get_origin(value) is Literal:
                enums.append(self.alias(name, value))
            elif isinstance(value, tuple) and value in literals:
                items = ", ".join(json.dumps(v) for v in value)
                enums.append(f"export const {name}: readonly {literals[value]}[] = [{items}];")
            elif isinstance(value, str) and value.startswith("tiller/"):
                methods.append(f"export const {name} = {json.dumps(value)};")
            elif self.is_shape_union(value):
                shapes.append(self.alias(ts_name(name), value))
            elif is_typeddict(value):
                shapes.append(self.typed_dict(ts_name(name), value))
            elif value in self.params:
                params.append(self.dataclass(name, value))
        tables = [self.table(ts, doc, getattr(protocol, py)) for py, ts, doc in TABLES]
        compatible = [f"export type {old} = {new};" for old, new in COMPATIBLE.items()]
        sections = [
            HEADER,
            "\n".join(enums),
            "// Method names\n" + "\n".join(methods),
            "// What the server sends\n\n" + "\n\n".join(shapes),
            "// What the client sends: every request's params\n\n" + "\n\n".join(params),
            "\n\n".join(tables),
            "// Names the extension has used\n" + "\n".join(compatible),
        ]
        return "\n\n".join(section.strip("\n") for section in sections) + "\n"


def marked(hint: Any) -> bool:
    """Whether ``hint`` (or a member of its union) carries a `Between` or `NonBlank` mark."""
    if get_origin(hint) is Annotated:
        return any(isinstance(mark, Between | NonBlank) for mark in get_args(hint)[1:])
    return get_origin(hint) in (Union, types.UnionType) and any(map(marked, get_args(hint)))


def comment(doc: str | None, indent: str = "") -> str:
    if not doc:
        return ""
    text = inspect.cleandoc(doc).replace("``", "`")
    lines = text.splitlines()
    if len(lines) == 1 and len(indent) + len(text) + 7 <= WIDTH:
        return f"{indent}/** {text} */\n"
    body = "".join(f"{indent} *{' ' if line else ''}{line}\n" for line in lines)
    return f"{indent}/**\n{body}{indent} */\n"


def render() -> str:
    """The whole of ``protocol.ts``."""
    return Generator().render()


def main(argv: list[str]) -> int:
    text = render()
    if argv[:1] == ["--check"] and len(argv) == 2:
        path = Path(argv[1])
        if path.read_text(encoding="utf-8") != text:
            print(f"{path} differs from tiller/protocol.py: run\n  {COMMAND}", file=sys.stderr)
            return 1
        return 0
    if argv:
        print(f"usage: python -m tiller.protocol_ts [--check PATH]\n{__doc__}", file=sys.stderr)
        return 2
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
