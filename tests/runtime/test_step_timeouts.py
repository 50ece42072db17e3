"""Step timeouts: an attempt past its timeout, or past its invocation's time, is a failed attempt.

Everything goes through the public API (``@app.step(timeout=...)``, ``Runtime``,
the run's log), on both Worlds, on the harness's ``ManualClock``: a body "runs
long" by moving the clock, and a body that keeps running blocks on an event the
test releases at the end. Nothing sleeps.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator
from datetime import timedelta

import pytest

from world_aws import BadInput, StepFailedError, StepTimeoutError, Workflows, get_step_metadata
from world_aws.contract.records import EventType, RunStatus
from world_aws.contract.world import Delivery, HandlerResult, MessageHandler
from world_aws.serde.errors import decode_error

from .harness import Harness


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Set at the end of the test: unblocks the bodies left running past their timeout."""
    event = threading.Event()
    yield event
    event.set()


def attempt_errors(harness: Harness, run_id: str) -> list[tuple[str, str]]:
    """(type, message) of each failed attempt of the run, in log order."""
    return [
        (info.type.rsplit(".", 1)[-1], info.message)
        for info in (
            decode_error(e.data.error)
            for e in harness.events(run_id)
            if e.type in (EventType.STEP_RETRYING, EventType.STEP_FAILED) and e.data.error is not None
        )
    ]


def test_an_attempt_that_runs_past_its_timeout_is_retried_and_its_late_result_discarded(
    harness: Harness, release: threading.Event
) -> None:
    attempts: list[int] = []
    app = Workflows()

    @app.step(name="to.fetch", timeout="30s", max_retries=2)
    def fetch(key: str) -> str:
        attempt = get_step_metadata().attempt  # the step's context reaches the body's thread
        attempts.append(attempt)
        if attempt == 1:
            harness.clock.advance(31)  # 31 s pass while the first attempt runs ...
            release.wait()  # ... and it is still running when its caller gives up
            return "late"
        return f"{key}:fresh"

    @app.workflow(name="to.flow")
    async def flow(key: str) -> str:
        return await fetch(key)

    handle = harness.runtime_for(app).start("to.flow", "k")
    # WHEN the run settles THEN the second attempt's result is the step's
    assert harness.settle(handle) is RunStatus.COMPLETED
    assert handle.result(timeout=0) == "k:fresh"
    assert attempts == [1, 2]
    # AND the first attempt was recorded as timed out, a retry by the policy
    assert attempt_errors(harness, handle.run_id) == [
        ("StepTimeoutError", "step 'to.fetch' ran past its timeout of 30 s")
    ]
    # AND once the first body returns, nothing more is written: its late outcome is refused
    before = harness.event_types(handle.run_id)
    release.set()
    harness.settle(handle)
    assert harness.event_types(handle.run_id) == before
    assert before.count(EventType.STEP_COMPLETED) == 1


def test_an_attempt_that_returns_after_its_timeout_is_timed_out_all_the_same(harness: Harness) -> None:
    app = Workflows()

    @app.step(name="to.slow_async", timeout="10s", max_retries=1)
    async def slow(n: int) -> int:
        if get_step_metadata().attempt == 1:
            harness.clock.advance(11)  # returns, but 11 s after it began
        return n * 2

    @app.workflow(name="to.async_flow")
    async def flow(n: int) -> int:
        return await slow(n)

    handle = harness.runtime_for(app).start("to.async_flow", 21)
    assert harness.settle(handle) is RunStatus.COMPLETED and handle.result(timeout=0) == 42
    ((kind, message),) = attempt_errors(harness, handle.run_id)
    assert kind == "StepTimeoutError" and "ran past its timeout of 10 s" in message and "late" in message


def test_timeouts_that_exhaust_the_retries_fail_the_step_with_the_timeout_as_cause(harness: Harness) -> None:
    app = Workflows()

    @app.step(name="to.always_slow", timeout="1m", max_retries=1)
    def always_slow() -> str:
        harness.clock.advance(61)
        return "never recorded"

    @app.workflow(name="to.catching")
    async def catching() -> str:
        try:
            return await always_slow()
        except StepFailedError as exc:
            return f"{exc.error_type}: {exc.error_message}"

    handle = harness.runtime_for(app).start("to.catching")
    assert harness.settle(handle) is RunStatus.COMPLETED
    kind, _, message = str(handle.result(timeout=0)).partition(": ")
    assert kind == "world_aws.errors.StepTimeoutError"
    assert message == (
        "step 'to.always_slow' ran past its timeout of 60 s (it finished late; its outcome is discarded)"
    )
    types = harness.event_types(handle.run_id)
    assert (types.count(EventType.STEP_RETRYING), types.count(EventType.STEP_FAILED)) == (1, 1)


def test_a_step_that_cannot_finish_before_its_invocation_ends_is_handed_on(
    harness: Harness, release: threading.Event
) -> None:
    attempts: list[int] = []
    app = Workflows()

    @app.step(name="to.report")  # no timeout of its own: the invocation's end bounds it
    def report() -> str:
        attempts.append(get_step_metadata().attempt)
        if len(attempts) == 1:
            harness.clock.advance(20)  # the invocation has 20 s left: less the hand-off margin
            release.wait()
        return "done"

    @app.workflow(name="to.report_flow")
    async def flow() -> str:
        return await report()

    def lambda_with_20_seconds_left(delivery: Delivery, handle: MessageHandler) -> HandlerResult:
        deadline = harness.clock.now() + timedelta(seconds=20)
        return handle(dataclasses.replace(delivery, deadline=deadline))

    handle = harness.runtime_for(app).start("to.report_flow")
    # WHEN every delivery is handled by an invocation that has 20 s left
    assert harness.settle(handle, intercept=lambda_with_20_seconds_left) is RunStatus.COMPLETED
    # THEN the first attempt was handed on before the invocation ended, and the next one completed
    assert handle.result(timeout=0) == "done" and attempts == [1, 2]
    ((kind, message),) = attempt_errors(harness, handle.run_id)
    assert kind == "StepTimeoutError" and "before its invocation's time ran out" in message


def test_a_step_timeout_is_checked_when_declared() -> None:
    app = Workflows()
    with pytest.raises(BadInput, match="positive"):
        app.step(name="to.zero", timeout="0s")(lambda: None)
    with pytest.raises(BadInput, match="cannot parse duration"):
        app.step(name="to.bad", timeout="soon")(lambda: None)
    step = app.step(name="to.ok", timeout=timedelta(minutes=2))(lambda: None)
    assert step.options.timeout_seconds == 120.0
    assert issubclass(StepTimeoutError, Exception)
