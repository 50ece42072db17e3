"""Conformance: the step state machine (contract §2.2), its rejections (contract §3) and step reads."""

from __future__ import annotations

from datetime import timedelta

import pytest

from world_aws.contract.clock import ManualClock
from world_aws.contract.records import (
    EventType,
    StepCompletedData,
    StepCreatedData,
    StepFailedData,
    StepRetryingData,
    StepStartedData,
    StepStatus,
)
from world_aws.contract.world import World
from world_aws.errors import BadInput, Conflict, NotFound, RunExpired, TooEarly
from world_aws.testing.conformance.support import (
    STEP,
    create_run,
    create_step,
    end_run,
    new_id,
    running_step,
    start_step,
    types_of,
    write,
)


def test_step_created_makes_a_pending_step(world: World, clock: ManualClock) -> None:
    run_id = create_run(world)
    step_id = new_id("step")
    result = write(
        world, run_id, EventType.STEP_CREATED, step_id, StepCreatedData(step_name=STEP, input=b"in")
    )
    step = world.steps.get(run_id, step_id)
    assert (step.status, step.attempt, step.input, step.step_name) == (StepStatus.PENDING, 0, b"in", STEP)
    assert step.created_at == clock.now() and step.started_at is None
    assert result.step == step
    assert result.event is not None and result.event.correlation_id == step_id


def test_duplicate_step_created_is_conflict(world: World) -> None:
    run_id = create_run(world)
    step_id = create_step(world, run_id, input=b"first")
    with pytest.raises(Conflict):
        create_step(world, run_id, input=b"second", step_id=step_id)
    assert world.steps.get(run_id, step_id).input == b"first"
    assert types_of(world, run_id).count(EventType.STEP_CREATED) == 1


def test_step_created_on_missing_run_is_not_found(world: World) -> None:
    with pytest.raises(NotFound):
        create_step(world, new_id("wrun"))


def test_step_created_without_input_is_bad_input(world: World) -> None:
    run_id = create_run(world)
    with pytest.raises(BadInput):
        write(
            world, run_id, EventType.STEP_CREATED, new_id("step"), StepCreatedData(step_name=STEP, input=None)
        )


def test_step_created_via_step_dispatch_keeps_the_flag_in_the_log(world: World) -> None:
    run_id = create_run(world)
    step_id = new_id("step")
    data = StepCreatedData(step_name=STEP, input=b"x", via_step_dispatch=True)
    write(world, run_id, EventType.STEP_CREATED, step_id, data)
    assert world.events.list(run_id)[-1].data_as(StepCreatedData).via_step_dispatch is True


def test_step_started_runs_the_step_and_counts_the_attempt(world: World, clock: ManualClock) -> None:
    run_id = create_run(world)
    step_id = create_step(world, run_id)
    clock.advance(2)
    result = start_step(world, run_id, step_id)
    step = world.steps.get(run_id, step_id)
    assert (step.status, step.attempt, step.started_at) == (StepStatus.RUNNING, 1, clock.now())
    assert result.step == step


def test_step_started_again_while_running_adds_an_attempt_and_keeps_first_start(
    world: World, clock: ManualClock
) -> None:
    # GIVEN a running step (its executor crashed)
    run_id = create_run(world)
    step_id = running_step(world, run_id)
    first_start = world.steps.get(run_id, step_id).started_at
    clock.advance(60)
    # WHEN a redelivery starts it again
    start_step(world, run_id, step_id)
    # THEN attempt 2, still running, started_at from the first start
    step = world.steps.get(run_id, step_id)
    assert (step.status, step.attempt, step.started_at) == (StepStatus.RUNNING, 2, first_start)


def test_step_started_naming_another_step_is_conflict_and_changes_nothing(
    world: World, clock: ManualClock
) -> None:
    # GIVEN a pending step, a running one and one backing off until 30 s from now
    run_id = create_run(world)
    pending = create_step(world, run_id)
    running = running_step(world, run_id)
    backing_off = running_step(world, run_id)
    retry_at = clock.now() + timedelta(seconds=30)
    write(
        world,
        run_id,
        EventType.STEP_RETRYING,
        backing_off,
        StepRetryingData(error=b"e", retry_after=retry_at),
    )
    length = len(world.events.list(run_id))
    # WHEN a stale start names another step under each id (a corrected replay reused it)
    for step_id in (pending, running, backing_off):
        # THEN Conflict (not TooEarly: it is not this step's start at all)
        with pytest.raises(Conflict):
            write(world, run_id, EventType.STEP_STARTED, step_id, StepStartedData(step_name="step_other"))
    # AND no step moved, no attempt was counted, nothing was logged
    observed = {s.step_id: (s.status, s.attempt, s.step_name) for s in world.steps.list(run_id)}
    assert observed == {
        pending: (StepStatus.PENDING, 0, STEP),
        running: (StepStatus.RUNNING, 1, STEP),
        backing_off: (StepStatus.PENDING, 1, STEP),
    }
    assert len(world.events.list(run_id)) == length
    # AND a start naming the step itself is still accepted
    assert start_step(world, run_id, pending).step is not None
    assert world.steps.get(run_id, pending).attempt == 1


def test_step_started_naming_another_step_on_terminal_run_is_gone(world: World) -> None:
    # The fence comes first: on a finished run every start is RunExpired, whatever it names.
    run_id = create_run(world)
    step_id = create_step(world, run_id)
    end_run(world, run_id)
    with pytest.raises(RunExpired):
        write(world, run_id, EventType.STEP_STARTED, step_id, StepStartedData(step_name="step_other"))


def test_step_event_on_missing_step_is_not_found(world: World) -> None:
    run_id = create_run(world)
    with pytest.raises(NotFound):
        start_step(world, run_id, new_id("step"))
    for etype, data in (
        (EventType.STEP_COMPLETED, StepCompletedData(output=b"x")),
        (EventType.STEP_FAILED, StepFailedData(error=b"x")),
        (EventType.STEP_RETRYING, StepRetryingData(error=b"x")),
    ):
        with pytest.raises(NotFound):
            write(world, run_id, etype, new_id("step"), data)


def test_step_retrying_returns_running_step_to_pending_with_error_and_retry_after(
    world: World, clock: ManualClock
) -> None:
    run_id = create_run(world)
    step_id = running_step(world, run_id)
    retry_at = clock.now() + timedelta(seconds=30)
    write(
        world, run_id, EventType.STEP_RETRYING, step_id, StepRetryingData(error=b"oops", retry_after=retry_at)
    )
    step = world.steps.get(run_id, step_id)
    assert (step.status, step.error, step.retry_after, step.attempt) == (
        StepStatus.PENDING,
        b"oops",
        retry_at,
        1,
    )


def test_step_retrying_of_pending_step_is_conflict(world: World) -> None:
    run_id = create_run(world)
    step_id = create_step(world, run_id)
    with pytest.raises(Conflict):
        write(world, run_id, EventType.STEP_RETRYING, step_id, StepRetryingData(error=b"x"))


def test_step_started_before_retry_after_is_too_early_with_seconds_left(
    world: World, clock: ManualClock
) -> None:
    # GIVEN a step retrying no earlier than 30 s from now
    run_id = create_run(world)
    step_id = running_step(world, run_id)
    retry_at = clock.now() + timedelta(seconds=30)
    write(world, run_id, EventType.STEP_RETRYING, step_id, StepRetryingData(error=b"e", retry_after=retry_at))
    clock.advance(10)
    # WHEN it is started 10 s later
    with pytest.raises(TooEarly) as caught:
        start_step(world, run_id, step_id)
    # THEN TooEarly carries the ~20 s left, and the step is untouched
    assert caught.value.retry_after == pytest.approx(20, abs=1)
    assert world.steps.get(run_id, step_id).status is StepStatus.PENDING
    assert types_of(world, run_id)[-1] is EventType.STEP_RETRYING


def test_step_started_at_retry_after_is_accepted_and_clears_it(world: World, clock: ManualClock) -> None:
    run_id = create_run(world)
    step_id = running_step(world, run_id)
    retry_at = clock.now() + timedelta(seconds=30)
    write(world, run_id, EventType.STEP_RETRYING, step_id, StepRetryingData(error=b"e", retry_after=retry_at))
    clock.advance(30)
    start_step(world, run_id, step_id)
    step = world.steps.get(run_id, step_id)
    assert (step.status, step.attempt, step.retry_after) == (StepStatus.RUNNING, 2, None)


def test_step_completed_records_the_result(world: World, clock: ManualClock) -> None:
    run_id = create_run(world)
    step_id = running_step(world, run_id)
    result = write(world, run_id, EventType.STEP_COMPLETED, step_id, StepCompletedData(output=b"result"))
    step = world.steps.get(run_id, step_id)
    assert (step.status, step.output, step.completed_at) == (StepStatus.COMPLETED, b"result", clock.now())
    # The result names the event; a World may leave the step out (EventResult), never get it wrong.
    assert result.event is not None and result.event.type is EventType.STEP_COMPLETED
    assert result.event.data_as(StepCompletedData).output == b"result" and result.step in (None, step)


def test_step_failed_records_the_error(world: World) -> None:
    run_id = create_run(world)
    step_id = running_step(world, run_id)
    write(world, run_id, EventType.STEP_FAILED, step_id, StepFailedData(error=b"fatal"))
    step = world.steps.get(run_id, step_id)
    assert (step.status, step.error) == (StepStatus.FAILED, b"fatal")
    assert step.completed_at is not None


def test_step_outcome_of_pending_step_is_conflict(world: World) -> None:
    run_id = create_run(world)
    step_id = create_step(world, run_id)
    with pytest.raises(Conflict):
        write(world, run_id, EventType.STEP_COMPLETED, step_id, StepCompletedData(output=b"x"))
    with pytest.raises(Conflict):
        write(world, run_id, EventType.STEP_FAILED, step_id, StepFailedData(error=b"x"))
    assert world.steps.get(run_id, step_id).status is StepStatus.PENDING


def test_any_step_event_on_terminal_step_is_conflict(world: World) -> None:
    # GIVEN a completed step and a failed step
    run_id = create_run(world)
    completed = running_step(world, run_id)
    write(world, run_id, EventType.STEP_COMPLETED, completed, StepCompletedData(output=b"1"))
    failed = running_step(world, run_id)
    write(world, run_id, EventType.STEP_FAILED, failed, StepFailedData(error=b"2"))
    length = len(world.events.list(run_id))
    # WHEN any step event follows THEN Conflict, and the step keeps its outcome
    for step_id in (completed, failed):
        for etype, data in (
            (EventType.STEP_STARTED, StepStartedData(step_name=STEP)),
            (EventType.STEP_COMPLETED, StepCompletedData(output=b"late")),
            (EventType.STEP_FAILED, StepFailedData(error=b"late")),
            (EventType.STEP_RETRYING, StepRetryingData(error=b"late")),
        ):
            with pytest.raises(Conflict):
                write(world, run_id, etype, step_id, data)
    assert world.steps.get(run_id, completed).output == b"1"
    assert world.steps.get(run_id, failed).status is StepStatus.FAILED
    assert len(world.events.list(run_id)) == length


def test_steps_list_returns_every_step_of_the_run(world: World) -> None:
    run_id = create_run(world)
    step_ids = {create_step(world, run_id) for _ in range(3)}
    other_run = create_run(world)
    create_step(world, other_run)
    assert {step.step_id for step in world.steps.list(run_id)} == step_ids
    assert world.steps.list(new_id("wrun")) == []


def test_any_pending_counts_steps_without_an_outcome(world: World, clock: ManualClock) -> None:
    # GIVEN a run with one step in each state
    run_id = create_run(world)
    assert world.steps.any_pending(run_id) is False
    pending = create_step(world, run_id)
    running = running_step(world, run_id)
    retrying = running_step(world, run_id)
    write(world, run_id, EventType.STEP_RETRYING, retrying, StepRetryingData(error=b"again"))
    completed = running_step(world, run_id)
    write(world, run_id, EventType.STEP_COMPLETED, completed, StepCompletedData(output=b"1"))
    failed = running_step(world, run_id)
    write(world, run_id, EventType.STEP_FAILED, failed, StepFailedData(error=b"no"))
    # THEN pending, running and retrying steps count, finished ones do not
    assert world.steps.any_pending(run_id) is True
    for step_id in (pending, running, retrying, completed, failed):
        assert world.steps.any_pending(run_id, besides=step_id) is True
    # WHEN all but one finish, only "besides" that one says nothing else is pending
    start_step(world, run_id, retrying)
    for step_id in (running, retrying):
        write(world, run_id, EventType.STEP_COMPLETED, step_id, StepCompletedData(output=b"2"))
    assert world.steps.any_pending(run_id) is True
    assert world.steps.any_pending(run_id, besides=pending) is False
    assert world.steps.any_pending(run_id, besides=completed) is True
    # AND once the last one fails, nothing is pending, with or without "besides"
    start_step(world, run_id, pending)
    write(world, run_id, EventType.STEP_FAILED, pending, StepFailedData(error=b"no"))
    assert world.steps.any_pending(run_id) is False
    assert world.steps.any_pending(run_id, besides=pending) is False


def test_any_pending_is_per_run_and_unknown_runs_have_none(world: World) -> None:
    run_id = create_run(world)
    other_run = create_run(world)
    create_step(world, other_run)
    assert world.steps.any_pending(run_id) is False
    assert world.steps.any_pending(other_run) is True
    assert world.steps.any_pending(new_id("wrun")) is False


def test_any_pending_after_a_refused_outcome_still_sees_the_step(world: World) -> None:
    # GIVEN a pending step whose completion is refused (it never started)
    run_id = create_run(world)
    step_id = create_step(world, run_id)
    with pytest.raises((Conflict, BadInput)):
        write(world, run_id, EventType.STEP_COMPLETED, step_id, StepCompletedData(output=b"x"))
    # THEN the refused write changed nothing: the step is still pending
    assert world.steps.any_pending(run_id) is True
    assert world.steps.get(run_id, step_id).status is StepStatus.PENDING


def test_steps_get_of_missing_step_is_not_found(world: World) -> None:
    run_id = create_run(world)
    with pytest.raises(NotFound):
        world.steps.get(run_id, new_id("step"))
    with pytest.raises(NotFound):
        world.steps.get(new_id("wrun"), new_id("step"))
