"""Issue 6 (contract §3.1, §5.1): a run cancelled while 16 branches are in flight.

After ``run_cancelled`` is in the log, every claim is refused (RunExpired:
"gone", acked), so no user code starts; a branch whose body was already running
still records its outcome, which the World accepts. Shown twice: synchronously
(a body cancels the run while it runs), and with 8 consumer threads blocked in
their bodies while the test cancels.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from harness.harness import Harness
from world_aws import RunCancelledError, Workflows, get_workflow_metadata
from world_aws.client.handle import RunHandle
from world_aws.contract.records import EventType, ResolveData, RunStatus
from world_aws.contract.world import Ack, QueueName
from world_aws.errors import RunExpired
from world_aws.local.memory import MemoryWorld

# The dispatched-step path (inline execution off): what these tests are about.
pytestmark = pytest.mark.dispatched

BRANCHES = 16


@dataclass(frozen=True)
class BodyRun:
    part: int
    log_length: int  # events in the run's log when the body started
    status: RunStatus  # the run's status when the body started


def fanout_app(world: MemoryWorld, ran: list[BodyRun], body: Callable[[int], None]) -> Workflows:
    """A 16-branch fan-out whose step bodies record when they run, then call ``body(part)``."""
    app = Workflows()

    @app.step(name="cancel.part")
    def part(run_id: str, n: int) -> int:
        run = world.runs.get(run_id, resolve_data=ResolveData.NONE)
        ran.append(BodyRun(n, len(world.events.list(run_id, resolve_data=ResolveData.NONE)), run.status))
        body(n)
        return n

    @app.workflow
    async def fan() -> int:
        run_id = get_workflow_metadata().run_id
        return sum(await asyncio.gather(*(part(run_id, i) for i in range(BRANCHES))))

    return app


def cancellation_position(h: Harness, run_id: str) -> int:
    return next(e.position for e in h.events(run_id) if e.type is EventType.RUN_CANCELLED)


def assert_nothing_started_after(h: Harness, handle: RunHandle, ran: list[BodyRun]) -> None:
    cancelled_at = cancellation_position(h, handle.run_id)
    events = h.events(handle.run_id, resolve_data=ResolveData.NONE)
    assert [e for e in events if e.type is EventType.STEP_STARTED and e.position > cancelled_at] == []
    assert all(r.log_length < cancelled_at for r in ran)
    assert all(r.status is RunStatus.RUNNING for r in ran)
    assert handle.status() is RunStatus.CANCELLED


def test_cancellation_during_a_step_body_stops_every_later_claim(memory_harness: Harness) -> None:
    # GIVEN a 16-branch fan-out whose fifth body to run cancels the run while it runs
    h = memory_harness
    assert isinstance(h.world, MemoryWorld)
    ran: list[BodyRun] = []
    handles: list[RunHandle] = []

    def body(n: int) -> None:
        if len(ran) == 5:
            assert handles[0].cancel() is True

    runtime = h.runtime_for(fanout_app(h.world, ran, body))
    handles.append(runtime.start("fan"))
    handle = handles[0]
    # WHEN every message is delivered
    h.settle(handle)
    # THEN exactly five bodies ran, all before the cancellation was recorded
    assert len(ran) == 5
    assert_nothing_started_after(h, handle, ran)
    # AND the in-flight fifth branch's completion was accepted after the cancellation
    cancelled_at = cancellation_position(h, handle.run_id)
    late = [
        e for e in h.events(handle.run_id) if e.type is EventType.STEP_COMPLETED and e.position > cancelled_at
    ]
    assert len(late) == 1
    # AND the other eleven messages were acked as gone: nothing left queued or dead-lettered
    assert len(h.step_deliveries()) == BRANCHES
    assert all(isinstance(d.result, Ack) for d in h.step_deliveries())
    assert h.pending_messages(QueueName.STEP) == []
    assert h.world.memory_queue.dead_letters(QueueName.STEP) == []
    steps = h.world.steps.list(handle.run_id, resolve_data=ResolveData.NONE)
    assert sorted(s.status.value for s in steps).count("pending") == BRANCHES - 5


def test_cancellation_with_eight_branches_running_in_consumer_threads(memory_harness: Harness) -> None:
    # GIVEN 8 step consumer threads, each blocked inside a step body of a 16-branch fan-out
    h = memory_harness
    assert isinstance(h.world, MemoryWorld)
    ran: list[BodyRun] = []
    entered = threading.Semaphore(0)
    release = threading.Event()

    def body(n: int) -> None:
        entered.release()
        assert release.wait(10), "the test never released the bodies"

    runtime = h.runtime_for(fanout_app(h.world, ran, body))
    handle = runtime.start("fan")
    consumers = h.world.start_consumers(runtime.handle, workers_per_queue=8)
    try:
        for _ in range(8):
            assert entered.acquire(timeout=10), "fewer than 8 bodies started"
        # WHEN the run is cancelled while those 8 bodies run, and they are then let go
        assert handle.cancel() is True
        release.set()
        assert consumers.wait_idle(10)
    finally:
        release.set()
        consumers.stop()
    # THEN only the 8 bodies that were in flight ever ran, all before the cancellation
    assert len(ran) == 8
    assert_nothing_started_after(h, handle, ran)
    # AND their 8 completions were accepted after it; the other 8 steps never started
    cancelled_at = cancellation_position(h, handle.run_id)
    events = h.events(handle.run_id, resolve_data=ResolveData.NONE)
    late = [e for e in events if e.type is EventType.STEP_COMPLETED and e.position > cancelled_at]
    assert len(late) == 8
    assert sum(e.type is EventType.STEP_STARTED for e in events) == 8
    assert h.pending_messages(QueueName.STEP) == []
    # AND the run reads as cancelled
    with pytest.raises(RunCancelledError):
        handle.result(timeout=0)


def test_step_failing_after_its_run_was_cancelled_records_its_retry_and_never_runs_again(
    harness: Harness,
) -> None:
    # GIVEN a step whose body cancels its run, then raises (a retryable failure)
    h = harness
    ran: list[str] = []
    handles: list[RunHandle] = []
    app = Workflows()

    @app.step(name="cancel.flaky")
    def flaky() -> None:
        ran.append("flaky")
        assert handles[0].cancel() is True
        raise RuntimeError("the backend went away")

    @app.workflow
    async def once() -> None:
        await flaky()

    runtime = h.runtime_for(app)
    handles.append(runtime.start("once"))
    handle = handles[0]
    # WHEN every message is delivered, the retry's redelivery included
    assert h.settle(handle) is RunStatus.CANCELLED
    assert h.settle() is None  # until nothing is queued
    # THEN the retry was recorded after the cancellation (contract §3.1, as an outcome would be) ...
    types = h.event_types(handle.run_id)
    assert types[-2:] == [EventType.RUN_CANCELLED, EventType.STEP_RETRYING]
    [step] = h.world.steps.list(handle.run_id)
    assert (step.status.value, step.attempt) == ("pending", 1)
    # ... and the body never ran again: the retry's message met the fence and was acked as gone
    assert ran == ["flaky"]
    assert types.count(EventType.STEP_STARTED) == 1
    first, retry = h.step_deliveries()
    assert retry.message_id != first.message_id and retry.step_id == first.step_id
    assert isinstance(first.result, Ack) and isinstance(retry.result, Ack)
    claims = [c for c in h.spy.calls("events.create", delivery=retry.index)]
    assert [(c.detail.type, type(c.error)) for c in claims] == [(EventType.STEP_STARTED, RunExpired)]
