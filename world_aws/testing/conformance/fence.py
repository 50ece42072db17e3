"""Conformance: the terminal-run fence, contract §3.1 (sequential cases; races are in ``concurrency``)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from world_aws.contract.clock import ManualClock
from world_aws.contract.records import (
    EventData,
    EventType,
    HookCreatedData,
    HookReceivedData,
    PatchAppliedData,
    StepCompletedData,
    StepCreatedData,
    StepFailedData,
    StepRetryingData,
    StepStartedData,
    StepStatus,
    WaitCreatedData,
    WaitStatus,
    patch_correlation_id,
)
from world_aws.contract.rules import CLIENT_EVENT_TYPES
from world_aws.contract.world import World
from world_aws.errors import NotFound, RunExpired
from world_aws.testing.conformance.support import (
    STEP,
    create_hook,
    create_run,
    create_step,
    create_wait,
    end_run,
    new_id,
    receive_hook,
    running_step,
    start_step,
    types_of,
    write,
)

_ENDINGS = (EventType.RUN_COMPLETED, EventType.RUN_FAILED, EventType.RUN_CANCELLED)


def test_step_started_on_terminal_run_is_gone_even_when_step_row_says_running(world: World) -> None:
    for ending in _ENDINGS:
        # GIVEN a step that is running when its run ends (a redelivered start will come)
        run_id = create_run(world)
        step_id = running_step(world, run_id)
        end_run(world, run_id, ending)
        length = len(world.events.list(run_id))
        # WHEN the redelivered step_started arrives
        with pytest.raises(RunExpired):
            start_step(world, run_id, step_id)
        # THEN nothing was appended and the step row is unchanged
        assert len(world.events.list(run_id)) == length
        step = world.steps.get(run_id, step_id)
        assert (step.status, step.attempt) == (StepStatus.RUNNING, 1)


def test_step_started_of_pending_step_on_terminal_run_is_gone(world: World) -> None:
    for ending in _ENDINGS:
        run_id = create_run(world)
        step_id = create_step(world, run_id)
        end_run(world, run_id, ending)
        with pytest.raises(RunExpired):
            start_step(world, run_id, step_id)
        assert world.steps.get(run_id, step_id).status is StepStatus.PENDING


def test_step_started_of_missing_step_on_terminal_run_is_gone(world: World) -> None:
    # The fence is checked before the step: starting anything on a finished run is never valid.
    run_id = create_run(world)
    end_run(world, run_id)
    with pytest.raises(RunExpired):
        start_step(world, run_id, new_id("step"))


def test_step_completed_of_running_step_is_accepted_after_run_completed(world: World) -> None:
    # GIVEN a step that was executing when the run completed
    run_id = create_run(world)
    step_id = running_step(world, run_id)
    end_run(world, run_id, EventType.RUN_COMPLETED)
    # WHEN it reports its outcome
    result = write(world, run_id, EventType.STEP_COMPLETED, step_id, StepCompletedData(output=b"late"))
    # THEN the outcome is recorded after run_completed
    assert world.steps.get(run_id, step_id).status is StepStatus.COMPLETED
    assert world.steps.get(run_id, step_id).output == b"late"
    assert types_of(world, run_id)[-2:] == [EventType.RUN_COMPLETED, EventType.STEP_COMPLETED]
    assert result.event is not None and result.event.type is EventType.STEP_COMPLETED


def test_step_failed_of_running_step_is_accepted_after_run_ended(world: World) -> None:
    for ending in _ENDINGS:
        run_id = create_run(world)
        step_id = running_step(world, run_id)
        end_run(world, run_id, ending)
        write(world, run_id, EventType.STEP_FAILED, step_id, StepFailedData(error=b"late"))
        assert world.steps.get(run_id, step_id).status is StepStatus.FAILED


def test_step_outcome_of_pending_step_after_run_ended_is_gone(world: World) -> None:
    run_id = create_run(world)
    step_id = create_step(world, run_id)
    end_run(world, run_id)
    with pytest.raises(RunExpired):
        write(world, run_id, EventType.STEP_COMPLETED, step_id, StepCompletedData(output=b"x"))
    with pytest.raises(RunExpired):
        write(world, run_id, EventType.STEP_FAILED, step_id, StepFailedData(error=b"x"))
    assert world.steps.get(run_id, step_id).status is StepStatus.PENDING


def test_step_retrying_of_running_step_is_accepted_after_run_ended_and_starts_nothing(
    world: World, clock: ManualClock
) -> None:
    for ending in _ENDINGS:
        # GIVEN a step whose body was executing when its run ended, and then raised
        run_id = create_run(world)
        step_id = running_step(world, run_id)
        end_run(world, run_id, ending)
        # WHEN it records its retry, as the outcomes may
        retry_at = clock.now() + timedelta(seconds=5)
        write(
            world,
            run_id,
            EventType.STEP_RETRYING,
            step_id,
            StepRetryingData(error=b"late", retry_after=retry_at),
        )
        # THEN the retry is logged after the run's end and the step is pending with its error
        assert types_of(world, run_id)[-2:] == [ending, EventType.STEP_RETRYING]
        step = world.steps.get(run_id, step_id)
        assert (step.status, step.error, step.attempt) == (StepStatus.PENDING, b"late", 1)
        # AND no attempt can follow: the next start meets the fence, once due or not
        clock.advance(5)
        with pytest.raises(RunExpired):
            start_step(world, run_id, step_id)
        assert world.steps.get(run_id, step_id).attempt == 1


def test_step_retrying_of_step_not_running_after_run_ended_is_gone(world: World) -> None:
    # GIVEN an ended run with a pending step and one that already retried after the end
    run_id = create_run(world)
    pending = create_step(world, run_id)
    retried = running_step(world, run_id)
    end_run(world, run_id)
    write(world, run_id, EventType.STEP_RETRYING, retried, StepRetryingData(error=b"first"))
    length = len(world.events.list(run_id))
    # WHEN either records a retry THEN RunExpired, as for an outcome, and nothing changes
    for step_id in (pending, retried):
        with pytest.raises(RunExpired):
            write(world, run_id, EventType.STEP_RETRYING, step_id, StepRetryingData(error=b"x"))
        assert world.steps.get(run_id, step_id).status is StepStatus.PENDING
    assert world.steps.get(run_id, retried).error == b"first"
    assert len(world.events.list(run_id)) == length
    # AND a step the ended run never had is NotFound (the step is judged first)
    with pytest.raises(NotFound):
        write(world, run_id, EventType.STEP_RETRYING, new_id("step"), StepRetryingData(error=b"x"))


def test_step_created_on_terminal_run_is_gone(world: World) -> None:
    for ending in _ENDINGS:
        run_id = create_run(world)
        end_run(world, run_id, ending)
        step_id = new_id("step")
        with pytest.raises(RunExpired):
            create_step(world, run_id, step_id=step_id)
        with pytest.raises(NotFound):
            world.steps.get(run_id, step_id)


def test_hook_created_on_terminal_run_is_gone(world: World) -> None:
    run_id = create_run(world)
    end_run(world, run_id)
    token = new_id("tok")
    with pytest.raises(RunExpired):
        create_hook(world, run_id, token)
    with pytest.raises(NotFound):
        world.hooks.get_by_token(token)


def test_hook_received_on_terminal_run_is_gone(world: World) -> None:
    run_id = create_run(world)
    hook = create_hook(world, run_id, new_id("tok")).hook
    assert hook is not None
    end_run(world, run_id)
    with pytest.raises(RunExpired):
        receive_hook(world, run_id, hook.hook_id, b"late")


def test_wait_created_on_terminal_run_is_gone(world: World, clock: ManualClock) -> None:
    run_id = create_run(world)
    end_run(world, run_id, EventType.RUN_CANCELLED)
    with pytest.raises(RunExpired):
        create_wait(world, run_id, clock.now() + timedelta(hours=1))
    assert world.waits.list(run_id) == []


def test_wait_completed_on_terminal_run_is_gone(world: World, clock: ManualClock) -> None:
    run_id = create_run(world)
    wait_id = create_wait(world, run_id, clock.now() + timedelta(seconds=5))
    end_run(world, run_id)
    with pytest.raises(RunExpired):
        write(world, run_id, EventType.WAIT_COMPLETED, wait_id)
    assert world.waits.get(run_id, wait_id).status is WaitStatus.WAITING


def _ready(world: World, clock: ManualClock, run_id: str, etype: EventType) -> tuple[str, EventData | None]:
    """A child event of ``etype`` that ``run_id`` accepts while it is live: its entity made first."""
    if etype is EventType.STEP_CREATED:
        return new_id("step"), StepCreatedData(step_name=STEP, input=b"i")
    if etype is EventType.STEP_STARTED:
        step_id = create_step(world, run_id)
        return step_id, StepStartedData(step_name=STEP)
    reports: dict[EventType, EventData] = {
        EventType.STEP_RETRYING: StepRetryingData(error=b"x"),
        EventType.STEP_COMPLETED: StepCompletedData(output=b"o"),
        EventType.STEP_FAILED: StepFailedData(error=b"e"),
    }
    if etype in reports:
        return running_step(world, run_id), reports[etype]
    if etype is EventType.HOOK_CREATED:
        return new_id("hook"), HookCreatedData(token=new_id("tok"))
    if etype in (EventType.HOOK_RECEIVED, EventType.HOOK_DISPOSED):
        hook = create_hook(world, run_id, new_id("tok")).hook
        assert hook is not None
        received = HookReceivedData(payload=b"p", resume_id=new_id("resume"))
        return hook.hook_id, received if etype is EventType.HOOK_RECEIVED else None
    if etype is EventType.WAIT_CREATED:
        return new_id("wait"), WaitCreatedData(resume_at=clock.now() + timedelta(hours=1))
    if etype is EventType.WAIT_COMPLETED:
        return create_wait(world, run_id, clock.now()), None
    if etype is EventType.PATCH_APPLIED:
        return patch_correlation_id("change-1"), PatchAppliedData(change_id="change-1")
    raise AssertionError(f"no fence case for {etype.value}: add one to conformance/fence.py's _ready")


def test_every_fenced_type_is_refused_on_an_ended_run_and_every_other_is_accepted(
    world: World, clock: ManualClock
) -> None:
    # The fence as each type's record states it (``FENCED``, contract §3.1): a new type is covered here.
    for etype in sorted(t for t in CLIENT_EVENT_TYPES if not t.is_run_event):
        # GIVEN a run that would accept the event, then ended
        run_id = create_run(world)
        cid, data = _ready(world, clock, run_id, etype)
        end_run(world, run_id)
        length = len(world.events.list(run_id))
        # WHEN it is written
        if etype.record.FENCED:
            # THEN a fenced type is refused and appends nothing
            with pytest.raises(RunExpired):
                write(world, run_id, etype, cid, data)
            assert len(world.events.list(run_id)) == length, etype
        else:
            # THEN any other (a running step's report) is appended after the end
            result = write(world, run_id, etype, cid, data)
            assert result.event is not None and result.event.type is etype
            assert types_of(world, run_id)[-1] is etype
