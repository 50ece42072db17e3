"""A misconfiguration (``Misconfigured``) is never tolerated like a transient failure nor taken for absence.

Resilient dispatch tolerates a ``step_created`` that fails transiently (the
consumer creates the step from its message) and resilient start tolerates a
``run_created`` that does; a missing table is neither: the pass fails, the
delivery is redelivered, and the run resumes once the fault is gone. An inline
continuation that meets one hands the pass to a workflow message, as for any
failure. The faults are injected at the World's seam (``SpyWorld``), so both
Worlds run the same scenarios.
"""

from __future__ import annotations

import logging

import pytest

from harness.harness import Harness
from harness.spy import Call, Publish
from world_aws.contract.records import EventType, RunStatus
from world_aws.contract.world import Ack, QueueName
from world_aws.errors import Misconfigured
from world_aws.local.memory import create_memory_world

from .test_dispatch_resilience import is_create_of, pipeline_app


def missing_table() -> Misconfigured:
    return Misconfigured(
        "misconfigured: table wf-typo does not exist", resource="table wf-typo", operation="DynamoDB X"
    )


def test_misconfigured_step_create_fails_the_pass_and_the_run_completes_once_fixed(harness: Harness) -> None:
    # GIVEN the workflow pass's step_created of "extract" meets a missing table (its publish succeeds)
    ran: list[str] = []
    faults = [
        harness.spy.inject(op, missing_table(), match=is_create_of("pipeline.extract"))
        for op in ("events.create", "events.append_after")
    ]
    runtime = harness.runtime_for(pipeline_app(ran))
    # WHEN the run settles
    handle = runtime.start("etl", "s3://bucket/rows")
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN the workflow delivery whose pass met it raised (it was redelivered, not acked) ...
    (failed_create,) = [c for c in harness.spy.calls() if isinstance(c.error, Misconfigured)]
    assert failed_create.delivery is not None and sum(f.fired for f in faults) == 1
    met = harness.deliveries[failed_create.delivery]
    assert met.queue is QueueName.WORKFLOW
    assert isinstance(met.error, Misconfigured) and met.result is None
    again = [d for d in harness.deliveries if d.message_id == met.message_id]
    assert [d.attempt for d in again] == [1, 2] and isinstance(again[1].result, Ack)
    # ... and the run completed with each body run once and each step created once
    assert handle.result(timeout=0) == 3
    assert ran == ["extract", "transform", "load"]
    created = [e.correlation_id for e in harness.events(handle.run_id) if e.type is EventType.STEP_CREATED]
    assert len(created) == len(set(created)) == 3


@pytest.mark.dispatched  # about the step-message path
def test_misconfigured_inline_continuation_hands_the_run_on_to_a_workflow_message(harness: Harness) -> None:
    # GIVEN the continuation after "extract" (inline, in its step delivery) cannot publish: missing queue
    ran: list[str] = []

    def transform_message(call: Call) -> bool:
        detail = call.detail
        return isinstance(detail, Publish) and detail.payload.step_name == "pipeline.transform"

    harness.spy.inject("queue.publish", missing_table(), match=transform_message)
    runtime = harness.runtime_for(pipeline_app(ran))
    # WHEN the run settles
    handle = runtime.start("etl", "s3://bucket/rows")
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN the step delivery acked only once a workflow message owned the rest of the pass
    (extract, *_) = harness.step_deliveries()
    assert isinstance(extract.result, Ack)
    wakes = [
        c
        for c in harness.spy.calls("queue.publish")
        if c.delivery == extract.index and c.detail.queue is QueueName.WORKFLOW
    ]
    assert len(wakes) == 1 and wakes[0].error is None
    # AND that message dispatched the step: the run completed, each body run once
    assert handle.result(timeout=0) == 3 and ran == ["extract", "transform", "load"]


def test_start_fails_when_run_created_meets_a_misconfiguration(harness: Harness) -> None:
    # GIVEN run_created meets a missing table (a transient failure there would be tolerated)
    harness.spy.inject(
        "events.create",
        missing_table(),
        match=lambda c: getattr(c.detail, "type", None) is EventType.RUN_CREATED,
    )
    runtime = harness.runtime_for(pipeline_app([]))
    # WHEN a run is started THEN the caller gets the misconfiguration, naming the table
    with pytest.raises(Misconfigured, match="wf-typo"):
        runtime.start("etl", "s3://bucket/rows")


def test_memory_consumer_logs_one_error_line_and_redelivers(caplog: pytest.LogCaptureFixture) -> None:
    # GIVEN a queued message and a handler that meets a misconfiguration
    world = create_memory_world()
    queue = world.memory_queue
    queue.publish(QueueName.WORKFLOW, b"\xa0")

    def handler(_delivery: object) -> Ack:
        raise missing_table()

    # WHEN it is delivered
    message = queue.claim([QueueName.WORKFLOW])
    assert message is not None
    queue.deliver(message, handler)
    # THEN one error line names the resource, without a traceback, and the message is queued again
    (record,) = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert "table wf-typo" in record.getMessage() and not record.exc_info
    (pending,) = queue.pending(QueueName.WORKFLOW)
    assert pending.message_id == message.message_id
    world.close()
