"""The event rules of contract §3: one source of truth for every World.

Each type's rule is its record's ``judge`` and ``apply`` (``records``, the event
data section: one definition per type). ``judge_*`` here calls it for a request:
it looks at the current state (as read, or as returned by a failed conditional
write) and either returns normally (the event is accepted) or raises the contract §3
rejection kind; ``apply_*`` computes the entity after an accepted event. The
in-memory World calls both under its lock; the DynamoDB World encodes the same
rules as condition expressions and calls the ``judge_*`` functions on the
``ALL_OLD`` images of a failed condition to name the rejection without a second
read. What holds for a request whatever its type (its shape, a batch's parts) is
here too.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple, NoReturn, TypeVar

from world_aws.contract import shapes
from world_aws.contract.records import (
    CHILD_RECORDS,
    HOOK_RECORDS,
    RUN_RECORDS,
    STEP_RECORDS,
    WAIT_RECORDS,
    Entity,
    Event,
    EventData,
    EventRequest,
    EventType,
    Hook,
    HookCreatedData,
    HookReceivedData,
    PatchAppliedData,
    Run,
    RunCreatedData,
    RunStartedData,
    RunStatus,
    Step,
    StepCreatedData,
    StepRetryingData,
    Wait,
    WaitCreatedData,
    change_id_error,
    creation_of,
    owner_of,
    patch_correlation_id,
)
from world_aws.errors import BadInput

CLIENT_EVENT_TYPES = frozenset(t for t in EventType if t.record.CLIENT)
RESERVED_ATTRIBUTE_PREFIX = "$"


# Event types an ``events.append_after`` batch may hold: owned step writes, first maybe
# the run's start (a run's first step and its start in one write), or last maybe the
# run's end (the single writer's final outcome and the run's end in one write).
# A patch marker may go with them (worker/pipeline.py): it changes the log alone.
BATCH_EVENT_TYPES = frozenset(
    {EventType.STEP_CREATED, EventType.STEP_COMPLETED, EventType.STEP_FAILED, EventType.PATCH_APPLIED}
)
BATCH_END_TYPES = frozenset({EventType.RUN_COMPLETED, EventType.RUN_FAILED})
# A batch: an owned outcome and the next owned creates, a wave's creates (owned, or a
# fan-out's dispatched branches), or a wave's outcomes.
MAX_BATCH_EVENTS = 10


def validate_stamp(at: datetime, now: datetime) -> None:
    """Reject an ``events.append_after`` stamp later than the World's clock.

    Raises:
        BadInput: ``at`` has no timezone, or is after ``now``.
    """
    if at.utcoffset() is None:
        raise BadInput(f"append_after: at={at.isoformat()} has no timezone")
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

    Step writes: creates (owned or dispatched) and owned outcomes; ``patch_applied``
    markers may go among them.

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
                "(step creates, owned outcomes and patch markers only, run_started first or "
                "run_completed / run_failed last)"
            )
        if (
            request.type.is_step_event
            and owner_of(request.data) is None
            and request.type is not EventType.STEP_CREATED
        ):
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
    if isinstance(data, PatchAppliedData) and not errors:
        problem = change_id_error(data.change_id)
        if problem is not None:
            errors.append(f"patch_applied: {problem}")
        elif request.correlation_id != patch_correlation_id(data.change_id):
            errors.append(
                f"patch_applied of {data.change_id!r} takes correlation id "
                f"{patch_correlation_id(data.change_id)!r}, not {request.correlation_id!r}"
            )
    if errors:
        raise BadInput("; ".join(errors) + " (contract §3: the data each event type takes)")


# ----------------------------------------------------------------------------- dispatch
#
# Each type's rule is its record's ``judge`` / ``apply`` (``records``, the event data
# section); these call it for a request, narrowed to its entity's records.

R = TypeVar("R")


def _data(request: EventRequest, records: tuple[type[R], ...], entity: Entity) -> R:
    data = request.data
    if not isinstance(data, records):
        raise BadInput(f"{request.type.value} is not a {entity.value} event a client may write")
    return data


def judge_run_event(request: EventRequest, run: Run | None) -> bool:
    """Judge a run-level event against the run as it is.

    Returns:
        True if the event changes the run, False for the accepted no-op
        (``run_started`` on a running run).

    Raises:
        NotFound, Conflict: as contract §2.1 and §3 say.
    """
    return _data(request, RUN_RECORDS, Entity.RUN).judge(run)


def apply_run_event(request: EventRequest, run: Run, now: datetime) -> Run:
    """The run after an accepted run-level transition."""
    return _data(request, RUN_RECORDS, Entity.RUN).apply(run, now)


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


def judge_child_create(request: EventRequest, run: Run | None, existing: object | None) -> None:
    """Judge ``step_created`` / ``hook_created`` / ``wait_created``; ``existing``: anything that
    says the entity exists (an entity, an item, an id).

    Raises:
        NotFound: the run is missing.
        RunExpired: the run is terminal (contract §3.1).
        Conflict: the entity already exists.
    """
    data = request.data
    if not isinstance(data, StepCreatedData | HookCreatedData | WaitCreatedData):
        raise BadInput(f"{request.type.value} is not a create")
    data.judge(request.correlation_id, run, existing)


def judge_step_event(request: EventRequest, run: Run | None, step: Step | None, now: datetime) -> None:
    """Judge a step event (its create, start, retry or outcome) against its run and step as they are.

    Raises:
        NotFound: run or step missing.
        Conflict: the step exists (a create), is terminal, is not running for a retry
            or an outcome, or is named otherwise than the ``step_started``.
        RunExpired: the terminal-run fence (contract §3.1).
        TooEarly: ``step_started`` before ``retry_after``; carries the seconds left.
    """
    _data(request, STEP_RECORDS, Entity.STEP).judge(request.correlation_id, run, step, now)


def apply_step_event(request: EventRequest, run_id: str, step: Step | None, now: datetime) -> Step:
    """The step after an accepted step event (contract §2.2); a create's ``step`` is None."""
    return _data(request, STEP_RECORDS, Entity.STEP).apply(run_id, request.correlation_id, step, now)


def counts_as_pending(request: EventRequest) -> bool:
    """Whether this event makes its step one the last-completer check waits for.

    A dispatched ``step_created`` does. An owned (inline) one does not: the delivery
    that owns it continues the run itself after recording its outcome, so no other
    branch needs to wait for it. But an owned ``step_retrying`` hands the step to a
    retry message: its owner no longer continues for it, and the message's consumer
    ends with the last-completer check, so from that retry on the step counts as
    pending like any dispatched one (until its outcome).
    """
    data = request.data
    if isinstance(data, StepRetryingData):
        return data.owner is not None
    return isinstance(data, StepCreatedData) and data.owner is None


def judge_hook_event(request: EventRequest, run: Run | None, hook: Hook | None) -> None:
    """Judge a hook event (its create, a resume, its disposal) against its run and hook as they are.

    Raises:
        NotFound: the run or the live hook is missing.
        RunExpired: the run is terminal (its hooks are gone); checked before the hook.
        Conflict: a create of a hook that exists.
    """
    _data(request, HOOK_RECORDS, Entity.HOOK).judge(request.correlation_id, run, hook)


def apply_hook_event(request: EventRequest, run_id: str, hook: Hook | None, now: datetime) -> Hook:
    """The hook a ``hook_created`` makes, or the hook a resume or disposal is of."""
    return _data(request, HOOK_RECORDS, Entity.HOOK).apply(run_id, request.correlation_id, hook, now)


def resumed_by(event: Event, token: str, last_holder: str) -> bool:
    """Whether ``event`` (a ``hook_received``) is a resume of ``token`` (``HookStore.resumed``).

    By the token the runtime recorded with it; one recorded without a token counts if its
    hook is ``last_holder``, the hook that last held the token.
    """
    if not isinstance(event.data, HookReceivedData):
        return False
    named = event.data.token
    return named == token if named is not None else event.correlation_id == last_holder


def judge_wait_event(request: EventRequest, run: Run | None, wait: Wait | None) -> None:
    """Judge a wait event: its create, its completion (exactly once per wait).

    Raises:
        NotFound: run or wait missing.
        RunExpired: the run is terminal (checked before the wait).
        Conflict: the wait exists (a create) or is already completed.
    """
    _data(request, WAIT_RECORDS, Entity.WAIT).judge(request.correlation_id, run, wait)


def apply_wait_event(request: EventRequest, run_id: str, wait: Wait | None, now: datetime) -> Wait:
    """The wait after an accepted wait event; a create's ``wait`` is None."""
    return _data(request, WAIT_RECORDS, Entity.WAIT).apply(run_id, request.correlation_id, wait, now)


def judge_log_event(request: EventRequest, run: Run | None) -> None:
    """Judge ``patch_applied``, which changes only the log, against its run as it is.

    Raises:
        NotFound: the run is missing.
        RunExpired: the run is terminal (contract §3.1: no new decision after its end).
    """
    data = request.data
    if not isinstance(data, PatchAppliedData):
        raise BadInput(f"{request.type.value} is not a log event a client may write")
    data.judge(run)


def judge_on_missing_run(request: EventRequest, now: datetime) -> NoReturn:
    """Name the rejection of a child event on a run that does not exist (NotFound)."""
    data = request.data
    if isinstance(data, CHILD_RECORDS):
        data.judge(request.correlation_id, None, None, now)
    if isinstance(data, PatchAppliedData):
        data.judge(None)
    raise AssertionError(f"the rules accept no {request.type.value} on a missing run")  # pragma: no cover
