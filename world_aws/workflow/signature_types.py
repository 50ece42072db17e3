"""Types in workflow and step signatures: registered for serialization, used to convert JSON arguments.

``@app.workflow`` and ``@app.step`` register every Enum, dataclass and pydantic
model their annotations name (also inside ``list[...]``, ``X | None``, ...), so
values of those types cross the log without ``app.register_type``. Arguments
that arrive as JSON (``world-aws run --arg``, ``POST /runs``) are validated and
converted to the annotated parameter types with pydantic (a dict becomes the
dataclass, a string the Enum); a mismatch is ``BadInput`` naming the parameter.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import typing
from collections.abc import Callable, Iterator
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from world_aws.errors import BadInput

# Nesting followed into a type's arguments and fields (a self-referencing model stops here).
MAX_TYPE_DEPTH = 8


def parameter_types(fn: Callable[..., Any]) -> dict[str, Any]:
    """The resolved annotations of ``fn``'s parameters (and ``return``); {} if they cannot be resolved."""
    try:
        return typing.get_type_hints(fn)
    except Exception:  # a forward reference the module cannot resolve: nothing is registered, no harm
        return {}


def serializable_types(hints: dict[str, Any]) -> list[type]:
    """The Enum, dataclass and pydantic model classes named anywhere in ``hints``, each once."""
    found: dict[type, None] = {}
    for hint in hints.values():
        for cls in _walk(hint, 0):
            found.setdefault(cls, None)
    return list(found)


def _walk(hint: Any, depth: int) -> Iterator[type]:
    if depth > MAX_TYPE_DEPTH:
        return
    for arg in typing.get_args(hint):
        yield from _walk(arg, depth + 1)
    if not isinstance(hint, type):
        return
    if issubclass(hint, enum.Enum):
        yield hint
    elif issubclass(hint, BaseModel):
        yield hint
        for field in hint.model_fields.values():
            yield from _walk(field.annotation, depth + 1)
    elif dataclasses.is_dataclass(hint):
        yield hint
        for name, field_hint in parameter_types(hint).items():
            if name in {f.name for f in dataclasses.fields(hint)}:
                yield from _walk(field_hint, depth + 1)


def convert_arguments(
    what: str,
    signature: inspect.Signature,
    hints: dict[str, Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """JSON ``args``/``kwargs`` converted to the annotated types of ``signature``'s parameters.

    Raises:
        BadInput: the arguments do not bind, or one does not fit its annotation (naming it).
    """
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as exc:
        raise BadInput(f"arguments do not fit {what}{signature}: {exc}") from exc
    for name, value in list(bound.arguments.items()):
        hint = hints.get(name)
        if hint is None:
            continue
        kind = signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            hint = tuple[hint, ...]  # type: ignore[valid-type]
        elif kind is inspect.Parameter.VAR_KEYWORD:
            hint = dict[str, hint]  # type: ignore[valid-type]
        try:
            bound.arguments[name] = TypeAdapter(hint).validate_python(value)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            shown = _show(hint) + (f" at {where}" if where else "")
            raise BadInput(f"argument {name!r} of {what} does not fit {shown}: {first['msg']}") from None
        except Exception:  # a type pydantic has no schema for: the value goes on as it came
            pass
    return tuple(bound.args), dict(bound.kwargs)


def _show(hint: Any) -> str:
    return hint.__name__ if isinstance(hint, type) else str(hint).replace("typing.", "")
