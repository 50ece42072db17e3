"""Conformance: the log's dense positions and prefix property (contract §3.2), sequentially.

The concurrent versions of these properties are in ``concurrency``.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from world_aws.contract.clock import ManualClock
from world_aws.contract.records import (
    EventType,
    StepCompletedData,
    StepCreatedData,
    StepRetryingData,
    WaitCreatedData,
)
from world_aws.contract.world import World
from world_aws.errors import Conflict, NotFound, RunExpired
from world_aws.testing.conformance.support import (
    create_hook,
    create_run,
    create_step,
    end_run,
    new_id,
    running_step,
    start_step,
    write,
)


def test_positions_are_dense_from_one(world: World) -> None:
    run_id = create_run(world)
    for _ in range(3):
        step_id = running_step(world, run_id)
        write(world, run_id, EventType.STEP_COMPLETED, step_id, StepCompletedData(output=b"x"))
    end_run(world, run_id)
    positions = [event.position for event in world.events.list(run_id)]
    assert positions == list(range(1, 2 + 3 * 3 + 1 + 1))


def test_each_run_has_its_own_positions(world: World) -> None:
    first, second = create_run(world), create_run(world)
    create_step(world, first)
    assert [e.position for e in world.events.list(first)] == [1, 2, 3]
    assert [e.position for e in world.events.list(second)] == [1, 2]
    assert all(e.run_id == second for e in world.events.list(second))


def test_event_records_type_correlation_id_and_commit_time(world: World, clock: ManualClock) -> None:
    run_id = create_run(world)
    clock.advance(7)
    step_id = create_step(world, run_id)
    event = world.events.list(run_id)[-1]
    assert (event.type, event.correlation_id, event.created_at) == (
        EventType.STEP_CREATED,
        step_id,
        clock.now(),
    )
    assert world.events.list(run_id)[0].correlation_id is None


def test_list_after_returns_the_suffix(world: World) -> None:
    run_id = create_run(world)
    for _ in range(3):
        create_step(world, run_id)
    everything = world.events.list(run_id)
    assert world.events.list(run_id, after=2) == everything[2:]
    assert world.events.list(run_id, after=len(everything)) == []
    assert world.events.list(run_id, after=0) == everything


def test_a_later_read_extends_an_earlier_one(world: World) -> None:
    run_id = create_run(world)
    earlier = world.events.list(run_id)
    step_id = running_step(world, run_id)
    later = world.events.list(run_id)
    assert later[: len(earlier)] == earlier
    assert [e.type for e in later[len(earlier) :]] == [EventType.STEP_CREATED, EventType.STEP_STARTED]
    assert world.events.list(run_id, after=len(earlier))[0].correlation_id == step_id


def test_events_of_unknown_run_is_empty(world: World) -> None:
    assert world.events.list(new_id("wrun")) == []


def test_refused_events_add_nothing_to_the_visible_log(world: World, clock: ManualClock) -> None:
    # GIVEN a run with a completed step, a running step, a live hook and a completed wait
    run_id = create_run(world)
    running = running_step(world, run_id)
    done = running_step(world, run_id)
    write(world, run_id, EventType.STEP_COMPLETED, done, StepCompletedData(output=b"x"))
    create_hook(world, run_id, new_id("tok"))
    wait_id = new_id("wait")
    write(world, run_id, EventType.WAIT_CREATED, wait_id, WaitCreatedData(resume_at=clock.now()))
    write(world, run_id, EventType.WAIT_COMPLETED, wait_id)
    before = world.events.list(run_id)
    # WHEN a series of refused events is written
    with pytest.raises(Conflict):
        create_step(world, run_id, step_id=done)
    with pytest.raises(Conflict):
        start_step(world, run_id, done)
    with pytest.raises(NotFound):
        start_step(world, run_id, new_id("step"))
    with pytest.raises(Conflict):
        write(world, run_id, EventType.WAIT_COMPLETED, wait_id)
    end_run(world, run_id)
    ended = world.events.list(run_id)
    with pytest.raises(RunExpired):
        create_step(world, run_id)
    with pytest.raises(RunExpired):
        write(world, run_id, EventType.WAIT_CREATED, new_id("wait"), WaitCreatedData(resume_at=clock.now()))
    # THEN the log grew only by run_completed ...
    assert ended[:-1] == before
    assert world.events.list(run_id) == ended
    # ... positions never repeat or go back (a World that reserves positions may
    # seal a refused writer's position with a noop, which reads leave out) ...
    positions = [e.position for e in ended]
    assert positions == sorted(set(positions))
    assert EventType.NOOP not in [e.type for e in ended]
    # ... and the next accepted write still lands after everything
    write(world, run_id, EventType.STEP_COMPLETED, running, StepCompletedData(output=b"late"))
    assert world.events.list(run_id)[-1].position > ended[-1].position


def test_step_events_carry_their_data_in_the_log(world: World, clock: ManualClock) -> None:
    run_id = create_run(world)
    step_id = running_step(world, run_id, input=b"in")
    retry_at = clock.now() + timedelta(seconds=5)
    write(
        world, run_id, EventType.STEP_RETRYING, step_id, StepRetryingData(error=b"err", retry_after=retry_at)
    )
    clock.advance(5)
    start_step(world, run_id, step_id)
    write(world, run_id, EventType.STEP_COMPLETED, step_id, StepCompletedData(output=b"out"))
    events = world.events.list(run_id)[2:]
    assert [e.type for e in events] == [
        EventType.STEP_CREATED,
        EventType.STEP_STARTED,
        EventType.STEP_RETRYING,
        EventType.STEP_STARTED,
        EventType.STEP_COMPLETED,
    ]
    assert events[0].data_as(StepCreatedData).input == b"in"
    retrying = events[2].data_as(StepRetryingData)
    assert (retrying.error, retrying.retry_after) == (b"err", retry_at)
    assert events[4].data_as(StepCompletedData).output == b"out"
