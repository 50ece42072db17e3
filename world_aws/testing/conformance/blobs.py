"""Conformance: the content-addressed blob store (contract §7.3)."""

from __future__ import annotations

import hashlib
from dataclasses import replace

import pytest

from world_aws.contract.world import World
from world_aws.errors import BadInput, NotFound


@pytest.mark.parametrize(
    "data", [b"", b"\x00payload\x00", bytes(range(256)) * 12_289], ids=["empty", "nul", "3mb"]
)
def test_blob_round_trips_byte_for_byte_under_its_digest(world: World, data: bytes) -> None:
    ref = world.blobs.put(data)
    assert (ref.size, ref.sha256) == (len(data), hashlib.sha256(data).hexdigest())
    assert world.blobs.get(ref) == data


def test_blob_put_is_idempotent(world: World) -> None:
    first = world.blobs.put(b"same bytes")
    assert world.blobs.put(b"same bytes") == first
    assert world.blobs.put(b"other bytes") != first


def test_blob_get_of_missing_object_is_not_found(world: World) -> None:
    ref = world.blobs.put(b"stored")
    with pytest.raises(NotFound):
        world.blobs.get(replace(ref, key=ref.key + "-missing"))


def test_blob_get_with_wrong_digest_is_bad_input(world: World) -> None:
    ref = world.blobs.put(b"stored")
    with pytest.raises(BadInput):
        world.blobs.get(replace(ref, sha256=hashlib.sha256(b"something else").hexdigest()))
