"""JSON-safe renderings of workflow values, shared by the HTTP API and the CLI.

Workflow results and hook payloads are whatever the runtime's serializer can
carry (sets, bytes, datetimes, Decimals, dataclasses, pydantic models, ...). JSON
holds fewer types, so the API and the CLI show such values in the nearest JSON
shape: containers stay containers, records become objects, and everything else
becomes a string.

Two values JSON text could carry but a response cannot, rendered as strings too:

* an int with more decimal digits than Python will convert to text
  (``sys.get_int_max_str_digits()``, 4,300 by default) is its hexadecimal form,
  ``"0x..."`` (or ``"-0x..."``): exact, and hex has no conversion limit;
* a str holding lone surrogates (not valid Unicode, so not encodable as UTF-8)
  has each one written as its escape, ``"\\ud800"``.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from datetime import date, datetime, time, timedelta
from enum import Enum
from typing import Any

from pydantic import BaseModel


def to_jsonable(value: Any) -> Any:
    """``value`` with everything JSON cannot hold rendered in the nearest JSON shape.

    Sets become lists (sorted by ``repr`` so the rendering is stable), tuples
    lists, bytes text (undecodable bytes escaped), dates ISO 8601, enums their
    value, dataclasses and pydantic models objects, dict keys strings,
    non-finite floats strings; anything else ``str(value)``.

    Args:
        value: any value the runtime's serializer produced.

    Returns:
        A value that ``json.dumps(..., allow_nan=False)`` accepts.
    """
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, Enum):
        return to_jsonable(value.value)
    if isinstance(value, int):
        return _int(int(value))
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, dict):
        return {_key(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    if isinstance(value, set | frozenset):
        return [to_jsonable(v) for v in sorted(value, key=repr)]
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("utf-8", "backslashreplace")
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, BaseModel):
        return to_jsonable(value.model_dump())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return str(value)


def _int(value: int) -> int | str:
    """``value``, or its hex text when it has too many digits to convert (see the module docstring)."""
    limit = sys.get_int_max_str_digits()
    # 3.32 bits per decimal digit: below this many bits the digits are surely within the limit.
    if limit == 0 or value.bit_length() < (limit - 1) * 3.32:
        return value
    try:
        str(value)
    except ValueError:
        return hex(value)
    return value


def _text(value: str) -> str:
    """``value``, with lone surrogates escaped when it is not valid Unicode."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    return value


def _key(key: Any) -> str:
    rendered = to_jsonable(key)
    return rendered if isinstance(rendered, str) else str(rendered)
