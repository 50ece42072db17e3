"""Issue 6 (contract §5.1, §5.3): the step consumer's prologue, as the spans and the World calls show it.

With ``run_context`` on the message the consumer claims without reading the run
(span ``workflow.step.dispatch_prologue = "run_context"``). A message from an
older producer has none: the consumer reads the run first (``"runs_get"``) and
acks without running anything if the run is not running. A step the consumer
had to create from its message is flagged
``workflow.step.resilient_dispatch_materialized``.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

import cbor2
import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from harness.harness import Harness
from harness.spy import Call
from world_aws import Workflows
from world_aws.contract.payload import InvokePayload
from world_aws.contract.records import EventType, RunStatus
from world_aws.contract.transport import encode_payload
from world_aws.contract.world import Ack, Delivery, HandlerResult, MessageHandler, QueueName
from world_aws.errors import Transient
from world_aws.observe import telemetry

from .failures import fail_producer_creates

# The dispatched-step path (inline execution off): what these tests are about.
pytestmark = pytest.mark.dispatched


def labels_app(printed: list[str]) -> Workflows:
    app = Workflows()

    @app.step(name="labels.render")
    def render(order_id: str, n: int) -> str:
        printed.append(f"{order_id}#{n}")
        return f"label-{n}"

    @app.workflow
    async def labels(order_id: str) -> list[str]:
        return [await render(order_id, 1), await render(order_id, 2)]

    return app


def step_spans(spans: InMemorySpanExporter) -> list[ReadableSpan]:
    return [s for s in spans.get_finished_spans() if s.name == "world_aws.step"]


def attr(span: ReadableSpan, name: str) -> object:
    assert span.attributes is not None
    return span.attributes.get(name)


def test_step_span_records_the_run_context_prologue_and_the_outcome(
    harness: Harness, spans: InMemorySpanExporter
) -> None:
    # GIVEN a two-step workflow dispatched the default way
    runtime = harness.runtime_for(labels_app([]))
    # WHEN it runs
    handle = runtime.start("labels", "o-1")
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN each step span says the run identity came from the message, nothing was materialised
    found = step_spans(spans)
    assert len(found) == 2
    step_ids = [d.step_id for d in harness.step_deliveries()]
    for span, step_id in zip(found, step_ids, strict=True):
        assert attr(span, telemetry.DISPATCH_PROLOGUE) == "run_context"
        assert attr(span, telemetry.MATERIALIZED) is False
        assert attr(span, telemetry.RUN_ID) == handle.run_id
        assert attr(span, telemetry.STEP_ID) == step_id
        assert attr(span, telemetry.STEP_NAME) == "labels.render"
        assert attr(span, telemetry.STEP_ATTEMPT) == 1
        assert attr(span, telemetry.OUTCOME) == "completed"
    # AND no step delivery read the run before its claim
    for delivery in harness.step_deliveries():
        ops = [c.op for c in harness.spy.calls(delivery=delivery.index)]
        assert "runs.get" not in ops[: ops.index("events.create")]


def test_step_created_by_its_consumer_is_flagged_materialized_on_the_span(
    harness: Harness, spans: InMemorySpanExporter
) -> None:
    # GIVEN the producer's step_created of the first step fails transiently
    def first_create(call: Call) -> bool:
        requests = call.detail if isinstance(call.detail, list) else [call.detail]
        return any(getattr(r, "type", None) is EventType.STEP_CREATED for r in requests)

    fail_producer_creates(harness, Transient("timeout"), first_create)
    runtime = harness.runtime_for(labels_app([]))
    # WHEN the run settles
    handle = runtime.start("labels", "o-2")
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN the first step's span says its consumer created it; the second's does not
    first, second = step_spans(spans)
    assert attr(first, telemetry.MATERIALIZED) is True
    assert attr(second, telemetry.MATERIALIZED) is False
    assert attr(first, telemetry.OUTCOME) == "completed"


def without_run_context(queue: QueueName, payload: InvokePayload) -> InvokePayload:
    """What an older producer publishes: step messages without run_context."""
    if queue is QueueName.STEP:
        return payload.model_copy(update={"run_context": None})
    return payload


def test_step_message_without_run_context_reads_the_run_before_its_claim(
    harness: Harness, spans: InMemorySpanExporter
) -> None:
    # GIVEN an older producer that sends no run_context
    printed: list[str] = []
    harness.spy.rewrite = without_run_context
    runtime = harness.runtime_for(labels_app(printed))
    # WHEN the run settles
    handle = runtime.start("labels", "o-3")
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN it completed as usual, each step read the run (without payloads) before claiming
    assert handle.result(timeout=0) == ["label-1", "label-2"]
    assert printed == ["o-3#1", "o-3#2"]
    for delivery in harness.step_deliveries():
        assert isinstance(delivery.payload, InvokePayload) and delivery.payload.run_context is None
        ops = [c.op for c in harness.spy.calls(delivery=delivery.index)]
        assert ops[0] == "runs.get"
    assert [attr(s, telemetry.DISPATCH_PROLOGUE) for s in step_spans(spans)] == ["runs_get", "runs_get"]


def without_optional_identity(delivery: Delivery, handle_message: MessageHandler) -> HandlerResult:
    """Deliver step messages as a producer that stamps only deployment_id and spec_version would send them."""
    if delivery.queue is QueueName.STEP:
        message = cbor2.loads(delivery.body)
        for name in ("started_at", "root_run_id"):
            del message["run_context"][name]
        delivery = replace(delivery, body=cbor2.dumps(message))
    return handle_message(delivery)


def test_step_message_whose_run_context_lacks_started_at_and_root_run_id_still_skips_the_run_read(
    harness: Harness, spans: InMemorySpanExporter
) -> None:
    # GIVEN step messages whose run_context carries only deployment_id and spec_version
    printed: list[str] = []
    runtime = harness.runtime_for(labels_app(printed))
    # WHEN the run settles
    handle = runtime.start("labels", "o-5")
    assert harness.settle(handle, intercept=without_optional_identity) is RunStatus.COMPLETED
    # THEN each step ran once, parsed and claimed without a run read (what it carries suffices)
    assert handle.result(timeout=0) == ["label-1", "label-2"]
    assert printed == ["o-5#1", "o-5#2"]
    for delivery in harness.step_deliveries():
        ops = [c.op for c in harness.spy.calls(delivery=delivery.index)]
        assert "runs.get" not in ops[: ops.index("events.create")]
    assert [attr(s, telemetry.DISPATCH_PROLOGUE) for s in step_spans(spans)] == ["run_context"] * 2


def test_legacy_step_message_for_a_finished_run_is_acked_without_running_the_step(
    harness: Harness, spans: InMemorySpanExporter
) -> None:
    # GIVEN a run whose first step was created, and which was then cancelled
    printed: list[str] = []
    runtime = harness.runtime_for(labels_app(printed))
    handle = runtime.start("labels", "o-4")
    harness.drain(queues=[QueueName.WORKFLOW])
    [step] = harness.world.steps.list(handle.run_id)
    assert handle.cancel() is True
    log = harness.event_types(handle.run_id)
    # AND a step message for it in the old format: no run_context, no step_input
    legacy = InvokePayload(run_id=handle.run_id, step_id=step.step_id, step_name=step.step_name)
    harness.world.queue.publish(QueueName.STEP, encode_payload(legacy))
    # WHEN the step queue is delivered
    harness.drain(queues=[QueueName.STEP])
    # THEN both messages were acked, no user code ran, nothing was written
    deliveries = harness.step_deliveries()
    assert len(deliveries) == 2
    assert all(isinstance(d.result, Ack) for d in deliveries)
    assert printed == []
    assert harness.event_types(handle.run_id) == log
    # AND the legacy delivery only read the run; the current one tried its claim and was refused
    by_prologue = {attr(s, telemetry.DISPATCH_PROLOGUE): s for s in step_spans(spans)}
    assert attr(by_prologue["runs_get"], telemetry.OUTCOME) == "gone"
    assert attr(by_prologue["run_context"], telemetry.OUTCOME) == "gone"
    legacy_delivery = next(
        d for d in deliveries if isinstance(d.payload, InvokePayload) and d.payload.run_context is None
    )
    assert [c.op for c in harness.spy.calls(delivery=legacy_delivery.index)] == ["runs.get"]


def test_step_spans_say_what_the_last_completer_check_decided(
    harness: Harness, spans: InMemorySpanExporter
) -> None:
    # GIVEN a workflow that fans out to three steps
    app = Workflows()

    @app.step()
    async def part(i: int) -> int:
        return i

    @app.workflow()
    async def fan(n: int) -> int:
        return sum(await asyncio.gather(*(part(i) for i in range(n))))

    runtime = harness.runtime_for(app)
    # WHEN the run settles, one delivery at a time
    handle = runtime.start("fan", 3)
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN two branches saw others pending and the last claimed the continuation
    decided = [attr(s, telemetry.CONTINUATION) for s in step_spans(spans)]
    assert sorted(map(str, decided)) == ["claimed", "others_pending", "others_pending"]
