"""Hostile CBOR (issue 14): inputs that make a naive decoder do far more work than their size.

The shapes here are the ones an audit sent through the queues: shared references (tags 28/29)
whose tree doubles per level, string references, tags whose cbor2 decoders run a regex compiler
or the e-mail parser, and sets of ints that all share one hash.
"""

from __future__ import annotations

import base64
from typing import Any

import cbor2
import pytest

from world_aws.contract.transport import SEMANTIC_TAGS, TRANSPORT_TAGS, decode_body, strict_cbor_loads
from world_aws.errors import BadInput, SerializationError
from world_aws.serde import decode as serde_decode
from world_aws.serde.codec import Serializer, decode_error
from world_aws.serde.tags import Tag


def doubling_shared_refs(levels: int) -> bytes:
    """``[28([0, 0]), 28([29(0), 29(0)]), 28([29(1), 29(1)]), ...]``: the last item has 2**levels leaves."""
    items = [b"\xd8\x1c\x82\x00\x00"]
    for i in range(levels):
        ref = b"\xd8\x1d" + cbor2.dumps(i)
        items.append(b"\xd8\x1c\x82" + ref + ref)
    head = cbor2.dumps([None] * len(items))[: -len(items)]  # the array header alone
    return head + b"".join(items)


def run_input_message(run_input_value: bytes) -> str:
    """A workflow message whose ``run_input.input`` holds ``run_input_value`` as raw CBOR (not bytes)."""
    prefix = cbor2.dumps({"run_id": "wrun_1", "run_input": {"input": 0}})[:-1]
    return base64.b64encode(prefix + run_input_value).decode()


def test_a_shared_reference_message_is_refused_at_parse_naming_the_tag() -> None:
    # GIVEN a few hundred bytes that would decode to a tree of 2**40 leaves
    data = doubling_shared_refs(40)
    assert len(data) < 400
    # WHEN it arrives as a queue message, a stored value or a stored error
    with pytest.raises(BadInput, match=r"CBOR tag 28 \(shared value\) is not accepted"):
        decode_body(run_input_message(data))
    with pytest.raises(SerializationError, match="CBOR tag 28"):
        Serializer().loads(data)
    with pytest.raises(SerializationError, match="CBOR tag 28"):
        decode_error(data)


@pytest.mark.parametrize(
    ("tag", "content"),
    [
        (29, 0),  # a shared reference alone
        (25, 0),  # a string reference
        (256, 0),  # a string reference namespace
        (35, "(a+)+$"),  # cbor2 would re.compile() it
        (36, "Content-Type: text/plain\n\nhello"),  # cbor2 would run the e-mail parser
        (30, [1, 0]),  # a rational
        (258, [1, 2]),  # cbor2's own set
        (37, b"0123456789abcdef"),  # cbor2's own UUID
    ],
)
def test_standard_tags_our_writers_never_produce_are_refused_everywhere(tag: int, content: Any) -> None:
    data = cbor2.dumps({"run_id": "wrun_1", "extra": cbor2.CBORTag(tag, content)})
    with pytest.raises(BadInput, match=f"CBOR tag {tag} "):
        strict_cbor_loads(data)
    with pytest.raises(SerializationError, match=f"CBOR tag {tag} "):
        Serializer().loads(data)


def test_transport_still_decodes_the_datetimes_and_bignums_it_uses() -> None:
    value = strict_cbor_loads(cbor2.dumps({"big": 2**100, "neg": -(2**100)}))
    assert value == {"big": 2**100, "neg": -(2**100)}
    assert Serializer().loads(Serializer().dumps([2**100, -(2**70)])) == [2**100, -(2**70)]


def test_every_tag_cbor2_decodes_itself_is_listed() -> None:
    # GIVEN every tag number below 70,000 (cbor2 6.3's largest is 55,799) with a few contents
    decoded_by_cbor2 = set()
    for tag in range(70_000):
        for content in (None, 0, b"x", [1, 2], "x"):
            try:
                value = cbor2.loads(cbor2.dumps(cbor2.CBORTag(tag, content)))
            except cbor2.CBORDecodeError:
                decoded_by_cbor2.add(tag)
                break
            if not (isinstance(value, cbor2.CBORTag) and value.tag == tag):
                decoded_by_cbor2.add(tag)
                break
    # THEN each one is in the table the decoder refuses from (so an upgrade cannot add one silently)
    assert decoded_by_cbor2 == set(SEMANTIC_TAGS)
    assert set(SEMANTIC_TAGS) >= TRANSPORT_TAGS


def test_a_set_of_ints_sharing_one_hash_is_refused() -> None:
    # GIVEN 5,000 distinct ints with the same hash (multiples of 2**61 - 1): building the set is quadratic
    colliding = [k * (2**61 - 1) for k in range(5_000)]
    assert len({hash(x) for x in colliding}) == 1
    for tag in (Tag.SET, Tag.FROZENSET):
        with pytest.raises(SerializationError, match="distinct set elements share one hash"):
            Serializer().loads(cbor2.dumps(cbor2.CBORTag(tag, colliding)))
    flat = [x for k in colliding for x in (k, None)]
    with pytest.raises(SerializationError, match="distinct dict keys share one hash"):
        Serializer().loads(cbor2.dumps(cbor2.CBORTag(Tag.DICT, flat)))


def test_honest_sets_and_int_keyed_dicts_still_round_trip() -> None:
    value = [set(range(10_000)), {i: str(i) for i in range(10_000)}, frozenset({-1, -2})]
    serializer = Serializer()
    assert serializer.loads(serializer.dumps(value)) == value


def test_a_decoded_tree_larger_than_its_input_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a parser that hands back a shared tree (as cbor2 does for tags 28/29 when they are allowed)
    shared: list[Any] = [b"x" * 8]
    for _ in range(30):
        shared = [shared, shared]
    monkeypatch.setattr(serde_decode, "strict_cbor_loads", lambda data, allowed_tags: shared)
    # WHEN the value decoder walks it
    with pytest.raises(SerializationError, match="expands past the 3 bytes it was decoded from"):
        Serializer().loads(b"abc")
    # THEN it stopped at the budget instead of building 2**30 leaves
