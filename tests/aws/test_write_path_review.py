"""Adversarial interleavings of the DynamoDB World's write path (review of the tail, the carry and seals).

Two World instances over one moto table stand in for two processes; a reader is paused
between two of its round trips by wrapping its sequencer's methods.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from harness.fake_time import FakeMonotonic
from tests.aws.test_terminal_repair import event_puts_fail
from world_aws.aws.codec import items, keys
from world_aws.aws.read.log_reader import HoleRepairPolicy
from world_aws.aws.world import AwsWorld, create_aws_world
from world_aws.contract.clock import ManualClock
from world_aws.contract.records import (
    EventRequest,
    EventType,
    RunCompletedData,
    RunStatus,
    StepCreatedData,
    StepStatus,
)
from world_aws.errors import Conflict, WorldAwsError
from world_aws.testing.conformance.appended import last_position, owned_create, owned_outcome
from world_aws.testing.conformance.support import STEP, create_run, create_step, new_id, running_step, write

GRACE_SECONDS = 2.0  # as the world fixture's repair policy


@contextmanager
def reader_on(world: AwsWorld, fake_time: FakeMonotonic) -> Iterator[AwsWorld]:
    """Another process's World on the same table and clock, waiting for holes on the fake time."""
    repair = HoleRepairPolicy(
        grace_seconds=GRACE_SECONDS, monotonic=fake_time.monotonic, sleep=fake_time.sleep
    )
    other = create_aws_world(world.config, clients=world.clients, clock=world.clock, repair=repair)
    try:
        yield other
    finally:
        other.close()


def _stored(world: AwsWorld, run_id: str, position: int) -> dict[str, Any] | None:
    return world.table.get(keys.event_key(run_id, position))


def _owner_running_a_step(world: AwsWorld, clock: ManualClock) -> tuple[str, str, int, str]:
    """A run whose owner appended a step's create without its item: (run, that step, the log's
    last position, the id its next step will take)."""
    run_id = create_run(world)
    done = new_id("step")
    after = last_position(world, run_id)
    assert world.events.append_after(run_id, after, [owned_create(done)], at=clock.now())
    return run_id, done, after + 1, new_id("step")


def test_a_seal_never_lands_inside_a_batch_that_landed_after_the_sealers_last_look(
    world: AwsWorld, clock: ManualClock, fake_time: FakeMonotonic
) -> None:
    # GIVEN a run whose owner runs a step it created without an item
    run_id, done, after, nxt = _owner_running_a_step(world, clock)
    with reader_on(world, fake_time) as reader:
        real_items, real_seal = reader.sequencer.event_items, reader.sequencer.seal_hole

        def items_after_the_writers(run: str, first: int) -> Any:
            # The reader read the run item before these (its tail is the create's), then Queries:
            # the owner appends its outcome and the next create to flush later, small, kept to
            # carry (its body runs), and another writer creates a dispatched step after them.
            assert world.events.append_after(
                run_id, after, [owned_outcome(done), owned_create(nxt)], at=clock.now(), flush_later=True
            )
            world.events.flush(run_id)
            create_step(world, run_id)
            reader.sequencer.event_items = real_items  # type: ignore[method-assign]
            return real_items(run, first)

        def seal_after_the_owner_moved_on(run: str, position: int, now: Any) -> Any:
            # Between the reader's last look for an item covering the hole (none) and its seal's
            # read of the run item: the owner reads its log (which puts the batch from the tail)
            # and appends its next outcome, so the run item's tail no longer covers the hole.
            owner_log = world.events.list(run_id)
            assert (owner_log[-3].position, owner_log[-3].correlation_id) == (after + 1, done)
            assert world.events.append_after(
                run_id, owner_log[-1].position, [owned_outcome(nxt)], at=clock.now()
            )
            reader.sequencer.seal_hole = real_seal  # type: ignore[method-assign]
            return real_seal(run, position, now)

        reader.sequencer.event_items = items_after_the_writers  # type: ignore[method-assign]
        reader.sequencer.seal_hole = seal_after_the_owner_moved_on  # type: ignore[method-assign]
        # WHEN the reader reads the log: it sees a hole below the dispatched step, waits for
        # it past the grace period and seals it
        read = reader.events.list(run_id, after=after)
    assert fake_time.now >= GRACE_SECONDS
    # THEN the seal did not land inside the batch (a noop at its first position hides its
    # first event from every reader from then on): the reader, and any later one, read the
    # owner's outcome at its position, as the owner itself read it
    expected = [(after + 1, EventType.STEP_COMPLETED, done), (after + 2, EventType.STEP_CREATED, nxt)]
    assert [(e.position, e.type, e.correlation_id) for e in read][:2] == expected
    later = [(e.position, e.type, e.correlation_id) for e in world.events.list(run_id) if e.position > after]
    assert later[:2] == expected
    sealed = _stored(world, run_id, after + 1)
    assert sealed is None or sealed["type"] != EventType.NOOP.value
    batch = _stored(world, run_id, after + 2)
    assert batch is not None and items.item_span(batch) == (after + 1, after + 2)


def test_a_read_shows_the_end_of_a_run_whose_end_was_followed_by_a_late_reservation(
    world: AwsWorld, fake_time: FakeMonotonic
) -> None:
    # GIVEN a running run with a dispatched step running, whose run_completed reserved its
    # position (the run is completed) and whose writer died before its event put
    run_id = create_run(world)
    step_id = running_step(world, run_id)
    with event_puts_fail(world, EventType.RUN_COMPLETED), pytest.raises(WorldAwsError):
        write(world, run_id, EventType.RUN_COMPLETED, data=RunCompletedData(output=b"the-output"))
    end = int(world.table.get(keys.run_key(run_id))["rev_final_pos"])  # type: ignore[index]
    assert _stored(world, run_id, end) is None
    # AND the step's late outcome (unfenced: a running step may report after its run ended)
    # reserved the next position, and its writer died before its commit

    def refuse(_run: object) -> None:
        raise AssertionError("an outcome's reservation is not fenced")

    late, _ = world.sequencer.reserve(run_id, world.clock.now(), fenced=False, judge=refuse)
    assert late == end + 1
    # WHEN the log is read, then read again past the grace period (nothing will ever be
    # written after those two positions: no later item shows them as a hole)
    world.events.list(run_id)
    fake_time.sleep(GRACE_SECONDS)
    events = world.events.list(run_id)
    # THEN the run reads completed, and its log ends with its run_completed, at its position
    assert world.runs.get(run_id).status is RunStatus.COMPLETED
    assert (events[-1].position, events[-1].type) == (end, EventType.RUN_COMPLETED)
    assert events[-1].data.output == b"the-output"
    assert step_id in {e.correlation_id for e in events}


def test_a_re_ensure_racing_an_append_does_not_hide_its_creates_from_later_duplicate_checks(
    world: AwsWorld, clock: ManualClock, fake_time: FakeMonotonic
) -> None:
    # GIVEN a run whose owner created a step without its item (the log holds such steps)
    run_id, done, after, nxt = _owner_running_a_step(world, clock)
    with reader_on(world, fake_time) as consumer:
        real_items = consumer.sequencer.committed_items

        def after_the_owner_appended(run: str, first: int, run_item: Any) -> Any:
            # Between the consumer's read of the run (and of the missing step) and its look at
            # the log's creates: the owner appends its outcome and the next create without an
            # item (kept to carry while its body runs), and a dispatched step is created after.
            assert world.events.append_after(
                run_id, after, [owned_outcome(done), owned_create(nxt)], at=clock.now(), flush_later=True
            )
            world.events.flush(run_id)
            create_step(world, run_id)
            consumer.sequencer.committed_items = real_items  # type: ignore[method-assign]
            return real_items(run, first, run_item)

        consumer.sequencer.committed_items = after_the_owner_appended  # type: ignore[method-assign]
        # WHEN a step consumer re-ensures its step, whose create had not landed (contract §5.2)
        dispatched = EventRequest(
            EventType.STEP_CREATED,
            new_id("step"),
            StepCreatedData(step_name=STEP, input=b"x", via_step_dispatch=True),
        )
        assert consumer.events.create(run_id, dispatched).event is not None
        # AND the owner settles its step (its outcome, appended after what it reads of the log)
        end = world.events.list(run_id)[-1].position
        assert world.events.append_after(run_id, end, [owned_outcome(nxt)], at=clock.now())
        assert world.steps.get(run_id, nxt).output == b"out"
        # THEN a later create of that step in the consumer's process (a stale replay's
        # one-by-one fallback) is a Conflict, as on every World: the step exists, completed
        with pytest.raises(Conflict):
            consumer.events.create(run_id, owned_create(nxt))
    creates = [e for e in world.events.list(run_id) if e.correlation_id == nxt]
    assert [e.type for e in creates].count(EventType.STEP_CREATED) == 1
    # AND the step still reads completed (a second create would write it an item, running)
    assert world.steps.get(run_id, nxt).status is StepStatus.COMPLETED
