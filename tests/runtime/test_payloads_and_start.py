"""Payload paths and resilient start (contract §5.2, §6.1, §7.3).

* inputs above 128 KiB travel by claim check (the message carries a blob
  reference), for a step and for a run's first message;
* a step always runs with the input of its committed entity, never the message's;
* ``start()`` tolerates a failed ``run_created`` (the first ``run_started``
  carries the creation data) but fails when its message cannot be published;
* a workflow message for a run that never existed is retried a few times, then
  dropped; a run cancelled before its first delivery never starts.
"""

from __future__ import annotations

import pytest

from harness.harness import Harness
from harness.spy import Call, Publish
from world_aws import Workflows
from world_aws.contract.limits import MAX_INLINE_PAYLOAD_BYTES
from world_aws.contract.payload import InlineStepInput, InvokePayload, StepInputRef
from world_aws.contract.records import EventType, RunCreatedData, RunStatus, StepCreatedData
from world_aws.contract.transport import encode_payload
from world_aws.contract.world import Ack, QueueName, Redeliver
from world_aws.errors import Transient

from .failures import fail_producer_creates

BIG = MAX_INLINE_PAYLOAD_BYTES + 70_000


def digest_app(seen: list[int]) -> Workflows:
    app = Workflows()

    @app.step(name="payload.measure")
    def measure(blob: bytes) -> int:
        seen.append(len(blob))
        return sum(blob) % 997

    @app.workflow
    async def checksum(blob: bytes) -> dict[str, int]:
        return {"local": await measure(blob[:10]), "whole": await measure(blob + b"!")}

    return app


def step_publishes(h: Harness) -> list[InvokePayload]:
    return [
        c.detail.payload
        for c in h.spy.calls("queue.publish")
        if isinstance(c.detail, Publish) and c.detail.queue is QueueName.STEP
    ]


@pytest.mark.dispatched  # about the step-message path
@pytest.mark.parametrize("create_fails", [False, True], ids=["created", "materialized"])
def test_large_inputs_travel_by_claim_check(harness: Harness, create_fails: bool) -> None:
    # GIVEN a run whose input and second step input are above the inline limit
    seen: list[int] = []
    if create_fails:  # the big step's create fails: its consumer rebuilds it from the S3 reference

        def big_create(call: Call) -> bool:
            requests = call.detail if isinstance(call.detail, list) else [call.detail]
            return any(
                getattr(r, "type", None) is EventType.STEP_CREATED
                and len(r.data.input) > MAX_INLINE_PAYLOAD_BYTES
                for r in requests
            )

        fail_producer_creates(harness, Transient("timeout"), big_create)
    runtime = harness.runtime_for(digest_app(seen))
    blob = bytes(range(256)) * (BIG // 256)
    # WHEN it runs
    handle = runtime.start("checksum", blob)
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN the steps got their whole inputs and the run its result
    assert seen == [10, len(blob) + 1]
    assert handle.result(timeout=0) == {"local": sum(blob[:10]) % 997, "whole": sum(blob + b"!") % 997}
    # AND the first workflow message and the big step's message carried references, not bytes
    first = next(
        c.detail.payload for c in harness.spy.calls("queue.publish") if c.detail.queue is QueueName.WORKFLOW
    )
    assert (
        first.run_input is not None
        and first.run_input.input is None
        and first.run_input.input_ref is not None
    )
    small, big = step_publishes(harness)
    assert isinstance(small.step_input, InlineStepInput)
    assert isinstance(big.step_input, StepInputRef) and big.step_input.size > MAX_INLINE_PAYLOAD_BYTES
    created = [e for e in harness.events(handle.run_id) if e.type is EventType.STEP_CREATED]
    assert [e.data_as(StepCreatedData).via_step_dispatch for e in created] == [False, create_fails]


def test_step_runs_with_its_committed_input_not_the_message_copy(harness: Harness) -> None:
    # GIVEN a producer whose step messages carry a forged input
    seen: list[int] = []
    app = digest_app(seen)
    forged = InlineStepInput(input=app.serializer.dumps({"args": [b"forged-forged"], "kwargs": {}}))

    def forge(queue: QueueName, payload: InvokePayload) -> InvokePayload:
        return payload.model_copy(update={"step_input": forged}) if payload.step_id else payload

    harness.spy.rewrite = forge
    runtime = harness.runtime_for(app)
    # WHEN the run settles (every step_created committed normally)
    handle = runtime.start("checksum", b"0123456789abcdef")
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN the bodies saw the inputs the steps were created with
    assert seen == [10, 17]


def test_start_survives_a_failed_run_created_and_the_first_delivery_creates_the_run(
    harness: Harness,
) -> None:
    # GIVEN run_created fails transiently at start()
    def run_created(call: Call) -> bool:
        return getattr(call.detail, "type", None) is EventType.RUN_CREATED

    harness.spy.inject("events.create", Transient("DynamoDB 500"), match=run_created)
    runtime = harness.runtime_for(digest_app([]))
    # WHEN the run is started and settles
    handle = runtime.start("checksum", b"abcdefghijkl")
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN the first run_started, carrying the creation data, created the run
    events = harness.events(handle.run_id)
    assert [e.type for e in events[:2]] == [EventType.RUN_CREATED, EventType.RUN_STARTED]
    assert (
        events[0].data_as(RunCreatedData).creation is not None
        and events[0].data_as(RunCreatedData).creation.workflow_name == "checksum"
    )
    assert handle.run().workflow_name == "checksum"


def test_start_fails_when_its_first_message_cannot_be_published(harness: Harness) -> None:
    # GIVEN the workflow queue refuses the publish
    harness.spy.inject("queue.publish", Transient("SQS 503"))
    runtime = harness.runtime_for(digest_app([]))
    # WHEN a client starts a run THEN start() raises that failure
    with pytest.raises(Transient, match="SQS 503"):
        runtime.start("checksum", b"x")


def test_workflow_message_for_a_run_that_never_existed_is_retried_then_dropped(harness: Harness) -> None:
    # GIVEN a workflow message for an unknown run, without creation data
    harness.runtime_for(digest_app([]))
    harness.world.queue.publish(QueueName.WORKFLOW, encode_payload(InvokePayload(run_id="wrun_GHOST")))
    # WHEN the queues settle
    harness.settle()
    # THEN it was redelivered a few times, then acked; no run was created
    results = [d.result for d in harness.deliveries]
    assert all(isinstance(r, Redeliver) for r in results[:-1]) and len(results) > 1
    assert isinstance(results[-1], Ack)
    assert harness.events("wrun_GHOST") == []


def test_run_cancelled_before_its_first_delivery_never_starts(harness: Harness) -> None:
    # GIVEN a run cancelled while its first message is still queued
    seen: list[int] = []
    runtime = harness.runtime_for(digest_app(seen))
    handle = runtime.start("checksum", b"abcdefghijkl")
    assert handle.status() is RunStatus.PENDING
    assert handle.cancel() is True
    # WHEN the message is delivered
    assert harness.settle(handle) is RunStatus.CANCELLED
    # THEN it was acked, the run never started, and no step ran
    assert isinstance(harness.deliveries[0].result, Ack)
    assert harness.event_types(handle.run_id) == [EventType.RUN_CREATED, EventType.RUN_CANCELLED]
    assert seen == []
