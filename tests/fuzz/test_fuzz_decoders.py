"""Fuzz the decoders (issue 14): every input is decoded or refused with the one error kind it promises.

Properties, for any bytes or CBOR item tree (any tag, anywhere):

* the transport (``decode_payload``, ``decode_body``) raises only ``BadInput``;
* the value serializer (``Serializer.loads``) and the stored-error decoder raise only
  ``SerializationError``;
* a value that decodes never holds more items than its input has bytes (the budget).
"""

from __future__ import annotations

import base64
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from world_aws.contract.transport import decode_body, decode_payload
from world_aws.errors import BadInput, SerializationError
from world_aws.serde.codec import Serializer, decode_error

from .strategies import cbor_bytes, message_maps

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def count_items(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + sum(count_items(k) + count_items(v) for k, v in value.items())
    if isinstance(value, list | tuple | set | frozenset):
        return 1 + sum(count_items(v) for v in value)
    return 1


@FUZZ
@given(st.one_of(cbor_bytes(), message_maps()))
def test_the_transport_decodes_or_raises_bad_input(data: bytes) -> None:
    try:
        decode_payload(data)
    except BadInput:
        pass


@FUZZ
@given(st.one_of(st.text(max_size=60), st.binary(max_size=60).map(lambda b: base64.b64encode(b).decode())))
def test_a_body_decodes_or_raises_bad_input(body: str) -> None:
    try:
        decode_body(body)
    except BadInput:
        pass


@FUZZ
@given(cbor_bytes())
def test_the_value_decoder_decodes_within_its_budget_or_raises_serialization_error(data: bytes) -> None:
    try:
        value = Serializer().loads(data)
    except SerializationError:
        return
    assert count_items(value) <= len(data)


@FUZZ
@given(cbor_bytes())
def test_the_error_decoder_decodes_or_raises_serialization_error(data: bytes) -> None:
    try:
        decode_error(data)
    except SerializationError:
        pass
