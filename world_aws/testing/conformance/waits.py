"""Conformance: waits (contract §2.4): created once, completed once."""

from __future__ import annotations

from datetime import timedelta

import pytest

from world_aws.contract.clock import ManualClock
from world_aws.contract.records import EventType, WaitStatus
from world_aws.contract.world import World
from world_aws.errors import BadInput, Conflict, NotFound
from world_aws.testing.conformance.support import create_run, create_wait, new_id, types_of, write


def test_wait_created_makes_a_waiting_wait(world: World, clock: ManualClock) -> None:
    run_id = create_run(world)
    resume_at = clock.now() + timedelta(hours=2)
    wait_id = create_wait(world, run_id, resume_at)
    wait = world.waits.get(run_id, wait_id)
    assert (wait.status, wait.resume_at, wait.created_at, wait.completed_at) == (
        WaitStatus.WAITING,
        resume_at,
        clock.now(),
        None,
    )


def test_wait_created_without_resume_at_is_bad_input(world: World) -> None:
    run_id = create_run(world)
    with pytest.raises(BadInput):
        write(world, run_id, EventType.WAIT_CREATED, new_id("wait"))


def test_duplicate_wait_created_is_conflict(world: World, clock: ManualClock) -> None:
    run_id = create_run(world)
    first_at = clock.now() + timedelta(seconds=10)
    wait_id = create_wait(world, run_id, first_at)
    with pytest.raises(Conflict):
        create_wait(world, run_id, first_at + timedelta(seconds=10), wait_id=wait_id)
    assert world.waits.get(run_id, wait_id).resume_at == first_at
    assert types_of(world, run_id).count(EventType.WAIT_CREATED) == 1


def test_wait_completed_completes_the_wait(world: World, clock: ManualClock) -> None:
    run_id = create_run(world)
    wait_id = create_wait(world, run_id, clock.now() + timedelta(seconds=10))
    clock.advance(10)
    result = write(world, run_id, EventType.WAIT_COMPLETED, wait_id)
    wait = world.waits.get(run_id, wait_id)
    assert (wait.status, wait.completed_at) == (WaitStatus.COMPLETED, clock.now())
    assert result.wait == wait


def test_wait_completed_twice_is_conflict(world: World, clock: ManualClock) -> None:
    # GIVEN a completed wait
    run_id = create_run(world)
    wait_id = create_wait(world, run_id, clock.now())
    write(world, run_id, EventType.WAIT_COMPLETED, wait_id)
    # WHEN a second replay completes it again THEN Conflict, one wait_completed in the log
    with pytest.raises(Conflict):
        write(world, run_id, EventType.WAIT_COMPLETED, wait_id)
    assert types_of(world, run_id).count(EventType.WAIT_COMPLETED) == 1


def test_wait_completed_of_missing_wait_is_not_found(world: World) -> None:
    run_id = create_run(world)
    with pytest.raises(NotFound):
        write(world, run_id, EventType.WAIT_COMPLETED, new_id("wait"))


def test_waits_get_and_list(world: World, clock: ManualClock) -> None:
    run_id = create_run(world)
    wait_ids = {create_wait(world, run_id, clock.now() + timedelta(seconds=s)) for s in (1, 2)}
    assert {wait.wait_id for wait in world.waits.list(run_id)} == wait_ids
    assert world.waits.list(new_id("wrun")) == []
    with pytest.raises(NotFound):
        world.waits.get(run_id, new_id("wait"))
