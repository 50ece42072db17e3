"""What the chaos suite found beyond issue 11's four mechanisms, each reproduced at the exact call.

A stale attempt's lost ``step_retrying`` (found by ``python -m bench.chaos --runs
1000 --faults all --seed 1``, 1 run in 1000): two deliveries of one step message
run attempts 1 and 2 at once (SQS delivered it twice, or a dropped delete brought
it back while the first ran). Attempt 1 fails and writes ``step_retrying`` while
attempt 2 runs: the World accepts it (the step is running) and the step goes back
to pending, at attempt 2. Its answer is lost; the in-process retry is refused; the
step read shows pending at attempt 2, not 1, which the executor took for "another
delivery claimed it since" and acked without handing the retry on. Attempt 2 then
succeeds, but its ``step_completed`` is refused (the step is pending, not
running) and it acks too: a pending step with no message, a run stranded. Fixed
in ``StepExecutor._retry`` (``world_aws/worker/executor.py``): a pending step
after a refused ``step_retrying`` gets its retry message whatever its attempt.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from harness.harness import Harness
from harness.spy import Call
from world_aws import Workflows, get_step_metadata
from world_aws.contract.records import EventType, RunStatus
from world_aws.contract.world import Delivery, HandlerResult, MessageHandler, QueueName
from world_aws.errors import Transient
from world_aws.workflow.retry import Backoff

WAIT = 30.0  # real seconds a thread waits for the other (only reached if the runtime hangs)


def creates(etype: EventType) -> Any:
    return lambda call: isinstance(call, Call) and call.detail.type is etype


@pytest.mark.dispatched  # a step message delivered twice: the step-message path
def test_a_stale_attempts_lost_step_retrying_while_a_newer_attempt_runs_still_delivers_the_retry(
    harness: Harness,
) -> None:
    # GIVEN a step whose attempt 1 fails, and a duplicate delivery of its message that
    # starts attempt 2 while attempt 1's body runs, and holds until attempt 1's
    # delivery is done; attempt 1's step_retrying lands but its answer is lost
    app = Workflows()
    duplicate_started, release_duplicate = threading.Event(), threading.Event()
    first: dict[str, Any] = {}
    attempts: list[int] = []

    @app.step(name="flaky", max_retries=3, backoff=Backoff(initial=1, jitter=0))
    def flaky(x: int) -> int:
        attempt = get_step_metadata().attempt
        attempts.append(attempt)
        if attempt == 1:
            first["thread"] = threading.Thread(target=lambda: duplicate.handle(first["delivery"]))
            first["thread"].start()
            assert duplicate_started.wait(WAIT)
            raise ConnectionError("partner down")
        duplicate_started.set()
        assert release_duplicate.wait(WAIT)
        return x * 2

    @app.workflow
    async def wf(x: int) -> int:
        return await flaky(x)

    duplicate = harness.runtime_for(app)  # the second Lambda that got the copy
    runtime = harness.runtime_for(app)
    harness.spy.inject(
        "events.create", Transient("timed out"), match=creates(EventType.STEP_RETRYING), after=True
    )

    def deliver_twice(delivery: Delivery, handle: MessageHandler) -> HandlerResult:
        if delivery.queue is not QueueName.STEP or delivery.attempt > 1 or not first.get("armed"):
            return handle(delivery)
        first["armed"] = False
        first["delivery"] = delivery
        try:
            return handle(delivery)
        finally:
            release_duplicate.set()
            first["thread"].join(WAIT)

    # WHEN the run starts, its step message is delivered twice at once, and the queues settle
    handle = runtime.start(wf, 21)
    first["armed"] = True
    status = harness.settle(handle, intercept=deliver_twice)
    # THEN the retry was still handed on: a third attempt ran and the run completed
    assert status is RunStatus.COMPLETED, harness.event_types(handle.run_id)
    assert handle.result(timeout=0) == 42
    assert attempts == [1, 2, 3], " ".join(t.value for t in harness.event_types(handle.run_id))
    step = harness.world.steps.list(handle.run_id)[0]
    assert step.attempt == 3
