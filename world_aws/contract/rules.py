"""The event rules of SPEC §3 as pure functions: one source of truth for every World.

``judge_*`` functions look at the current state (as read, or as returned by a
failed conditional write) and either return normally (the event is accepted)
or raise the SPEC §3 rejection kind. ``apply_*`` functions compute the entity
after an accepted event. The in-memory World calls both under its lock; the
DynamoDB World encodes the same rules as condition expressions and calls the
``judge_*`` functions on the ``ALL_OLD`` images of a failed condition to name
the rejection without a second read.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import NamedTuple

from world_aws.contract import shapes
from world_aws.contract.records import (
    EventData,
    EventRequest,
    EventType,
    Hook,
    HookCreatedData,
    Run,
    RunCancelledData,
    RunCompletedData,
    RunCreatedData,
    RunFailedData,
    RunStartedData,
    RunStatus,
    Step,
    StepCompletedData,
    StepCreatedData,
    StepFailedData,
    StepRetryingData,
    StepStartedData,
    StepStatus,
    Wait,
    WaitCreatedData,
    WaitStatus,
    creation_of,
    owner_of,
)
from world_aws.errors import BadInput, Conflict, NotFound, RunExpired, TooEarly

CLIENT_EVENT_TYPES = frozenset(EventType) - {EventType.HOOK_CONFLICT, EventType.NOOP}
RESERVED_ATTRIBUTE_PREFIX = "$"


# Event types an ``events.append_after`` batch may hold: owned step writes, first maybe
# the run's start (a run's first step and its start in one write), or last maybe the
# run's end (the single writer's final outcome and the run's end in one write).
BATCH_EVENT_TYPES = frozenset({EventType.STEP_CREATED, EventType.STEP_COMPLETED, EventType.STEP_FAILED})
BATCH_END_TYPES = frozenset({EventType.RUN_COMPLETED, EventType.RUN_FAILED})
# A batch: an owned outcome and the next owned creates, a wave's creates (owned, or a
# fan-out's dispatched branches), or a wave's outcomes.
MAX_BATCH_EVENTS = 10


def validate_stamp(at: datetime, now: datetime) -> None:
    """Reject an ``events.append_after`` stamp later than the World's clock.

    Raises:
        BadInput: ``at`` is after ``now``.
    """
    if at > now:
        raise BadInput(f"append_after: at={at.isoformat()} is later than the World's now")


class Batch(NamedTuple):
    """An ``events.append_after`` batch in its parts (``split_batch``)."""

    start: EventRequest | None  # run_started, first
    steps: Sequence[EventRequest]  # owned step writes, one per step
    end: EventRequest | None  # run_completed / run_failed, last


def split_batch(requests: Sequence[EventRequest]) -> Batch:
    """A batch's run start, step writes and run end (not validated: see ``validate_batch``)."""
    start = requests[0] if requests and requests[0].type is EventType.RUN_STARTED else None
    end = requests[-1] if len(requests) > 1 and requests[-1].type in BATCH_END_TYPES else None
    return Batch(start, requests[1 if start else 0 : len(requests) - 1 if end else len(requests)], end)


def validate_batch(requests: Sequence[EventRequest]) -> None:
    """Reject an ``events.append_after`` batch that is not step writes, with the run's start or end.

    Step writes: creates (owned or dispatched) and owned outcomes.

    Raises:
        BadInput: naming what is wrong (empty, too long, a type, a run event out of
            place, alone or with creation data, both the start and the end, an outcome
            without its owner, a step twice).
    """
    if not requests or len(requests) > MAX_BATCH_EVENTS:
        raise BadInput(f"an appended batch holds 1 to {MAX_BATCH_EVENTS} events, not {len(requests)}")
    for request in requests:
        validate_request(request)
    batch = split_batch(requests)
    if batch.start is not None and batch.end is not None:
        raise BadInput("a batch holds the run's start or its end, not both")
    run_event = batch.start or batch.end
    if run_event is not None and not batch.steps:
        raise BadInput(f"{run_event.type.value} in a batch comes with a step write")
    if batch.start is not None and creation_of(batch.start.data) is not None:
        raise BadInput("run_started in a batch carries no creation data (the run must exist)")
    seen: set[str] = set()
    for request in batch.steps:
        if request.type not in BATCH_EVENT_TYPES:
            raise BadInput(
                f"{request.type.value} cannot be appended in a batch "
                "(step creates and owned outcomes only, run_started first or run_completed / run_failed last)"
            )
        if owner_of(request.data) is None and request.type is not EventType.STEP_CREATED:
            # A create may be a dispatched step's (a fan-out's wave past the inline ones);
            # an outcome in a batch is its owner's.
            raise BadInput(f"{request.type.value} {request.correlation_id} in a batch needs an owner")
        if isinstance(request.data, StepCreatedData) and request.data.via_step_dispatch:
            raise BadInput(f"step {request.correlation_id}: a consumer's re-ensure is written one by one")
        assert request.correlation_id is not None
        if request.correlation_id in seen:
            raise BadInput(f"step {request.correlation_id} appears twice in one batch")
        seen.add(request.correlation_id)


def validate_request(request: EventRequest) -> None:
    """Reject a request whose shape is wrong before anything is read or written.

    The data is checked against the type's record (``records.DATA_RECORDS``,
    ``shapes.shape_errors``): another type's record, a required field missing or a
    field of the wrong type is refused, not ignored.

    Raises:
        BadInput: naming the record it takes, or the missing or mistyped field.
    """
    etype = request.type
    data = request.data
    if etype not in CLIENT_EVENT_TYPES:
        raise BadInput(f"event type {etype.value!r} is written by the World only")
    if etype.is_run_event:
        if request.correlation_id is not None:
            raise BadInput(f"{etype.value} takes no correlation id")
    elif not request.correlation_id:
        raise BadInput(f"{etype.value} needs a correlation id")
    errors = shapes.shape_errors(etype, data)
    if errors:
        raise BadInput("; ".join(errors) + " (SPEC §3: the data each event type takes)")


# ----------------------------------------------------------------------------- runs


def judge_run_event(request: EventRequest, run: Run | None) -> bool:
    """Judge a run-level event against the run as it is.

    Returns:
        True if the event changes the run, False for the accepted no-op
        (``run_started`` on a running run).

    Raises:
        NotFound, Conflict: as SPEC §2.1 and §3 say.
    """
    etype = request.type
    if etype is EventType.RUN_CREATED:
        if run is not None:
            raise Conflict(f"run {run.run_id} already exists")
        return True
    if run is None:
        if creation_of(request.data) is not None:  # a creating run_started (run_created returned above)
            return True
        raise NotFound("run not found")
    if run.status.terminal:
        raise Conflict(f"run {run.run_id} is {run.status.value}: no transition out of a terminal run")
    if etype is EventType.RUN_STARTED:
        return run.status is RunStatus.PENDING
    if etype is EventType.RUN_CANCELLED:
        return True
    if run.status is not RunStatus.RUNNING:
        raise Conflict(f"run {run.run_id} is {run.status.value}, not running: cannot apply {etype.value}")
    return True


def created_data(request: EventRequest) -> RunCreatedData:
    """The ``run_created`` event's data of a creating ``run_created`` or ``run_started``."""
    creation = creation_of(request.data)
    assert creation is not None  # validate_request / judge_run_event guarantee it
    return request.data if isinstance(request.data, RunCreatedData) else RunCreatedData(creation=creation)


def logged_data(request: EventRequest) -> EventData:
    """The data a run transition is logged with: a ``run_started``'s creation data is bootstrap-only
    (the ``run_created`` event keeps it), as every World logs it."""
    return RunStartedData() if isinstance(request.data, RunStartedData) else request.data


def new_run(run_id: str, request: EventRequest, now: datetime) -> Run:
    """The run that ``run_created`` (or a creating ``run_started``) makes, still pending."""
    creation = created_data(request).creation
    return Run(
        run_id=run_id,
        workflow_name=creation.workflow_name,
        status=RunStatus.PENDING,
        deployment_id=creation.deployment_id,
        spec_version=creation.spec_version,
        input=creation.input,
        attributes=dict(creation.attributes),
        created_at=now,
        updated_at=now,
    )


def apply_run_event(request: EventRequest, run: Run, now: datetime) -> Run:
    """The run after an accepted run-level transition."""
    data = request.data
    if isinstance(data, RunStartedData):
        return replace(run, status=RunStatus.RUNNING, started_at=run.started_at or now, updated_at=now)
    if isinstance(data, RunCompletedData):
        return replace(run, status=RunStatus.COMPLETED, output=data.output, completed_at=now, updated_at=now)
    if isinstance(data, RunFailedData):
        return replace(
            run,
            status=RunStatus.FAILED,
            error=data.error,
            error_code=data.error_code,
            completed_at=now,
            updated_at=now,
        )
    if isinstance(data, RunCancelledData):
        return replace(run, status=RunStatus.CANCELLED, completed_at=now, updated_at=now)
    raise BadInput(f"{request.type.value} is not a run transition")


# ----------------------------------------------------------------------------- children


def judge_child_create(request: EventRequest, run: Run | None, existing: object | None) -> None:
    """Judge ``step_created`` / ``hook_created`` / ``wait_created``.

    Raises:
        NotFound: the run is missing.
        RunExpired: the run is terminal (SPEC §3.1).
        Conflict: the entity already exists.
    """
    if run is None:
        raise NotFound("run not found")
    if run.status.terminal:
        raise RunExpired(f"run {run.run_id} is {run.status.value}: cannot create {request.correlation_id}")
    if existing is not None:
        raise Conflict(f"{request.correlation_id} already exists in run {run.run_id}")


def judge_step_event(request: EventRequest, run: Run | None, step: Step | None, now: datetime) -> None:
    """Judge a step transition (started, retrying, completed, failed), fence included.

    The order is part of the contract, so that every World names the same kind:
    ``step_started`` checks the run first (starting work on a finished run is
    never valid, SPEC §3.1); ``step_retrying`` and the outcomes ``step_completed``
    / ``step_failed`` check the step first, because a running step may still
    report after its run ended. A retry accepted then starts nothing: the next
    ``step_started`` meets the fence. A ``step_started`` that names another step
    than the entity's (a stale message of a step whose id a corrected replay
    reused, SPEC §4.4) is refused before ``retry_after`` is looked at: it is not
    this step's start, early or late.

    Raises:
        NotFound: run or step missing.
        Conflict: the step is terminal, not running for a retry or an outcome, or
            named otherwise than the ``step_started``.
        RunExpired: the terminal-run fence (SPEC §3.1).
        TooEarly: ``step_started`` before ``retry_after``; carries the seconds left.
    """
    etype = request.type
    if run is None:
        raise NotFound("run not found")
    if etype is EventType.STEP_STARTED and run.status.terminal:
        raise RunExpired(f"run {run.run_id} is {run.status.value}: {etype.value} refused")
    if step is None:
        raise NotFound(f"step {request.correlation_id} not found in run {run.run_id}")
    if step.status.terminal:
        raise Conflict(f"step {step.step_id} is already {step.status.value}")
    if etype is EventType.STEP_STARTED:
        named = request.data.step_name if isinstance(request.data, StepStartedData) else None
        if named is not None and named != step.step_name:
            raise Conflict(f"step {step.step_id} is {step.step_name!r}: a start of {named!r} is stale")
        if step.retry_after is not None and step.retry_after > now:
            left = (step.retry_after - now).total_seconds()
            raise TooEarly(
                f"step {step.step_id} may not start for {left:.3f}s", retry_after=float(math.ceil(left))
            )
        return
    if step.status is not StepStatus.RUNNING:
        if run.status.terminal:
            raise RunExpired(f"run {run.run_id} is {run.status.value} and step {step.step_id} is not running")
        raise Conflict(f"step {step.step_id} is {step.status.value}, not running: cannot apply {etype.value}")


def new_step(run_id: str, request: EventRequest, now: datetime) -> Step:
    """The step a ``step_created`` makes: pending, or running at attempt 1 when owned (an inline step)."""
    data = request.data
    assert isinstance(data, StepCreatedData) and request.correlation_id is not None
    owned = data.owner is not None
    return Step(
        run_id=run_id,
        step_id=request.correlation_id,
        step_name=data.step_name,
        status=StepStatus.RUNNING if owned else StepStatus.PENDING,
        attempt=1 if owned else 0,
        input=data.input,
        created_at=now,
        started_at=now if owned else None,
    )


def counts_as_pending(request: EventRequest) -> bool:
    """Whether a ``step_created`` makes a step the last-completer check waits for.

    An owned (inline) step is not: the delivery that owns it continues the run itself
    after recording its outcome, so no other branch needs to wait for it.
    """
    return isinstance(request.data, StepCreatedData) and request.data.owner is None


def apply_step_event(request: EventRequest, step: Step, now: datetime) -> Step:
    """The step after an accepted transition (SPEC §2.2)."""
    data = request.data
    if isinstance(data, StepStartedData):
        return replace(
            step,
            status=StepStatus.RUNNING,
            attempt=step.attempt + 1,
            started_at=step.started_at or now,
            retry_after=None,
        )
    if isinstance(data, StepRetryingData):
        return replace(step, status=StepStatus.PENDING, error=data.error, retry_after=data.retry_after)
    if isinstance(data, StepCompletedData):
        return replace(step, status=StepStatus.COMPLETED, output=data.output, completed_at=now)
    if isinstance(data, StepFailedData):
        return replace(step, status=StepStatus.FAILED, error=data.error, completed_at=now)
    raise BadInput(f"{request.type.value} is not a step transition")


# ----------------------------------------------------------------------------- hooks


def judge_hook_event(request: EventRequest, run: Run | None, hook: Hook | None) -> None:
    """Judge ``hook_received`` / ``hook_disposed``.

    Raises:
        NotFound: the run or the live hook is missing.
        RunExpired: the run is terminal (its hooks are gone); checked before the hook.
    """
    if run is None:
        raise NotFound("run not found")
    if run.status.terminal:
        raise RunExpired(f"run {run.run_id} is {run.status.value}: its hooks are gone")
    if hook is None:
        raise NotFound(f"hook {request.correlation_id} not found in run {run.run_id}")


def new_hook(run_id: str, request: EventRequest, now: datetime) -> Hook:
    data = request.data
    assert isinstance(data, HookCreatedData) and request.correlation_id is not None
    return Hook(
        run_id=run_id,
        hook_id=request.correlation_id,
        token=data.token,
        metadata=data.metadata,
        created_at=now,
    )


# ----------------------------------------------------------------------------- waits


def judge_wait_completed(request: EventRequest, run: Run | None, wait: Wait | None) -> None:
    """Judge ``wait_completed``: exactly once per wait.

    Raises:
        NotFound: run or wait missing.
        RunExpired: the run is terminal (checked before the wait).
        Conflict: the wait is already completed.
    """
    if run is None:
        raise NotFound("run not found")
    if run.status.terminal:
        raise RunExpired(
            f"run {run.run_id} is {run.status.value}: wait {request.correlation_id} will not complete"
        )
    if wait is None:
        raise NotFound(f"wait {request.correlation_id} not found in run {run.run_id}")
    if wait.status is WaitStatus.COMPLETED:
        raise Conflict(f"wait {wait.wait_id} is already completed")


def new_wait(run_id: str, request: EventRequest, now: datetime) -> Wait:
    data = request.data
    assert isinstance(data, WaitCreatedData) and request.correlation_id is not None
    return Wait(
        run_id=run_id,
        wait_id=request.correlation_id,
        status=WaitStatus.WAITING,
        resume_at=data.resume_at,
        created_at=now,
    )


def complete_wait(wait: Wait, now: datetime) -> Wait:
    return replace(wait, status=WaitStatus.COMPLETED, completed_at=now)
