"""Conformance: patch markers (``patch_applied``): the log alone, fenced, read back as written.

A ``patch_applied`` records that a run took the patched branch of a change
(``world_aws.patched``). It has no entity: every World appends it at the next
position while the run is live, refuses it on a missing or ended run, accepts a
second marker of the same change (two handlers may race to record one decision),
and gives its change id back on every read, with or without payloads.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from world_aws.contract.clock import ManualClock
from world_aws.contract.records import (
    EventRequest,
    EventResult,
    EventType,
    PatchAppliedData,
    ResolveData,
    StepStatus,
    patch_correlation_id,
)
from world_aws.contract.world import World
from world_aws.errors import BadInput, NotFound, RunExpired
from world_aws.testing.conformance.appended import last_position, owned_create, owned_outcome, running_owned
from world_aws.testing.conformance.support import create_run, create_wait, end_run, new_id, types_of, write


def _mark(world: World, run_id: str, change_id: str, cid: str | None = None) -> EventResult:
    data = PatchAppliedData(change_id=change_id)
    return write(world, run_id, EventType.PATCH_APPLIED, cid or patch_correlation_id(change_id), data)


def test_patch_applied_appends_the_change_to_the_log(world: World) -> None:
    # GIVEN a running run WHEN a patch decision is recorded
    run_id = create_run(world)
    before = len(world.events.list(run_id))
    _mark(world, run_id, "charge-v2")
    # THEN it is the next event, with its change id, read with and without payloads
    for resolve in ResolveData:
        last = world.events.list(run_id, resolve_data=resolve)[-1]
        assert (last.position, last.type, last.correlation_id) == (
            before + 1,
            EventType.PATCH_APPLIED,
            "patch:charge-v2",
        )
        assert last.data == PatchAppliedData(change_id="charge-v2")


def test_patch_applied_changes_no_entity_and_leaves_the_run_running(world: World) -> None:
    run_id = create_run(world)
    run = world.runs.get(run_id)
    _mark(world, run_id, "c1")
    after = world.runs.get(run_id)
    assert (after.status, after.output, after.error) == (run.status, run.output, run.error)
    assert world.steps.list(run_id) == [] and world.waits.list(run_id) == []


def test_patch_applied_twice_is_accepted_and_logged_twice(world: World) -> None:
    # Two handlers may record the same decision: both land, the replay reads a set
    run_id = create_run(world)
    _mark(world, run_id, "c1")
    _mark(world, run_id, "c1")
    assert types_of(world, run_id).count(EventType.PATCH_APPLIED) == 2


def test_patch_applied_on_missing_run_is_not_found(world: World) -> None:
    with pytest.raises(NotFound):
        _mark(world, new_id("wrun"), "c1")


def test_patch_applied_on_ended_run_is_gone(world: World) -> None:
    run_id = create_run(world)
    end_run(world, run_id)
    length = len(world.events.list(run_id))
    with pytest.raises(RunExpired):
        _mark(world, run_id, "c1")
    assert len(world.events.list(run_id)) == length


def test_patch_applied_names_its_change_in_its_correlation_id(world: World) -> None:
    run_id = create_run(world)
    with pytest.raises(BadInput, match="takes correlation id 'patch:c1'"):
        _mark(world, run_id, "c1", cid="patch:c2")
    with pytest.raises(BadInput, match="change id"):
        _mark(world, run_id, "has space")


def test_patch_applied_keeps_its_place_among_other_events(world: World, clock: ManualClock) -> None:
    # GIVEN a wait created, then a marker, then another wait: positions stay dense and in order
    run_id = create_run(world)
    create_wait(world, run_id, clock.now() + timedelta(hours=1))
    _mark(world, run_id, "c1")
    create_wait(world, run_id, clock.now() + timedelta(hours=2))
    events = world.events.list(run_id)
    assert [e.position for e in events] == list(range(1, len(events) + 1))
    assert [e.type for e in events][-3:] == [
        EventType.WAIT_CREATED,
        EventType.PATCH_APPLIED,
        EventType.WAIT_CREATED,
    ]


def test_a_patch_marker_lands_in_an_append_between_an_outcome_and_the_next_create(
    world: World, clock: ManualClock
) -> None:
    # GIVEN a run whose log ends with an owned step running
    run_id = create_run(world)
    done = running_owned(world, run_id)
    after = last_position(world, run_id)
    nxt = new_id("step")
    marker = EventRequest(
        EventType.PATCH_APPLIED, patch_correlation_id("c1"), PatchAppliedData(change_id="c1")
    )
    # WHEN its outcome, a patch marker and the next owned create are appended in one write
    results = world.events.append_after(
        run_id, after, [owned_outcome(done), marker, owned_create(nxt)], at=clock.now()
    )
    # THEN all three land in order, the marker changing no step, the next step running
    assert results is not None
    assert [r.event.type for r in results if r.event] == [
        EventType.STEP_COMPLETED,
        EventType.PATCH_APPLIED,
        EventType.STEP_CREATED,
    ]
    listed = world.events.list(run_id, after=after)
    assert [(e.position, e.type) for e in listed] == [
        (after + 1, EventType.STEP_COMPLETED),
        (after + 2, EventType.PATCH_APPLIED),
        (after + 3, EventType.STEP_CREATED),
    ]
    assert listed[1].data == PatchAppliedData(change_id="c1")
    assert world.steps.get(run_id, nxt).status is StepStatus.RUNNING
    assert {s.step_id for s in world.steps.list(run_id)} == {done, nxt}


def test_an_append_with_a_patch_marker_on_an_ended_run_writes_nothing(
    world: World, clock: ManualClock
) -> None:
    run_id = create_run(world)
    done = running_owned(world, run_id)
    end_run(world, run_id)
    after = last_position(world, run_id)
    marker = EventRequest(
        EventType.PATCH_APPLIED, patch_correlation_id("c1"), PatchAppliedData(change_id="c1")
    )
    assert world.events.append_after(run_id, after, [owned_outcome(done), marker], at=clock.now()) is None
    assert last_position(world, run_id) == after
