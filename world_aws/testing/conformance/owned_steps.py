"""Conformance: owned (inline) steps, whose ``step_created`` names the delivery that runs them.

An owned create also starts the step (running, attempt 1, ``started_at`` = created);
such a step never counts for the last-completer check; a ``step_started`` naming an
owner re-claims it (a new attempt) and the owner is kept in the log for replay.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from world_aws.contract.clock import ManualClock
from world_aws.contract.records import (
    EventType,
    StepCompletedData,
    StepCreatedData,
    StepRetryingData,
    StepStartedData,
    StepStatus,
    owner_of,
)
from world_aws.contract.world import World
from world_aws.errors import BadInput, Conflict, RunExpired
from world_aws.testing.conformance.support import (
    STEP,
    create_run,
    create_step,
    end_run,
    new_id,
    write,
    xfail_on_aws,
)

OWNER = "msg-1#1"


def create_owned(world: World, run_id: str, owner: str = OWNER) -> str:
    step_id = new_id("step")
    write(
        world,
        run_id,
        EventType.STEP_CREATED,
        step_id,
        StepCreatedData(step_name=STEP, input=b"in", owner=owner),
    )
    return step_id


def test_owned_step_created_is_running_at_attempt_one(world: World, clock: ManualClock) -> None:
    run_id = create_run(world)
    step_id = create_owned(world, run_id)
    step = world.steps.get(run_id, step_id)
    assert (step.status, step.attempt, step.input) == (StepStatus.RUNNING, 1, b"in")
    assert step.started_at == step.created_at == clock.now()
    assert owner_of(world.events.list(run_id)[-1].data) == OWNER


def test_owned_step_does_not_count_as_pending_for_the_last_completer(world: World) -> None:
    run_id = create_run(world)
    dispatched = create_step(world, run_id)
    create_owned(world, run_id)
    assert world.steps.any_pending(run_id, besides=dispatched) is False
    assert world.steps.any_pending(run_id) is True


def test_owned_step_handed_to_its_retry_message_counts_as_pending_until_its_outcome(world: World) -> None:
    # GIVEN a dispatched step, and an inline step whose attempt failed: handed to a retry message
    run_id = create_run(world)
    dispatched = create_step(world, run_id)
    step_id = create_owned(world, run_id)
    write(world, run_id, EventType.STEP_RETRYING, step_id, StepRetryingData(error=b"boom", owner=OWNER))
    # THEN the dispatched step's last-completer check waits for it (its owner will not continue)
    assert world.steps.any_pending(run_id, besides=dispatched) is True
    # WHEN the retry message's consumer starts it and records its outcome
    write(world, run_id, EventType.STEP_STARTED, step_id, StepStartedData(step_name=STEP))
    assert world.steps.any_pending(run_id, besides=dispatched) is True
    write(world, run_id, EventType.STEP_COMPLETED, step_id, StepCompletedData(output=b"out"))
    # THEN it no longer does
    assert world.steps.any_pending(run_id, besides=dispatched) is False


def test_owned_step_completes_with_its_owner_named_and_its_result_kept(world: World) -> None:
    run_id = create_run(world)
    step_id = create_owned(world, run_id)
    write(world, run_id, EventType.STEP_COMPLETED, step_id, StepCompletedData(output=b"out", owner=OWNER))
    step = world.steps.get(run_id, step_id)
    assert (step.status, step.output) == (StepStatus.COMPLETED, b"out")
    assert world.steps.any_pending(run_id) is False


def test_step_started_naming_an_owner_reclaims_an_owned_step_as_a_new_attempt(world: World) -> None:
    run_id = create_run(world)
    step_id = create_owned(world, run_id)
    data = StepStartedData(step_name=STEP, owner="msg-1#2")
    result = write(world, run_id, EventType.STEP_STARTED, step_id, data)
    assert result.step is not None and (result.step.status, result.step.attempt) == (StepStatus.RUNNING, 2)
    assert [owner_of(e.data) for e in world.events.list(run_id)[-2:]] == [OWNER, "msg-1#2"]


def test_a_takeover_is_refused_once_the_step_left_the_attempt_it_names(world: World) -> None:
    # GIVEN an owned step taken over from its gone owner (attempt 1 -> 2)
    run_id = create_run(world)
    step_id = create_owned(world, run_id)
    taken = StepStartedData(step_name=STEP, owner="msg-1#2#a", takes_over=1)
    result = write(world, run_id, EventType.STEP_STARTED, step_id, taken)
    assert result.step is not None and result.step.attempt == 2
    # WHEN a second taker, which saw it at attempt 1 too, writes its takeover
    # THEN it is refused and the step stays the first taker's attempt
    with pytest.raises(Conflict):
        write(world, run_id, EventType.STEP_STARTED, step_id, replace(taken, owner="msg-1#2#b"))
    # AND so is one of a step no longer running at that attempt (handed to its retry message)
    write(world, run_id, EventType.STEP_RETRYING, step_id, StepRetryingData(error=b"x", owner="msg-1#2#a"))
    with pytest.raises(Conflict):
        write(world, run_id, EventType.STEP_STARTED, step_id, replace(taken, takes_over=2))
    step = world.steps.get(run_id, step_id)
    assert (step.status, step.attempt) == (StepStatus.PENDING, 2)
    starts = [e for e in world.events.list(run_id) if e.type is EventType.STEP_STARTED]
    assert [(owner_of(e.data), e.data_as(StepStartedData).takes_over) for e in starts] == [("msg-1#2#a", 1)]


def test_owned_step_created_on_a_terminal_run_is_refused(world: World) -> None:
    run_id = create_run(world)
    end_run(world, run_id)
    with pytest.raises(RunExpired):
        create_owned(world, run_id)


def test_duplicate_owned_step_created_is_conflict_and_keeps_the_first_owner(world: World) -> None:
    run_id = create_run(world)
    step_id = create_owned(world, run_id)
    data = StepCreatedData(step_name=STEP, input=b"in", owner="msg-2#1")
    with pytest.raises(Conflict):
        write(world, run_id, EventType.STEP_CREATED, step_id, data)
    owners = [owner_of(e.data) for e in world.events.list(run_id) if e.type is EventType.STEP_CREATED]
    assert owners == [OWNER]


def test_owner_on_a_non_step_event_is_bad_input(world: World) -> None:
    # A wait's record has no owner: a step's record with one, given as a wait's, is refused.
    run_id = create_run(world)
    with pytest.raises(
        BadInput, match=r"wait_created takes WaitCreatedData\(resume_at\), not StepStartedData"
    ):
        write(world, run_id, EventType.WAIT_CREATED, new_id("wait"), StepStartedData(owner=OWNER))
    assert [e.type for e in world.events.list(run_id)][-1] is EventType.RUN_STARTED


@pytest.mark.parametrize("handed", ["owned-retried", "dispatched"])
def test_a_step_with_a_message_settled_by_an_inline_owner_no_longer_counts_as_pending(
    world: World, request: pytest.FixtureRequest, handed: str
) -> None:
    xfail_on_aws(
        request,
        "the DynamoDB World deletes a step's pend# marker only in an outcome without an "
        "owner (it writes outcomes without reading the step); deleting it in every owned "
        "outcome would add a Delete to each inline outcome's transaction",
    )
    # GIVEN a dispatched step, and a step that counts as pending for the last completer: an
    # inline step handed to its retry message, or a dispatched one
    run_id = create_run(world)
    other = create_step(world, run_id)
    if handed == "owned-retried":
        step_id = create_owned(world, run_id)
        write(world, run_id, EventType.STEP_RETRYING, step_id, StepRetryingData(error=b"boom", owner=OWNER))
    else:
        step_id = create_step(world, run_id)
    assert world.steps.any_pending(run_id, besides=other) is True
    # WHEN a later delivery claims it inline (a start naming its owner) and records its
    # outcome naming that owner
    data = StepStartedData(step_name=STEP, owner="msg-2#1")
    write(world, run_id, EventType.STEP_STARTED, step_id, data)
    write(world, run_id, EventType.STEP_COMPLETED, step_id, StepCompletedData(output=b"out", owner="msg-2#1"))
    # THEN it has its outcome, and the last-completer check no longer waits for it
    assert world.steps.get(run_id, step_id).status is StepStatus.COMPLETED
    assert world.steps.any_pending(run_id, besides=other) is False
