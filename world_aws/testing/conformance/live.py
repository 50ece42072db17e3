"""Conformance: the live index of non-terminal runs (``runs.list_live`` / ``runs.mark_live``).

What the reconciler relies on: every run is listed from its creation until it
ends, by a mark that starts at its creation time and moves only when told; a
run's progress is the time of its last event; an ended run is never listed and
cannot be marked again.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from world_aws.contract.clock import ManualClock
from world_aws.contract.records import EventData, EventType, RunStatus
from world_aws.contract.world import World
from world_aws.errors import BadInput
from world_aws.testing.conformance.support import (
    create_run,
    create_step,
    creation,
    end_run,
    new_id,
    start_step,
    write,
)


def test_a_new_run_is_live_marked_at_its_creation(world: World, clock: ManualClock) -> None:
    # GIVEN a pending run created now
    created = clock.now()
    run_id = create_run(world, started=False)
    # WHEN the live runs marked before a later moment are listed
    clock.advance(1)
    (live,) = world.runs.list_live(marked_before=clock.now(), limit=10)
    # THEN it is there, marked and last progressing at its creation
    assert (live.run_id, live.status, live.mark, live.progress_at) == (
        run_id,
        RunStatus.PENDING,
        created,
        created,
    )


def test_a_run_is_not_listed_until_its_mark_is_before_the_bound(world: World, clock: ManualClock) -> None:
    created = clock.now()
    create_run(world)
    # A mark equal to the bound is not before it.
    assert world.runs.list_live(marked_before=created, limit=10) == []


def test_progress_is_the_time_of_the_runs_last_event(world: World, clock: ManualClock) -> None:
    # GIVEN a running run whose last event, a step_started, came 8 s after its start
    run_id = create_run(world)
    clock.advance(5)
    step_id = create_step(world, run_id)
    clock.advance(3)
    last = clock.now()
    start_step(world, run_id, step_id)
    # WHEN listed a minute later
    clock.advance(60)
    (live,) = world.runs.list_live(marked_before=clock.now(), limit=10)
    # THEN its progress is that event's time, and its mark still its creation
    assert live.status is RunStatus.RUNNING
    assert live.progress_at == last
    assert live.mark == last - timedelta(seconds=8)


@pytest.mark.parametrize("how", [EventType.RUN_COMPLETED, EventType.RUN_FAILED, EventType.RUN_CANCELLED])
def test_a_run_leaves_the_live_index_when_it_ends(world: World, clock: ManualClock, how: EventType) -> None:
    # GIVEN a live run, and another that ends
    staying = create_run(world)
    ending = create_run(world)
    end_run(world, ending, how)
    clock.advance(60)
    # THEN only the first is listed, and the ended one cannot be marked back in
    listed = world.runs.list_live(marked_before=clock.now(), limit=10)
    assert [run.run_id for run in listed] == [staying]
    assert world.runs.mark_live(ending, mark=clock.now() - timedelta(days=1)) is False
    assert [run.run_id for run in world.runs.list_live(marked_before=clock.now(), limit=10)] == [staying]


def test_a_pending_run_cancelled_leaves_the_live_index(world: World, clock: ManualClock) -> None:
    run_id = create_run(world, started=False)
    end_run(world, run_id, EventType.RUN_CANCELLED)
    clock.advance(60)
    assert world.runs.list_live(marked_before=clock.now(), limit=10) == []


def test_a_run_created_by_its_first_run_started_is_live(world: World, clock: ManualClock) -> None:
    # GIVEN a run created by a run_started carrying creation data (resilient start, SPEC §6.1)
    run_id = new_id("wrun")
    write(world, run_id, EventType.RUN_STARTED, data=EventData(creation=creation()))
    clock.advance(60)
    # THEN it is live and running
    (live,) = world.runs.list_live(marked_before=clock.now(), limit=10)
    assert (live.run_id, live.status) == (run_id, RunStatus.RUNNING)


def test_live_runs_are_listed_earliest_mark_first_up_to_the_limit(world: World, clock: ManualClock) -> None:
    # GIVEN three runs created a second apart
    runs = []
    for _ in range(3):
        runs.append(create_run(world))
        clock.advance(1)
    clock.advance(60)
    # THEN a limit of 2 gives the two oldest, in creation order
    listed = world.runs.list_live(marked_before=clock.now(), limit=2)
    assert [run.run_id for run in listed] == runs[:2]


def test_marking_a_run_moves_it_past_the_bound_and_keeps_its_progress(
    world: World, clock: ManualClock
) -> None:
    # GIVEN two live runs, the older marked an hour ahead
    older = create_run(world)
    progress = clock.now()
    clock.advance(1)
    newer = create_run(world)
    clock.advance(60)
    ahead = clock.now() + timedelta(hours=1)
    assert world.runs.mark_live(older, mark=ahead) is True
    # THEN a listing before now shows only the newer
    listed = world.runs.list_live(marked_before=clock.now(), limit=10)
    assert [run.run_id for run in listed] == [newer]
    # AND past the new mark the older is back, with that mark and its progress unchanged
    later = world.runs.list_live(marked_before=ahead + timedelta(seconds=1), limit=10)
    assert [(run.run_id, run.mark) for run in later][-1] == (older, ahead)
    assert later[-1].progress_at == progress


def test_marking_a_missing_run_is_false(world: World, clock: ManualClock) -> None:
    assert world.runs.mark_live(new_id("wrun"), mark=clock.now()) is False


def test_list_live_limit_below_one_is_bad_input(world: World, clock: ManualClock) -> None:
    with pytest.raises(BadInput):
        world.runs.list_live(marked_before=clock.now(), limit=0)
