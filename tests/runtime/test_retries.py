"""Issue 5: step retries (contract §8.2) — plain exceptions, FatalError, RetryableError(retry_after).

Retry timing runs on the manual clock: a step's ``retry_after`` is enforced by
the World (``step_started`` is TooEarly before it), and the consumer that meets
TooEarly asks for redelivery after the seconds left.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from harness.harness import Harness
from harness.spy import Call, Publish
from world_aws import FatalError, RetryableError, StepFailedError, Workflows, get_step_metadata
from world_aws.contract.records import EventType, RunStatus, StepRetryingData
from world_aws.contract.world import QueueName, Redeliver
from world_aws.errors import Transient, WorkflowFailedError


def flaky_app(attempts: list[int]) -> Workflows:
    app = Workflows()

    @app.step(max_retries=3)
    def flaky(order_id: str) -> int:
        attempt = get_step_metadata().attempt
        attempts.append(attempt)
        if attempt < 3:
            raise ConnectionError(f"inventory unreachable (attempt {attempt})")
        return attempt

    @app.workflow
    async def reserve(order_id: str) -> int:
        return await flaky(order_id)

    return app


def test_step_that_fails_twice_then_succeeds_completes_on_attempt_three(harness: Harness) -> None:
    # GIVEN a step that raises on its first two attempts
    attempts: list[int] = []
    runtime = harness.runtime_for(flaky_app(attempts))
    # WHEN the run settles
    handle = runtime.start("reserve", "o-1")
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN the body saw attempts 1, 2, 3 through get_step_metadata and returned the third
    assert attempts == [1, 2, 3]
    assert handle.result(timeout=0) == 3
    types = harness.event_types(handle.run_id)
    assert types.count(EventType.STEP_RETRYING) == 2
    assert types.count(EventType.STEP_COMPLETED) == 1
    step = harness.world.steps.list(handle.run_id)[0]
    assert step.attempt == 3


def test_fatal_error_fails_the_step_at_once_and_the_workflow_can_handle_it(harness: Harness) -> None:
    # GIVEN a step that raises FatalError, and a workflow that catches the step failure
    app = Workflows()
    calls: list[str] = []

    @app.step(max_retries=5)
    def reserve_stock(sku: str) -> str:
        calls.append(sku)
        raise FatalError(f"{sku} is discontinued")

    @app.step
    def backorder(sku: str) -> str:
        return f"backorder:{sku}"

    @app.workflow
    async def order(sku: str) -> dict[str, str]:
        try:
            return {"reserved": await reserve_stock(sku)}
        except StepFailedError as failure:
            return {
                "fallback": await backorder(sku),
                "type": failure.error_type,
                "message": failure.error_message,
            }

    runtime = harness.runtime_for(app)
    # WHEN it runs
    handle = runtime.start("order", "lamp-7")
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN the step ran once (no retries), and the workflow got its type and message
    assert calls == ["lamp-7"]
    result = handle.result(timeout=0)
    assert result == {
        "fallback": "backorder:lamp-7",
        "type": "world_aws.errors.FatalError",
        "message": "lamp-7 is discontinued",
    }
    types = harness.event_types(handle.run_id)
    assert EventType.STEP_RETRYING not in types
    assert types.count(EventType.STEP_FAILED) == 1


@pytest.mark.dispatched  # about the step-message path
def test_retryable_error_retry_after_is_honoured_even_against_an_early_delivery(harness: Harness) -> None:
    # GIVEN a step that asks to be retried no earlier than 5 s later
    app = Workflows()
    attempts: list[int] = []

    @app.step
    def call_partner(order_id: str) -> str:
        attempts.append(get_step_metadata().attempt)
        if len(attempts) == 1:
            raise RetryableError("partner rate limit", retry_after=5)
        return "accepted"

    @app.workflow
    async def submit(order_id: str) -> str:
        return await call_partner(order_id)

    runtime = harness.runtime_for(app)
    handle = runtime.start("submit", "o-5")
    harness.drain()
    assert attempts == [1]
    retried_at = harness.clock.now()
    # WHEN a duplicate of the step message arrives at once (an early redelivery)
    step_message = next(
        c.detail
        for c in harness.spy.calls("queue.publish")
        if isinstance(c.detail, Publish) and c.detail.queue is QueueName.STEP
    )
    harness.world.queue.publish(QueueName.STEP, step_message.body)
    harness.drain()
    # THEN the World refuses the early claim (TooEarly) and the consumer asks for it ~5 s later
    early = harness.step_deliveries()[-1]
    assert isinstance(early.result, Redeliver)
    assert 4 <= early.result.seconds <= 5
    assert attempts == [1]
    # AND two seconds later still nothing has started
    harness.advance(2)
    harness.drain()
    assert attempts == [1]
    # AND the run completes with the second attempt, started no earlier than 5 s after the retry
    assert harness.settle(handle) is RunStatus.COMPLETED
    assert handle.result(timeout=0) == "accepted"
    assert attempts == [1, 2]
    events = harness.events(handle.run_id)
    retrying = next(e for e in events if e.type is EventType.STEP_RETRYING)
    starts = [e for e in events if e.type is EventType.STEP_STARTED]
    assert len(starts) == 2
    assert starts[1].created_at - retrying.created_at >= timedelta(seconds=5)
    assert retrying.created_at == retried_at
    assert retrying.data_as(StepRetryingData).retry_after == retried_at + timedelta(seconds=5)


def test_failure_to_record_a_completion_is_retried_without_rerunning_the_step(harness: Harness) -> None:
    # GIVEN a step whose first step_completed write fails transiently
    attempts: list[int] = []
    app = Workflows()

    @app.step
    def charge(order_id: str) -> str:
        attempts.append(get_step_metadata().attempt)
        return f"ch_{order_id}"

    @app.workflow
    async def pay(order_id: str) -> str:
        return await charge(order_id)

    def is_completion(call: Call) -> bool:
        return getattr(call.detail, "type", None) is EventType.STEP_COMPLETED

    harness.spy.inject("events.create", Transient("DynamoDB 500"), match=is_completion, times=2)
    runtime = harness.runtime_for(app)
    # WHEN the run settles
    handle = runtime.start("pay", "o-3")
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN the body ran once, and the failed writes never turned into a step retry
    assert attempts == [1]
    assert handle.result(timeout=0) == "ch_o-3"
    types = harness.event_types(handle.run_id)
    assert EventType.STEP_RETRYING not in types
    assert types.count(EventType.STEP_COMPLETED) == 1


def test_async_step_raising_cancelled_error_is_retried_then_fails(memory_harness: Harness) -> None:
    # GIVEN an async step whose body raises CancelledError every time
    app = Workflows()
    calls: list[int] = []

    @app.step(max_retries=1)
    async def cancels_itself() -> None:
        calls.append(get_step_metadata().attempt)
        raise asyncio.CancelledError("the body cancelled itself")

    @app.workflow
    async def wf() -> None:
        await cancels_itself()

    runtime = memory_harness.runtime_for(app)
    # WHEN the run settles
    handle = runtime.start(wf)
    memory_harness.settle(handle.run_id)
    # THEN the step was attempted twice (a retry, not a consumer crash) and the run failed
    assert calls == [1, 2]
    with pytest.raises(WorkflowFailedError) as failed:
        handle.result(timeout=1)
    assert "cancelled" in failed.value.error_message
