"""Every event type's record round-trips through the DynamoDB World's codec (``items.encode_data``).

The codec follows each field's declared type (``records.field_kinds``), so a field
added to a record is stored and read back without touching the codec; these tests
catch one that is not.
"""

from __future__ import annotations

import os
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from world_aws.aws.codec import items
from world_aws.aws.codec.payloads import EVENT_INLINE_LIMIT, PayloadReader, PayloadWriter
from world_aws.aws.world import AwsWorld
from world_aws.contract.records import (
    DATA_RECORDS,
    EventType,
    FieldKind,
    HookReceivedData,
    ResolveData,
    RunCreation,
    StepCreatedData,
    field_kinds,
    without_payloads,
)

LARGE = os.urandom(EVENT_INLINE_LIMIT + 1)  # offloaded to S3
SAMPLES: dict[FieldKind, Any] = {
    FieldKind.PAYLOAD: b"\x00small payload\xff",
    FieldKind.TIME: datetime(2026, 12, 3, 9, 30, 0, 123456, tzinfo=UTC),
    FieldKind.CREATION: RunCreation("wf", "dpl_1", 2, b"run-input", {"k": "v"}),
    FieldKind.FLAG: True,
    FieldKind.TEXT: "name.with.dots",
    FieldKind.NUMBER: 3,
}


def _every_field_set(etype: EventType, payload: bytes | None = None) -> Any:
    record = DATA_RECORDS[etype]
    values = {
        name: payload if kind is FieldKind.PAYLOAD and payload is not None else SAMPLES[kind]
        for name, kind in field_kinds(record).items()
    }
    return record(**values)


@pytest.mark.parametrize("etype", sorted(EventType))
@pytest.mark.parametrize("size", ["small", "large"])
def test_a_record_with_every_field_set_reads_back_as_written(
    world: AwsWorld, etype: EventType, size: str
) -> None:
    data = _every_field_set(etype, LARGE if size == "large" else None)
    stored = items.encode_data(data, PayloadWriter(world.blobs))
    assert items.decode_data(etype, stored, PayloadReader(world.blobs)) == data
    # AND read without payloads, it is the record with every payload left out (no S3 call needed)
    bare = items.decode_data(etype, stored, PayloadReader(world.blobs, ResolveData.NONE))
    assert bare == without_payloads(data)


@pytest.mark.parametrize("etype", sorted(EventType))
def test_a_record_with_its_defaults_stores_only_what_is_set(world: AwsWorld, etype: EventType) -> None:
    data = _every_field_set(etype)
    defaults = {
        name: None if kind is not FieldKind.FLAG else False for name, kind in field_kinds(type(data)).items()
    }
    empty = replace(data, **defaults)
    assert items.encode_data(empty, PayloadWriter(world.blobs)) == {}
    assert items.decode_data(etype, {}, PayloadReader(world.blobs)) == empty


def test_a_stored_map_is_read_as_its_types_record_only(world: AwsWorld) -> None:
    # GIVEN a stored map that also holds fields of another type (an older writer's)
    stored = items.encode_data(
        StepCreatedData(step_name="s", input=b"in", owner="m#1#h"), PayloadWriter(world.blobs)
    )
    stored["payload"] = b"p"
    stored["resume_id"] = "r1"
    # WHEN it is read as each type THEN each gets its own fields and nothing else
    assert items.decode_data(EventType.STEP_CREATED, stored, PayloadReader(world.blobs)) == StepCreatedData(
        step_name="s", input=b"in", owner="m#1#h"
    )
    assert items.decode_data(EventType.HOOK_RECEIVED, stored, PayloadReader(world.blobs)) == HookReceivedData(
        payload=b"p", resume_id="r1"
    )
