"""Reading the runtime's value format back (the inverse of ``Serializer.dumps``, see serde.py).

Decoding is strict: the bytes must hold exactly one CBOR item, every tag must be
one of ours with content of the right shape, and an object tag must name a type
registered on the serializer. Anything else is a ``SerializationError`` that
says what was found and where.

Decoding is also bounded. The parser refuses the CBOR tags that let a small input
stand for a large tree (see transport.py), so every decoded item costs at least one
input byte; the walk below keeps a budget of items and of string bytes, each the
size of the input, and refuses a value that would exceed either: whatever a future
parser does, decoding never builds more than the input could hold. Sets and dicts
with non-string keys are refused when many of their keys share one hash (ints are
easy to make collide), since building them would take quadratic time.
"""

from __future__ import annotations

import dataclasses
import enum
import itertools
from decimal import Decimal, InvalidOperation
from typing import Any
from uuid import UUID

import cbor2
from cbor2 import CBORTag
from pydantic import BaseModel, RootModel, ValidationError

from world_aws.contract.sealing import refuse_sealed
from world_aws.contract.transport import VALUE_TAGS, strict_cbor_loads
from world_aws.errors import BadInput, SerializationError
from world_aws.serde.tags import Tag, TimeCodecError, decode_temporal

_TEMPORAL_TAGS = (Tag.DATETIME, Tag.DATE, Tag.TIME, Tag.TIMEDELTA)

# Distinct keys of one set or dict that may share a hash. Honest data practically never has two
# (a 64-bit hash); an attacker's ints can all share one, and each insert then walks all the others.
MAX_HASH_COLLISIONS = 32


def decode_value(data: bytes, types: dict[str, type], context: str) -> Any:
    """Decode ``data`` with the registered ``types`` (name -> class).

    Raises:
        SerializationError: on any malformed input or unregistered type.
    """
    if not isinstance(data, bytes | bytearray | memoryview):
        raise SerializationError(f"cannot deserialize {context}: expected bytes, got {type(data).__name__}")
    refuse_sealed(bytes(data), context)
    try:
        raw = strict_cbor_loads(bytes(data), allowed_tags=VALUE_TAGS)
    except SerializationError:
        raise
    except BadInput as exc:
        raise SerializationError(f"cannot deserialize {context}: {exc}") from exc
    try:
        return _Decoder(types, context, budget=len(data)).decode(raw)
    except RecursionError as exc:
        raise SerializationError(f"cannot deserialize {context}: nested too deeply") from exc


class _Decoder:
    def __init__(self, types: dict[str, type], context: str, *, budget: int) -> None:
        self._types = types
        self._context = context
        self._path: list[str] = ["value"]
        self._budget = budget  # the input's size in bytes
        self._items = 0
        self._string_bytes = 0

    def _spend(self, raw: object) -> None:
        self._items += 1
        if type(raw) in (str, bytes):
            self._string_bytes += len(raw)  # type: ignore[arg-type]
        if self._items > self._budget or self._string_bytes > self._budget:
            raise self.fail(f"the value expands past the {self._budget} bytes it was decoded from")

    def fail(self, message: str) -> SerializationError:
        where = "".join(self._path)
        return SerializationError(f"cannot deserialize {self._context} at {where}: {message}")

    def _child(self, segment: str, raw: object) -> Any:
        self._path.append(segment)
        value = self.decode(raw)
        self._path.pop()
        return value

    def decode(self, raw: object) -> Any:
        self._spend(raw)
        if raw is None or type(raw) in (bool, int, float, str, bytes):
            return raw
        if isinstance(raw, list | tuple) and type(raw) in (list, tuple):
            return [self._child(f"[{i}]", item) for i, item in enumerate(raw)]
        if isinstance(raw, dict | cbor2.frozendict):
            return self._map(raw)
        if isinstance(raw, CBORTag):
            return self._tag(raw.tag, raw.value)
        raise self.fail(f"unexpected CBOR item of type {type(raw).__name__}")

    def _map(self, raw: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, item in raw.items():
            if type(key) is not str:
                raise self.fail(f"plain map with a non-str key {key!r}")
            out[key] = self._child(f"[{key!r}]", item)
        return out

    def _array(self, raw: object, what: str) -> list[Any]:
        if not isinstance(raw, list | tuple):
            raise self.fail(f"malformed {what}: expected an array, got {type(raw).__name__}")
        return list(raw)

    def _tag(self, tag: int, raw: object) -> Any:
        if tag == Tag.TUPLE:
            return tuple(self._child(f"[{i}]", x) for i, x in enumerate(self._array(raw, "tuple")))
        if tag in (Tag.SET, Tag.FROZENSET):
            items = [self._child("[<set element>]", x) for x in self._array(raw, "set")]
            self._check_hashes(items, "set element")
            try:
                return set(items) if tag == Tag.SET else frozenset(items)
            except TypeError as exc:
                raise self.fail(f"unhashable set element: {exc}") from exc
        if tag == Tag.DICT:
            return self._flat_dict(self._array(raw, "dict"))
        if tag in _TEMPORAL_TAGS:
            try:
                return decode_temporal(tag, raw)
            except TimeCodecError as exc:
                raise self.fail(str(exc)) from exc
        if tag == Tag.DECIMAL and type(raw) is str:
            try:
                return Decimal(raw)
            except InvalidOperation as exc:
                raise self.fail(f"malformed Decimal {raw!r}") from exc
        if tag == Tag.UUID and type(raw) is bytes and len(raw) == 16:
            return UUID(bytes=raw)
        if tag == Tag.BYTEARRAY and type(raw) is bytes:
            return bytearray(raw)
        if tag == Tag.ENUM:
            return self._enum(self._array(raw, "Enum member"))
        if tag == Tag.OBJECT:
            return self._object(self._array(raw, "object"))
        if tag in Tag.__members__.values():
            raise self.fail(f"malformed {Tag(tag).name.lower()}: {raw!r}")
        raise self.fail(f"unknown CBOR tag {tag}")

    def _flat_dict(self, items: list[Any]) -> dict[Any, Any]:
        if len(items) % 2:
            raise self.fail("malformed dict: odd number of items")
        keys = [self._child("[<dict key>]", items[i]) for i in range(0, len(items), 2)]
        self._check_hashes(keys, "dict key")
        out: dict[Any, Any] = {}
        for i, key in zip(range(0, len(items), 2), keys, strict=True):
            try:
                out[key] = self._child(f"[{key!r}]", items[i + 1])
            except TypeError as exc:
                raise self.fail(f"unhashable dict key: {exc}") from exc
        return out

    def _check_hashes(self, keys: list[Any], what: str) -> None:
        """Refuse keys of which too many share one hash (sorting their hashes is O(n log n))."""
        if len(keys) <= MAX_HASH_COLLISIONS:
            return
        try:
            hashes = sorted(hash(k) for k in keys)
        except TypeError as exc:
            raise self.fail(f"unhashable {what}: {exc}") from exc
        run = 1
        for before, after in itertools.pairwise(hashes):
            run = run + 1 if before == after else 1
            if run > MAX_HASH_COLLISIONS:
                raise self.fail(f"more than {MAX_HASH_COLLISIONS} distinct {what}s share one hash")

    def _lookup(self, name: object, what: str) -> type:
        if type(name) is not str:
            raise self.fail(f"malformed {what}: type name {name!r}")
        cls = self._types.get(name)
        if cls is None:
            raise self.fail(f"type {name!r} is not registered with this Serializer")
        return cls

    def _enum(self, items: list[Any]) -> enum.Enum:
        cls = self._lookup(items[0] if items else None, "Enum member")
        if not issubclass(cls, enum.Enum):
            raise self.fail(f"{items[0]!r} is registered, but not as an Enum")
        value = self._child(".value", items[2]) if len(items) == 3 and items[1] is None else None
        try:
            if len(items) == 2 and type(items[1]) is str:
                return cls[items[1]]
            if len(items) == 3 and items[1] is None:
                return cls(value)
        except (KeyError, ValueError) as exc:
            raise self.fail(f"{items[0]!r} has no member {items[1:]!r}") from exc
        raise self.fail(f"malformed Enum member {items!r}")

    def _object(self, items: list[Any]) -> object:
        cls = self._lookup(items[0] if items else None, "object")
        if len(items) != 2 or not isinstance(items[1], dict | cbor2.frozendict):
            raise self.fail(f"malformed object {items!r}")
        fields = self._map(items[1])
        try:
            if issubclass(cls, RootModel):
                return cls.model_validate(fields.get("root"))
            if issubclass(cls, BaseModel):
                # by_name: the stored keys are field names, whatever aliases the model declares.
                return cls.model_validate(fields, by_name=True, by_alias=False)
            return _build_dataclass(cls, fields)
        except (ValidationError, TypeError, ValueError) as exc:
            raise self.fail(f"{items[0]!r} refused the stored fields: {exc}") from exc


def _build_dataclass(cls: type, fields: dict[str, Any]) -> object:
    """Construct through ``__init__`` (so ``__post_init__`` runs), then restore ``init=False`` fields."""
    spec = {f.name: f for f in dataclasses.fields(cls)}
    unknown = set(fields) - set(spec)
    if unknown:
        raise TypeError(f"unknown field(s) {sorted(unknown)}")
    obj = cls(**{k: v for k, v in fields.items() if spec[k].init})
    for k, v in fields.items():
        if not spec[k].init:
            object.__setattr__(obj, k, v)
    return obj
