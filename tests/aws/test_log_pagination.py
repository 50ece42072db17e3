"""A long log is read whole across DynamoDB's 1 MB Query pages (contract §7.4: always paginate)."""

from __future__ import annotations

from typing import Any

from world_aws.aws.codec import items, keys
from world_aws.aws.codec.dynamo import to_item
from world_aws.aws.codec.payloads import PayloadWriter
from world_aws.aws.world import AwsWorld
from world_aws.contract.records import (
    Event,
    EventRequest,
    EventType,
    ResolveData,
    StepCompletedData,
    WaitCreatedData,
)
from world_aws.testing.conformance.support import create_run

EVENTS = 5_000
# ~500 bytes per event: 5,000 of them are ~2.5 MB, three Query pages at least.
PAYLOAD = bytes(range(250)) * 2


def _write_events_directly(world: AwsWorld, run_id: str, first: int, count: int) -> None:
    """Events first..first+count-1 as if committed by writers (BatchWriteItem: 25 items per call)."""
    writer = PayloadWriter(world.blobs)
    now = world.clock.now()
    stored = [
        items.event_item(
            Event(
                run_id,
                p,
                EventType.STEP_COMPLETED,
                f"step_{p}",
                now,
                StepCompletedData(output=PAYLOAD + b"%d" % p),
            ),
            writer,
        )
        for p in range(first, first + count)
    ]
    for start in range(0, len(stored), 25):
        batch: list[Any] = [{"PutRequest": {"Item": to_item(item)}} for item in stored[start : start + 25]]
        world.clients.dynamodb.batch_write_item(RequestItems={world.config.table_name: batch})
    world.table.update(
        keys.run_key(run_id), "SET seq = :seq", values={":seq": first + count - 1}, return_values="NONE"
    )


def test_a_5000_event_log_is_read_whole_in_order_across_pages(world: AwsWorld) -> None:
    # GIVEN a run with 5,000 events after its first two (several 1 MB pages)
    run_id = create_run(world)
    _write_events_directly(world, run_id, 3, EVENTS)
    # WHEN the whole log, a suffix and a payload-less suffix are read
    everything = world.events.list(run_id)
    suffix = world.events.list(run_id, after=4_990)
    bare = world.events.list(run_id, after=4_000, resolve_data=ResolveData.NONE)
    # THEN every event is there once, in position order, with its own payload
    assert [e.position for e in everything] == list(range(1, EVENTS + 3))
    assert everything[-1].data.output == PAYLOAD + b"%d" % (EVENTS + 2)
    assert [e.position for e in suffix] == list(range(4_991, EVENTS + 3))
    assert suffix == everything[4_990:]
    assert [e.position for e in bare] == [e.position for e in everything[4_000:]]
    assert all(getattr(e.data, "output", None) is None for e in bare)


def test_an_appended_event_follows_a_long_log(world: AwsWorld) -> None:
    # GIVEN a run whose log is already long
    run_id = create_run(world)
    _write_events_directly(world, run_id, 3, 300)
    # WHEN a new event is written
    result = world.events.create(
        run_id,
        EventRequest(EventType.WAIT_CREATED, "wait_after", WaitCreatedData(resume_at=world.clock.now())),
    )
    # THEN it takes the next position, and the log reads densely through it
    assert result.event is not None and result.event.position == 303
    assert [e.position for e in world.events.list(run_id, after=290)] == list(range(291, 304))
