"""The batch committed in its reservation: an append's ``tail`` (ARCHITECTURE §8 "The tail").

An ``append_after`` with no entity action and one batch item that keeps the run item
within two write units commits in one ``UpdateItem`` of the run item (positions, fence,
``own#`` entries and the batch as ``tail``), then puts the batch item. These tests break
the put and check that no event is lost, none is sealed with a ``noop``, and every reader
counts the committed batch.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from botocore.exceptions import ClientError

from harness.fake_time import FakeMonotonic
from world_aws.aws.codec import dynamo, items, keys, sizes
from world_aws.aws.world import AwsWorld, create_aws_world
from world_aws.aws.write.landings import CARRY_SECONDS, READER_KEEPS_SECONDS
from world_aws.aws.write.sequencer import TAIL_SLOT
from world_aws.contract.clock import ManualClock
from world_aws.contract.records import (
    EventRequest,
    EventType,
    RunCancelledData,
    RunCompletedData,
    RunCreatedData,
    RunStartedData,
    RunStatus,
    StepCreatedData,
    StepStatus,
)
from world_aws.errors import Conflict, Transient, WorldAwsError
from world_aws.testing.conformance.appended import last_position, owned_create, owned_outcome
from world_aws.testing.conformance.support import STEP, create_run, creation, new_id, write

GRACE_SECONDS = 2.0  # as the world fixture's repair policy


@contextmanager
def event_puts_fail(world: AwsWorld) -> Iterator[list[str]]:
    """Every plain ``PutItem`` of an event item is throttled while inside; yields the keys refused."""
    refused: list[str] = []

    def throttle(params: dict[str, Any], **_: Any) -> None:
        sk = params.get("Item", {}).get(keys.SK, {}).get("S", "")
        if sk.startswith("evt#"):
            refused.append(sk)
            raise ClientError(
                {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "injected"}},
                "PutItem",
            )

    hook = "before-parameter-build.dynamodb.PutItem"
    world.clients.dynamodb.meta.events.register(hook, throttle)
    try:
        yield refused
    finally:
        world.clients.dynamodb.meta.events.unregister(hook, throttle)


@contextmanager
def aws_world_on(world: AwsWorld) -> Iterator[AwsWorld]:
    """Another process's World on the same table, queues and clock (its own memory of tails)."""
    other = create_aws_world(world.config, clients=world.clients, clock=world.clock)
    try:
        yield other
    finally:
        other.close()


def _run_item(world: AwsWorld, run_id: str) -> dict[str, Any]:
    item = world.table.get(keys.run_key(run_id))
    assert item is not None
    return item


def _stored(world: AwsWorld, run_id: str, position: int) -> dict[str, Any] | None:
    return world.table.get(keys.event_key(run_id, position))


def _kept_batch(world: AwsWorld, clock: ManualClock, *, flush: bool = True) -> tuple[str, int, str, str]:
    """A run whose owned step's outcome and next create were appended to flush later, then
    (``flush``) flushed, small: kept to carry; with the log's end before them and the two step ids."""
    run_id = create_run(world)
    done, after = _lazy_step(world, clock, run_id)
    nxt = new_id("step")
    assert world.events.append_after(
        run_id, after, [owned_outcome(done), owned_create(nxt)], at=clock.now(), flush_later=True
    )
    if flush:
        world.events.flush(run_id)
    return run_id, after, done, nxt


def _lazy_step(world: AwsWorld, clock: ManualClock, run_id: str) -> tuple[str, int]:
    """An owned step created by an append (no item: the run item's entry); with the log's end."""
    step_id = new_id("step")
    after = last_position(world, run_id)
    assert world.events.append_after(run_id, after, [owned_create(step_id)], at=clock.now())
    return step_id, after + 1


def test_a_sequential_append_commits_in_the_run_item_and_lands_its_batch(
    world: AwsWorld, clock: ManualClock
) -> None:
    # GIVEN a run whose owner runs a step it created without an item
    run_id = create_run(world)
    done, after = _lazy_step(world, clock, run_id)
    # WHEN its outcome and the next create are appended
    nxt = new_id("step")
    results = world.events.append_after(
        run_id, after, [owned_outcome(done), owned_create(nxt)], at=clock.now()
    )
    # THEN both are in the log in one batch item, and the run item keeps that batch as its tail
    assert results is not None and [r.event.position for r in results] == [after + 1, after + 2]
    stored = _stored(world, run_id, after + 2)
    assert stored is not None and items.item_span(stored) == (after + 1, after + 2)
    tail = _run_item(world, run_id)[TAIL_SLOT]
    assert tail == {k: v for k, v in stored.items() if k != keys.PK}
    # AND a later append that writes items (a dispatched create) removes the tail
    dispatched = EventRequest(
        EventType.STEP_CREATED, new_id("step"), StepCreatedData(step_name=STEP, input=b"x")
    )
    landed = world.events.append_after(run_id, after + 2, [owned_outcome(nxt), dispatched], at=clock.now())
    assert landed is not None
    assert TAIL_SLOT not in _run_item(world, run_id)
    assert [e.correlation_id for e in world.events.list(run_id)][-4:] == [
        done,
        nxt,
        nxt,
        dispatched.correlation_id,
    ]


def test_a_batch_whose_put_fails_is_committed_and_the_next_append_carries_it(
    world: AwsWorld, clock: ManualClock, fake_time: FakeMonotonic
) -> None:
    # GIVEN an owned step running without its item
    run_id = create_run(world)
    done, after = _lazy_step(world, clock, run_id)
    nxt = new_id("step")
    with event_puts_fail(world) as refused:
        # WHEN its outcome and the next create are appended while every event put fails
        with pytest.raises(Transient, match="committed"):
            world.events.append_after(run_id, after, [owned_outcome(done), owned_create(nxt)], at=clock.now())
        # THEN the answer is Transient after its tries, and the positions are taken
        assert len(refused) == 3 and _stored(world, run_id, after + 2) is None
        assert int(_run_item(world, run_id)["seq"]) == after + 2
        # AND an append after it (a writer going on from what it wrote) carries it: one
        # batch of both is the run item's tail (whose own put fails too)
        with pytest.raises(Transient, match="committed"):
            world.events.append_after(run_id, after + 2, [owned_outcome(nxt)], at=clock.now())
        run_item = _run_item(world, run_id)
        assert int(run_item["seq"]) == after + 3
        assert items.item_span(run_item[TAIL_SLOT]) == (after + 1, after + 3)
        assert sizes.item_size(dynamo.to_item(run_item)) <= sizes.WRITE_UNIT_BYTES
        # AND the committed batch counts for the readers that only look: both steps
        # completed, with no item and no entry for either
        assert world.steps.get(run_id, nxt).status is StepStatus.COMPLETED
        assert world.steps.get(run_id, done).status is StepStatus.COMPLETED
        # AND the same writes again one by one (the runtime's fallback) are refused
        for request in (owned_outcome(done), owned_create(nxt)):
            with pytest.raises(WorldAwsError):
                world.events.create(run_id, request)
    # WHEN the log is read once the tail is older than a reader leaves to its writer
    clock.advance(READER_KEEPS_SECONDS)
    events = world.events.list(run_id)
    # THEN the batch is in it at once, as committed, whole and before the noops those
    # refused writes left; nothing was lost or sealed inside it, and it is one item
    assert fake_time.now < GRACE_SECONDS
    assert [(e.position, e.type, e.correlation_id) for e in events if e.position > after] == [
        (after + 1, EventType.STEP_COMPLETED, done),
        (after + 2, EventType.STEP_CREATED, nxt),
        (after + 3, EventType.STEP_COMPLETED, nxt),
    ]
    stored = _stored(world, run_id, after + 3)
    assert stored is not None and items.item_span(stored) == (after + 1, after + 3)
    assert _stored(world, run_id, after + 2) is None
    # AND the owner appends after it again
    later = world.events.append_after(
        run_id, int(_run_item(world, run_id)["seq"]), [owned_create(new_id("step"))], at=clock.now()
    )
    assert later is not None


def test_a_small_batch_appended_to_flush_later_is_carried_by_the_next_append(
    world: AwsWorld, clock: ManualClock
) -> None:
    # GIVEN an owned step running without its item
    run_id = create_run(world)
    done, after = _lazy_step(world, clock, run_id)
    nxt = new_id("step")
    # WHEN its outcome and the next create are appended to flush later (the next body runs beside)
    results = world.events.append_after(
        run_id, after, [owned_outcome(done), owned_create(nxt)], at=clock.now(), flush_later=True
    )
    # THEN they are committed in the run item's tail, and the batch item is not put yet
    assert results is not None and [r.event.position for r in results] == [after + 1, after + 2]
    assert _run_item(world, run_id)[TAIL_SLOT]["pos"] == after + 1
    assert _stored(world, run_id, after + 2) is None
    # AND the readers that only look count it
    assert world.steps.get(run_id, nxt).status is StepStatus.RUNNING
    # WHEN the writer flushes: the batch is small, so it is kept for the next append
    world.events.flush(run_id)
    assert _stored(world, run_id, after + 2) is None
    assert [e.correlation_id for e in world.events.list(run_id, after=after)] == [done, nxt]
    # AND the next append carries it: one item holds both batches, the first never put alone
    assert world.events.append_after(run_id, after + 2, [owned_outcome(nxt)], at=clock.now())
    stored = _stored(world, run_id, after + 3)
    assert stored is not None and items.item_span(stored) == (after + 1, after + 3)
    assert _stored(world, run_id, after + 2) is None
    assert [e.correlation_id for e in world.events.list(run_id, after=after)] == [done, nxt, nxt]


def test_a_large_batch_appended_to_flush_later_lands_at_the_flush(
    world: AwsWorld, clock: ManualClock
) -> None:
    # GIVEN an outcome of 400 incompressible bytes appended to flush later
    run_id = create_run(world)
    done, after = _lazy_step(world, clock, run_id)
    output = random.Random(7).randbytes(400)
    nxt = new_id("step")
    assert world.events.append_after(
        run_id, after, [owned_outcome(done, output), owned_create(nxt)], at=clock.now(), flush_later=True
    )
    # WHEN the writer flushes (a batch too large to carry beside another)
    world.events.flush(run_id)
    # THEN the batch item is in the table, and a second flush has nothing to do
    stored = _stored(world, run_id, after + 2)
    assert stored is not None and items.item_span(stored) == (after + 1, after + 2)
    world.events.flush(run_id)
    assert [e.correlation_id for e in world.events.list(run_id, after=after)] == [done, nxt]


def test_an_unflushed_batch_is_put_by_the_next_append_and_a_failed_flush_holds_it_back(
    world: AwsWorld, clock: ManualClock
) -> None:
    # GIVEN a batch too large to carry, appended to flush later, whose flush fails (every
    # event put throttled)
    run_id = create_run(world)
    done, after = _lazy_step(world, clock, run_id)
    nxt, third = new_id("step"), new_id("step")
    output = random.Random(9).randbytes(400)
    assert world.events.append_after(
        run_id, after, [owned_outcome(done, output), owned_create(nxt)], at=clock.now(), flush_later=True
    )
    with event_puts_fail(world) as refused:
        world.events.flush(run_id)  # best effort: no error
        assert refused and _stored(world, run_id, after + 2) is None
        # WHEN the writer appends after it while the put still fails
        # THEN that append is held back (it would replace the tail) and writes nothing
        with pytest.raises(Transient, match="committed"):
            world.events.append_after(
                run_id, after + 2, [owned_outcome(nxt), owned_create(third)], at=clock.now()
            )
        assert int(_run_item(world, run_id)["seq"]) == after + 2
    # WHEN it appends again once puts work
    later = world.events.append_after(
        run_id, after + 2, [owned_outcome(nxt), owned_create(third)], at=clock.now(), flush_later=True
    )
    # THEN the first batch was put before the second replaced it, and the log is whole
    assert later is not None
    assert _stored(world, run_id, after + 2) is not None
    assert [e.correlation_id for e in world.events.list(run_id, after=after)] == [done, nxt, nxt, third]


def test_a_trailing_batch_that_never_landed_is_put_by_the_next_read(
    world: AwsWorld, clock: ManualClock
) -> None:
    # GIVEN an append that committed in the run item and whose writer died before its put
    # (nothing written after it, so there is no later position to show a hole)
    run_id = create_run(world)
    done, after = _lazy_step(world, clock, run_id)
    nxt = new_id("step")
    with event_puts_fail(world), pytest.raises(Transient):
        world.events.append_after(run_id, after, [owned_outcome(done), owned_create(nxt)], at=clock.now())
    # WHEN another process's replay reads the log from what it last knew (its end before the
    # batch) at once
    with aws_world_on(world) as other:
        events = other.events.list(run_id, after=after)
        # THEN the batch's events are there, and its item is left to its writer's next append
        assert [(e.position, e.correlation_id) for e in events] == [(after + 1, done), (after + 2, nxt)]
        assert _stored(world, run_id, after + 2) is None
        # WHEN it reads again once the batch is older than a reader leaves to its writer
        clock.advance(READER_KEEPS_SECONDS)
        events = other.events.list(run_id, after=after)
    # THEN the batch's item is in the table
    assert [(e.position, e.correlation_id) for e in events] == [(after + 1, done), (after + 2, nxt)]
    assert _stored(world, run_id, after + 2) is not None


def test_a_run_ended_in_a_batch_whose_put_failed_gets_its_terminal_event_whole(
    world: AwsWorld, clock: ManualClock
) -> None:
    # GIVEN the owner's last outcome and the run's end, committed, whose batch put failed
    run_id = create_run(world)
    done, after = _lazy_step(world, clock, run_id)
    end = EventRequest(EventType.RUN_COMPLETED, None, RunCompletedData(output=b"result"))
    with event_puts_fail(world), pytest.raises(Transient):
        world.events.append_after(run_id, after, [owned_outcome(done), end], at=clock.now())
    assert world.runs.get(run_id).status is RunStatus.COMPLETED
    # WHEN a late cancel is refused (the run is terminal): the check of the terminal event
    with pytest.raises(WorldAwsError):
        write(world, run_id, EventType.RUN_CANCELLED)
    # THEN the terminal event is in the table with the outcome before it, in one item (not
    # the run event alone from its copy, which would leave the outcome to a noop)
    stored = _stored(world, run_id, after + 2)
    assert stored is not None and items.item_span(stored) == (after + 1, after + 2)
    events = world.events.list(run_id)
    assert [(e.type, e.correlation_id) for e in events[-2:]] == [
        (EventType.STEP_COMPLETED, done),
        (EventType.RUN_COMPLETED, None),
    ]


def test_a_traced_runs_sequential_append_still_fits_the_run_item_in_one_write_unit(
    world: AwsWorld, clock: ManualClock
) -> None:
    # GIVEN a run that carries its trace context (as every run of a traced app does)
    traceparent = "00-" + "a" * 32 + "-" + "b" * 16 + "-01"
    run_id = create_run(world, attributes={"$traceparent": traceparent})
    done, after = _lazy_step(world, clock, run_id)
    # WHEN its owner appends an outcome and the next create
    nxt = new_id("step")
    assert world.events.append_after(run_id, after, [owned_outcome(done), owned_create(nxt)], at=clock.now())
    # THEN the batch is the run item's tail, and the run item stays within 1 KB
    run_item = _run_item(world, run_id)
    assert run_item[TAIL_SLOT]["last"] == after + 2
    assert sizes.item_size(dynamo.to_item(run_item)) <= sizes.WRITE_UNIT_BYTES


def test_a_batch_too_large_for_one_write_unit_is_the_tail_while_the_run_item_stays_within_two(
    world: AwsWorld, clock: ManualClock
) -> None:
    # GIVEN an owned step whose outcome is 700 incompressible bytes (inline: under the S3
    # threshold), so the run item holding the batch as its tail is over 1 KB
    run_id = create_run(world)
    done, after = _lazy_step(world, clock, run_id)
    output = random.Random(3).randbytes(700)
    nxt = new_id("step")
    # WHEN its outcome and the next create are appended
    assert world.events.append_after(
        run_id, after, [owned_outcome(done, output), owned_create(nxt)], at=clock.now()
    )
    # THEN the batch is the tail (an update of 2 units and a plain put, not a transaction
    # of 2 × 2), the run item stays within two write units, and the batch item landed
    run_item = _run_item(world, run_id)
    assert run_item[TAIL_SLOT]["last"] == after + 2
    assert sizes.WRITE_UNIT_BYTES < sizes.item_size(dynamo.to_item(run_item)) <= 2 * sizes.WRITE_UNIT_BYTES
    assert _stored(world, run_id, after + 2) is not None
    # AND the next small append replaces it, bringing the run item back within one unit
    assert world.events.append_after(run_id, after + 2, [owned_outcome(nxt)], at=clock.now())
    assert sizes.item_size(dynamo.to_item(_run_item(world, run_id))) <= sizes.WRITE_UNIT_BYTES
    events = world.events.list(run_id)
    assert [(e.correlation_id, getattr(e.data, "output", None)) for e in events[-3:]] == [
        (done, output),
        (nxt, None),
        (nxt, b"out"),
    ]


def test_a_batch_that_would_take_the_run_item_past_two_write_units_is_a_transaction(
    world: AwsWorld, clock: ManualClock
) -> None:
    # GIVEN an owned step whose outcome is 1.7 KB of incompressible bytes
    run_id = create_run(world)
    done, after = _lazy_step(world, clock, run_id)
    output = random.Random(5).randbytes(1_700)
    # WHEN its outcome is appended
    assert world.events.append_after(run_id, after, [owned_outcome(done, output)], at=clock.now())
    # THEN it is not the run item's tail (the transaction would be cheaper) and reads back whole
    run_item = _run_item(world, run_id)
    assert TAIL_SLOT not in run_item
    assert sizes.item_size(dynamo.to_item(run_item)) <= sizes.WRITE_UNIT_BYTES
    assert world.events.list(run_id)[-1].data.output == output


def test_a_run_created_whose_event_put_fails_is_created_and_read_whole(world: AwsWorld) -> None:
    # GIVEN a run_created whose event put keeps failing after the run item's put (its commit)
    run_id = new_id("wrun")
    made = creation(b"the-input")
    with event_puts_fail(world) as refused, pytest.raises(Transient, match="did not land"):
        world.events.create(run_id, EventRequest(EventType.RUN_CREATED, data=RunCreatedData(creation=made)))
    assert len(refused) == 3 and _stored(world, run_id, 1) is None
    # WHEN the run is read, and listed
    run = world.runs.get(run_id)
    listed = {r.run_id: r.input for r in world.runs.list(limit=50).runs}
    # THEN both have its input, from the run item's tail
    assert (run.status, run.input) == (RunStatus.PENDING, b"the-input")
    assert listed[run_id] == b"the-input"
    # AND a second create of the same run is a Conflict that changes nothing
    again = EventRequest(EventType.RUN_CREATED, data=RunCreatedData(creation=creation(b"x")))
    with pytest.raises(Conflict):
        world.events.create(run_id, again)
    # AND the first message's creating run_started (the resilient start) finds the run
    started = world.events.create(
        run_id, EventRequest(EventType.RUN_STARTED, data=RunStartedData(creation=made))
    )
    assert started.event is not None and started.event.position == 2
    # AND the log reads run_created first, and its item is in the table
    events = world.events.list(run_id)
    assert [(e.position, e.type) for e in events] == [(1, EventType.RUN_CREATED), (2, EventType.RUN_STARTED)]
    assert (
        events[0].data_as(RunCreatedData).creation is not None
        and events[0].data_as(RunCreatedData).creation.input == b"the-input"
    )
    assert _stored(world, run_id, 1) is not None


def test_a_run_created_with_an_input_too_large_for_the_tail_is_one_transaction(world: AwsWorld) -> None:
    # GIVEN an input kept inline in event 1 that the run item could not also hold in one
    # write unit (random: it does not compress)
    run_input = random.Random(7).randbytes(2_000)
    # WHEN the run is created
    run_id = create_run(world, input=run_input, started=False)
    # THEN the run item holds no tail, event 1 is in the table, and the input reads back
    assert TAIL_SLOT not in _run_item(world, run_id)
    assert _stored(world, run_id, 1) is not None
    assert world.runs.get(run_id).input == run_input


def test_a_run_end_whose_event_put_failed_is_put_by_the_next_read(world: AwsWorld) -> None:
    # GIVEN a run_completed written on its own whose reservation landed and whose event
    # put kept failing (nothing written after it: no later position shows a hole)
    run_id = create_run(world)
    end = EventRequest(EventType.RUN_COMPLETED, None, RunCompletedData(output=b"result"))
    with event_puts_fail(world), pytest.raises(WorldAwsError):
        world.events.create(run_id, end)
    assert world.runs.get(run_id).status is RunStatus.COMPLETED
    position = int(_run_item(world, run_id)["seq"])
    assert _stored(world, run_id, position) is None
    # WHEN the log is read (no late transition comes to repair it)
    events = world.events.list(run_id)
    # THEN its end is there, rebuilt from the run item's copy, and its item is in the table
    assert (events[-1].position, events[-1].type) == (position, EventType.RUN_COMPLETED)
    assert events[-1].data.output == b"result"
    assert _stored(world, run_id, position) is not None


def test_a_kept_batch_a_reader_put_meanwhile_is_carried_and_read_once(
    world: AwsWorld, clock: ManualClock
) -> None:
    # GIVEN a small batch appended to flush later and kept at its flush (its body runs)
    run_id, after, done, nxt = _kept_batch(world, clock)
    # AND another process reads the log once the run's progress looks old to it (its clock
    # ahead), so it puts the batch's item
    clock.advance(READER_KEEPS_SECONDS)
    with aws_world_on(world) as other:
        assert [e.correlation_id for e in other.events.list(run_id, after=after)] == [done, nxt]
    assert _stored(world, run_id, after + 2) is not None
    # WHEN the owner, for which the batch is still young, appends after it
    assert world.events.append_after(run_id, after + 2, [owned_outcome(nxt)], at=clock.now())
    # THEN its item repeats the batch the reader put (both are in the table)
    stored = _stored(world, run_id, after + 3)
    assert stored is not None and items.item_span(stored) == (after + 1, after + 3)
    # AND every reader reads each event once
    listed = [(e.position, e.correlation_id) for e in world.events.list(run_id) if e.position > after]
    assert listed == [(after + 1, done), (after + 2, nxt), (after + 3, nxt)]
    assert [e.position for e in world.events.list(run_id, after=after + 1)] == [after + 2, after + 3]
    step = world.steps.get(run_id, nxt)
    assert (step.status, step.attempt, step.output) == (StepStatus.COMPLETED, 1, b"out")
    assert world.steps.get(run_id, done).status is StepStatus.COMPLETED
    assert world.steps.any_pending(run_id) is False


def test_a_kept_batch_older_than_the_carry_limit_is_put_before_the_next_append(
    world: AwsWorld, clock: ManualClock, fake_time: FakeMonotonic
) -> None:
    # GIVEN a small batch kept at its flush, and a body that runs past the carry limit
    run_id, after, done, nxt = _kept_batch(world, clock)
    fake_time.sleep(CARRY_SECONDS)
    # WHEN the owner appends after it
    assert world.events.append_after(run_id, after + 2, [owned_outcome(nxt)], at=clock.now())
    # THEN the kept batch was put whole first (a reader may have put it), and the new one alone
    first, second = _stored(world, run_id, after + 2), _stored(world, run_id, after + 3)
    assert first is not None and items.item_span(first) == (after + 1, after + 2)
    assert second is not None and items.item_span(second) == (after + 3, after + 3)
    assert [e.correlation_id for e in world.events.list(run_id, after=after)] == [done, nxt, nxt]


def test_a_read_with_the_run_counts_a_tail_whose_item_has_not_landed(
    world: AwsWorld, clock: ManualClock
) -> None:
    # GIVEN a batch committed in the run item's tail whose item is not put yet (to flush later)
    run_id, after, done, nxt = _kept_batch(world, clock, flush=False)
    assert _stored(world, run_id, after + 2) is None
    # WHEN the run is read with its log (one read of the run item serves both)
    log = world.events.list_with_run(run_id, after=after)
    # THEN the log holds the batch, from the tail that read saw (who puts its item is the
    # log read's rule, the same as for ``events.list``)
    assert log.events is not None and [e.correlation_id for e in log.events] == [done, nxt]
    assert [e.correlation_id for e in world.events.list(run_id, after=after)] == [done, nxt]
    assert log.run.status is RunStatus.RUNNING


def test_a_run_created_whose_item_never_landed_is_not_carried_and_keeps_the_runs_input(
    world: AwsWorld, clock: ManualClock
) -> None:
    # GIVEN a run whose run_created committed as the run item's tail, its event's put failing
    # (the creator died, or its puts were throttled: start() tolerates the Transient)
    run_id = new_id("wrun")
    with event_puts_fail(world), pytest.raises(WorldAwsError):
        world.events.create(
            run_id, EventRequest(EventType.RUN_CREATED, data=RunCreatedData(creation=creation(b"the-input")))
        )
    assert world.table.get(keys.event_key(run_id, 1)) is None
    # WHEN the first delivery reads the run with its log (a young tail: kept, not put)
    log = world.events.list_with_run(run_id)
    assert log.events is not None and [e.position for e in log.events] == [1]
    # AND appends the run's start with its first inline create after position 1, then the outcome
    step_id = new_id("step")
    start = EventRequest(EventType.RUN_STARTED, data=RunStartedData())
    assert world.events.append_after(run_id, 1, [start, owned_create(step_id)], at=clock.now()) is not None
    # THEN event 1 landed on its own (runs.get and runs.list read the input from it by key)
    assert world.table.get(keys.event_key(run_id, 1)) is not None
    assert world.runs.get(run_id).input == b"the-input"
    world.events.append_after(run_id, 3, [owned_outcome(step_id)], at=clock.now())
    world.events.flush(run_id)
    assert world.runs.get(run_id).input == b"the-input"
    assert {r.run_id: r.input for r in world.runs.list(limit=50).runs}[run_id] == b"the-input"
    assert [e.position for e in world.events.list(run_id)] == [1, 2, 3, 4]


def test_a_read_of_a_run_ended_after_an_unlanded_tail_shows_its_end(
    world: AwsWorld, clock: ManualClock
) -> None:
    # GIVEN a tail append whose batch item does not land, then a cancel whose event does not land
    run_id = create_run(world)
    after = last_position(world, run_id)
    with event_puts_fail(world):
        with pytest.raises(WorldAwsError):
            world.events.append_after(run_id, after, [owned_create(new_id("step"))], at=clock.now())
        cancel = EventRequest(EventType.RUN_CANCELLED, None, RunCancelledData(reason="test"))
        with pytest.raises(WorldAwsError):
            world.events.create(run_id, cancel)
    assert world.runs.get(run_id).status is RunStatus.CANCELLED
    # WHEN the log is read once
    events = world.events.list(run_id)
    # THEN it shows the tail's event and the end, in order, with no gap
    assert [e.type for e in events[-2:]] == [EventType.STEP_CREATED, EventType.RUN_CANCELLED]
    assert [e.position for e in events] == list(range(1, len(events) + 1))
