"""Payloads in the AWS World: inline up to 128 KiB, in S3 above, byte for byte (contract §3.3, §7.3)."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from world_aws.aws.codec import keys
from world_aws.aws.codec.payloads import COMPRESS_MIN_BYTES, RUN_INPUT_INLINE_LIMIT, PayloadReader
from world_aws.aws.world import AwsWorld
from world_aws.contract.limits import MAX_INLINE_PAYLOAD_BYTES
from world_aws.contract.records import (
    EventType,
    ResolveData,
    RunCompletedData,
    RunCreatedData,
    StepCompletedData,
    StepCreatedData,
    StepRetryingData,
)
from world_aws.errors import BadInput
from world_aws.testing.conformance.support import create_run, create_step, running_step, write

# DynamoDB's item limit (400 KB, attribute names included); items must stay far below it.
ITEM_LIMIT = 400 * 1024


def incompressible(size: int) -> bytes:
    """``size`` bytes zlib cannot shrink (seeded, so every run stores the same)."""
    return random.Random(size).randbytes(size)


def json_like(size: int) -> bytes:
    """About ``size`` bytes of JSON records, compressible as real payloads are (not one byte repeated)."""
    rows = [
        {"order": i, "sku": f"SKU-{i % 97:04d}", "qty": i % 7, "note": "gift wrap"}
        for i in range(size // 60 + 1)
    ]
    return json.dumps(rows).encode()[:size]


PAYLOADS = {
    "json-100-kb": json_like(100 * 1024),
    "random-100-kb": incompressible(100 * 1024),
    "empty": b"",
    "nul-bytes": b"\x00\xff\x00" * 1000,
    "at-the-limit": bytes(range(256)) * (MAX_INLINE_PAYLOAD_BYTES // 256),
    "one-over-the-limit": b"\x01" * (MAX_INLINE_PAYLOAD_BYTES + 1),
    "3-mb": bytes(range(251)) * (3 * 1024 * 1024 // 251),
}


@contextmanager
def counting_s3_calls(world: AwsWorld) -> Iterator[list[str]]:
    calls: list[str] = []

    def count(event_name: str, **_: Any) -> None:
        calls.append(event_name)

    world.clients.s3.meta.events.register("before-call.s3.*", count)
    try:
        yield calls
    finally:
        world.clients.s3.meta.events.unregister("before-call.s3.*", count)


def _item_size(item: dict[str, Any]) -> int:
    """A rough DynamoDB item size: names plus values, nested maps included."""

    def size(value: Any) -> int:
        if isinstance(value, dict):
            return sum(len(k) + size(v) for k, v in value.items())
        if isinstance(value, bytes | str):
            return len(value)
        return 8

    return size(item)


@pytest.mark.parametrize("payload", list(PAYLOADS.values()), ids=list(PAYLOADS))
def test_payloads_round_trip_byte_for_byte_through_run_step_and_log(world: AwsWorld, payload: bytes) -> None:
    # GIVEN a run whose input, a step's input and the step's output are the payload
    run_id = create_run(world, input=payload)
    step_id = running_step(world, run_id, input=payload)
    write(world, run_id, EventType.STEP_COMPLETED, step_id, StepCompletedData(output=payload))
    # WHEN everything is read back
    run = world.runs.get(run_id)
    step = world.steps.get(run_id, step_id)
    events = world.events.list(run_id)
    # THEN every copy is the exact bytes
    assert run.input == payload
    assert (step.input, step.output) == (payload, payload)
    assert (
        events[0].data_as(RunCreatedData).creation is not None
        and events[0].data_as(RunCreatedData).creation.input == payload
    )
    assert events[2].data_as(StepCreatedData).input == payload
    assert events[-1].data.output == payload


@pytest.mark.parametrize(
    ("size", "offloaded"), [(MAX_INLINE_PAYLOAD_BYTES, False), (MAX_INLINE_PAYLOAD_BYTES + 1, True)]
)
def test_event_payloads_above_128_kib_live_in_s3_under_their_digest(
    world: AwsWorld, size: int, offloaded: bool
) -> None:
    # GIVEN a step created with an input of the given size
    run_id = create_run(world)
    step_id = create_step(world, run_id, input=incompressible(size))
    # WHEN the stored event item is inspected
    stored = world.table.get(keys.event_key(run_id, 3))
    # THEN above 128 KiB it holds a content-addressed reference; at 128 KiB too, because
    # the step item's lower limit put that input in S3 already (one copy, not two)
    assert stored is not None
    value = stored["data"]["input"]
    assert isinstance(value, dict) and value["size"] == size
    assert value["ref"] == f"blobs/sha256/{value['sha256']}"
    step_item = world.table.get(keys.step_key(run_id, step_id))
    assert step_item is not None and step_item["input"] == value
    assert offloaded or size == MAX_INLINE_PAYLOAD_BYTES


def test_items_stay_far_below_the_dynamodb_item_limit(world: AwsWorld) -> None:
    # GIVEN a step that holds three payloads of the largest inline size (input, retry error, output)
    run_id = create_run(world, input=b"i" * MAX_INLINE_PAYLOAD_BYTES)
    big = b"p" * MAX_INLINE_PAYLOAD_BYTES
    step_id = running_step(world, run_id, input=big)
    write(world, run_id, EventType.STEP_RETRYING, step_id, StepRetryingData(error=big[:-1] + b"e"))
    write(world, run_id, EventType.STEP_STARTED, step_id)
    write(world, run_id, EventType.STEP_COMPLETED, step_id, StepCompletedData(output=big[:-1] + b"o"))
    write(world, run_id, EventType.RUN_COMPLETED, data=RunCompletedData(output=big[:-1] + b"r"))
    # WHEN the raw items are measured
    found = world.table.query_all("pk = :pk", {":pk": keys.run_pk(run_id)})
    sizes = {str(item[keys.SK]): _item_size(item) for item in found}
    # THEN none is more than about half the limit, and the data is still whole
    assert max(sizes.values()) < ITEM_LIMIT // 2, sizes
    assert world.steps.get(run_id, step_id).output == big[:-1] + b"o"
    assert world.runs.get(run_id).output == big[:-1] + b"r"


def test_resolve_data_none_never_touches_s3(world: AwsWorld) -> None:
    # GIVEN a run, step and log whose payloads live in S3
    big = b"\x09" * (3 * MAX_INLINE_PAYLOAD_BYTES)
    run_id = create_run(world, input=big)
    step_id = running_step(world, run_id, input=big)
    # WHEN they are read without payloads
    with counting_s3_calls(world) as calls:
        run = world.runs.get(run_id, resolve_data=ResolveData.NONE)
        step = world.steps.get(run_id, step_id, resolve_data=ResolveData.NONE)
        steps = world.steps.list(run_id, resolve_data=ResolveData.NONE)
        events = world.events.list(run_id, resolve_data=ResolveData.NONE)
    # THEN no S3 call was made and the payloads are left out
    assert calls == []
    assert (run.input, step.input, steps[0].input) == (None, None, None)
    assert (
        events[0].data_as(RunCreatedData).creation is not None
        and events[0].data_as(RunCreatedData).creation.input == b""
    )
    assert events[2].data_as(StepCreatedData).input is None
    # ... while a full read resolves them
    with counting_s3_calls(world) as calls:
        assert world.runs.get(run_id).input == big
    assert calls != []


def test_one_large_payload_is_put_in_s3_once_per_write(world: AwsWorld) -> None:
    # GIVEN a running run
    run_id = create_run(world)
    big = b"\x05" * (MAX_INLINE_PAYLOAD_BYTES + 10)
    # WHEN a step is created with a large input (stored in the event and in the step)
    with counting_s3_calls(world) as calls:
        create_step(world, run_id, input=big)
    # THEN one object was put, and both items reference it
    assert [c for c in calls if c.endswith("PutObject")] == ["before-call.s3.PutObject"]
    listed = world.clients.s3.list_objects_v2(Bucket=world.config.bucket_name)
    assert len(listed.get("Contents", [])) == 1


def test_compressible_payloads_are_stored_compressed_inline_and_read_back_whole(world: AwsWorld) -> None:
    # GIVEN a step whose input and output are 100 KB of JSON (over the entity's 64 KiB inline limit)
    payload = json_like(100 * 1024)
    run_id = create_run(world)
    with counting_s3_calls(world) as calls:
        step_id = running_step(world, run_id, input=payload)
        write(world, run_id, EventType.STEP_COMPLETED, step_id, StepCompletedData(output=payload))
    # WHEN the stored items are inspected
    event = world.table.get(keys.event_key(run_id, 3))
    step_item = world.table.get(keys.step_key(run_id, step_id))
    assert event is not None and step_item is not None
    # THEN the event and the step item hold the compressed bytes inline, a few KB, and S3 was never called
    for stored in (event["data"]["input"], step_item["input"], step_item["output"]):
        assert isinstance(stored, dict) and set(stored) == {"zlib", "size"}
        assert stored["size"] == len(payload)
    assert _item_size(step_item) < 16 * 1024
    assert calls == []
    # ... and every reader gets the exact bytes back
    assert world.steps.get(run_id, step_id).input == payload
    assert world.steps.get(run_id, step_id).output == payload
    assert world.events.list(run_id)[2].data_as(StepCreatedData).input == payload


def test_a_payload_its_entity_sent_to_s3_is_not_also_inline_in_the_event(world: AwsWorld) -> None:
    # GIVEN a step input of 100 KB that zlib cannot shrink: over the step item's 64 KiB
    # limit (so in S3), under the event's 128 KiB one
    payload = incompressible(100 * 1024)
    run_id = create_run(world)
    with counting_s3_calls(world) as calls:
        step_id = create_step(world, run_id, input=payload)
    # WHEN the stored items are inspected
    event = world.table.get(keys.event_key(run_id, 3))
    step_item = world.table.get(keys.step_key(run_id, step_id))
    assert event is not None and step_item is not None
    # THEN both refer to the one object put (the event is not 100 KB written twice more
    # in its transaction), and both give the bytes back
    assert event["data"]["input"]["ref"] == step_item["input"]["ref"]
    assert _item_size(event) < 1024
    assert [c for c in calls if c.endswith("PutObject")] == ["before-call.s3.PutObject"]
    assert world.events.list(run_id)[2].data_as(StepCreatedData).input == payload
    assert world.steps.get(run_id, step_id).input == payload


@pytest.mark.parametrize(
    "payload",
    [b"x" * (COMPRESS_MIN_BYTES - 1), incompressible(10 * 1024)],
    ids=["under-a-kb", "incompressible"],
)
def test_payloads_that_compression_cannot_pay_for_stay_raw_bytes(world: AwsWorld, payload: bytes) -> None:
    # GIVEN a step created with a payload too small to gain, or one zlib cannot shrink by a tenth
    run_id = create_run(world)
    create_step(world, run_id, input=payload)
    # WHEN the stored event is inspected
    stored = world.table.get(keys.event_key(run_id, 3))
    # THEN it holds the plain bytes
    assert stored is not None and stored["data"]["input"] == payload


@pytest.mark.parametrize(
    "stored",
    [{"zlib": b"not zlib at all", "size": 5}, {"zlib": __import__("zlib").compress(b"abcdef"), "size": 3}],
    ids=["corrupt", "wrong-size"],
)
def test_a_corrupt_compressed_payload_is_a_clear_error(world: AwsWorld, stored: dict[str, Any]) -> None:
    # GIVEN a compressed attribute that is damaged, or does not inflate to its recorded size
    reader = PayloadReader(world.blobs)
    # WHEN it is read, THEN the error names a corrupt compressed payload
    with pytest.raises(BadInput, match="compressed payload"):
        reader.decode(stored)


@pytest.mark.parametrize(
    ("payload", "stored_as"),
    [
        (incompressible(RUN_INPUT_INLINE_LIMIT), "bytes"),
        (incompressible(RUN_INPUT_INLINE_LIMIT + 1), "s3"),
        (incompressible(60 * 1024), "s3"),
        (json_like(60 * 1024), "zlib"),
    ],
    ids=["8-kib-random", "one-over-random", "60-kb-random", "60-kb-json"],
)
def test_a_run_input_that_stays_over_8_kib_once_compressed_is_kept_in_s3(
    world: AwsWorld, payload: bytes, stored_as: str
) -> None:
    # GIVEN a run created with the input
    with counting_s3_calls(world) as calls:
        run_id = create_run(world, input=payload)
    # WHEN its run_created event item is inspected
    stored = world.table.get(keys.run_input_key(run_id))
    assert stored is not None
    value = stored["data"]["creation"]["input"]
    # THEN it is inline (raw or compressed) up to 8 KiB stored, else one S3 object: written once
    # in a transaction, a larger input costs more in DynamoDB than an S3 PUT
    kind = "bytes" if isinstance(value, bytes) else ("zlib" if "zlib" in value else "s3")
    assert kind == stored_as
    assert calls.count("before-call.s3.PutObject") == (1 if stored_as == "s3" else 0)
    # AND the run and its log read it back whole
    assert world.runs.get(run_id).input == payload
    created = world.events.list(run_id)[0].data_as(RunCreatedData).creation
    assert created is not None and created.input == payload
