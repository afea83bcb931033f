"""Request params: the wire's camelCase object made into a `protocol` dataclass by one cattrs
converter, and every way it can be wrong said one way.

`structure_params` is the one place a request's params are checked: strict types (a number is
not a string, ``1`` is not ``true``), the members of a ``Literal``, `Between` and `NonBlank`.
What it cannot know (an unknown session id) the handler says. Unknown members are ignored.
The lone surrogates and out-of-range numbers no handler takes were refused before, for every
method (`tiller.faces.common.wire.flaw`).

Every problem is one `InvalidParams` (-32602) naming the member: ``params.turnId: 'turnId' must
be a string``, ``params.limit: 'limit' must be an integer from 1 to 1000``, ``params.mode:
unknown mode 'yolo': expected one of default, acceptEdits, plan``.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Callable, Iterable, Iterator
from functools import cache
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

from cattrs import BaseConverter, ClassValidationError, Converter
from cattrs.errors import (
    AttributeValidationNote,
    IterableValidationError,
    IterableValidationNote,
)
from cattrs.gen import make_dict_structure_fn, override

from tiller.errors import InvalidParams
from tiller.protocol import INT64_MAX, Between, NonBlank, Unset, wire_name
from tiller.strict_structure import strict_converter

P = TypeVar("P")


class Problem(ValueError):
    """What is wrong with a member's value, said once its name is known."""

    def __init__(self, say: Callable[[str], str]) -> None:
        super().__init__(say("value"))
        self.say = say


def structure_params(cls: type[P], raw: object) -> P:
    """``raw`` (a request's params: an object, or None when left out) as a ``cls``."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise InvalidParams("params must be an object")
    try:
        return _converter().structure(raw, cls)
    except ClassValidationError as err:
        raise InvalidParams(_say(cls, err)) from err


def warm_params(classes: Iterable[type[Any]]) -> None:
    """Write the converter's functions for ``classes`` and the classes their members hold
    now (the warm template: for every request's params, so that no fork writes them again at
    its first requests). A tuple's items are structured by a function cattrs looks up only
    when it meets one: hence the walk."""
    converter = _converter()
    seen: set[type[Any]] = set()
    todo = list(classes)
    while todo:
        cls = todo.pop()
        if cls in seen:
            continue
        seen.add(cls)
        converter.get_structure_hook(cls)
        for hint in get_type_hints(cls).values():
            todo.extend(_held_classes(hint))


def _held_classes(hint: Any) -> Iterator[type[Any]]:
    """The dataclasses ``hint`` names, however deep (``tuple[X, ...] | None``: ``X``)."""
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        yield hint
    for arg in get_args(hint):
        yield from _held_classes(arg)


def describe(hint: Any) -> str:
    """What a param of type ``hint`` must be, as a phrase: ``an integer from 1 to 1000``."""
    origin, args = get_origin(hint), get_args(hint)
    if origin is Annotated:
        base, *marks = args
        for mark in marks:
            if isinstance(mark, Between):
                if mark.high == INT64_MAX:
                    return f"an integer of at least {mark.low}"
                return f"an integer from {mark.low} to {mark.high}"
            if isinstance(mark, NonBlank):
                return "a non-empty string"
        return describe(base)
    if origin is Literal:
        return "one of " + ", ".join(str(arg) for arg in args)
    if origin in (Union, types.UnionType):
        kinds = [describe(arg) for arg in args if arg not in (Unset, type(None))]
        return " or ".join(kinds) + (" or null" if type(None) in args else "")
    if origin is tuple:
        return "a list"
    return {str: "a string", bool: "a boolean", int: "an integer"}.get(hint, str(hint))


def _say(cls: type[Any], err: ClassValidationError, where: str = "params") -> str:
    """The first problem of ``err``, naming its member (``params.attachments[0].kind``)."""
    hints = get_type_hints(cls, include_extras=True)
    for problem in err.exceptions:
        note = next(
            (
                n
                for n in getattr(problem, "__notes__", ())
                if isinstance(n, AttributeValidationNote)
            ),
            None,
        )
        if note is None:
            continue
        name = wire_name(note.name)
        hint = hints[note.name]
        if isinstance(problem, IterableValidationError) and (inner := _item(hint)) is not None:
            return _say_item(inner, problem, f"{where}.{name}")
        if isinstance(problem, Problem):
            detail = problem.say(name)
        elif isinstance(problem, KeyError):
            detail = f"'{name}' is required and must be {describe(hint)}"
        else:
            detail = f"'{name}' must be {describe(hint)}"
        return f"{where}.{name}: {detail}"
    return f"{where}: {err.exceptions[0] if err.exceptions else err}"


def _item(hint: Any) -> type[Any] | None:
    """The dataclass a ``tuple[X, ...]`` param holds, if it holds one."""
    args = get_args(hint)
    if get_origin(hint) is tuple and args and _is_dataclass(args[0]):
        item: type[Any] = args[0]
        return item
    return None


def _say_item(item: type[Any], err: IterableValidationError, where: str) -> str:
    """The first problem of a list of ``item`` objects, naming the item and its member."""
    for problem in err.exceptions:
        index = next(
            (
                n.index
                for n in getattr(problem, "__notes__", ())
                if isinstance(n, IterableValidationNote)
            ),
            None,
        )
        if isinstance(problem, ClassValidationError):
            return _say(item, problem, f"{where}[{index}]")
        return f"{where}[{index}]: must be an object"
    return f"{where}: must be a list of objects"


# --- the converter ----------------------------------------------------------------------------


@cache
def _converter() -> Converter:
    """The strict converter, with a hook factory for each kind of member a params class has
    (cattrs hands each factory the converter, for the hooks of what a member holds)."""
    converter = strict_converter()
    converter.register_structure_hook_factory(_is_literal, _literal)
    converter.register_structure_hook_factory(_is_annotated, _annotated)
    converter.register_structure_hook_factory(_may_be_unset, _unless_unset)
    converter.register_structure_hook_factory(_is_dataclass, _params)
    return converter


Hook = Callable[[Any, Any], Any]


def _literal(hint: Any) -> Hook:
    allowed = get_args(hint)

    def structure(value: Any, _: Any) -> Any:
        for option in allowed:
            if value == option and type(value) is type(option):
                return option
        shown = ", ".join(str(option) for option in allowed)
        raise Problem(lambda name: f"unknown {name} {value!r:.80}: expected one of {shown}")

    return structure


def _annotated(hint: Any, converter: BaseConverter) -> Hook:
    base, *marks = get_args(hint)
    inner = converter.get_structure_hook(base)

    def structure(value: Any, _: Any) -> Any:
        result = inner(value, base)
        for mark in marks:
            if isinstance(mark, Between) and not mark.low <= result <= mark.high:
                raise ValueError(f"{result} is not within {mark.low} … {mark.high}")
            if isinstance(mark, NonBlank) and not result.strip():
                raise Problem(lambda name: f"'{name}' must not be empty")
        return result

    return structure


def _unless_unset(hint: Any, converter: BaseConverter) -> Hook:
    """``X | Unset``: a member that was sent is an ``X`` (left out, it keeps the default)."""
    rest = [arg for arg in get_args(hint) if arg is not Unset]
    sent: Any = Union[tuple(rest)]  # noqa: UP007 (built at run time)
    inner = converter.get_structure_hook(sent)
    return lambda value, _: inner(value, sent)


def _member(hint: Any, converter: BaseConverter) -> Hook:
    inner = converter.get_structure_hook(hint)

    def structure(value: Any, _: Any) -> Any:
        if _item(hint) is not None and not isinstance(value, list):
            raise TypeError(f"expected a list, got {value!r:.40}")  # a string iterates too
        return inner(value, hint)  # not the type cattrs passes: it lost the marks

    return structure


def _params(cls: type[Any], converter: BaseConverter) -> Hook:
    # The hints with their Annotated marks (cattrs resolves string annotations without).
    hints = get_type_hints(cls, include_extras=True)
    fields: dict[str, Any] = {
        field.name: override(
            rename=wire_name(field.name), struct_hook=_member(hints[field.name], converter)
        )
        for field in dataclasses.fields(cls)
    }
    return make_dict_structure_fn(cls, converter, **fields)


def _is_literal(hint: Any) -> bool:
    return get_origin(hint) is Literal


def _is_annotated(hint: Any) -> bool:
    return get_origin(hint) is Annotated


def _may_be_unset(hint: Any) -> bool:
    return get_origin(hint) in (Union, types.UnionType) and Unset in get_args(hint)


def _is_dataclass(hint: Any) -> bool:
    return isinstance(hint, type) and dataclasses.is_dataclass(hint)
