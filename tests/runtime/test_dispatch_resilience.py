"""Issue 6 (contract §5.2): resilient step dispatch when a create or a publish fails, and redeliveries.

The producer writes ``step_created`` and publishes the step message in parallel,
the message carrying the input. A create that fails transiently is fine: the
consumer that finds no step (NotFound on its claim) creates it from the message,
flagged ``via_step_dispatch``, and runs it in the same delivery. A publish that
fails fails the pass; the redelivered workflow message redoes it without
duplicating any step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from harness.harness import Harness
from harness.spy import Call, Publish
from world_aws import RuntimeConfig, Workflows
from world_aws.contract.payload import InlineStepInput, InvokePayload
from world_aws.contract.records import EventType, RunStatus, StepCreatedData, StepStatus
from world_aws.contract.transport import decode_payload, encode_payload
from world_aws.contract.world import (
    Ack,
    Delivery,
    ForwardingWorld,
    HandlerResult,
    MessageHandler,
    QueueName,
    Redeliver,
    WorldCapabilities,
)
from world_aws.errors import Conflict, RetryLater, Throttled, Transient

from .failures import fail_producer_creates

# The dispatched-step path (inline execution off): what these tests are about.
pytestmark = pytest.mark.dispatched

MODES = {
    "resilient": RuntimeConfig(max_inline_steps=0, resilient_step_dispatch=True),
    "sequential": RuntimeConfig(max_inline_steps=0, resilient_step_dispatch=False),
}


def pipeline_app(ran: list[str]) -> Workflows:
    app = Workflows()

    @app.step(name="pipeline.extract")
    def extract(source: str) -> list[int]:
        ran.append("extract")
        return [3, 1, 2]

    @app.step(name="pipeline.transform")
    def transform(rows: list[int]) -> list[int]:
        ran.append("transform")
        return sorted(rows)

    @app.step(name="pipeline.load")
    def load(rows: list[int]) -> int:
        ran.append("load")
        return len(rows)

    @app.workflow
    async def etl(source: str) -> int:
        return await load(await transform(await extract(source)))

    return app


def is_create_of(step_name: str) -> Callable[[Call], bool]:
    def match(call: Call) -> bool:
        # events.create of it, or an events.append_after that holds it
        requests = call.detail if isinstance(call.detail, list) else [call.detail]
        return any(
            getattr(r, "type", None) is EventType.STEP_CREATED and r.data.step_name == step_name
            for r in requests
        )

    return match


@pytest.mark.parametrize("error", [Transient("DynamoDB 500"), Throttled("slow down", retry_after=2)])
def test_step_message_that_beats_its_create_runs_in_the_same_delivery(
    harness: Harness, error: RetryLater
) -> None:
    # GIVEN the producer's step_created of "transform" fails transiently while its publish succeeds
    ran: list[str] = []
    fail_producer_creates(harness, error, is_create_of("pipeline.transform"))
    runtime = harness.runtime_for(pipeline_app(ran))
    # WHEN the run settles
    handle = runtime.start("etl", "s3://bucket/rows")
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN the run completed, each step ran once, and no step message was redelivered
    assert handle.result(timeout=0) == 3
    assert ran == ["extract", "transform", "load"]
    assert [d.attempt for d in harness.step_deliveries()] == [1, 1, 1]
    assert all(isinstance(d.result, Ack) for d in harness.step_deliveries())
    # AND "transform" was created exactly once, by its consumer, from the message
    events = harness.events(handle.run_id)
    creates = [e for e in events if e.type is EventType.STEP_CREATED]
    assert [(e.data.step_name, e.data_as(StepCreatedData).via_step_dispatch) for e in creates] == [
        ("pipeline.extract", False),
        ("pipeline.transform", True),
        ("pipeline.load", False),
    ]
    transform_delivery = next(d for d in harness.step_deliveries() if d.step_id == creates[1].correlation_id)
    made_by = [
        c
        for c in harness.spy.calls(delivery=transform_delivery.index)
        if is_create_of("pipeline.transform")(c)
    ]
    assert len(made_by) == 1 and made_by[0].error is None


@pytest.mark.parametrize("mode", list(MODES))
def test_failed_step_publish_fails_the_pass_and_its_redelivery_completes_without_duplicates(
    harness: Harness, mode: str
) -> None:
    # GIVEN the first step-queue publish fails
    ran: list[str] = []

    def first_step_publish(call: Call) -> bool:
        return isinstance(call.detail, Publish) and call.detail.queue is QueueName.STEP

    harness.spy.inject("queue.publish", Transient("SQS 503"), match=first_step_publish)
    runtime = harness.runtime_for(pipeline_app(ran), MODES[mode])
    # WHEN the run settles
    handle = runtime.start("etl", "s3://bucket/rows")
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN the first workflow pass raised (its message was redelivered) ...
    workflow = [d for d in harness.deliveries if d.queue is QueueName.WORKFLOW]
    assert isinstance(workflow[0].error, Transient)
    assert workflow[1].message_id == workflow[0].message_id
    assert workflow[1].attempt == 2
    assert workflow[1].error is None
    # ... and every step was created, started and completed exactly once
    assert handle.result(timeout=0) == 3
    assert ran == ["extract", "transform", "load"]
    events = harness.events(handle.run_id)
    for etype in (EventType.STEP_CREATED, EventType.STEP_STARTED, EventType.STEP_COMPLETED):
        ids = [e.correlation_id for e in events if e.type is etype]
        assert len(ids) == len(set(ids)) == 3, etype


def test_redelivered_message_of_a_completed_step_is_skipped(harness: Harness) -> None:
    # GIVEN the ack of the first step's delivery is lost after the step completed
    ran: list[str] = []
    runtime = harness.runtime_for(pipeline_app(ran))
    lost: list[str] = []

    def lose_first_step_ack(delivery: Delivery, handle_message: MessageHandler) -> HandlerResult:
        result = handle_message(delivery)
        if delivery.queue is QueueName.STEP and not lost:
            lost.append(delivery.message_id)
            raise ConnectionError("the ack never reached the queue")
        return result

    # WHEN the run settles, the first step's message coming back
    handle = runtime.start("etl", "s3://bucket/rows")
    assert harness.settle(handle, intercept=lose_first_step_ack) is RunStatus.COMPLETED
    # THEN the redelivery was acked without running the body again
    again = [d for d in harness.step_deliveries() if d.message_id == lost[0]]
    assert [d.attempt for d in again] == [1, 2]
    assert isinstance(again[1].result, Ack)
    assert ran == ["extract", "transform", "load"]
    types = harness.event_types(handle.run_id)
    assert types.count(EventType.STEP_STARTED) == 3
    claims = [c for c in harness.spy.calls("events.create", delivery=again[1].index)]
    assert [getattr(c.detail, "type", None) for c in claims] == [
        EventType.STEP_CREATED,
        EventType.STEP_STARTED,
    ]
    assert all(c.error is not None for c in claims)  # re-ensure: Conflict; claim: Conflict (terminal step)


def test_sequential_dispatch_creates_the_step_before_publishing_a_message_without_input(
    harness: Harness,
) -> None:
    # GIVEN resilient dispatch switched off
    ran: list[str] = []
    runtime = harness.runtime_for(pipeline_app(ran), MODES["sequential"])
    # WHEN the run settles
    handle = runtime.start("etl", "s3://bucket/rows")
    assert harness.settle(handle) is RunStatus.COMPLETED
    assert handle.result(timeout=0) == 3
    # THEN every step was dispatched sequentially
    assert_dispatched_sequentially(harness, steps=3)


def assert_dispatched_sequentially(harness: Harness, *, steps: int) -> None:
    """Every step message carried run_context but no step_input, published after its create committed."""
    publishes = [c for c in harness.spy.calls("queue.publish") if c.detail.queue is QueueName.STEP]
    assert len(publishes) == steps
    for publish in publishes:
        assert publish.detail.payload.step_input is None
        assert publish.detail.payload.run_context is not None
        step_id = publish.detail.payload.step_id
        created = [  # one by one, or in an append of a pass's creates
            c
            for c in [*harness.spy.calls("events.create"), *harness.spy.calls("events.append_after")]
            if any(
                getattr(r, "type", None) is EventType.STEP_CREATED and r.correlation_id == step_id
                for r in (c.detail if isinstance(c.detail, list) else [c.detail])
            )
        ]
        assert len(created) == 1 and created[0].error is None
        assert created[0].end < publish.start


class GuardedWorld(ForwardingWorld):
    """The spied World, declaring a stale-write precondition guard on ``step_created``."""

    @property
    def capabilities(self) -> WorldCapabilities:
        return replace(self.inner.capabilities, precondition_guard=True)


def test_world_with_a_precondition_guard_keeps_sequential_dispatch_with_the_switch_on(
    harness: Harness,
) -> None:
    # GIVEN resilient dispatch switched on, over a World that declares a precondition guard
    ran: list[str] = []
    runtime = harness.runtime_for(pipeline_app(ran), MODES["resilient"], world=GuardedWorld(harness.spy))
    # WHEN the run settles
    handle = runtime.start("etl", "s3://bucket/rows")
    assert harness.settle(handle) is RunStatus.COMPLETED
    assert handle.result(timeout=0) == 3
    # THEN every step was dispatched sequentially all the same (contract §5.2)
    assert_dispatched_sequentially(harness, steps=3)
    assert ran == ["extract", "transform", "load"]


def test_resilient_dispatch_messages_carry_the_step_input(harness: Harness) -> None:
    # GIVEN the default (resilient) dispatch
    runtime = harness.runtime_for(pipeline_app([]))
    # WHEN the run settles
    handle = runtime.start("etl", "s3://bucket/rows")
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN each step message carried exactly the input its step was created with
    inputs = {
        e.correlation_id: e.data_as(StepCreatedData).input
        for e in harness.events(handle.run_id)
        if e.type is EventType.STEP_CREATED
    }
    publishes = [
        c.detail.payload for c in harness.spy.calls("queue.publish") if c.detail.queue is QueueName.STEP
    ]
    assert len(publishes) == 3
    for payload in publishes:
        assert isinstance(payload.step_input, InlineStepInput)
        assert payload.step_input.input == inputs[payload.step_id]


def test_consumer_that_cannot_create_the_missing_step_redelivers_instead_of_running_it(
    harness: Harness,
) -> None:
    # GIVEN the producer's create of "transform" (appended, then one by one) and its
    # consumer's first re-create all fail
    ran: list[str] = []
    harness.spy.inject(
        "events.append_after", Transient("DynamoDB 500"), match=is_create_of("pipeline.transform")
    )
    harness.spy.inject(
        "events.create", Transient("DynamoDB 500"), match=is_create_of("pipeline.transform"), times=2
    )
    runtime = harness.runtime_for(pipeline_app(ran))
    # WHEN the run settles
    handle = runtime.start("etl", "s3://bucket/rows")
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN the first delivery raised without running the body; the redelivery created and ran it
    deliveries = [
        d for d in harness.step_deliveries() if d.payload and d.payload.step_name == "pipeline.transform"
    ]
    assert [d.attempt for d in deliveries] == [1, 2]
    assert isinstance(deliveries[0].error, Transient)
    assert ran == ["extract", "transform", "load"]
    created = [e for e in harness.events(handle.run_id) if e.type is EventType.STEP_CREATED]
    assert [e.data_as(StepCreatedData).via_step_dispatch for e in created] == [False, True, False]


def test_sequential_dispatch_redoes_the_pass_when_a_create_fails(harness: Harness) -> None:
    # GIVEN sequential dispatch, and the first create of "transform" failing transiently
    ran: list[str] = []
    fail_producer_creates(harness, Transient("DynamoDB 500"), is_create_of("pipeline.transform"))
    runtime = harness.runtime_for(pipeline_app(ran), MODES["sequential"])
    # WHEN the run settles
    handle = runtime.start("etl", "s3://bucket/rows")
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN the inline continuation that failed (in extract's delivery) published no step
    # message, only a wake-up for the workflow queue, which redid the pass
    assert ran == ["extract", "transform", "load"]
    extract = harness.step_deliveries()[0]
    published = [
        c.detail.queue for c in harness.spy.calls("queue.publish", delivery=extract.index) if c.error is None
    ]
    assert published == [QueueName.WORKFLOW]
    assert isinstance(extract.result, Ack)
    redo = next(d for d in harness.deliveries if d.index > extract.index and d.queue is QueueName.WORKFLOW)
    assert [
        c.detail.payload.step_name
        for c in harness.spy.calls("queue.publish", delivery=redo.index)
        if c.detail.queue is QueueName.STEP
    ] == ["pipeline.transform"]
    assert harness.event_types(handle.run_id).count(EventType.STEP_CREATED) == 3


@pytest.mark.parametrize("op", ["steps.any_pending", "runs.claim_continuation"])
def test_failed_last_completer_check_does_not_strand_the_run(harness: Harness, op: str) -> None:
    # GIVEN the last-completer check after the first step fails once (its read of steps or run)
    ran: list[str] = []
    harness.spy.inject(op, Transient("DynamoDB 500"), match=lambda call: call.delivery is not None)
    runtime = harness.runtime_for(pipeline_app(ran))
    # WHEN the run settles
    handle = runtime.start("etl", "s3://bucket/rows")
    # THEN the run still completes, each step once
    assert harness.settle(handle) is RunStatus.COMPLETED
    assert handle.result(timeout=0) == 3
    assert ran == ["extract", "transform", "load"]


def test_last_completer_whose_claim_landed_unanswered_still_continues_the_run(harness: Harness) -> None:
    # GIVEN the first step's continuation claim is written, but its caller sees a timeout
    # (the delivery fails after the claim; no other branch can continue this wave)
    ran: list[str] = []
    harness.spy.inject(
        "runs.claim_continuation",
        Transient("timeout after the write"),
        match=lambda call: call.delivery is not None,
        after=True,
    )
    runtime = harness.runtime_for(pipeline_app(ran))
    # WHEN the run settles
    handle = runtime.start("etl", "s3://bucket/rows")
    # THEN the redelivery finds its step finished, continues anyway, and the run completes
    assert harness.settle(handle) is RunStatus.COMPLETED
    assert handle.result(timeout=0) == 3
    assert ran == ["extract", "transform", "load"]
    claims = harness.spy.calls("runs.claim_continuation")
    assert claims[0].error is not None and claims[0].result is not None


def test_stale_message_naming_another_step_under_the_same_id_is_skipped_without_running(
    harness: Harness,
) -> None:
    # GIVEN a run whose first step ("extract") is created and queued, not yet delivered
    ran: list[str] = []
    runtime = harness.runtime_for(pipeline_app(ran))
    handle = runtime.start("etl", "s3://bucket/rows")
    harness.drain(queues=[QueueName.WORKFLOW])
    [step] = harness.world.steps.list(handle.run_id)
    [queued] = [
        c.detail.payload for c in harness.spy.calls("queue.publish") if c.detail.queue is QueueName.STEP
    ]
    # AND a stale message for the same step id naming another step (a corrected replay reused the id)
    stale = queued.model_copy(
        update={"step_name": "pipeline.load", "step_input": InlineStepInput(input=b"stale input")}
    )
    harness.world.queue.publish(QueueName.STEP, encode_payload(stale))

    def stale_only(delivery: Delivery, handle_message: MessageHandler) -> HandlerResult:
        payload = decode_payload(delivery.body)
        if isinstance(payload, InvokePayload) and payload.step_name == step.step_name:
            return Redeliver(600)  # the step's own message waits until the stale one is done
        return handle_message(delivery)

    # WHEN the stale message is delivered
    harness.drain(queues=[QueueName.STEP], intercept=stale_only)
    # THEN its claim was refused (Conflict), it was acked as skipped, and no body ran
    [claim] = [
        c
        for c in harness.spy.calls("events.create")
        if getattr(c.detail, "type", None) is EventType.STEP_STARTED
    ]
    assert isinstance(claim.error, Conflict)
    [delivered] = [d for d in harness.step_deliveries() if d.payload == stale]
    assert isinstance(delivered.result, Ack)
    assert ran == []
    claimed = harness.world.steps.get(handle.run_id, step.step_id)
    assert (claimed.status, claimed.attempt, claimed.step_name) == (StepStatus.PENDING, 0, "pipeline.extract")
    # AND the step's own message then runs the workflow to completion, each step once
    assert harness.settle(handle) is RunStatus.COMPLETED
    assert ran == ["extract", "transform", "load"]
    assert harness.event_types(handle.run_id).count(EventType.STEP_STARTED) == 3
