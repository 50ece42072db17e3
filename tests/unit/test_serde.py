"""The runtime's value serializer (contract §8.6): exact round trips, determinism and clear errors."""

from __future__ import annotations

import dataclasses
import enum
import math
import os
import socket
import subprocess
import sys
from datetime import UTC, date, datetime, time, timedelta, timezone, tzinfo
from decimal import Decimal
from typing import Any
from uuid import UUID
from zoneinfo import ZoneInfo

import cbor2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field, RootModel

from world_aws.errors import (
    BadInput,
    FatalError,
    RetryableError,
    SerializationError,
    Throttled,
)
from world_aws.serde.codec import ErrorInfo, Serializer, decode_error, encode_error
from world_aws.serde.errors import MAX_STACK_CHARS
from world_aws.serde.tags import Tag

# --- registered sample types -------------------------------------------------------------


class Color(enum.Enum):
    RED = "r"
    GREEN = "g"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Perm(enum.Flag):
    READ = 1
    WRITE = 2


@dataclasses.dataclass(frozen=True)
class Point:
    x: int
    y: Any = None


@dataclasses.dataclass
class Order:
    order_id: str
    items: list[Any] = dataclasses.field(default_factory=list)
    total: Decimal = Decimal("0")
    derived: str = dataclasses.field(init=False, default="")

    def __post_init__(self) -> None:
        self.derived = f"order:{self.order_id}"


class Address(BaseModel):
    street: str
    zip_code: str = Field(alias="zipCode")


class Customer(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str
    joined: datetime
    tags: frozenset[str] = frozenset()
    address: Address | None = None
    point: Point | None = None


class Scores(RootModel[list[int]]):
    pass


@dataclasses.dataclass
class Unregistered:
    x: int


class UnregisteredModel(BaseModel):
    x: int


class UnregisteredEnum(enum.Enum):
    A = 1


REGISTERED = (Color, Level, Perm, Point, Order, Address, Customer, Scores)


def make_serializer() -> Serializer:
    return Serializer(REGISTERED)


# --- exact comparison: `==` says 1 == 1.0 == True and {1} == frozenset({1}) ---------------


def shape(value: Any) -> Any:
    """A structure equal for two values only if they have the same types, order and digits."""
    tp = type(value)
    if tp is float:
        return (tp, repr(value))
    if tp is Decimal:
        return (tp, str(value))
    if tp in (datetime, time):
        return (tp, value.isoformat(), repr(value.tzinfo), value.fold)
    if tp in (list, tuple):
        return (tp, tuple(shape(item) for item in value))
    if tp is dict:
        return (tp, tuple((shape(k), shape(v)) for k, v in value.items()))
    if tp in (set, frozenset):
        return (tp, tuple(sorted(repr(shape(item)) for item in value)))
    if dataclasses.is_dataclass(value):
        return (tp, tuple((f.name, shape(getattr(value, f.name))) for f in dataclasses.fields(value)))
    if isinstance(value, BaseModel):
        fields = {name: getattr(value, name) for name in tp.model_fields}
        return (tp, shape(fields), shape(value.__pydantic_extra__ or {}))
    return (tp, value)


def assert_round_trip(serializer: Serializer, value: Any) -> Any:
    back = serializer.loads(serializer.dumps(value))
    assert shape(back) == shape(value)
    return back


# --- hypothesis strategies ---------------------------------------------------------------

ZONES = [ZoneInfo(key) for key in ("UTC", "Europe/Paris", "America/New_York", "Asia/Kolkata")]
fixed_offsets = st.timedeltas(
    min_value=timedelta(hours=-23, minutes=59), max_value=timedelta(hours=23, minutes=59)
)
tzinfos = st.one_of(
    st.none(),
    st.just(UTC),
    st.builds(timezone, fixed_offsets),
    st.builds(timezone, fixed_offsets, st.text(min_size=1, max_size=5)),
    st.sampled_from(ZONES),
)
hashable_leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(2**200), max_value=2**200),
    st.floats(allow_nan=False),
    st.text(max_size=10),
    st.binary(max_size=10),
    st.dates(),
    st.datetimes(timezones=tzinfos),
    st.times(timezones=tzinfos),
    st.timedeltas(),
    st.decimals(allow_nan=False, allow_infinity=True),
    st.uuids(),
    st.sampled_from([Color.RED, Level.HIGH, Perm.READ, Perm.READ | Perm.WRITE]),
)
hashables = st.recursive(
    hashable_leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(tuple),
        st.frozensets(inner, max_size=3),
        st.builds(Point, inner, inner),
    ),
    max_leaves=6,
)
values = st.recursive(
    st.one_of(hashables, st.binary(max_size=10).map(bytearray)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(tuple),
        st.dictionaries(st.text(max_size=5), inner, max_size=4),
        st.dictionaries(hashables, inner, max_size=4),
        st.sets(hashables, max_size=4),
        st.frozensets(hashables, max_size=4),
        st.builds(Order, st.text(max_size=5), st.lists(inner, max_size=3), st.decimals(allow_nan=False)),
        st.builds(Scores, st.lists(st.integers(), max_size=3)),
    ),
    max_leaves=20,
)


# --- round trips -------------------------------------------------------------------------


@settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(values)
def test_any_nested_value_of_supported_types_round_trips_exactly(value: Any) -> None:
    # GIVEN a serializer with the sample types registered
    serializer = make_serializer()
    # WHEN a value goes through dumps and loads, THEN it comes back with the same types and contents
    assert_round_trip(serializer, value)


@settings(max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(values)
def test_same_value_always_gives_same_bytes(value: Any) -> None:
    # GIVEN a value and its round-tripped copy (a distinct object, with sets rebuilt)
    serializer = make_serializer()
    data = serializer.dumps(value)
    copy = serializer.loads(data)
    # WHEN both are serialized again, by this and by a fresh serializer
    # THEN the bytes are identical
    assert serializer.dumps(copy) == data
    assert make_serializer().dumps(value) == data


def test_set_bytes_do_not_depend_on_the_hash_seed() -> None:
    # GIVEN a set of strings, whose iteration order depends on PYTHONHASHSEED
    code = (
        "import sys; from world_aws.serde.codec import Serializer; "
        "sys.stdout.write(Serializer().dumps({'s': {f'item-{i}' for i in range(50)}}).hex())"
    )

    def dump_with_seed(seed: str) -> str:
        env = {**os.environ, "PYTHONHASHSEED": seed}
        return subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, check=True, text=True
        ).stdout

    # WHEN two processes with different hash seeds serialize it
    # THEN they write the same bytes
    assert dump_with_seed("1") == dump_with_seed("2")


def test_scalars_keep_their_exact_type() -> None:
    serializer = make_serializer()
    for value in (
        None,
        True,
        False,
        0,
        1,
        -1,
        2**64,
        -(2**64) - 1,
        2**300,
        1.0,
        -0.0,
        math.inf,
        "",
        "é",
        b"",
    ):
        assert_round_trip(serializer, value)
    # NaN != NaN, so compare its representation
    assert math.isnan(serializer.loads(serializer.dumps(math.nan)))


def test_bytes_and_str_stay_distinct() -> None:
    serializer = make_serializer()
    # GIVEN the same characters as bytes, str and bytearray
    back = serializer.loads(serializer.dumps([b"abc", "abc", bytearray(b"abc")]))
    # THEN each comes back as its own type
    assert [type(v) for v in back] == [bytes, str, bytearray]
    assert back == [b"abc", "abc", bytearray(b"abc")]


def test_list_tuple_set_and_frozenset_stay_distinct() -> None:
    serializer = make_serializer()
    back = serializer.loads(serializer.dumps([[1, 2], (1, 2), {1, 2}, frozenset({1, 2}), ()]))
    assert [type(v) for v in back] == [list, tuple, set, frozenset, tuple]
    assert back == [[1, 2], (1, 2), {1, 2}, frozenset({1, 2}), ()]


def test_dict_keys_of_any_hashable_type_round_trip_in_order() -> None:
    serializer = make_serializer()
    # GIVEN a dict whose keys mix str, int, bool, tuple, frozenset, bytes, None, Decimal, enum
    value = {"z": 1, 3: "three", True: "t", (1, "a"): [], frozenset({2}): 0, b"k": None, None: 1}
    value[Decimal("1.5")] = 2
    value[Color.GREEN] = 3
    back = assert_round_trip(serializer, value)
    # THEN the keys come back with their types, in insertion order
    assert list(back) == list(value)


def test_dict_order_is_kept_and_is_part_of_the_bytes() -> None:
    serializer = make_serializer()
    first, second = {"b": 1, "a": 2}, {"a": 2, "b": 1}
    assert list(serializer.loads(serializer.dumps(first))) == ["b", "a"]
    # A documented choice: insertion order is part of the value, so it is part of the bytes.
    assert serializer.dumps(first) != serializer.dumps(second)


def test_datetimes_keep_their_timezone_exactly() -> None:
    serializer = make_serializer()
    paris = ZoneInfo("Europe/Paris")
    values = [
        datetime(2024, 3, 31, 2, 30, 0, 123456, tzinfo=paris),
        datetime(2024, 10, 27, 2, 30, tzinfo=paris, fold=1),  # the second 02:30 of the DST change
        datetime(2024, 1, 1, tzinfo=UTC),
        datetime(2024, 1, 1, tzinfo=timezone(timedelta(hours=5, minutes=30), "IST")),
        datetime(2024, 1, 1, tzinfo=timezone(timedelta(hours=-3, microseconds=5))),
        datetime(2024, 1, 1, 12, 0, 0, 999999),  # naive
        time(23, 59, 59, 1, tzinfo=paris),
        time(1, 2, 3),
        date(1, 1, 1),
        timedelta(days=-3, seconds=5, microseconds=7),
        timedelta.max,
    ]
    back = serializer.loads(serializer.dumps(values))
    assert [shape(v) for v in back] == [shape(v) for v in values]
    # the same ZoneInfo object, not merely an equal offset
    assert back[0].tzinfo is paris
    assert back[1].fold == 1
    assert back[1].utcoffset() == timedelta(hours=1)
    assert back[3].tzname() == "IST"
    assert back[5].tzinfo is None
    assert back[0].microsecond == 123456


def test_decimals_are_exact() -> None:
    serializer = make_serializer()
    texts = ["1.10", "0.000", "-0", "1E+2", "123456789012345678901234567890.0001", "Infinity", "-Infinity"]
    back = serializer.loads(serializer.dumps([Decimal(t) for t in texts]))
    assert [str(d) for d in back] == texts
    nans = serializer.loads(serializer.dumps([Decimal("NaN"), Decimal("-sNaN")]))
    assert [str(d) for d in nans] == ["NaN", "-sNaN"]


def test_uuid_round_trips() -> None:
    serializer = make_serializer()
    value = UUID("12345678-1234-5678-1234-567812345678")
    assert serializer.loads(serializer.dumps(value)) == value


def test_registered_enum_members_round_trip() -> None:
    serializer = make_serializer()
    values = [Color.RED, Level.HIGH, Perm.READ, Perm.READ | Perm.WRITE, Perm(0)]
    back = serializer.loads(serializer.dumps(values))
    assert back == values
    assert all(a is b for a, b in zip(back, values, strict=True))


def test_registered_dataclass_round_trips_with_post_init_and_init_false_fields() -> None:
    serializer = make_serializer()
    # GIVEN a dataclass with a nested frozen dataclass, a Decimal and an init=False field
    order = Order("o-1", [Point(1, (2, 3)), {"qty": 2}], Decimal("9.90"))
    order.derived = "changed after construction"
    back = assert_round_trip(serializer, order)
    # THEN every field, including the init=False one, comes back as it was
    assert back == order
    assert back.derived == "changed after construction"


def test_registered_pydantic_model_round_trips() -> None:
    serializer = make_serializer()
    # GIVEN a model with an aliased nested model, a frozenset, a dataclass and an extra field
    customer = Customer(
        name="Ada",
        joined=datetime(2024, 5, 1, tzinfo=ZoneInfo("Europe/London")),
        tags=frozenset({"vip"}),
        address=Address(street="1 Main St", zipCode="12345"),
        point=Point(1, 2),
        loyalty=Decimal("3.50"),  # extra="allow"
    )
    back = assert_round_trip(serializer, customer)
    assert back == customer
    assert back.__pydantic_extra__ == {"loyalty": Decimal("3.50")}
    assert assert_round_trip(serializer, Scores([1, 2, 3])) == Scores([1, 2, 3])


def test_register_works_as_a_decorator_and_is_idempotent() -> None:
    serializer = Serializer()

    @serializer.register
    @dataclasses.dataclass
    class Local:
        x: int

    assert serializer.register(Local) is Local
    assert serializer.registered(f"{Local.__module__}:{Local.__qualname__}") is Local
    assert serializer.loads(serializer.dumps(Local(3))) == Local(3)


def test_register_rejects_a_name_already_taken_by_another_class() -> None:
    serializer = Serializer()

    def make() -> type:
        @dataclasses.dataclass
        class Twin:
            x: int

        return Twin

    first, second = make(), make()  # same module:qualname, different classes
    serializer.register(first)
    with pytest.raises(SerializationError, match=r"already registered for .*Twin.*name="):
        serializer.register(second)
    # an explicit name resolves the collision
    serializer.register(second, name="twin-v2")
    assert type(serializer.loads(serializer.dumps(second(1)))) is second


def test_register_rejects_other_classes() -> None:
    with pytest.raises(TypeError, match="only Enum, dataclass and pydantic"):
        Serializer().register(socket.socket)


# --- errors --------------------------------------------------------------------------------


def test_unserializable_value_error_names_type_path_and_context() -> None:
    serializer = make_serializer()
    with socket.socket() as sock:
        args = (1, {"items": [1, 2, 3, sock]})
        # WHEN a step argument holds a socket deep inside
        with pytest.raises(SerializationError) as err:
            serializer.dumps(args, context="argument of step 'charge'", root="args")
    # THEN the message names the type, the path and the context
    message = str(err.value)
    assert "socket.socket" in message
    assert "args[1]['items'][3]" in message
    assert "argument of step 'charge'" in message
    assert isinstance(err.value, BadInput)


def test_lambda_is_refused_with_its_path() -> None:
    with pytest.raises(SerializationError, match=r"cannot serialize function at value\['f'\]"):
        make_serializer().dumps({"f": lambda: 1})


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        (Unregistered(1), "dataclass"),
        (UnregisteredModel(x=1), "pydantic model"),
        (UnregisteredEnum.A, "Enum type"),
    ],
)
def test_unregistered_type_error_says_how_to_register(value: object, kind: str) -> None:
    with pytest.raises(SerializationError) as err:
        make_serializer().dumps([value])
    assert f"{kind} {__name__}.{type(value).__qualname__} is not registered" in str(err.value)
    assert "value[0]" in str(err.value)


def test_unregistered_class_nested_in_a_registered_dataclass_names_the_field_path() -> None:
    with pytest.raises(SerializationError, match=r"at value\.items\[0\]\.y "):
        make_serializer().dumps(Order("o", [Point(1, Unregistered(2))]))


def test_subclasses_of_builtins_are_refused_rather_than_silently_changed() -> None:
    class MyStr(str):
        pass

    with pytest.raises(SerializationError, match="MyStr"):
        make_serializer().dumps(MyStr("x"))


class HomeMadeZone(tzinfo):
    """A tzinfo of its own type (like pytz's or dateutil's): nothing says how to rebuild it."""

    def utcoffset(self, dt: datetime | None) -> timedelta:
        return timedelta(hours=1)

    def dst(self, dt: datetime | None) -> timedelta:
        return timedelta(0)

    def tzname(self, dt: datetime | None) -> str:
        return "HOME"


def test_unsupported_tzinfo_is_refused() -> None:
    value = {"at": datetime(2024, 1, 1, tzinfo=HomeMadeZone())}
    with pytest.raises(SerializationError, match=r"at value\['at'\] .*HomeMadeZone is not supported"):
        make_serializer().dumps(value)


def test_cycles_and_deep_nesting_are_refused() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(SerializationError, match="contains itself"):
        make_serializer().dumps(loop)
    deep: list[Any] = []
    for _ in range(500):
        deep = [deep]
    with pytest.raises(SerializationError, match="nest at most"):
        make_serializer().dumps(deep)


def test_str_that_is_not_valid_unicode_is_refused() -> None:
    with pytest.raises(SerializationError, match="surrogates"):
        make_serializer().dumps({"a": "\ud800"})


def test_loading_a_tag_for_an_unregistered_type_names_the_type() -> None:
    # GIVEN bytes written by a serializer that knows Order
    data = make_serializer().dumps({"order": Order("o-1")})
    # WHEN a serializer without it loads them
    with pytest.raises(SerializationError) as err:
        Serializer().loads(data, context="input of run 'wrun_1'")
    # THEN the error names the type, where it was, and the context
    assert f"'{__name__}:Order' is not registered" in str(err.value)
    assert "value['order']" in str(err.value)
    assert "input of run 'wrun_1'" in str(err.value)


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"", "empty"),
        (cbor2.dumps([1, 2]) + b"\x00", "trailing"),
        (cbor2.dumps([1, "abcdef"])[:-2], "truncated"),
        (b"\xff\xff", "malformed CBOR"),
        (cbor2.dumps(cbor2.CBORTag(1, 0)), r"CBOR tag 1 \(epoch date/time\) is not accepted"),
        (cbor2.dumps({1: "a"}), "map key must be a text string"),
        (cbor2.dumps(cbor2.CBORTag(Tag.DATETIME, ["2024"])), "malformed datetime"),
        (cbor2.dumps(cbor2.CBORTag(Tag.DATE, [2024, 13, 1])), "invalid date"),
        (cbor2.dumps(cbor2.CBORTag(Tag.DECIMAL, "one")), "malformed Decimal"),
        (cbor2.dumps(cbor2.CBORTag(Tag.UUID, b"short")), "malformed uuid"),
        (cbor2.dumps(cbor2.CBORTag(Tag.DICT, [1])), "odd number"),
        (cbor2.dumps(cbor2.CBORTag(Tag.SET, [[1]])), "unhashable"),
        (cbor2.dumps(cbor2.CBORTag(Tag.TZ_ZONE, "Nowhere/City")), "malformed"),
        (cbor2.dumps(cbor2.CBORTag(Tag.OBJECT, [f"{__name__}:Color", {}])), "refused the stored fields"),
        (cbor2.dumps(cbor2.CBORTag(Tag.OBJECT, [f"{__name__}:Point", {"x": 1, "gone": 2}])), "unknown field"),
        (cbor2.dumps(cbor2.CBORTag(Tag.ENUM, [f"{__name__}:Color", "BLUE"])), "has no member"),
        (cbor2.dumps(cbor2.CBORTag(Tag.ENUM, [f"{__name__}:Point", "RED"])), "not as an Enum"),
        (cbor2.dumps(cbor2.CBORTag(4242, 1)), "unknown CBOR tag 4242"),
    ],
)
def test_malformed_bytes_are_a_serialization_error_naming_the_problem(data: bytes, problem: str) -> None:
    with pytest.raises(SerializationError, match=problem):
        make_serializer().loads(data)


def test_time_zone_keys_that_do_not_exist_are_refused() -> None:
    raw = cbor2.dumps(
        cbor2.CBORTag(Tag.DATETIME, [2024, 1, 1, 0, 0, 0, 0, 0, cbor2.CBORTag(Tag.TZ_ZONE, "No/Zone")])
    )
    with pytest.raises(SerializationError, match="unknown time zone 'No/Zone'"):
        make_serializer().loads(raw)


# --- stored errors -------------------------------------------------------------------------


def _raise_chain() -> BaseException:
    def charge() -> None:
        raise ValueError("card declined")

    try:
        try:
            charge()
        except ValueError as inner:
            raise FatalError("payment failed") from inner
    except FatalError as outer:
        return outer
    raise AssertionError("unreachable")


def test_error_round_trips_with_type_message_stack_and_cause() -> None:
    # GIVEN an exception raised from another
    exc = _raise_chain()
    # WHEN it is encoded and decoded
    info = decode_error(encode_error(exc))
    # THEN the qualified type, message, stack and cause are kept
    assert info.type == "world_aws.errors.FatalError"
    assert info.message == "payment failed"
    assert "Traceback (most recent call last)" in info.stack
    assert info.cause is not None
    assert info.cause.type == "ValueError"
    assert info.cause.message == "card declined"
    assert "in charge" in info.cause.stack
    assert info.cause.cause is None
    assert info.retry_after is None


def test_implicit_context_is_a_cause_unless_suppressed() -> None:
    try:
        try:
            raise KeyError("k")
        except KeyError:
            raise RuntimeError("while handling") from None
    except RuntimeError as exc:
        suppressed = exc
    try:
        try:
            raise KeyError("k")
        except KeyError:
            raise RuntimeError("while handling")  # noqa: B904 - the implicit context is what is tested
    except RuntimeError as exc:
        implicit = exc
    assert decode_error(encode_error(suppressed)).cause is None
    cause = decode_error(encode_error(implicit)).cause
    assert cause is not None and cause.type == "KeyError"


def test_retry_after_is_kept_for_retryable_errors() -> None:
    assert decode_error(encode_error(RetryableError("later", retry_after=12.5))).retry_after == 12.5
    assert decode_error(encode_error(Throttled("slow down", retry_after=3))).retry_after == 3.0
    assert decode_error(encode_error(RetryableError("whenever"))).retry_after is None


def test_long_stacks_are_trimmed_keeping_the_innermost_frames() -> None:
    # two functions calling each other: Python folds runs of one repeated frame, not these
    def ping(n: int) -> None:
        if n == 0:
            raise RuntimeError("bottom")
        pong(n - 1)

    def pong(n: int) -> None:
        ping(n - 1)

    try:
        ping(300)
    except RuntimeError as exc:
        info = decode_error(encode_error(exc))
    assert len(info.stack) <= MAX_STACK_CHARS
    assert info.stack.startswith("Traceback (most recent call last)")
    assert "characters trimmed" in info.stack
    assert info.stack.rstrip().endswith("RuntimeError: bottom")


def test_error_encoding_is_deterministic_and_info_is_frozen() -> None:
    exc = _raise_chain()
    assert encode_error(exc) == encode_error(exc)
    info = decode_error(encode_error(exc))
    with pytest.raises(dataclasses.FrozenInstanceError):
        info.message = "changed"  # type: ignore[misc]
    assert isinstance(info, ErrorInfo)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x01\x02",
        make_serializer().dumps({"type": "x"}),
        cbor2.dumps(cbor2.CBORTag(Tag.ERROR, {"type": 1})),
    ],
)
def test_decode_error_rejects_what_is_not_a_stored_error(data: bytes) -> None:
    with pytest.raises(SerializationError, match="stored error"):
        decode_error(data)
