"""Conformance: the live index of runs to look at (``runs.list_live`` / ``mark_live`` / ``sweep_created``).

What the reconciler relies on: a run is not in the index at its creation; a
sweep reads every run once, in creation order, from a cursor the World keeps,
and marks those still going at their last progress (the time of their last
event); a mark moves only when told, or back to the run's progress when the run
takes a position before it; an ended run leaves the index in the write
that ends it, is never listed and cannot be marked back in. A run shows when the
wait it created last is due (``due_at``), so a lost wake-up is looked for then.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from world_aws.contract.clock import ManualClock
from world_aws.contract.records import EventType, RunStartedData, RunStatus, StepCompletedData
from world_aws.contract.world import World
from world_aws.errors import BadInput, Conflict
from world_aws.testing.conformance.support import (
    create_run,
    create_step,
    create_wait,
    creation,
    end_run,
    new_id,
    start_step,
    write,
)

_LATER = timedelta(days=1)


def _listed(world: World, clock: ManualClock) -> list[str]:
    return [run.run_id for run in world.runs.list_live(marked_before=clock.now() + _LATER, limit=100)]


def test_a_new_run_is_not_in_the_live_index(world: World, clock: ManualClock) -> None:
    create_run(world, started=False)
    clock.advance(60)
    assert _listed(world, clock) == []


def test_a_sweep_marks_a_run_still_going_at_its_creation(world: World, clock: ManualClock) -> None:
    # GIVEN a pending run created now
    created = clock.now()
    run_id = create_run(world, started=False)
    clock.advance(1)
    # WHEN a sweep reads the runs created before now
    sweep = world.runs.sweep_created(created_before=clock.now(), limit=10)
    # THEN it read it and marked it at its last progress, its creation
    (live,) = sweep.enrolled
    assert (sweep.examined, sweep.caught_up) == (1, True)
    assert (live.run_id, live.status, live.mark, live.progress_at) == (
        run_id,
        RunStatus.PENDING,
        created,
        created,
    )
    # AND the index lists it so
    (listed,) = world.runs.list_live(marked_before=clock.now(), limit=10)
    assert listed == live


def test_a_sweep_reads_only_runs_created_before_its_bound(world: World, clock: ManualClock) -> None:
    bound = clock.now()
    create_run(world)  # created at the bound: not before it
    sweep = world.runs.sweep_created(created_before=bound, limit=10)
    assert (sweep.examined, sweep.enrolled, sweep.caught_up) == (0, [], True)
    clock.advance(1)
    assert world.runs.sweep_created(created_before=clock.now(), limit=10).examined == 1


def test_a_sweep_reads_each_run_once(world: World, clock: ManualClock) -> None:
    # GIVEN a run a sweep has read and marked, then moved far ahead
    first = create_run(world)
    clock.advance(1)
    assert world.runs.sweep_created(created_before=clock.now(), limit=10).examined == 1
    ahead = clock.now() + timedelta(hours=5)
    assert world.runs.mark_live(first, mark=ahead) is True
    # AND a second run created after that sweep
    second = create_run(world)
    clock.advance(1)
    # WHEN another sweep runs
    sweep = world.runs.sweep_created(created_before=clock.now(), limit=10)
    # THEN it read only the new run, and the first keeps its mark
    assert (sweep.examined, [run.run_id for run in sweep.enrolled]) == (1, [second])
    marks = {run.run_id: run.mark for run in world.runs.list_live(marked_before=ahead + _LATER, limit=10)}
    assert marks[first] == ahead


def test_a_sweep_leaves_out_runs_that_ended_and_runs_already_marked(world: World, clock: ManualClock) -> None:
    # GIVEN a run that ended, and one marked an hour ahead, both before any sweep
    ended = create_run(world)
    end_run(world, ended, EventType.RUN_COMPLETED)
    marked = create_run(world)
    ahead = clock.now() + timedelta(hours=1)
    assert world.runs.mark_live(marked, mark=ahead) is True
    clock.advance(1)
    # WHEN a sweep reads them
    sweep = world.runs.sweep_created(created_before=clock.now(), limit=10)
    # THEN it marks neither: the ended run never enters the index, the other keeps its mark
    assert (sweep.examined, sweep.enrolled) == (2, [])
    (live,) = world.runs.list_live(marked_before=ahead + timedelta(seconds=1), limit=10)
    assert (live.run_id, live.mark) == (marked, ahead)


def test_a_sweep_cut_short_by_its_limit_goes_on_in_creation_order(world: World, clock: ManualClock) -> None:
    # GIVEN three runs created a second apart
    runs = []
    for _ in range(3):
        runs.append(create_run(world))
        clock.advance(1)
    # WHEN sweeps of at most 2 runs read them
    first = world.runs.sweep_created(created_before=clock.now(), limit=2)
    second = world.runs.sweep_created(created_before=clock.now(), limit=2)
    # THEN the first read the two oldest and is behind, the second the last and caught up
    assert ([r.run_id for r in first.enrolled], first.caught_up) == (runs[:2], False)
    assert ([r.run_id for r in second.enrolled], second.caught_up) == (runs[2:], True)
    assert world.runs.sweep_created(created_before=clock.now(), limit=2).examined == 0


def test_progress_is_the_time_of_the_runs_last_event(world: World, clock: ManualClock) -> None:
    # GIVEN a running run whose last event, a step_started, came 8 s after its start
    run_id = create_run(world)
    clock.advance(5)
    step_id = create_step(world, run_id)
    clock.advance(3)
    last = clock.now()
    start_step(world, run_id, step_id)
    # WHEN a sweep reads it a minute later
    clock.advance(60)
    (live,) = world.runs.sweep_created(created_before=clock.now(), limit=10).enrolled
    # THEN its progress and its mark are that event's time
    assert live.status is RunStatus.RUNNING
    assert live.progress_at == live.mark == last
    # AND after a later event, the index shows the new progress under the old mark
    clock.advance(2)
    write(world, run_id, EventType.STEP_COMPLETED, step_id, data=StepCompletedData(output=b"r"))
    (listed,) = world.runs.list_live(marked_before=clock.now(), limit=10)
    assert (listed.mark, listed.progress_at) == (last, clock.now())


def test_a_live_run_shows_when_the_wait_it_created_last_is_due(world: World, clock: ManualClock) -> None:
    # GIVEN a running run with no wait: the sweep shows no due time
    run_id = create_run(world)
    clock.advance(1)
    (enrolled,) = world.runs.sweep_created(created_before=clock.now(), limit=10).enrolled
    assert enrolled.due_at is None
    # WHEN it creates a wait due in six hours, then one due in an hour
    six_hours, one_hour = clock.now() + timedelta(hours=6), clock.now() + timedelta(hours=1)
    first = create_wait(world, run_id, six_hours)
    create_wait(world, run_id, one_hour)
    # THEN the index shows the last one's due time
    (listed,) = world.runs.list_live(marked_before=clock.now(), limit=10)
    assert listed.due_at == one_hour
    # AND a completion keeps it (the reconciler ignores a due time before the progress)
    clock.advance(60)
    write(world, run_id, EventType.WAIT_COMPLETED, first)
    (listed,) = world.runs.list_live(marked_before=clock.now(), limit=10)
    assert (listed.due_at, listed.progress_at) == (one_hour, clock.now())


def test_a_refused_duplicate_wait_created_does_not_change_the_runs_due_time(
    world: World, clock: ManualClock
) -> None:
    # GIVEN a run that created a wait due in an hour, then one due in six hours
    run_id = create_run(world)
    one_hour, six_hours = clock.now() + timedelta(hours=1), clock.now() + timedelta(hours=6)
    first = create_wait(world, run_id, one_hour)
    create_wait(world, run_id, six_hours)
    # WHEN a stale pass creates the first wait again (refused: it exists)
    clock.advance(1)
    with pytest.raises(Conflict):
        create_wait(world, run_id, one_hour, wait_id=first)
    # THEN the run still shows the due time of the wait it created last
    world.runs.mark_live(run_id, mark=clock.now() - timedelta(hours=1))
    (listed,) = world.runs.list_live(marked_before=clock.now(), limit=10)
    assert listed.due_at == six_hours


def test_a_sweep_shows_the_due_time_of_a_sleeping_run(world: World, clock: ManualClock) -> None:
    run_id = create_run(world)
    due = clock.now() + timedelta(days=3)
    create_wait(world, run_id, due)
    clock.advance(1)
    (enrolled,) = world.runs.sweep_created(created_before=clock.now(), limit=10).enrolled
    assert (enrolled.run_id, enrolled.due_at) == (run_id, due)


def test_marking_a_run_not_in_the_index_enters_it(world: World, clock: ManualClock) -> None:
    run_id = create_run(world)
    mark = clock.now() + timedelta(minutes=5)
    assert world.runs.mark_live(run_id, mark=mark) is True
    (live,) = world.runs.list_live(marked_before=mark + timedelta(seconds=1), limit=10)
    assert (live.run_id, live.mark) == (run_id, mark)


@pytest.mark.parametrize("how", [EventType.RUN_COMPLETED, EventType.RUN_FAILED, EventType.RUN_CANCELLED])
def test_a_run_leaves_the_live_index_when_it_ends(world: World, clock: ManualClock, how: EventType) -> None:
    # GIVEN two runs in the live index, and one of them ends
    staying = create_run(world)
    ending = create_run(world)
    clock.advance(1)
    assert world.runs.sweep_created(created_before=clock.now(), limit=10).examined == 2
    end_run(world, ending, how)
    clock.advance(60)
    # THEN only the first is listed, and the ended one cannot be marked back in
    listed = world.runs.list_live(marked_before=clock.now(), limit=10)
    assert [run.run_id for run in listed] == [staying]
    assert world.runs.mark_live(ending, mark=clock.now() - timedelta(days=1)) is False
    assert [run.run_id for run in world.runs.list_live(marked_before=clock.now(), limit=10)] == [staying]


def test_a_pending_run_cancelled_leaves_the_live_index(world: World, clock: ManualClock) -> None:
    run_id = create_run(world, started=False)
    assert world.runs.mark_live(run_id, mark=clock.now()) is True
    end_run(world, run_id, EventType.RUN_CANCELLED)
    clock.advance(60)
    assert world.runs.list_live(marked_before=clock.now(), limit=10) == []
    assert world.runs.mark_live(run_id, mark=clock.now()) is False


def test_a_run_created_by_its_first_run_started_is_swept(world: World, clock: ManualClock) -> None:
    # GIVEN a run created by a run_started carrying creation data (resilient start, contract §6.1)
    run_id = new_id("wrun")
    write(world, run_id, EventType.RUN_STARTED, data=RunStartedData(creation=creation()))
    clock.advance(60)
    # THEN a sweep reads it, running, and marks it
    (live,) = world.runs.sweep_created(created_before=clock.now(), limit=10).enrolled
    assert (live.run_id, live.status) == (run_id, RunStatus.RUNNING)


def test_live_runs_are_listed_earliest_mark_first_up_to_the_limit(world: World, clock: ManualClock) -> None:
    # GIVEN three runs created a second apart
    runs = []
    for _ in range(3):
        runs.append(create_run(world))
        clock.advance(1)
    clock.advance(60)
    world.runs.sweep_created(created_before=clock.now(), limit=10)
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
    world.runs.sweep_created(created_before=clock.now(), limit=10)
    ahead = clock.now() + timedelta(hours=1)
    assert world.runs.mark_live(older, mark=ahead) is True
    # THEN a listing before now shows only the newer
    listed = world.runs.list_live(marked_before=clock.now(), limit=10)
    assert [run.run_id for run in listed] == [newer]
    # AND past the new mark the older is back, with that mark and its progress unchanged
    later = world.runs.list_live(marked_before=ahead + timedelta(seconds=1), limit=10)
    assert [(run.run_id, run.mark) for run in later][-1] == (older, ahead)
    assert later[-1].progress_at == progress


def test_a_runs_next_event_pulls_back_a_mark_set_past_it(world: World, clock: ManualClock) -> None:
    # GIVEN a live run whose mark was moved five hours ahead (the reconciler woke it while it
    # was silent, and looks again when its next wake is due)
    run_id = create_run(world)
    clock.advance(60)
    world.runs.sweep_created(created_before=clock.now(), limit=10)
    assert world.runs.mark_live(run_id, mark=clock.now() + timedelta(hours=5)) is True
    # WHEN the run takes a position before that mark
    clock.advance(60)
    moved = clock.now()
    create_step(world, run_id)
    # THEN its mark is that event's time: it is looked at T after it, as after any progress
    clock.advance(1)
    (live,) = world.runs.list_live(marked_before=clock.now(), limit=10)
    assert (live.run_id, live.mark, live.progress_at) == (run_id, moved, moved)
    # AND a mark before the run's progress is left where it is
    assert world.runs.mark_live(run_id, mark=moved - timedelta(minutes=1)) is True
    clock.advance(1)
    create_step(world, run_id)
    (live,) = world.runs.list_live(marked_before=clock.now(), limit=10)
    assert live.mark == moved - timedelta(minutes=1)


def test_marking_a_missing_run_is_false(world: World, clock: ManualClock) -> None:
    assert world.runs.mark_live(new_id("wrun"), mark=clock.now()) is False


def test_list_live_limit_below_one_is_bad_input(world: World, clock: ManualClock) -> None:
    with pytest.raises(BadInput):
        world.runs.list_live(marked_before=clock.now(), limit=0)
    with pytest.raises(BadInput):
        world.runs.sweep_created(created_before=clock.now(), limit=0)
