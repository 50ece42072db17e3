"""One attempt of a step's body, and the writes of its outcome (contract §8.2).

Shared by the step consumer (``worker/executor.py``, a step delivered by message)
and inline execution (``worker/inline.py``, a step run by the invocation that
continues its run): running the body and recording what it ended in are the
same on both paths; only who claims the step and what happens next differ.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from world_aws.contract.clock import Clock
from world_aws.contract.records import (
    Event,
    EventRequest,
    EventType,
    Step,
    StepCompletedData,
    StepFailedData,
    StepRetryingData,
)
from world_aws.contract.world import World
from world_aws.errors import (
    Conflict,
    FatalError,
    RetryableError,
    RunExpired,
    SerializationError,
    StepTimeoutError,
)
from world_aws.serde.codec import encode_error
from world_aws.serde.limits import Payload
from world_aws.worker.step_timeout import run_attempt
from world_aws.workflow import context
from world_aws.workflow.registry import StepFunction, Workflows
from world_aws.workflow.retry import Backoff, retry_in_process
from world_aws.workflow.streams import step_streams

# In-process retries of an outcome write before giving up to redelivery (contract §8.2:
# a failed record is an infrastructure error, never a step retry).
RECORD_ATTEMPTS = 4


@dataclass(frozen=True, slots=True)
class BodyOutcome:
    """What one attempt ended in: ``etype`` is the event to record.

    ``STEP_COMPLETED`` carries ``output``, ``STEP_FAILED`` ``error``; ``STEP_RETRYING``
    carries the ``failure`` and the ``backoff`` its delay comes from (``retry_delay``).
    """

    etype: EventType
    output: bytes | None = None
    error: bytes | None = None
    failure: Exception | None = None
    backoff: Backoff | None = None


def run_step_body(
    world: World,
    app: Workflows,
    step: Step,
    step_input: bytes | None = None,
    *,
    deadline: datetime | None = None,
    started_inline: bool = False,
) -> BodyOutcome:
    """Run one attempt of ``step`` (already claimed: running at ``step.attempt``) on this thread.

    ``step_input`` is the serialized input when the caller has it; else the step's own
    (read back from the World when the claim's answer left it out). The attempt is
    bounded by the step's timeout and by ``deadline``, when the handling invocation
    ends (``worker/step_timeout.py``): past either it is a failed attempt.

    ``started_inline``: the attempt began in the middle of an invocation (an inline
    step), so its hand-on at that invocation's end (``StepTimeoutError.handed_on``) is
    retried even if it was the last attempt: its next one goes by message, to an
    invocation of its own, where a hand-on counts (a body that never fits still fails).
    """
    fn = app.get_step(step.step_name)
    if fn is None:
        error = FatalError(f"step {step.step_name!r} is not registered in this deployment")
        return BodyOutcome(EventType.STEP_FAILED, error=encode_error(error))
    max_attempts = fn.options.max_retries + 1
    if step_input is None:
        step_input = step.input
    if step_input is None:
        step_input = world.steps.get(step.run_id, step.step_id).input or b""
    meta = context.StepMetadata(step.run_id, step.step_id, step.step_name, step.attempt)
    token = context.set_step_metadata(meta)
    try:
        value = app.serializer.loads(step_input)
        args, kwargs = tuple(value.get("args", ())), dict(value.get("kwargs", {}))
        with step_streams(world, app.serializer, meta):
            result = run_body(fn, args, kwargs, clock=world.clock, deadline=deadline)
        output = app.serializer.dumps(
            result, context=f"result of step {step.step_name!r}", payload=Payload.STEP_RESULT
        )
    except (FatalError, SerializationError) as exc:
        return BodyOutcome(EventType.STEP_FAILED, error=encode_error(exc))
    except (Exception, asyncio.CancelledError, SystemExit) as exc:
        # Any other failure of the body is retried (contract §8.2). CancelledError and SystemExit
        # are BaseExceptions, but a step that cancels itself or calls sys.exit has failed, not
        # the consumer: let through, SystemExit would leave Powertools' batch processor (which
        # catches Exception) and fail the whole SQS batch, every neighbour redelivered.
        failure = exc if isinstance(exc, Exception) else RuntimeError(f"step {_ended(exc)}: {exc!r}")
        handed_on = started_inline and isinstance(failure, StepTimeoutError) and failure.handed_on
        if step.attempt >= max_attempts and not handed_on:
            return BodyOutcome(EventType.STEP_FAILED, error=encode_error(failure))
        return BodyOutcome(EventType.STEP_RETRYING, failure=failure, backoff=fn.options.backoff)
    finally:
        context.reset_step_metadata(token)
    return BodyOutcome(EventType.STEP_COMPLETED, output=output)


def _ended(exc: BaseException) -> str:
    return "exited" if isinstance(exc, SystemExit) else "cancelled"


def retry_delay(outcome: BodyOutcome, attempt: int) -> float:
    """Seconds until the next attempt: the error's ``retry_after`` if it gave one, else the backoff's."""
    exc = outcome.failure
    if isinstance(exc, RetryableError) and exc.retry_after is not None:
        return max(0.0, exc.retry_after)
    if isinstance(exc, StepTimeoutError) and exc.handed_on:
        return 0.0  # handed on, not failed by its own doing: the next attempt at once
    assert outcome.backoff is not None
    return outcome.backoff.delay(attempt)


def retrying_request(
    world: World, step: Step, outcome: BodyOutcome, delay: float, owner: str | None
) -> EventRequest:
    """The ``step_retrying`` of a failed attempt whose next one is due in ``delay`` seconds."""
    assert outcome.failure is not None
    retry_after = world.clock.now() + timedelta(seconds=delay)
    data = StepRetryingData(error=encode_error(outcome.failure), retry_after=retry_after, owner=owner)
    return EventRequest(EventType.STEP_RETRYING, step.step_id, data)


def outcome_request(step: Step, outcome: BodyOutcome, owner: str | None) -> EventRequest:
    """The ``step_completed`` / ``step_failed`` of a finished attempt."""
    data: StepCompletedData | StepFailedData
    if outcome.etype is EventType.STEP_COMPLETED:
        data = StepCompletedData(output=outcome.output, owner=owner)
    else:
        data = StepFailedData(error=outcome.error, owner=owner)
    return EventRequest(outcome.etype, step.step_id, data)


def record(world: World, run_id: str, request: EventRequest) -> Event | str:
    """Write an outcome: the event when recorded, else why it was refused ("skipped" / "gone")."""
    try:
        result = retry_in_process(
            lambda: world.events.create(run_id, request),
            attempts=RECORD_ATTEMPTS,
            clock=world.clock,
            max_pause=2.0,
        )
    except Conflict:
        return "skipped"
    except RunExpired:
        return "gone"
    assert result.event is not None
    return result.event


def run_body(
    fn: StepFunction[Any, Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    clock: Clock,
    deadline: datetime | None = None,
) -> Any:
    """Execute one attempt of ``fn``'s body; returns its result.

    The attempt is bounded by the step's timeout and by ``deadline``, the end of the
    handling invocation (``worker/step_timeout.py``).

    Raises:
        StepTimeoutError: the attempt ran past its timeout or its invocation's time.
    """
    return run_attempt(
        lambda: fn.fn(*args, **kwargs),
        is_async=fn.is_async,
        step_name=fn.name,
        clock=clock,
        timeout_seconds=fn.options.timeout_seconds,
        deadline=deadline,
    )
