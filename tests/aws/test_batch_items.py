"""An ``append_after`` keeps its events in batch items; readers expand them (ARCHITECTURE §8)."""

from __future__ import annotations

import itertools
import os
from datetime import UTC, datetime, timedelta
from typing import Any

from harness.fake_time import FakeMonotonic
from world_aws.aws.codec import items, keys
from world_aws.aws.codec.payloads import PayloadReader, PayloadWriter
from world_aws.aws.world import AwsWorld
from world_aws.contract.records import (
    Event,
    EventRequest,
    EventType,
    RunCompletedData,
    StepCompletedData,
    StepCreatedData,
    owner_of,
)
from world_aws.testing.conformance.appended import OWNER, owned_create, owned_outcome, running_owned
from world_aws.testing.conformance.support import create_run, create_step, new_id

GRACE_SECONDS = 2.0  # as the world fixture's repair policy
DYNAMODB_ITEM_LIMIT = 400 * 1024


def _event_items(world: AwsWorld, run_id: str) -> list[dict[str, Any]]:
    return list(
        world.table.query_all(
            "pk = :pk AND begins_with(sk, :evt)", {":pk": keys.run_pk(run_id), ":evt": keys.EVENT_PREFIX}
        )
    )


def _append(world: AwsWorld, run_id: str, creates: int, **create_data: Any) -> tuple[int, list[str]]:
    """An owned step's outcome and ``creates`` owned creates, appended after the log's end."""
    done = running_owned(world, run_id)
    after = world.events.list(run_id)[-1].position
    nexts = [new_id("step") for _ in range(creates)]
    requests = [owned_outcome(done)]
    for step_id in nexts:
        if create_data:
            data = StepCreatedData(**{"owner": OWNER, **create_data})
            requests.append(EventRequest(EventType.STEP_CREATED, step_id, data))
        else:
            requests.append(owned_create(step_id))
    assert world.events.append_after(run_id, after, requests, at=world.clock.now()) is not None
    return after, nexts


def test_an_outcome_and_the_next_create_are_one_stored_item(world: AwsWorld) -> None:
    # GIVEN a running run with an owned step
    run_id = create_run(world)
    # WHEN its outcome and the next create are appended
    after, _ = _append(world, run_id, creates=1)
    # THEN both events are one item, keyed by the later position, covering both
    stored = [item for item in _event_items(world, run_id) if items.item_span(item)[1] > after]
    assert len(stored) == 1
    assert stored[0][keys.SK] == keys.event_sk(after + 2)
    assert items.item_span(stored[0]) == (after + 1, after + 2)
    # ... and the log lists them at their own positions
    listed = world.events.list(run_id, after=after)
    assert [(e.position, e.type) for e in listed] == [
        (after + 1, EventType.STEP_COMPLETED),
        (after + 2, EventType.STEP_CREATED),
    ]


def test_a_dead_writers_hole_after_a_batch_is_sealed_and_the_batch_kept(
    world: AwsWorld, fake_time: FakeMonotonic
) -> None:
    # GIVEN a batch, then a writer that reserved the next position and died, then a create
    run_id = create_run(world)
    after, _ = _append(world, run_id, creates=2)
    hole, _ = world.sequencer.reserve(run_id, world.clock.now(), fenced=True, judge=lambda _run: None)
    create_step(world, run_id)
    # WHEN the log is read from inside the batch
    listed = world.events.list(run_id, after=after + 1)
    # THEN the reader waited out the grace period, sealed the hole, and kept the batch's events
    assert hole == after + 4
    assert fake_time.now >= GRACE_SECONDS
    assert [e.position for e in listed] == [after + 2, after + 3, after + 5]
    sealed = world.table.get(keys.event_key(run_id, hole))
    assert sealed is not None and sealed["type"] == EventType.NOOP.value


def test_a_batch_a_query_missed_is_found_at_the_hole_without_sealing(
    world: AwsWorld, fake_time: FakeMonotonic
) -> None:
    # GIVEN a run whose positions 3 and 4 are taken by a batch that lands only after the
    # reader's Query has passed them, while position 5 is already stored
    run_id = create_run(world)
    now = world.clock.now()
    for _ in range(3):
        world.sequencer.reserve(run_id, now, fenced=True, judge=lambda _run: None)
    writer = PayloadWriter(world.blobs)

    def event(position: int, step_id: str) -> dict[str, Any]:
        data = StepCreatedData(step_name="s", input=b"in", owner=OWNER)
        return items.event_item(Event(run_id, position, EventType.STEP_CREATED, step_id, now, data), writer)

    world.table.put(event(5, "step_late"))
    batch = items.batch_items([event(3, "step_a"), event(4, "step_b")])
    assert len(batch) == 1
    events = world.clients.dynamodb.meta.events

    def land_the_batch(**_: Any) -> None:
        events.unregister("after-call.dynamodb.Query", land_the_batch)
        world.table.put(batch[0])

    events.register("after-call.dynamodb.Query", land_the_batch)
    try:
        # WHEN the log is read
        listed = world.events.list(run_id, after=2)
    finally:
        events.unregister("after-call.dynamodb.Query", land_the_batch)
    # THEN the hole at 3 is the batch, found by the re-read: no wait, no seal
    assert [(e.position, e.correlation_id) for e in listed] == [
        (3, "step_a"),
        (4, "step_b"),
        (5, "step_late"),
    ]
    assert fake_time.now == 0
    assert world.table.get(keys.event_key(run_id, 3)) is None


def test_large_payloads_split_a_batch_into_items_under_dynamodbs_limit(world: AwsWorld) -> None:
    # GIVEN owned creates whose inputs (60 KiB each, incompressible) cannot share one item
    run_id = create_run(world)
    payload = os.urandom(60 * 1024)
    # WHEN an outcome and nine such creates are appended together
    after, nexts = _append(world, run_id, creates=9, step_name="s", input=payload)
    # THEN they are stored in a few items, each under DynamoDB's item limit ...
    stored = [item for item in _event_items(world, run_id) if items.item_span(item)[1] > after]
    spans = [items.item_span(item) for item in stored]
    assert 1 < len(stored) < 10
    assert spans[0][0] == after + 1 and spans[-1][1] == after + 10
    assert all(later[0] == earlier[1] + 1 for earlier, later in itertools.pairwise(spans))
    assert all(items.stored_bytes(item) < DYNAMODB_ITEM_LIMIT for item in stored)
    # ... and read back whole, from the start and from inside
    listed = world.events.list(run_id, after=after)
    assert [e.correlation_id for e in listed[1:]] == nexts
    assert all(e.data_as(StepCreatedData).input == payload for e in listed[1:])
    assert world.events.list(run_id, after=after + 5) == listed[5:]
    assert all(world.steps.get(run_id, step_id).input == payload for step_id in nexts)


def test_a_batch_keeps_a_shared_owner_and_time_once_and_unbatches_to_its_events(world: AwsWorld) -> None:
    # GIVEN four events: three of one owner, two stamped alike and two otherwise, one unowned
    writer = PayloadWriter(world.blobs)
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    t1 = t0 + timedelta(seconds=3)
    specs = [
        (EventType.STEP_COMPLETED, "s1", t0, StepCompletedData(output=b"1", owner=OWNER)),
        (EventType.STEP_CREATED, "s2", t0, StepCreatedData(input=b"2", step_name="n", owner=OWNER)),
        (EventType.STEP_COMPLETED, "s2", t1, StepCompletedData(output=b"3", owner=OWNER)),
        (EventType.RUN_COMPLETED, None, t1, RunCompletedData(output=b"4")),
    ]
    singles = [
        items.event_item(Event("wrun_x", 10 + i, etype, cid, at, data), writer)
        for i, (etype, cid, at, data) in enumerate(specs)
    ]
    # WHEN they are batched
    (batch,) = items.batch_items(singles)
    # THEN the owner is kept once, and the time most of them share (the latest of a tie) once
    assert batch[items.BATCH_OWNER] == OWNER
    assert batch[items.BATCH_AT] == items.epoch_us(t1)
    assert sum(str(e).count(OWNER) for e in batch["evts"]) == 0
    # AND a reader gets each event back as it was written, from any position
    events = items.events_from_item("wrun_x", batch, PayloadReader(world.blobs))
    assert [(e.position, e.type, e.correlation_id, e.created_at, owner_of(e.data)) for e in events] == [
        (10 + i, etype, cid, at, owner_of(data)) for i, (etype, cid, at, data) in enumerate(specs)
    ]
    assert [e.data.output for e in events if e.type is not EventType.STEP_CREATED] == [b"1", b"3", b"4"]
    assert [
        e.position for e in items.events_from_item("wrun_x", batch, PayloadReader(world.blobs), since=12)
    ] == [
        12,
        13,
    ]
    # AND unbatched, they are the single items they were made of
    assert items.unbatch(batch) == singles
    assert items.batch_items(items.unbatch(batch)) == [batch]
