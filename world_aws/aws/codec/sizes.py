"""Item sizes by DynamoDB's billing rules, over the wire form boto3's low-level client uses.

From "DynamoDB item sizes and formats"
(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html):
the UTF-8 bytes of every attribute name plus its value: a string its UTF-8 bytes, a
binary its raw bytes, a number 1 byte per two significant digits plus 1, a boolean or
null 1, a list or map 3 bytes plus 1 per element plus the elements (map keys count as
names), a set the sum of its members. A write is billed per started KB of the larger
of an item's two images (``WRITE_UNIT_BYTES``). The meter (``bench.billing``) bills by
these; ``step_events`` sizes a run item's ``tail`` by them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

WRITE_UNIT_BYTES = 1024

Attributes = Mapping[str, Mapping[str, Any]]


def value_size(value: Mapping[str, Any]) -> int:
    """Bytes of one attribute value in wire form (without its name)."""
    ((kind, raw),) = value.items()
    if kind == "S":
        return len(str(raw).encode("utf-8"))
    if kind == "B":
        return len(bytes(raw))
    if kind == "N":
        return number_size(str(raw))
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(str(v).encode("utf-8")) for v in raw)
    if kind == "BS":
        return sum(len(bytes(v)) for v in raw)
    if kind == "NS":
        return sum(number_size(str(v)) for v in raw)
    if kind == "L":
        return 3 + sum(1 + value_size(v) for v in raw)
    if kind == "M":
        return 3 + sum(1 + len(k.encode("utf-8")) + value_size(v) for k, v in raw.items())
    raise ValueError(f"unknown DynamoDB attribute type {kind!r}")


def number_size(text: str) -> int:
    """1 byte per two significant digits (leading and trailing zeros trimmed), plus 1."""
    mantissa = text.lower().split("e", 1)[0].lstrip("+-").replace(".", "")
    digits = mantissa.strip("0") or "0"
    return math.ceil(len(digits) / 2) + 1


def item_size(item: Attributes | None) -> int:
    """Bytes of an item by DynamoDB's rules; 0 for no item."""
    if not item:
        return 0
    return sum(len(name.encode("utf-8")) + value_size(value) for name, value in item.items())
