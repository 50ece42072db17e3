"""JSON-safe renderings of workflow values, shared by the HTTP API and the CLI.

Workflow results and hook payloads are whatever the runtime's serializer can
carry (sets, bytes, datetimes, Decimals, dataclasses, pydantic models, ...). JSON
holds fewer types, so the API and the CLI show such values in the nearest JSON
shape: containers stay containers, records become objects, and everything else
becomes a string.
"""

from __future__ import annotations

import dataclasses
import math
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
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, Enum):
        return to_jsonable(value.value)
    if isinstance(value, int):
        return int(value)
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


def _key(key: Any) -> str:
    rendered = to_jsonable(key)
    return rendered if isinstance(rendered, str) else str(rendered)
