"""Issue 11: no run is stranded by a crash or a lost answer on the step → outcome → continuation path.

Each test injects one fault at the exact World call of a mechanism that used to
strand a run (it stayed ``running`` with nothing queued to move it), on both
Worlds, and settles the queues: the run must end with its fault-free result.

A crash is a ``BaseException`` raised from inside the World call (the Lambda
died there: no ``except Exception`` of the runtime runs after it). The harness
sees it as an invocation that failed, so the message comes back, as SQS does
after its visibility timeout.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from world_aws import RetryableError, StepFailedError, Workflows, get_step_metadata
from world_aws.contract.records import EventType, RunStatus, StepRetryingData
from world_aws.contract.world import QueueName
from world_aws.errors import Transient
from world_aws.worker.config import RuntimeConfig
from world_aws.workflow.retry import Backoff

from .failures import Crash, survive_crashes
from .harness import Harness
from .spy import Call, Publish

# The dispatched-step path (inline execution off): what these tests are about.
pytestmark = pytest.mark.dispatched


def two_step_app(ran: list[str]) -> Workflows:
    app = Workflows()

    @app.step(name="first")
    def first(x: int) -> int:
        ran.append("first")
        return x + 1

    @app.step(name="second")
    def second(x: int) -> int:
        ran.append("second")
        return x * 10

    @app.workflow
    async def chain(x: int) -> int:
        return await second(await first(x))

    return app


def fails_once_app(attempts: list[int]) -> Workflows:
    """A workflow of one step that fails its first attempt and then returns "ok"."""
    app = Workflows()

    @app.step(backoff=Backoff(initial=1, jitter=0))
    def flaky() -> str:
        attempts.append(get_step_metadata().attempt)
        if len(attempts) == 1:
            raise ConnectionError("partner down")
        return "ok"

    @app.workflow
    async def wf() -> str:
        return await flaky()

    return app


def publishes_step(name: str) -> Callable[[Call], bool]:
    def match(call: Call) -> bool:
        detail = call.detail
        return (
            isinstance(detail, Publish)
            and detail.queue is QueueName.STEP
            and detail.payload.step_name == name
        )

    return match


def creates(etype: EventType) -> Callable[[Call], bool]:
    return lambda call: getattr(call.detail, "type", None) is etype


@pytest.mark.parametrize("resilient", [True, False], ids=["resilient", "sequential"])
def test_last_completer_dying_before_publishing_the_next_step_does_not_strand_the_run(
    harness: Harness, resilient: bool
) -> None:
    # GIVEN a run whose first step's inline continuation creates the second step and
    # then dies publishing its message (mechanism 1 of issue 11)
    ran: list[str] = []
    runtime = harness.runtime_for(
        two_step_app(ran), RuntimeConfig(max_inline_steps=0, resilient_step_dispatch=resilient)
    )
    harness.spy.inject("queue.publish", Crash(), match=publishes_step("second"))
    # WHEN the queues settle (the finished step's message is redelivered)
    handle = runtime.start("chain", 4)
    status = harness.settle(handle, intercept=survive_crashes)
    # THEN the run completed: the redelivery continued it and published the second step
    assert status is RunStatus.COMPLETED
    assert handle.result(timeout=0) == 50
    assert ran == ["first", "second"]
    types = harness.event_types(handle.run_id)
    assert types.count(EventType.STEP_CREATED) == 2
    assert types.count(EventType.RUN_COMPLETED) == 1


def test_a_lost_answer_to_step_retrying_still_delivers_the_retry(harness: Harness) -> None:
    # GIVEN a step that fails once, and a step_retrying write that lands but whose
    # answer is lost, so its in-process retry is refused (mechanism 2 of issue 11)
    attempts: list[int] = []
    app = fails_once_app(attempts)
    runtime = harness.runtime_for(app)
    harness.spy.inject(
        "events.create", Transient("timed out"), match=creates(EventType.STEP_RETRYING), after=True
    )
    # WHEN the queues settle
    handle = runtime.start("wf")
    # THEN the retry ran and the run completed, with one step_retrying in its log
    assert harness.settle(handle) is RunStatus.COMPLETED
    assert handle.result(timeout=0) == "ok"
    assert attempts == [1, 2]
    assert harness.event_types(handle.run_id).count(EventType.STEP_RETRYING) == 1


def test_a_crash_right_after_step_retrying_still_delivers_the_retry(harness: Harness) -> None:
    # GIVEN a step that fails once, and an invocation that dies right after its
    # step_retrying landed (before the retry message is published)
    attempts: list[int] = []
    app = fails_once_app(attempts)
    runtime = harness.runtime_for(app)
    harness.spy.inject("events.create", Crash(), match=creates(EventType.STEP_RETRYING), after=True)
    # WHEN the queues settle
    handle = runtime.start("wf")
    # THEN the redelivered message ran the retry
    assert harness.settle(handle, intercept=survive_crashes) is RunStatus.COMPLETED
    assert attempts == [1, 2]


def test_a_lost_answer_to_an_outcome_continues_the_run(harness: Harness) -> None:
    # GIVEN a step_completed that lands with its answer lost: the retry of the write is
    # refused (the step is already completed), so the branch never learns its position
    ran: list[str] = []
    runtime = harness.runtime_for(two_step_app(ran))
    harness.spy.inject(
        "events.create", Transient("timed out"), match=creates(EventType.STEP_COMPLETED), after=True
    )
    # WHEN the queues settle
    handle = runtime.start("chain", 1)
    # THEN the run still continued to the second step and completed
    assert harness.settle(handle) is RunStatus.COMPLETED
    assert handle.result(timeout=0) == 20
    assert ran == ["first", "second"]


def test_retries_do_not_count_against_the_delivery_cap(harness: Harness) -> None:
    # GIVEN a step allowed 60 retries that always fails, and a workflow that falls back
    app = Workflows()
    attempts: list[int] = []

    @app.step(max_retries=60, backoff=Backoff(initial=1, max_delay=4, jitter=0))
    def doomed() -> str:
        attempts.append(get_step_metadata().attempt)
        raise ConnectionError(f"attempt {len(attempts)} failed")

    @app.step
    def fallback() -> str:
        return "fallback"

    @app.workflow
    async def wf() -> str:
        try:
            return await doomed()
        except StepFailedError:
            return await fallback()

    runtime = harness.runtime_for(app, RuntimeConfig(max_inline_steps=0, max_queue_deliveries=48))
    # WHEN the queues settle
    handle = runtime.start(wf)
    # THEN all 61 attempts ran and the workflow's fallback ran (no MAX_DELIVERIES_EXCEEDED)
    assert harness.settle(handle, max_rounds=400) is RunStatus.COMPLETED
    assert handle.result(timeout=0) == "fallback"
    assert attempts == list(range(1, 62))
    # AND no single message was delivered more than twice (each retry has its own message)
    step_deliveries = harness.step_deliveries()
    assert max(d.attempt for d in step_deliveries) <= 2


def test_retry_delays_follow_the_backoff_and_retry_after_wins(memory_harness: Harness) -> None:
    # GIVEN a step whose backoff doubles from 2 s up to 10 s, and which asks for 30 s once
    app = Workflows()
    attempts: list[int] = []

    @app.step(max_retries=5, backoff=Backoff(initial=2, multiplier=2, max_delay=10, jitter=0))
    def flaky() -> str:
        attempt = get_step_metadata().attempt
        attempts.append(attempt)
        if attempt == 4:
            raise RetryableError("rate limited", retry_after=30)
        if attempt < 6:
            raise ConnectionError("down")
        return "ok"

    @app.workflow
    async def wf() -> str:
        return await flaky()

    runtime = memory_harness.runtime_for(app)
    # WHEN the queues settle
    handle = runtime.start(wf)
    assert memory_harness.settle(handle) is RunStatus.COMPLETED
    # THEN each step_retrying recorded the policy's delay (the 4th: the error's 30 s), and
    # each next attempt started no earlier than that
    events = memory_harness.events(handle.run_id)
    retrying = [e for e in events if e.type is EventType.STEP_RETRYING]
    starts = [e for e in events if e.type is EventType.STEP_STARTED]
    delays = [
        (e.data_as(StepRetryingData).retry_after - e.created_at).total_seconds()
        for e in retrying
        if e.data_as(StepRetryingData).retry_after
    ]
    assert delays == [2, 4, 8, 30, 10]
    for retry, next_start in zip(retrying, starts[1:], strict=True):
        assert retry.data_as(StepRetryingData).retry_after is not None
        assert next_start.created_at >= retry.data_as(StepRetryingData).retry_after


def test_backoff_jitter_stays_within_its_band() -> None:
    # GIVEN the default policy
    policy = Backoff()
    # THEN each delay lies in the upper half of its ceiling, and the ceiling caps at max_delay
    assert [policy.ceiling(n) for n in (1, 2, 3, 9, 10, 1000)] == [1, 2, 4, 256, 300, 300]
    assert policy.delay(3, rand=lambda: 0.0) == 4
    assert policy.delay(3, rand=lambda: 1.0) == 2
