"""The runtime's value serializer (contract §8.6): Python values to CBOR bytes and back, exactly.

Every step argument and result, workflow input and output and hook payload goes
through a :class:`Serializer`. The round trip is exact: a value comes back with
the same types (a tuple stays a tuple, a frozenset a frozenset, bytes stay bytes),
the same timezone object, the same ``Decimal`` digits and the same dict order.

Format (stable: stored logs depend on it):

* ``None``, ``bool``, ``int`` (any size: cbor2 writes big ones as bignums),
  ``float`` (always 8 bytes, so ``-0.0`` and every bit survive), ``str``,
  ``bytes``, ``list``: the plain CBOR items;
* a ``dict`` whose keys are all ``str``: a plain CBOR map, in insertion order;
  a dict with any other key: tag ``DICT`` over a flat ``[k1, v1, k2, v2, ...]``;
* everything else: a world-aws tag from :mod:`world_aws.serde.tags`.

Determinism: the same value always gives the same bytes. Sets have no order, so
their elements are written sorted by their own encoded bytes. Dicts are *not*
sorted: insertion order is part of a Python dict's value (it is what iteration,
``repr`` and JSON output show), so a round trip keeps it, and two dicts that
differ only in order encode differently. That is what replay needs: the
workflow code that builds a dict the same way builds the same bytes.

Only registered Enum, dataclass and pydantic model types are written or read
(by a stable name, ``module:qualname`` unless given), so loading a payload can
never construct an arbitrary class.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any, TypeVar
from uuid import UUID

import cbor2
from cbor2 import CBORTag
from pydantic import BaseModel

from world_aws.errors import SerializationError
from world_aws.serde.decode import decode_value
from world_aws.serde.errors import ErrorInfo, decode_error, encode_error
from world_aws.serde.limits import Payload, PayloadLimits
from world_aws.serde.tags import Tag, TimeCodecError, encode_temporal

__all__ = ["ErrorInfo", "Serializer", "decode_error", "encode_error"]

T = TypeVar("T", bound=type)

# Nesting depth of Python containers a value may have. Each level costs at most two
# CBOR containers, which keeps every payload we write under cbor2's decoding limit of 400.
MAX_DEPTH = 128

_SUPPORTED = (
    "None, bool, int, float, str, bytes, bytearray, list, tuple, dict, set, frozenset, "
    "datetime, date, time, timedelta, Decimal, UUID and registered Enum, dataclass and pydantic types"
)
_PLAIN = (type(None), bool, int, float, str, bytes)
_TEMPORAL = (datetime, date, time, timedelta)


def type_name(tp: type) -> str:
    """A readable qualified name of a type (``Decimal`` -> ``decimal.Decimal``, ``int`` -> ``int``)."""
    return tp.__qualname__ if tp.__module__ == "builtins" else f"{tp.__module__}.{tp.__qualname__}"


class Serializer:
    """Serializes values of the supported types, plus the types registered on it.

    The registry lives on the instance (contract §9): each ``Workflows`` app owns one.
    """

    def __init__(self, types: Iterable[type] = (), *, limits: PayloadLimits | None = None) -> None:
        """Create a serializer with ``types`` registered (see :meth:`register`) and size ``limits``."""
        self.limits = limits or PayloadLimits()
        self._names: dict[type, str] = {}
        self._types: dict[str, type] = {}
        for cls in types:
            self.register(cls)

    def register(self, cls: T, *, name: str | None = None) -> T:
        """Allow instances of ``cls`` (an Enum, a dataclass or a pydantic model) in values.

        Usable as a class decorator. Registering the same class again is a no-op.

        Args:
            cls: the class to register.
            name: the stable name written into payloads; defaults to ``module:qualname``.
                Renaming or moving a class changes the default name: pass the old name
                to keep reading payloads written before the move.

        Returns:
            ``cls`` itself.

        Raises:
            TypeError: ``cls`` is not an Enum, dataclass or pydantic model class.
            SerializationError: the name is already registered for a different class,
                or the class is already registered under a different name.
        """
        if not isinstance(cls, type) or not (
            issubclass(cls, enum.Enum | BaseModel) or dataclasses.is_dataclass(cls)
        ):
            raise TypeError(f"only Enum, dataclass and pydantic model classes can be registered, not {cls!r}")
        key = name if name is not None else f"{cls.__module__}:{cls.__qualname__}"
        known_cls = self._types.get(key)
        known_name = self._names.get(cls)
        if known_cls is cls and known_name == key:
            return cls
        if known_cls is not None:
            raise SerializationError(
                f"cannot register {type_name(cls)} as {key!r}: that name is already registered for "
                f"{type_name(known_cls)} (defined in {known_cls.__module__}); pass register(cls, name=...)"
            )
        if known_name is not None:
            raise SerializationError(f"{type_name(cls)} is already registered as {known_name!r}, not {key!r}")
        self._types[key] = cls
        self._names[cls] = key
        return cls

    def registered(self, name: str) -> type | None:
        """The class registered under ``name``, if any."""
        return self._types.get(name)

    def dumps(
        self, value: object, *, context: str = "value", root: str = "value", payload: Payload | None = None
    ) -> bytes:
        """Serialize ``value`` to CBOR bytes.

        Args:
            value: the value to write.
            context: what the value is, for error messages (e.g. "argument of step 'charge'").
            root: the name of the value at the start of an error's path (e.g. ``args``
                gives ``args[1]['items'][3]``).
            payload: the kind of value, whose size limit (``self.limits``) applies; none without.

        Returns:
            Deterministic CBOR bytes.

        Raises:
            SerializationError: naming the offending type, its path inside ``value`` and ``context``;
                or the value's size and its limit.
        """
        limit = self.limits.of(payload) if payload is not None else None
        encoder = _Encoder(self._names, context, root, (payload, limit) if limit is not None else None)
        tree = encoder.encode(value)
        try:
            data = bytes(cbor2.dumps(tree))
        except (cbor2.CBOREncodeError, ValueError, TypeError) as exc:  # e.g. a str with lone surrogates
            raise SerializationError(f"cannot encode {context}: {exc}") from exc
        if limit is not None and len(data) > limit:
            raise too_large(context, payload, limit, f"{len(data)} bytes")
        return data

    def loads(self, data: bytes, *, context: str = "value") -> Any:
        """Deserialize bytes written by :meth:`dumps`.

        Raises:
            SerializationError: malformed or trailing bytes, a tag for an unregistered type
                (named in the message), or a registered type that refuses the stored fields.
        """
        return decode_value(data, self._types, context)


class _Encoder:
    """One ``dumps`` call: the value tree walk, with the path kept for error messages."""

    def __init__(
        self, names: dict[type, str], context: str, root: str, limit: tuple[Payload | None, int] | None = None
    ) -> None:
        self._names = names
        self._context = context
        self._path: list[str] = [root]
        self._active: set[int] = set()  # ids of the containers being walked: a cycle guard
        self._limit = limit
        self._counted = 0  # a lower bound of the encoded size: 1 per item, plus str/bytes lengths

    def _count(self, value: object) -> None:
        self._counted += 1 + (len(value) if isinstance(value, str | bytes | bytearray) else 0)
        if self._limit is not None and self._counted > self._limit[1]:
            payload, limit = self._limit
            raise too_large(self._context, payload, limit, f"at least {self._counted} bytes")

    def fail(self, tp: type, reason: str) -> SerializationError:
        where = "".join(self._path)
        return SerializationError(f"cannot serialize {type_name(tp)} at {where} ({self._context}): {reason}")

    def encode(self, value: object) -> object:
        self._count(value)
        tp = type(value)
        if tp in _PLAIN:
            return value
        if tp in (list, tuple, dict, set, frozenset) or tp in self._names:
            return self._container(value)
        if isinstance(value, _TEMPORAL) and tp in _TEMPORAL:
            try:
                return encode_temporal(value)
            except TimeCodecError as exc:
                raise self.fail(tp, str(exc)) from exc
        if isinstance(value, Decimal) and tp is Decimal:
            return CBORTag(Tag.DECIMAL, str(value))
        if isinstance(value, UUID) and tp is UUID:
            return CBORTag(Tag.UUID, value.bytes)
        if isinstance(value, bytearray) and tp is bytearray:
            return CBORTag(Tag.BYTEARRAY, bytes(value))
        raise self.fail(tp, self._hint(value))

    def _hint(self, value: object) -> str:
        tp = type(value)
        kind = (
            "Enum type"
            if isinstance(value, enum.Enum)
            else "pydantic model"
            if isinstance(value, BaseModel)
            else "dataclass"
            if dataclasses.is_dataclass(value)
            else None
        )
        if kind is not None:
            return (
                f"{kind} {type_name(tp)} is not registered: name it in a workflow or step signature, "
                f"or call app.register_type({tp.__qualname__})"
            )
        if callable(value):
            return "functions, methods and other callables cannot be serialized; pass data instead"
        return f"supported types are {_SUPPORTED}"

    def _child(self, segment: str, value: object) -> object:
        self._path.append(segment)
        encoded = self.encode(value)
        self._path.pop()
        return encoded

    def _container(self, value: object) -> object:
        if id(value) in self._active:
            raise self.fail(type(value), "the value contains itself (a reference cycle)")
        if len(self._active) >= MAX_DEPTH:
            raise self.fail(type(value), f"values may nest at most {MAX_DEPTH} levels deep")
        self._active.add(id(value))
        try:
            return self._container_body(value)
        finally:
            self._active.discard(id(value))

    def _container_body(self, value: object) -> object:
        if isinstance(value, list | tuple) and type(value) in (list, tuple):
            items = [self._child(f"[{i}]", item) for i, item in enumerate(value)]
            return items if type(value) is list else CBORTag(Tag.TUPLE, items)
        if type(value) is dict:
            return self._dict(value)
        if isinstance(value, set | frozenset) and type(value) in (set, frozenset):
            elements = [self._child("[<set element>]", item) for item in value]
            # Sorted by encoded bytes: set iteration order depends on hashing (PYTHONHASHSEED).
            elements.sort(key=cbor2.dumps)
            return CBORTag(Tag.SET if type(value) is set else Tag.FROZENSET, elements)
        return self._registered(value)

    def _dict(self, value: dict[Any, Any]) -> object:
        if all(type(k) is str for k in value):
            return {k: self._child(f"[{_short_repr(k)}]", v) for k, v in value.items()}
        flat: list[object] = []
        for k, v in value.items():
            flat.append(self._child("[<dict key>]", k))
            flat.append(self._child(f"[{_short_repr(k)}]", v))
        return CBORTag(Tag.DICT, flat)

    def _registered(self, value: object) -> object:
        name = self._names[type(value)]
        if isinstance(value, enum.Enum):
            if type(value).__members__.get(value.name or "") is value:
                return CBORTag(Tag.ENUM, [name, value.name])
            # A Flag combination has no member of its own: keep its value.
            return CBORTag(Tag.ENUM, [name, None, self._child(".value", value.value)])
        if isinstance(value, BaseModel):
            fields: dict[str, object] = {f: getattr(value, f) for f in type(value).model_fields}
            fields.update(value.__pydantic_extra__ or {})
        else:
            fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}  # type: ignore[arg-type]
        state = {f: self._child(f".{f}", v) for f, v in fields.items()}
        return CBORTag(Tag.OBJECT, [name, state])


def too_large(context: str, payload: Payload | None, limit: int, size: str) -> SerializationError:
    """The error for a value of ``size`` over its ``limit``."""
    return SerializationError(
        f"cannot serialize {context}: {size}, over the {payload} limit of {limit} bytes"
    )


def _short_repr(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
