"""Holes left between reserve and commit are waited for, then sealed by readers (contract §3.2)."""

from __future__ import annotations

import threading
from typing import Any

from botocore.exceptions import ClientError

from harness.fake_time import FakeMonotonic
from world_aws.aws.codec import items, keys
from world_aws.aws.codec.payloads import PayloadWriter
from world_aws.aws.world import AwsWorld
from world_aws.contract.records import (
    Event,
    EventData,
    EventType,
    RunCompletedData,
    RunStatus,
    StepCompletedData,
    StepCreatedData,
    WaitCreatedData,
)
from world_aws.errors import Transient, WorldAwsError
from world_aws.testing.conformance.support import create_run, create_step, running_step, write

GRACE_SECONDS = 2.0  # as the world fixture's repair policy


def _dead_writer_reserves(world: AwsWorld, run_id: str) -> int:
    """A writer that takes a position and dies before committing anything."""

    def refuse(_run: object) -> None:
        raise AssertionError("the reservation should succeed")

    position, _run_item = world.sequencer.reserve(run_id, world.clock.now(), fenced=True, judge=refuse)
    return position


def _hole_before_a_step(world: AwsWorld) -> tuple[str, int]:
    """A running run (1, 2), a writer that reserved 3 and never committed, and a step created at 4."""
    run_id = create_run(world)
    hole = _dead_writer_reserves(world, run_id)
    create_step(world, run_id)
    return run_id, hole


def _stored(world: AwsWorld, run_id: str, position: int) -> dict[str, Any] | None:
    return world.table.get(keys.event_key(run_id, position))


def test_reader_seals_the_hole_of_a_dead_writer_after_the_grace_period(
    world: AwsWorld, fake_time: FakeMonotonic
) -> None:
    # GIVEN a running run (1, 2), a writer that reserved 3 and died, and a step created at 4
    run_id = create_run(world)
    hole = _dead_writer_reserves(world, run_id)
    step_id = create_step(world, run_id)
    # WHEN the log is read
    events = world.events.list(run_id)
    # THEN the reader waited the grace period, sealed 3 with a noop and returned the rest in order
    assert hole == 3
    assert fake_time.now >= GRACE_SECONDS
    assert [(e.position, e.type) for e in events] == [
        (1, EventType.RUN_CREATED),
        (2, EventType.RUN_STARTED),
        (4, EventType.STEP_CREATED),
    ]
    sealed = _stored(world, run_id, hole)
    assert sealed is not None and sealed["type"] == EventType.NOOP.value
    # ... a later read extends it without waiting again, and later writes stay dense
    waited = fake_time.now
    start = write(world, run_id, EventType.STEP_STARTED, step_id)
    assert start.event is not None and start.event.position == 5
    later = world.events.list(run_id)
    assert later[: len(events)] == events and [e.position for e in later[len(events) :]] == [5]
    assert fake_time.now == waited


def test_a_read_that_fails_while_it_waits_leaves_the_grace_period_running(
    world: AwsWorld, fake_time: FakeMonotonic
) -> None:
    # GIVEN a dead writer's hole at 3 before a step at 4, and a reader whose re-read of 3
    # fails (a timeout, a throttle) after most of the grace period
    run_id, hole = _hole_before_a_step(world)
    failing_at = 0.75 * GRACE_SECONDS

    def fail_late() -> None:
        if fake_time.now >= failing_at:
            fake_time.on_sleep = None
            raise Transient("the re-read of the hole timed out")

    fake_time.on_sleep = fail_late
    try:
        world.events.list(run_id)
        raise AssertionError("the read should have failed")
    except Transient:
        pass
    assert _stored(world, run_id, hole) is None
    failed_at = fake_time.now
    # WHEN the next delivery reads the log
    events = world.events.list(run_id)
    # THEN it seals the hole once the grace period has passed since the hole was first
    # seen, not a whole grace period after the failure: a delivery that keeps failing
    # while it waits must not keep the run from ever getting past the hole
    assert [e.position for e in events] == [1, 2, 4]
    assert fake_time.now - failed_at <= GRACE_SECONDS - failing_at + 0.2
    sealed = _stored(world, run_id, hole)
    assert sealed is not None and sealed["type"] == EventType.NOOP.value


def test_the_wait_for_a_hole_ends_whatever_the_clock_reads_when_it_begins(
    world: AwsWorld, fake_time: FakeMonotonic
) -> None:
    # GIVEN a dead writer's hole, first seen when the (fake) monotonic clock reads a value at
    # which the grace's remainder rounds to less than the clock's resolution (15.9655...: the
    # backoffs leave 2.0 - waited = 4e-16 there, and 15.97 + 4e-16 == 15.97)
    fake_time.sleep(15.965583741014422)
    run_id, hole = _hole_before_a_step(world)
    listed: list[list[int]] = []
    reader = threading.Thread(
        target=lambda: listed.append([e.position for e in world.events.list(run_id)]), daemon=True
    )
    # WHEN the log is read
    reader.start()
    reader.join(timeout=60)  # a hang detector, not a time bound: the read takes milliseconds
    # THEN the read ended, the hole sealed once the grace period was over
    assert not reader.is_alive(), "the reader never got past the hole"
    assert listed == [[1, 2, 4]]
    sealed = _stored(world, run_id, hole)
    assert sealed is not None and sealed["type"] == EventType.NOOP.value


def test_reader_waits_for_a_writer_in_flight_instead_of_sealing(
    world: AwsWorld, fake_time: FakeMonotonic
) -> None:
    # GIVEN a writer that reserved 3 and is slow to commit, and a step created at 4
    run_id, position = _hole_before_a_step(world)
    late = Event(
        run_id,
        position,
        EventType.WAIT_CREATED,
        "wait_late",
        world.clock.now(),
        WaitCreatedData(resume_at=world.clock.now()),
    )

    def slow_writer_commits() -> None:
        fake_time.on_sleep = None
        action = world.table.put_action(
            items.event_item(late, PayloadWriter(world.blobs)), condition="attribute_not_exists(sk)"
        )
        assert world.sequencer.commit(run_id, position, [action], world.clock.now()) is None

    fake_time.on_sleep = slow_writer_commits
    # WHEN the log is read while the writer commits during the reader's first backoff
    events = world.events.list(run_id)
    # THEN the reader returned the writer's event at 3, without sealing and well within the grace
    assert [e.position for e in events] == [1, 2, 3, 4]
    assert events[2] == late
    assert 0 < fake_time.now < GRACE_SECONDS


def test_dead_run_completed_writer_is_repaired_with_the_real_event(world: AwsWorld) -> None:
    # GIVEN a running run with a running step
    run_id = create_run(world)
    step_id = running_step(world, run_id)

    # ... whose run_completed applied the transition, then never put its event (writer lost)
    def lose_event_puts(params: dict[str, Any], **_: Any) -> None:
        if params["Item"]["type"]["S"] == EventType.RUN_COMPLETED.value:
            raise ClientError({"Error": {"Code": "InternalServerError", "Message": "lost"}}, "PutItem")

    world.clients.dynamodb.meta.events.register("before-parameter-build.dynamodb.PutItem", lose_event_puts)
    try:
        write(world, run_id, EventType.RUN_COMPLETED, data=RunCompletedData(output=b"the-output"))
        raise AssertionError("the event put should have failed")
    except WorldAwsError:
        pass
    finally:
        world.clients.dynamodb.meta.events.unregister(
            "before-parameter-build.dynamodb.PutItem", lose_event_puts
        )
    assert world.runs.get(run_id).status is RunStatus.COMPLETED
    # ... and the running step then reported its outcome (accepted after the end, contract §3.1)
    outcome = write(world, run_id, EventType.STEP_COMPLETED, step_id, StepCompletedData(output=b"late"))
    # WHEN the log is read
    events = world.events.list(run_id)
    # THEN the hole before step_completed holds the real run_completed, rebuilt from the run item
    assert outcome.event is not None
    assert [e.position for e in events] == list(range(1, outcome.event.position + 1))
    ended = events[-2]
    assert (ended.type, ended.data.output) == (EventType.RUN_COMPLETED, b"the-output")
    assert ended.created_at == world.runs.get(run_id).completed_at
    assert events[-1] == outcome.event


def test_writer_whose_position_was_sealed_reserves_again(world: AwsWorld) -> None:
    # GIVEN a running run, and a reader that seals the position of the next commit just before it lands
    run_id = create_run(world)
    sealed: list[int] = []

    def reader_seals_first(params: dict[str, Any], **_: Any) -> None:
        if sealed:
            return
        position = int(params["TransactItems"][0]["Put"]["Item"]["pos"]["N"])
        sealed.append(position)
        world.sequencer.seal_hole(run_id, position, world.clock.now())

    world.clients.dynamodb.meta.events.register(
        "before-parameter-build.dynamodb.TransactWriteItems", reader_seals_first
    )
    try:
        # WHEN a step is created
        result = create_step(world, run_id)
    finally:
        world.clients.dynamodb.meta.events.unregister(
            "before-parameter-build.dynamodb.TransactWriteItems", reader_seals_first
        )
    # THEN its first position was sealed, and it committed whole at the next one
    assert sealed == [3]
    events = world.events.list(run_id)
    assert [(e.position, e.type, e.correlation_id) for e in events[2:]] == [
        (4, EventType.STEP_CREATED, result)
    ]
    assert world.steps.get(run_id, result).status.value == "pending"
    stored = _stored(world, run_id, 3)
    assert stored is not None and stored["type"] == EventType.NOOP.value


def _dead_tail_writer(world: AwsWorld, run_id: str, types: list[EventType]) -> list[int]:
    """A writer that took positions with a copy of their batch in the run item's ``tail``, and died.

    What the single writer's append leaves when it dies between its reservation and its
    batch item's put (ARCHITECTURE §8 "The tail"); written here by hand.
    """
    run_item = world.table.get(keys.run_key(run_id))
    assert run_item is not None
    after = int(run_item["seq"])
    now = world.clock.now()
    writer = PayloadWriter(world.blobs)
    batch = items.batch_items(
        [
            items.event_item(
                Event(run_id, after + offset, etype, f"step_tail{offset}", now, _data_of(etype)), writer
            )
            for offset, etype in enumerate(types, start=1)
        ]
    )
    assert len(batch) == 1
    tail = {k: v for k, v in batch[0].items() if k != keys.PK}
    world.table.update(
        keys.run_key(run_id),
        "SET seq = :last, tail = :tail",
        condition="seq = :after",
        values={":after": after, ":last": after + len(types), ":tail": tail},
    )
    return list(range(after + 1, after + len(types) + 1))


def _data_of(etype: EventType) -> EventData:
    if etype is EventType.STEP_CREATED:
        return StepCreatedData(step_name="step_tail", input=b"in", owner="m#1#h")
    return StepCompletedData(output=b"out", owner="m#1#h")


def test_a_hole_the_run_items_tail_covers_is_sealed_with_that_batch_not_a_noop(
    world: AwsWorld, fake_time: FakeMonotonic
) -> None:
    # GIVEN a batch of two events whose positions and tail copy were written, but not its
    # item, and a step created after it (so the batch is an interior hole)
    run_id = create_run(world)
    positions = _dead_tail_writer(world, run_id, [EventType.STEP_CREATED, EventType.STEP_CREATED])
    after = create_step(world, run_id)
    # WHEN the log is read
    events = world.events.list(run_id)
    # THEN the reader put the batch from the copy at once (it is committed: nothing to wait
    # for): both events are in the log, in order, and no noop was written at either position
    assert fake_time.now < GRACE_SECONDS
    listed = [(e.position, e.correlation_id) for e in events]
    assert listed[-3:] == [
        (positions[0], "step_tail1"),
        (positions[1], "step_tail2"),
        (positions[1] + 1, after),
    ]
    stored = _stored(world, run_id, positions[-1])
    assert stored is not None and items.item_span(stored) == (positions[0], positions[1])
    assert _stored(world, run_id, positions[0]) is None  # keyed by its last position only


def test_a_tail_that_does_not_cover_the_hole_leaves_it_to_a_noop(
    world: AwsWorld, fake_time: FakeMonotonic
) -> None:
    # GIVEN a tail copy of a batch that landed, then a writer that reserved and died, then a step
    run_id = create_run(world)
    positions = _dead_tail_writer(world, run_id, [EventType.STEP_CREATED])
    run_item = world.table.get(keys.run_key(run_id))
    assert run_item is not None
    world.table.put({keys.PK: run_item[keys.PK], **run_item["tail"]})  # the batch's own put
    hole = _dead_writer_reserves(world, run_id)
    create_step(world, run_id)
    # WHEN the log is read
    events = world.events.list(run_id)
    # THEN the hole was sealed with a noop, and the tail's event is listed once
    sealed = _stored(world, run_id, hole)
    assert sealed is not None and sealed["type"] == EventType.NOOP.value
    assert [e.correlation_id for e in events].count("step_tail1") == 1
    assert positions == [hole - 1]
