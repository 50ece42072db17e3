"""Conformance: live runs by deployment and held runs (``runs.count_live``, ``hold``, ``release``, ...).

What ``world-aws deployments`` and the held runs rely on (README "Deploying
changes"): a deployment's live runs are its runs not yet ended, whether or not the
reconciler's sweep has passed them, held runs aside; only a running run can be
held; a held run is listed until it is released (once) or ends; a release pins it
to the releasing deployment and counts it there; a released mark is cleared by
``unblock``, a held one is not.
"""

from __future__ import annotations

from world_aws.contract.clock import ManualClock
from world_aws.contract.records import Blocked, EventType, RunCreatedData, RunStartedData
from world_aws.contract.world import World
from world_aws.testing.conformance.support import creation, end_run, new_id, write

_OLD, _NEW = "dpl_old", "dpl_new"


def _run(world: World, deployment_id: str, *, started: bool = True) -> str:
    run_id = new_id("wrun")
    made = creation(deployment_id=deployment_id)
    write(world, run_id, EventType.RUN_CREATED, data=RunCreatedData(creation=made))
    if started:
        write(world, run_id, EventType.RUN_STARTED, data=RunStartedData())
    return run_id


def _mark(world: World, clock: ManualClock) -> Blocked:
    return Blocked(
        deployment_id=world.deployment_id(),
        position=3,
        message="at step_1 the log has step 'a' but the code calls step 'b'",
        since=clock.now(),
        at="step_1",
        expected="a",
        actual="b",
    )


def test_count_live_counts_a_deployments_runs_not_yet_ended(world: World, clock: ManualClock) -> None:
    # GIVEN a pending and a running run of one deployment, an ended one, and a run of another
    _run(world, _OLD, started=False)
    _run(world, _OLD)
    end_run(world, _run(world, _OLD), EventType.RUN_CANCELLED)
    _run(world, _NEW)
    # THEN each deployment counts its runs not yet ended
    assert (world.runs.count_live(_OLD), world.runs.count_live(_NEW), world.runs.count_live("x")) == (2, 1, 0)
    # AND the same once the reconciler's sweep has passed them (each counted once)
    clock.advance(1)
    world.runs.sweep_created(created_before=clock.now(), limit=100)
    assert (world.runs.count_live(_OLD), world.runs.count_live(_NEW)) == (2, 1)
    # AND a run that ends after the sweep is no longer counted
    ending = _run(world, _OLD)
    clock.advance(1)
    world.runs.sweep_created(created_before=clock.now(), limit=100)
    end_run(world, ending)
    assert world.runs.count_live(_OLD) == 2


def test_only_a_running_run_is_held(world: World, clock: ManualClock) -> None:
    pending = _run(world, _OLD, started=False)
    ended = _run(world, _OLD)
    end_run(world, ended)
    assert world.runs.hold(pending, _mark(world, clock)) is False
    assert world.runs.hold(ended, _mark(world, clock)) is False
    assert world.runs.hold(new_id("wrun"), _mark(world, clock)) is False
    assert world.runs.list_blocked() == []


def test_a_held_run_shows_its_mark_is_listed_and_leaves_its_deployments_count(
    world: World, clock: ManualClock
) -> None:
    # GIVEN two running runs of one deployment
    held, other = _run(world, _OLD), _run(world, _OLD)
    # WHEN one is held
    mark = _mark(world, clock)
    assert world.runs.hold(held, mark) is True
    # THEN it reads back running and held, with its mark, and is the one listed
    run = world.runs.get(held)
    assert run.held and run.blocked == mark
    assert [r.run_id for r in world.runs.list_blocked()] == [held]
    assert not world.runs.get(other).held
    # AND its deployment counts only the other (it waits for a deploy, not for that code)
    assert world.runs.count_live(_OLD) == 1


def test_a_release_pins_a_held_run_to_the_deployment_once(world: World, clock: ManualClock) -> None:
    # GIVEN a held run of the old deployment
    run_id = _run(world, _OLD)
    world.runs.hold(run_id, _mark(world, clock))
    # WHEN the new deployment releases it
    assert world.runs.release(run_id, deployment_id=_NEW) is True
    # THEN it is pinned there, marked released (not held), counted there, no longer listed
    run = world.runs.get(run_id)
    assert run.deployment_id == _NEW and not run.held
    assert run.blocked is not None and run.blocked.released_to == _NEW
    assert world.runs.list_blocked() == []
    assert (world.runs.count_live(_OLD), world.runs.count_live(_NEW)) == (0, 1)
    # AND a second release (another pass, another deployment) changes nothing
    assert world.runs.release(run_id, deployment_id="dpl_other") is False
    assert world.runs.get(run_id).deployment_id == _NEW


def test_unblock_clears_a_released_mark_but_not_a_held_one(world: World, clock: ManualClock) -> None:
    held, released = _run(world, _OLD), _run(world, _OLD)
    for run_id in (held, released):
        world.runs.hold(run_id, _mark(world, clock))
    world.runs.release(released, deployment_id=_NEW)
    world.runs.unblock(held)
    world.runs.unblock(released)
    world.runs.unblock(new_id("wrun"))  # no such run: nothing
    assert world.runs.get(held).held
    assert world.runs.get(released).blocked is None


def test_a_held_run_that_ends_is_no_longer_listed(world: World, clock: ManualClock) -> None:
    run_id = _run(world, _OLD)
    world.runs.hold(run_id, _mark(world, clock))
    end_run(world, run_id, EventType.RUN_CANCELLED)
    assert world.runs.list_blocked() == []
    assert not world.runs.get(run_id).held
    assert world.runs.count_live(_OLD) == 0
