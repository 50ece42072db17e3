"""Serialise moto's DynamoDB attribute values directly instead of through its generic walker.

moto 5.2 renders every JSON response by walking the operation's output shape, and
an ``AttributeValue`` is a structure of ten members (S, N, B, SS, NS, BS, M, L,
NULL, BOOL), each looked up through a chain of alias providers: about 150 lookups
for one of world-aws's 15-attribute items, half of moto's time per DynamoDB
request. An attribute value is already a one-key dict in the wire form, so it is
written here as the walker would write it (strings as ``str``, blobs base64, maps
and lists recursively, ``None`` members left out), in one pass.

``install()`` patches ``BaseJSONSerializer._serialize_type_structure`` for that one
shape and leaves every other shape to moto; a value that is not a dict goes to moto
too. ``tests/infra/test_moto_fast_json.py`` checks both give the same JSON.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

LOG = logging.getLogger(__name__)

_MARKER = "_world_aws_fast_attribute_values"
_SHAPE = "AttributeValue"
_STRINGS = frozenset({"S", "N"})
_STRING_SETS = frozenset({"SS", "NS"})
_AS_IS = frozenset({"NULL", "BOOL"})


def install() -> bool:
    """Patch moto's JSON serializer (idempotent). True when the patch is on."""
    try:
        from moto.core.serialize import BaseJSONSerializer
    except ImportError:  # moto is not installed, or moved its serializer: moto runs as it is
        return False
    original = getattr(BaseJSONSerializer, "_serialize_type_structure", None)
    if original is None or not callable(getattr(BaseJSONSerializer, "_base64", None)):
        LOG.warning("moto's JSON serializer changed; DynamoDB responses are rendered by moto alone")
        return False
    if getattr(original, _MARKER, False):
        return True
    BaseJSONSerializer._serialize_type_structure = _fast_structure(original)  # type: ignore[method-assign]
    return True


def _fast_structure(original: Callable[..., None]) -> Callable[..., None]:
    def serialize_structure(self: Any, serialized: Any, value: Any, shape: Any, key: str) -> None:
        if key and isinstance(value, dict) and getattr(shape, "name", None) == _SHAPE:
            self._default_serialize(serialized, attribute_value(value, self._base64), shape, key)
            return
        original(self, serialized, value, shape, key)

    setattr(serialize_structure, _MARKER, True)
    serialize_structure.__wrapped__ = original  # type: ignore[attr-defined]  # moto's own, for the equivalence test
    return serialize_structure


def attribute_value(value: dict[str, Any], base64: Callable[[Any], str]) -> dict[str, Any]:
    """One DynamoDB ``AttributeValue`` as moto's serializer renders it."""
    rendered: dict[str, Any] = {}
    for name, member in value.items():
        if member is None:
            continue
        if name in _STRINGS:
            rendered[name] = _string(member)
        elif name == "B":
            rendered[name] = base64(member)
        elif name in _STRING_SETS:
            rendered[name] = [_string(item) for item in member]
        elif name == "BS":
            rendered[name] = [base64(item) for item in member]
        elif name == "M":
            rendered[name] = {k: _nested(v, base64) for k, v in member.items()}
        elif name == "L":
            rendered[name] = [_nested(v, base64) for v in member]
        elif name in _AS_IS:
            rendered[name] = member
        # any other key is not a member of the shape: the walker leaves it out too
    return rendered


def _nested(value: Any, base64: Callable[[Any], str]) -> Any:
    return attribute_value(value, base64) if isinstance(value, dict) else value


def _string(value: Any) -> Any:
    return str(value) if value not in (None, {}, []) else value  # as moto's _serialize_type_string
