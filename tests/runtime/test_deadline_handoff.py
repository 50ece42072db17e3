"""An inline step handed on at its invocation's end is retried by message, not failed for it."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator
from datetime import timedelta

import pytest

from tests.runtime.harness import Harness
from world_aws import Workflows, get_step_metadata
from world_aws.contract.records import RunStatus
from world_aws.contract.world import Delivery, HandlerResult, MessageHandler


@pytest.fixture
def release() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()


def test_a_step_handed_on_at_its_invocations_end_is_not_failed_for_it(
    harness: Harness, release: threading.Event
) -> None:
    attempts: list[int] = []
    app = Workflows()

    @app.step(name="rv.once", max_retries=0)  # run once: no retries wanted on failure
    def once() -> str:
        attempts.append(get_step_metadata().attempt)
        if len(attempts) == 1:
            harness.clock.advance(20)  # the invocation that runs it has 20 s left
            release.wait()
        return "done"

    @app.workflow(name="rv.once_flow")
    async def flow() -> str:
        return await once()

    def lambda_with_20_seconds_left(delivery: Delivery, handle: MessageHandler) -> HandlerResult:
        deadline = harness.clock.now() + timedelta(seconds=20)
        return handle(dataclasses.replace(delivery, deadline=deadline))

    handle = harness.runtime_for(app).start("rv.once_flow")
    # WHEN the invocation that runs the step (inline, 20 s before its end) hands it on
    status = harness.settle(handle, intercept=lambda_with_20_seconds_left)
    # THEN the step is handed on (ARCHITECTURE §6: "handed on, not killed") and completes by
    # message, though it allows no retry: the hand-on was not its own failure
    assert (status, attempts) == (RunStatus.COMPLETED, [1, 2])
