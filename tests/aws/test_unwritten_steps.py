"""The lazily written owned step item (ARCHITECTURE §8): a step appended alone has no item until its outcome.

The run item holds ``own#<step id>`` = its create position meanwhile; the owner's
outcome removes the entry and writes no item (its events are the step's record); any
other write of the step (a takeover, a one-by-one outcome) first materialises the item
from the create event. Readers see the same step in every state.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from world_aws.aws.codec import keys
from world_aws.aws.world import AwsWorld, create_aws_world
from world_aws.aws.write import step_events
from world_aws.contract.clock import ManualClock
from world_aws.contract.records import EventType, StepCompletedData, StepStartedData, StepStatus
from world_aws.testing.conformance.appended import (
    OWNER,
    appended_alone,
    last_position,
    owned_create,
    owned_outcome,
    running_owned,
)
from world_aws.testing.conformance.support import STEP, create_run, new_id, write


def _step_item(world: AwsWorld, run_id: str, step_id: str) -> dict[str, Any] | None:
    return world.table.get(keys.step_key(run_id, step_id))


def _entry(world: AwsWorld, run_id: str, step_id: str) -> object:
    run_item = world.table.get(keys.run_key(run_id))
    assert run_item is not None
    return run_item.get(keys.own_attribute(step_id))


def _twin(world: AwsWorld, clock: ManualClock) -> AwsWorld:
    """Another World over the same table: another process, which never saw the step's create."""
    return create_aws_world(world.config, clients=world.clients, clock=clock)


def test_a_step_appended_alone_has_an_entry_until_its_outcome_and_then_only_its_events(
    world: AwsWorld, clock: ManualClock
) -> None:
    # GIVEN an owned step appended alone
    run_id = create_run(world)
    alone = appended_alone(world, run_id)
    created_at = last_position(world, run_id)
    # THEN it has no item, and the run item names its create position (and that the log
    # holds steps without an item from there on)
    assert _step_item(world, run_id, alone) is None
    assert _entry(world, run_id, alone) == created_at
    assert _run_item(world, run_id)[keys.LOGGED_FROM] == created_at
    # WHEN its outcome is appended alone (the run's last step)
    clock.advance(2)
    assert world.events.append_after(run_id, created_at, [owned_outcome(alone)], at=clock.now())
    # THEN it has neither item nor entry: its two events are its record
    assert _step_item(world, run_id, alone) is None
    assert _entry(world, run_id, alone) is None
    # AND it reads as the same step created with its item and completed would
    step = world.steps.get(run_id, alone)
    reference = world.steps.get(run_id, _reference_step(world, run_id, clock))
    assert (step.status, step.attempt, step.output, step.input, step.step_name) == (
        StepStatus.COMPLETED,
        1,
        b"out",
        b"in",
        STEP,
    )
    assert (step.created_at, step.started_at, step.completed_at) == (
        clock.now() - timedelta(seconds=2),
        clock.now() - timedelta(seconds=2),
        clock.now(),
    )
    same = ("status", "attempt", "output", "input", "error", "step_name", "retry_after")
    assert [getattr(step, name) for name in same] == [getattr(reference, name) for name in same]
    assert [s.step_id for s in world.steps.list(run_id)] == [alone, reference.step_id]


def _run_item(world: AwsWorld, run_id: str) -> dict[str, Any]:
    run_item = world.table.get(keys.run_key(run_id))
    assert run_item is not None
    return run_item


def _reference_step(world: AwsWorld, run_id: str, clock: ManualClock) -> str:
    """An owned step created with its item (one by one) and then completed by its owner."""
    step_id = running_owned(world, run_id)
    after = last_position(world, run_id)
    assert world.events.append_after(run_id, after, [owned_outcome(step_id)], at=clock.now())
    assert _step_item(world, run_id, step_id) is not None
    return step_id


def test_another_process_reads_the_step_and_writes_its_outcome_one_by_one(
    world: AwsWorld, clock: ManualClock
) -> None:
    # GIVEN an owned step appended alone by one World, and another World over the same table
    run_id = create_run(world)
    alone = appended_alone(world, run_id)
    other = _twin(world, clock)
    try:
        # THEN the other reads it as running, from its create
        assert other.steps.get(run_id, alone).status is StepStatus.RUNNING
        assert [s.step_id for s in other.steps.list(run_id)] == [alone]
        # WHEN the other appends its outcome (not knowing it has no item): refused, nothing written
        after = last_position(world, run_id)
        assert other.events.append_after(run_id, after, [owned_outcome(alone)], at=clock.now()) is None
        assert last_position(world, run_id) == after
        # AND it writes the outcome one by one, as the runtime then does
        write(other, run_id, EventType.STEP_COMPLETED, alone, StepCompletedData(output=b"late", owner=OWNER))
    finally:
        other.close()
    # THEN the item was materialised and completed, and the entry is gone
    item = _step_item(world, run_id, alone)
    assert item is not None and item["status"] == "completed"
    assert _entry(world, run_id, alone) is None
    assert world.steps.get(run_id, alone).output == b"late"
    # AND the first World's own outcome of it is now refused whole
    after = last_position(world, run_id)
    assert world.events.append_after(run_id, after, [owned_outcome(alone)], at=clock.now()) is None


def test_a_takeover_materialises_the_item_and_the_owners_outcome_still_lands(
    world: AwsWorld, clock: ManualClock
) -> None:
    # GIVEN an owned step appended alone, taken over by another delivery
    run_id = create_run(world)
    alone = appended_alone(world, run_id)
    taken = write(
        world, run_id, EventType.STEP_STARTED, alone, StepStartedData(step_name=STEP, owner="m-2#1#h")
    )
    assert taken.step is not None and taken.step.attempt == 2
    # THEN it has its item (attempt 2, running) and no entry
    item = _step_item(world, run_id, alone)
    assert item is not None and (item["status"], item["attempt"]) == ("running", 2)
    assert _entry(world, run_id, alone) is None
    # WHEN the outcome is appended with the next create
    after = last_position(world, run_id)
    nxt = new_id("step")
    results = world.events.append_after(
        run_id, after, [owned_outcome(alone), owned_create(nxt)], at=clock.now()
    )
    # THEN it landed on the item, and the next step is the one without an item now
    assert results is not None
    assert world.steps.get(run_id, alone).status is StepStatus.COMPLETED
    assert _step_item(world, run_id, nxt) is None
    assert _entry(world, run_id, nxt) == after + 2


def test_a_small_wave_is_appended_without_items_and_a_wider_one_with_them(
    world: AwsWorld, clock: ManualClock
) -> None:
    # GIVEN a wave of as many owned creates as go without items (a gather's inline branches)
    run_id = create_run(world)
    after = last_position(world, run_id)
    wave = [new_id("step") for _ in range(step_events.LAZY_CREATES)]
    assert world.events.append_after(run_id, after, [owned_create(s) for s in wave], at=clock.now())
    # THEN none has an item; each has its entry at its create position
    assert [_step_item(world, run_id, s) for s in wave] == [None] * len(wave)
    assert [_entry(world, run_id, s) for s in wave] == list(range(after + 1, after + 1 + len(wave)))
    # WHEN the first settles in one append, the others together in the next
    clock.advance(1)
    first, *rest = wave
    for batch in ([owned_outcome(first)], [owned_outcome(s, output=s.encode()) for s in rest]):
        assert world.events.append_after(run_id, last_position(world, run_id), batch, at=clock.now())
        if len(batch) == 1:
            assert [_entry(world, run_id, s) is None for s in wave] == [True] + [False] * len(rest)
    # THEN none has an item or an entry, and each reads completed with its own output
    assert all(_step_item(world, run_id, s) is None and _entry(world, run_id, s) is None for s in wave)
    listed = world.steps.list(run_id)
    assert [(s.step_id, s.status, s.output) for s in listed] == [
        (first, StepStatus.COMPLETED, b"out"),
        *[(s, StepStatus.COMPLETED, s.encode()) for s in rest],
    ]
    # AND a wave one wider writes its items, as before
    wider = [new_id("step") for _ in range(step_events.LAZY_CREATES + 1)]
    after = last_position(world, run_id)
    assert world.events.append_after(run_id, after, [owned_create(s) for s in wider], at=clock.now())
    assert all(_step_item(world, run_id, s) is not None for s in wider)
    assert [_entry(world, run_id, s) for s in wider] == [None] * len(wider)
