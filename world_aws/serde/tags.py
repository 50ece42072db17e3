"""CBOR tag numbers of the runtime's value format, and the codecs of the date/time values.

CBOR has no private-use tag range, so world-aws takes one block in the
first-come-first-served space, ``0x5741_00xx`` (``0x57 0x41`` spells "WA"), far
from the small registered numbers cbor2 decodes itself (0/1 datetimes, 2/3
bignums, 4 decimals, 37 UUIDs, 258 sets, ...). Every tag costs 5 bytes on the
wire, which is nothing next to the value it wraps.

The standard tags are deliberately *not* used for datetimes, decimals, UUIDs or
sets: their cbor2 codecs lose information this format must keep (a ``ZoneInfo``
becomes a fixed offset, a naive datetime cannot be encoded, a frozenset comes
back as a set, a ``Decimal("NaN")`` as a float).
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta, timezone, tzinfo
from enum import IntEnum
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cbor2 import CBORTag

_TAG_BASE = 0x5741_0000


class Tag(IntEnum):
    """The world-aws tag numbers. Never renumber one: stored logs depend on them."""

    TUPLE = _TAG_BASE + 1  # array of items
    SET = _TAG_BASE + 2  # array of items, sorted by their encoded bytes
    FROZENSET = _TAG_BASE + 3  # same as SET
    DICT = _TAG_BASE + 4  # flat array [k1, v1, k2, v2, ...]: a dict with a non-str key
    BYTEARRAY = _TAG_BASE + 5  # byte string
    DATETIME = _TAG_BASE + 6  # [year, month, day, hour, minute, second, microsecond, fold, tz]
    DATE = _TAG_BASE + 7  # [year, month, day]
    TIME = _TAG_BASE + 8  # [hour, minute, second, microsecond, fold, tz]
    TIMEDELTA = _TAG_BASE + 9  # [days, seconds, microseconds]
    DECIMAL = _TAG_BASE + 10  # str(decimal): exact, keeps "1.10", NaN, -0, Infinity
    UUID = _TAG_BASE + 11  # 16 bytes
    TZ_FIXED = _TAG_BASE + 12  # [offset in microseconds] or [offset, name]
    TZ_ZONE = _TAG_BASE + 13  # IANA key of a zoneinfo.ZoneInfo
    ENUM = _TAG_BASE + 14  # [type name, member name] or [type name, null, value]
    OBJECT = _TAG_BASE + 15  # [type name, {field: value}]: a registered dataclass or pydantic model
    ERROR = _TAG_BASE + 16  # an ErrorInfo map (serde_errors.py)


class TimeCodecError(ValueError):
    """A date/time value or its encoded form cannot be handled; the message says why."""


def _type_name(tp: type) -> str:
    return tp.__qualname__ if tp.__module__ == "builtins" else f"{tp.__module__}.{tp.__qualname__}"


def encode_tz(tz: tzinfo | None) -> object:
    """The encoded form of a tzinfo: ``None``, a fixed offset, or a zoneinfo key.

    Raises:
        TimeCodecError: a tzinfo of another type (pytz, dateutil, ...) or a keyless ZoneInfo.
    """
    if tz is None:
        return None
    if type(tz) is timezone:
        offset = tz.utcoffset(None)
        items: list[object] = [_timedelta_us(offset)]
        # A timezone built without a name reports a generated one; store only an explicit name.
        if tz.tzname(None) != timezone(offset).tzname(None):
            items.append(tz.tzname(None))
        return CBORTag(Tag.TZ_FIXED, items)
    if type(tz) is ZoneInfo:
        if tz.key is None:
            raise TimeCodecError("a ZoneInfo loaded from a file has no key and cannot be stored")
        return CBORTag(Tag.TZ_ZONE, tz.key)
    raise TimeCodecError(
        f"timezone type {_type_name(type(tz))} is not supported; use datetime.timezone or zoneinfo.ZoneInfo"
    )


def decode_tz(raw: object) -> tzinfo | None:
    """Inverse of :func:`encode_tz`."""
    if raw is None:
        return None
    if isinstance(raw, CBORTag) and raw.tag == Tag.TZ_ZONE and type(raw.value) is str:
        try:
            return ZoneInfo(raw.value)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise TimeCodecError(f"unknown time zone {raw.value!r}") from exc
    if isinstance(raw, CBORTag) and raw.tag == Tag.TZ_FIXED and isinstance(raw.value, list | tuple):
        items = list(raw.value)
        if len(items) in (1, 2) and type(items[0]) is int and (len(items) == 1 or type(items[1]) is str):
            offset = timedelta(microseconds=items[0])
            return timezone(offset) if len(items) == 1 else timezone(offset, items[1])
    raise TimeCodecError(f"malformed time zone {raw!r}")


def _timedelta_us(value: timedelta | None) -> int:
    assert value is not None  # a fixed-offset timezone always has an offset
    return (value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds


def encode_temporal(value: datetime | date | time | timedelta) -> CBORTag:
    """The tagged form of a datetime, date, time or timedelta (exact types only).

    Raises:
        TimeCodecError: the value's tzinfo cannot be stored.
    """
    if type(value) is datetime:
        v = value
        fields = [v.year, v.month, v.day, v.hour, v.minute, v.second, v.microsecond, v.fold]
        return CBORTag(Tag.DATETIME, [*fields, encode_tz(v.tzinfo)])
    if type(value) is date:
        return CBORTag(Tag.DATE, [value.year, value.month, value.day])
    if type(value) is time:
        t = value
        return CBORTag(Tag.TIME, [t.hour, t.minute, t.second, t.microsecond, t.fold, encode_tz(t.tzinfo)])
    if type(value) is timedelta:
        return CBORTag(Tag.TIMEDELTA, [value.days, value.seconds, value.microseconds])
    raise TimeCodecError(f"not a date/time value: {_type_name(type(value))}")


def decode_temporal(tag: int, raw: object) -> datetime | date | time | timedelta:
    """Inverse of :func:`encode_temporal` for the content ``raw`` of tag ``tag``.

    Raises:
        TimeCodecError: the content has the wrong shape or out-of-range fields.
    """
    shapes = {Tag.DATETIME: 8, Tag.DATE: 3, Tag.TIME: 5, Tag.TIMEDELTA: 3}
    items = list(raw) if isinstance(raw, list | tuple) else None
    count = shapes.get(Tag(tag))
    tz_slots = 1 if tag in (Tag.DATETIME, Tag.TIME) else 0
    if items is None or count is None or len(items) != count + tz_slots:
        raise TimeCodecError(f"malformed {Tag(tag).name.lower()}: {raw!r}")
    ints = items[:count]
    if any(type(i) is not int for i in ints):
        raise TimeCodecError(f"malformed {Tag(tag).name.lower()}: {raw!r}")
    try:
        if tag == Tag.DATETIME:
            y, mo, d, h, mi, s, us, fold = ints
            return datetime(y, mo, d, h, mi, s, us, tzinfo=decode_tz(items[-1]), fold=fold)
        if tag == Tag.DATE:
            return date(ints[0], ints[1], ints[2])
        if tag == Tag.TIME:
            h, mi, s, us, fold = ints
            return time(h, mi, s, us, tzinfo=decode_tz(items[-1]), fold=fold)
        return timedelta(days=ints[0], seconds=ints[1], microseconds=ints[2])
    except (ValueError, OverflowError) as exc:
        raise TimeCodecError(f"invalid {Tag(tag).name.lower()} {raw!r}: {exc}") from exc
