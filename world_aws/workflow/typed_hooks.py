"""Typed hooks: a hook whose payload is a dataclass or pydantic model, validated when it is resumed.

Declare one by subclassing :class:`Hook` (a plain subclass becomes a dataclass;
one that is also a ``pydantic.BaseModel`` stays a model)::

    class Approval(Hook):
        approved: bool
        by: str = "someone"

    @app.workflow
    async def ship(order: str) -> str:
        decision = await Approval.wait(token=f"approve:{order}")  # an Approval
        ...

    runtime.resume_hook("approve:o-1", Approval(approved=True))   # or {"approved": True}
    Approval.resume("approve:o-1", {"approved": True}, runtime=runtime)

The hook's metadata records the type's name (``{"$hook_type": "module:Approval",
"metadata": ...}``). A resume of its token validates the payload against the type
strictly (a wrong type or an unknown field is a ``BadInput`` naming the field, HTTP
400 over the API, exit 2 from the CLI) and
records it as plain data (a dict of its fields), so the log never needs the class
to be registered for serialization; the workflow gets an instance back. The app
that resumes must know the type: ``@app.workflow`` finds every ``Hook`` subclass the
workflow's code names (a module global or a closure variable), and
``app.register_type(Approval)`` adds one it cannot see.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import types
from collections.abc import AsyncIterator, Callable, Generator, Iterator, Mapping
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, Generic, Protocol, Self, TypeVar, dataclass_transform

from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic_core import PydanticSerializationError, to_json

from world_aws.errors import BadInput, HookDisposedError, SerializationError
from world_aws.workflow import context

if TYPE_CHECKING:
    from world_aws.serde.codec import Serializer
    from world_aws.workflow.hooks import Hook as RawHook


class HookResumer(Protocol):
    """What ``Hook.resume`` needs of its ``runtime``: ``Runtime`` and ``Client`` have it."""

    def resume_hook(
        self,
        token: str,
        payload: Any,
        *,
        resume_id: str | None = None,
        hook_type: type[Hook] | None = None,
    ) -> str: ...


HOOK_TYPE_KEY = "$hook_type"
H = TypeVar("H", bound="Hook")


@dataclass_transform()
class Hook:
    """Base class of typed hooks: subclass it with annotated fields (see the module docstring)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not issubclass(cls, BaseModel) and "__dataclass_fields__" not in cls.__dict__:
            dataclasses.dataclass(cls)

    @classmethod
    def hook_type_name(cls) -> str:
        """The name recorded in the hook's metadata: ``module:qualname``."""
        return f"{cls.__module__}:{cls.__qualname__}"

    @classmethod
    def create(cls, *, token: str | None = None, metadata: Any = None) -> TypedHook[Self]:
        """A durable hook whose payloads are instances of this class (inside a workflow).

        ``await`` it for one payload, ``async for`` over it for many, ``dispose()`` it
        to free its token.
        """
        marked = {HOOK_TYPE_KEY: cls.hook_type_name(), "metadata": metadata}
        return TypedHook(cls, context.create_hook(token=token, metadata=marked))

    @classmethod
    async def wait(cls, *, token: str | None = None, metadata: Any = None) -> Self:
        """Create the hook, return its first payload, and free its token (inside a workflow)."""
        hook = cls.create(token=token, metadata=metadata)
        try:
            return await hook
        finally:
            hook.dispose()

    @classmethod
    def resume(cls, token: str, payload: Any, *, runtime: HookResumer, resume_id: str | None = None) -> str:
        """``runtime.resume_hook(token, payload)``, checked against this class first.

        Raises:
            BadInput: the payload does not fit this class (naming the field), or the hook
                holding ``token`` is of another type.
            NotFound: no live hook holds ``token``.
        """
        return runtime.resume_hook(token, validate(cls, payload), resume_id=resume_id, hook_type=cls)


class TypedHook(Generic[H]):
    """A hook created by ``SomeHook.create()``: its payloads come as ``SomeHook`` instances."""

    def __init__(self, cls: type[H], inner: RawHook) -> None:
        self._cls = cls
        self._inner = inner

    @property
    def token(self) -> str:
        return self._inner.token

    def dispose(self) -> None:
        """Free the token; payloads already delivered still come, then no more."""
        self._inner.dispose()

    async def _next(self) -> H:
        return validate(self._cls, await self._inner)

    def __await__(self) -> Generator[Any, None, H]:
        return self._next().__await__()

    def __aiter__(self) -> AsyncIterator[H]:
        return self

    async def __anext__(self) -> H:
        try:
            return await self._next()
        except HookDisposedError:
            raise StopAsyncIteration from None


def validate(cls: type[H], payload: Any) -> H:
    """``payload`` (an instance, or a mapping of its fields) as a checked instance of ``cls``.

    Strict: each value must already have its field's type as JSON carries it (``"yes"`` is
    not a bool, ``"1"`` not an int; an ISO 8601 string is a datetime and an enum's value its
    member, as JSON has no other form for them), and a field the class does not declare is
    refused, not dropped (unless a pydantic hook sets ``extra`` itself).

    Raises:
        BadInput: a field is missing, unknown, or does not fit its annotation (named in the message).
    """
    if isinstance(payload, BaseModel):
        payload = payload.model_dump()
    elif dataclasses.is_dataclass(payload) and not isinstance(payload, type):
        payload = dataclasses.asdict(payload)
    if isinstance(payload, Mapping):
        _refuse_unknown(cls, payload)
    try:
        text = to_json(payload)
    except PydanticSerializationError as exc:
        raise BadInput(f"hook payload for {cls.__qualname__}: not representable as JSON ({exc})") from None
    adapter = TypeAdapter(cls)
    try:
        # The check is JSON's strict mode (what an HTTP resume carries); the instance is then
        # built from the values themselves, so a datetime keeps its own tzinfo (which the
        # serializer knows, unlike the one pydantic gives a parsed one).
        adapter.validate_json(text, strict=True)
        value: H = adapter.validate_python(payload)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(the payload)"
        raise BadInput(f"hook payload for {cls.__qualname__}: field {where!r}: {first['msg']}") from None
    return value


def _refuse_unknown(cls: type[Hook], payload: Mapping[Any, Any]) -> None:
    """Raise BadInput naming the first key of ``payload`` that is not a field of ``cls``."""
    if issubclass(cls, BaseModel):
        if cls.model_config.get("extra") in ("allow", "ignore"):
            return  # the model says what to do with extra fields
        known = set(cls.model_fields) | {
            f.alias for f in cls.model_fields.values() if isinstance(f.alias, str)
        }
    else:
        known = {f.name for f in dataclasses.fields(cls) if f.init}  # type: ignore[arg-type]
    unknown = [key for key in payload if key not in known]
    if unknown:
        raise BadInput(
            f"hook payload for {cls.__qualname__}: field {str(unknown[0])!r}: not a field of "
            f"{cls.__qualname__} (its fields: {', '.join(sorted(known))})"
        )


def plain(value: Hook) -> Any:
    """A typed payload as the plain data the log records: a dict of its fields, nested models
    and dataclasses as dicts and enums as their values (``validate`` turns it back)."""
    return _without_enums(TypeAdapter(type(value)).dump_python(value))


def _without_enums(value: Any) -> Any:
    if isinstance(value, datetime) and value.tzinfo is not None and not isinstance(value.tzinfo, timezone):
        # pydantic parses "...Z" / "+02:00" into its own tzinfo, which the serializer refuses
        return value.astimezone(timezone(value.utcoffset() or timedelta(0)))
    if isinstance(value, enum.Enum):
        return _without_enums(value.value)
    if isinstance(value, dict):
        return {key: _without_enums(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return type(value)(_without_enums(item) for item in value)
    return value


def declared_type(serializer: Serializer, metadata: bytes | None) -> str | None:
    """The hook type a hook's recorded metadata names, if it is a typed hook."""
    if not metadata:
        return None
    try:
        decoded = serializer.loads(metadata)
    except SerializationError:  # metadata of types this app does not know: not one of ours
        return None
    if isinstance(decoded, dict) and isinstance(decoded.get(HOOK_TYPE_KEY), str):
        return str(decoded[HOOK_TYPE_KEY])
    return None


def checked_payload(
    known: Callable[[str], type[Hook] | None], declared: str | None, payload: Any, hint: type[Hook] | None
) -> Any:
    """What ``resume_hook`` records for ``payload``: validated plain data for a typed hook, else as given.

    Raises:
        BadInput: the payload does not fit the hook's type, or the type is not known here.
    """
    if declared is None:
        return plain(payload) if isinstance(payload, Hook) else payload
    candidates = [hint, type(payload) if isinstance(payload, Hook) else None]
    cls = known(declared) or next((c for c in candidates if c and c.hook_type_name() == declared), None)
    if cls is None:
        raise BadInput(
            f"the hook expects a {declared} payload, and this app does not know that type "
            "(name the class in a workflow, or app.register_type it)"
        )
    return plain(validate(cls, payload))


def hook_types_in(fn: Callable[..., Any]) -> list[type[Hook]]:
    """The ``Hook`` subclasses ``fn``'s code names: module globals and closure variables."""
    code = getattr(fn, "__code__", None)
    if not isinstance(code, types.CodeType):
        return []
    scope: dict[str, Any] = dict(getattr(fn, "__globals__", {}))
    closure = getattr(fn, "__closure__", None) or ()
    for name, cell in zip(code.co_freevars, closure, strict=False):
        try:
            scope[name] = cell.cell_contents
        except ValueError:  # an empty cell: defined later in the enclosing function
            continue
    found: dict[type[Hook], None] = {}
    for name in _names(code):
        value = scope.get(name)
        if inspect.isclass(value) and issubclass(value, Hook) and value is not Hook:
            found.setdefault(value, None)
    return list(found)


def _names(code: types.CodeType) -> Iterator[str]:
    yield from code.co_names
    yield from code.co_freevars
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _names(const)
