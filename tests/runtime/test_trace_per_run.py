"""Issue 15 item 3: one trace per run, its context carried by every message of the run.

The spans come from the OpenTelemetry SDK's in-memory exporter (the ``spans``
fixture); the messages are the ones the harness delivered, through the memory
World's queue or SQS on moto.
"""

from __future__ import annotations

import asyncio

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from world_aws import RetryableError, Workflows, create_hook, get_step_metadata, sleep
from world_aws.contract.payload import InvokePayload
from world_aws.contract.records import RunStatus
from world_aws.contract.world import Delivery, HandlerResult, MessageHandler, QueueName
from world_aws.observe import telemetry, tracing
from world_aws.worker.reconciler import Reconciler

from .harness import Harness
from .test_reconciler import AFTER, CONFIG, stranded_run


def traced_app() -> Workflows:
    app = Workflows()

    @app.step(name="tr.add")
    def add(x: int, n: int) -> int:
        return x + n

    @app.step(name="tr.flaky")
    def flaky(x: int) -> int:
        if get_step_metadata().attempt == 1:
            raise RetryableError("not yet", retry_after=3)
        return x * 2

    @app.workflow(name="tr.flow")
    async def flow(x: int) -> int:
        a = await add(x, 1)
        b = await add(a, 2)
        parts = await asyncio.gather(*(add(b, n) for n in range(3)))
        await sleep(30)
        return await flaky(sum(parts))

    @app.workflow(name="tr.hooked")
    async def hooked(name: str) -> str:
        hook = create_hook(token=f"tr:{name}")
        async for payload in hook:
            return str(payload)
        return ""

    return app


def of_run(spans: InMemorySpanExporter, run_id: str) -> list[ReadableSpan]:
    found = []
    for span in spans.get_finished_spans():
        if span.attributes is not None and span.attributes.get(telemetry.RUN_ID) == run_id:
            found.append(span)
    return found


def span_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return span.context.span_id


def trace_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return span.context.trace_id


def parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def named(found: list[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [s for s in found if s.name == name]


def the_root(found: list[ReadableSpan]) -> ReadableSpan:
    """The run's one parentless span (start()'s); checks the spans are one trace with no dangling parent."""
    ids = {span_id(s) for s in found}
    roots = [s for s in found if s.parent is None]
    assert [r.name for r in roots] == [tracing.START_SPAN]
    assert {trace_id(s) for s in found} == {trace_id(roots[0])}
    dangling = [s.name for s in found if s.parent is not None and parent_id(s) not in ids]
    assert dangling == []
    return roots[0]


def run_traced(harness: Harness, spans: InMemorySpanExporter) -> list[ReadableSpan]:
    """Run tr.flow to its end; its spans, checked to be one tree whose every message carried its trace."""
    runtime = harness.runtime_for(traced_app())
    handle = runtime.start("tr.flow", 1)
    assert harness.settle(handle) is RunStatus.COMPLETED
    assert handle.result() == 2 * (3 * 4 + 3)
    found = of_run(spans, handle.run_id)
    root = the_root(found)
    # the run record keeps the root's context, which every delivered message carried
    stored = tracing.run_carrier(runtime.world.runs.get(handle.run_id))
    assert stored["traceparent"].split("-")[1] == f"{trace_id(root):032x}"
    payloads = [d.payload for d in harness.deliveries if isinstance(d.payload, InvokePayload)]
    carried = {p.trace_carrier["traceparent"].split("-")[1] for p in payloads}
    assert payloads and carried == {f"{trace_id(root):032x}"}
    # the first continuation is the root's child; continuations follow the root, a step or a
    # continuation (a wake-up it scheduled); steps follow the continuation that ran or
    # dispatched them, or the inline attempt whose retry message they are
    by_id = {span_id(s): s for s in found}
    first = min(named(found, tracing.WORKFLOW_SPAN), key=lambda s: s.start_time or 0)
    assert parent_id(first) == span_id(root)
    for span in found:
        allowed = {
            tracing.WORKFLOW_SPAN: {tracing.START_SPAN, tracing.STEP_SPAN, tracing.WORKFLOW_SPAN},
            tracing.STEP_SPAN: {tracing.WORKFLOW_SPAN, tracing.STEP_SPAN},
        }.get(span.name, set())
        assert span is root or by_id[parent_id(span) or 0].name in allowed
    return found


def attr(span: ReadableSpan, name: str) -> object:
    assert span.attributes is not None
    return span.attributes.get(name)


def parent_of(found: list[ReadableSpan], span: ReadableSpan) -> ReadableSpan:
    return next(s for s in found if span_id(s) == parent_id(span))


def test_a_run_with_inline_steps_is_one_trace_with_the_parents_that_caused_it(
    harness: Harness, spans: InMemorySpanExporter
) -> None:
    # GIVEN a run with two sequential steps, a 3-way fan-out, a durable sleep and a retried step,
    # run inline (the default)
    # WHEN it runs to its end THEN its spans are one tree in one trace, rooted at start()'s span
    found = run_traced(harness, spans)
    flows = sorted(named(found, tracing.WORKFLOW_SPAN), key=lambda s: s.start_time or 0)
    steps = named(found, tracing.STEP_SPAN)
    # AND the first continuation ran the five steps before the sleep inline, each a child of its span
    inline = [s for s in steps if attr(s, telemetry.INLINE) is True]
    before_sleep = [s for s in inline if attr(s, telemetry.STEP_NAME) == "tr.add"]
    assert len(before_sleep) == 5 and {parent_id(s) for s in before_sleep} == {span_id(flows[0])}
    # AND the sleep's wake-up continuation is a child of the continuation that scheduled it
    (flaky_inline,) = [s for s in inline if attr(s, telemetry.STEP_NAME) == "tr.flaky"]
    woken = parent_of(found, flaky_inline)
    assert woken.name == tracing.WORKFLOW_SPAN and parent_id(woken) == span_id(flows[0])
    # AND the failed inline attempt's retry message made the next attempt its child
    (retried,) = [s for s in steps if attr(s, telemetry.INLINE) is None]
    assert attr(flaky_inline, telemetry.OUTCOME) == "retrying"
    assert (attr(retried, telemetry.STEP_NAME), attr(retried, telemetry.OUTCOME)) == ("tr.flaky", "completed")
    assert parent_id(retried) == span_id(flaky_inline)


@pytest.mark.dispatched
def test_a_run_with_dispatched_steps_is_one_trace_with_the_parents_that_caused_it(
    harness: Harness, spans: InMemorySpanExporter
) -> None:
    # GIVEN the same run with every step dispatched by message (inline off)
    # WHEN it runs to its end THEN its spans are one tree in one trace, rooted at start()'s span
    found = run_traced(harness, spans)
    steps, flows = named(found, tracing.STEP_SPAN), named(found, tracing.WORKFLOW_SPAN)
    assert len(steps) == 5 + 2
    # AND every step is a child of the continuation that dispatched it
    assert {parent_of(found, s).name for s in steps} == {tracing.WORKFLOW_SPAN}
    # AND later continuations follow a step (inline, the last completer) or a wake-up's scheduler
    first = min(flows, key=lambda s: s.start_time or 0)
    assert {parent_of(found, s).name for s in flows if s is not first} == {
        tracing.STEP_SPAN,
        tracing.WORKFLOW_SPAN,
    }
    # AND both attempts of the retried step hang under the same continuation
    flaky = [s for s in steps if attr(s, telemetry.STEP_NAME) == "tr.flaky"]
    assert [attr(s, telemetry.OUTCOME) for s in flaky] == ["retrying", "completed"]
    assert len({parent_id(s) for s in flaky}) == 1


def test_two_runs_get_two_traces_linked_to_the_caller_span_not_inside_it(
    harness: Harness, spans: InMemorySpanExporter
) -> None:
    # GIVEN a caller that starts two runs inside a span of its own
    runtime = harness.runtime_for(traced_app())
    with trace.get_tracer("caller").start_as_current_span("request") as caller:
        first = runtime.start("tr.flow", 1)
        second = runtime.start("tr.flow", 2)
    assert harness.settle(first) is RunStatus.COMPLETED
    assert harness.settle(second) is RunStatus.COMPLETED
    # THEN each run is a trace of its own, and neither is the caller's
    roots = [the_root(of_run(spans, h.run_id)) for h in (first, second)]
    caller_trace = caller.get_span_context().trace_id
    assert len({trace_id(r) for r in roots} | {caller_trace}) == 3
    # AND each root links back to the caller's span
    for root in roots:
        assert [link.context.span_id for link in root.links] == [caller.get_span_context().span_id]


def test_a_hook_resumed_from_another_trace_wakes_the_run_under_its_root(
    harness: Harness, spans: InMemorySpanExporter
) -> None:
    # GIVEN a run waiting on a hook
    runtime = harness.runtime_for(traced_app())
    handle = runtime.start("tr.hooked", "a")
    assert harness.settle(handle) is RunStatus.RUNNING
    # WHEN a caller resumes it from a span of an unrelated trace
    with trace.get_tracer("caller").start_as_current_span("webhook") as caller:
        runtime.resume_hook("tr:a", "signed")
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN the woken continuation is in the run's trace, a child of its root, linked to the caller
    found = of_run(spans, handle.run_id)
    root = the_root(found)
    woken = max(named(found, tracing.WORKFLOW_SPAN), key=lambda s: s.start_time or 0)
    assert parent_id(woken) == span_id(root)
    assert [link.context.span_id for link in woken.links] == [caller.get_span_context().span_id]


@pytest.mark.dispatched
def test_a_reconciler_wake_finds_the_run_root_on_the_run_record(
    harness: Harness, spans: InMemorySpanExporter
) -> None:
    # GIVEN a run stranded by a lost step message
    run_id = stranded_run(harness)
    # WHEN the reconciler wakes it (its message carries no trace context) and it completes
    harness.advance(AFTER + 1)
    (repair,) = Reconciler(harness.world, CONFIG).tick().woken
    assert repair.run_id == run_id
    assert harness.settle(run_id) is RunStatus.COMPLETED
    # THEN the reconciled continuation and what it dispatched are in the run's one trace
    found = of_run(spans, run_id)
    root = the_root(found)
    flows = sorted(named(found, tracing.WORKFLOW_SPAN), key=lambda s: s.start_time or 0)
    assert [parent_id(s) for s in flows[:2]] == [span_id(root), span_id(root)]
    assert len(named(found, tracing.STEP_SPAN)) == 2  # the first message of the first step was dropped


def test_a_host_span_around_each_delivery_is_linked_not_made_the_parent(
    memory_harness: Harness, spans: InMemorySpanExporter
) -> None:
    # GIVEN a host that wraps every delivery in a span of its own (as an instrumented Lambda does)
    host = trace.get_tracer("host")

    def in_host_span(delivery: Delivery, handle: MessageHandler) -> HandlerResult:
        with host.start_as_current_span("invocation"):
            return handle(delivery)

    runtime = memory_harness.runtime_for(traced_app())
    handle = runtime.start("tr.flow", 1)
    # WHEN the run goes through it
    assert memory_harness.settle(handle, intercept=in_host_span) is RunStatus.COMPLETED
    # THEN the run's spans are still one tree, and each delivery's span links its host span
    found = of_run(spans, handle.run_id)
    the_root(found)
    invocations = {span_id(s) for s in spans.get_finished_spans() if s.name == "invocation"}
    delivered = [s for s in found if s.name != tracing.START_SPAN and s.kind is not SpanKind.INTERNAL]
    assert len(delivered) == len(invocations)
    assert {link.context.span_id for s in delivered for link in s.links} == invocations


def test_without_an_sdk_no_message_or_run_carries_trace_context(
    memory_harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN no tracer provider (the API's no-op tracer)
    monkeypatch.setattr(telemetry, "TRACER", trace.NoOpTracer())
    runtime = memory_harness.runtime_for(traced_app())
    # WHEN a run goes through every kind of message
    handle = runtime.start("tr.flow", 1)
    assert memory_harness.settle(handle) is RunStatus.COMPLETED
    # THEN no message carried a trace carrier and the run record has no trace attributes
    payloads = [d.payload for d in memory_harness.deliveries if isinstance(d.payload, InvokePayload)]
    assert {d.queue for d in memory_harness.deliveries} == {QueueName.WORKFLOW, QueueName.STEP}
    assert [p.trace_carrier for p in payloads] == [{}] * len(payloads)
    assert runtime.world.runs.get(handle.run_id).attributes == {}
