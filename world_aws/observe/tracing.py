"""One trace per run: W3C trace context carried by every message of a run.

``start()`` opens the run's root span (``world_aws.start``, a new trace, linked to
the caller's span if there is one) and stores its context twice: in the first
workflow message's ``trace_carrier`` and on the run record, as the run attributes
``$traceparent`` (and ``$tracestate``). Every message a span of the run publishes
carries that span's context (:func:`current_carrier`), so:

* a step delivery's span (``world_aws.step``) is a child of the continuation that
  dispatched the step; its retries and re-routes copy the message, so every
  attempt is a sibling under the same continuation; a step run inline is a
  ``world_aws.step`` span (``workflow.step.inline``) inside the continuation's, and
  the message of its retry carries the failed attempt's span;
* a continuation's span (``world_aws.workflow``) is a child of what woke it: the
  root (first message), the workflow span that scheduled a wait's wake-up, or the
  last completer's step span (inline continuation);
* a hop without the run's context, because it was built from durable state (the
  reconciler's wake, a hook resumed by a caller outside the run's trace, a message
  of an older producer), is parented at the root read from the run record, and
  keeps a link to the foreign context it came with.

The carrier is always W3C ``traceparent``/``tracestate``, whatever propagator the
host configured, since it is part of the message format. Without an SDK every
span is the API's no-op span, whose context is invalid unless a parent's was:
no carrier is written, messages and runs keep their size, and the work per
message is a few dictionary lookups (ARCHITECTURE §5 has the measurement).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import INVALID_SPAN_CONTEXT, Link, NonRecordingSpan, Span, SpanContext, SpanKind
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from world_aws.contract.records import EventType, Run, Step
from world_aws.observe import telemetry

W3C = TraceContextTextMapPropagator()
# The run's root context on the run record (a "$" key: world-aws's own, like "$root_run_id").
RUN_ATTRIBUTES = {"traceparent": "$traceparent", "tracestate": "$tracestate"}

START_SPAN = "world_aws.start"
WORKFLOW_SPAN = "world_aws.workflow"
STEP_SPAN = "world_aws.step"


def current_carrier() -> dict[str, str]:
    """The W3C carrier of the current span; empty when it has no valid context (no SDK)."""
    carrier: dict[str, str] = {}
    W3C.inject(carrier)
    return carrier


def run_attributes(carrier: Mapping[str, str]) -> dict[str, str]:
    """The run attributes that keep ``carrier`` on the run record."""
    return {RUN_ATTRIBUTES[k]: v for k, v in carrier.items() if k in RUN_ATTRIBUTES}


def run_carrier(run: Run) -> dict[str, str]:
    """The root context ``start()`` stored on ``run`` (empty if it stored none)."""
    return {k: run.attributes[a] for k, a in RUN_ATTRIBUTES.items() if a in run.attributes}


@contextmanager
def start_span(run_id: str, workflow_name: str) -> Iterator[Span]:
    """The root span of a new run: a trace of its own, linked to the caller's current span."""
    caller = trace.get_current_span().get_span_context()
    with telemetry.TRACER.start_as_current_span(
        START_SPAN,
        context=Context(),
        kind=SpanKind.PRODUCER,
        links=[Link(caller)] if caller.is_valid else None,
        attributes={telemetry.RUN_ID: run_id, telemetry.WORKFLOW_NAME: workflow_name},
    ) as span:
        yield span


@contextmanager
def step_span(carrier: Mapping[str, str], attributes: dict[str, str]) -> Iterator[Span]:
    """The span of one step delivery, a child of the context its message carries."""
    parent, links = _parent(_span_context(carrier), INVALID_SPAN_CONTEXT)
    with telemetry.TRACER.start_as_current_span(
        STEP_SPAN, context=parent, kind=SpanKind.CONSUMER, links=links, attributes=attributes
    ) as span:
        yield span


@contextmanager
def inline_step_span(step: Step) -> Iterator[Span]:
    """The span of one inline attempt of ``step``: a child of the continuation running it."""
    attributes: dict[str, str | int | bool] = {
        telemetry.RUN_ID: step.run_id,
        telemetry.STEP_ID: step.step_id,
        telemetry.STEP_NAME: step.step_name,
        telemetry.STEP_ATTEMPT: step.attempt,
        telemetry.INLINE: True,
    }
    with telemetry.TRACER.start_as_current_span(
        STEP_SPAN, kind=SpanKind.INTERNAL, attributes=attributes
    ) as span:
        yield span


def record_step_outcome(etype: EventType) -> None:
    """Name the outcome of the current inline attempt on its span: completed, failed or retrying."""
    label = {EventType.STEP_COMPLETED: "completed", EventType.STEP_FAILED: "failed"}.get(etype, "retrying")
    trace.get_current_span().set_attribute(telemetry.OUTCOME, label)


@contextmanager
def workflow_span(run: Run, carrier: Mapping[str, str] | None) -> Iterator[Span]:
    """The span of one continuation of ``run``.

    Args:
        run: the run (its record holds the root context).
        carrier: the context the workflow message carried; None for an inline
            continuation, whose parent is the current span.
    """
    given = _span_context(carrier) if carrier is not None else trace.get_current_span().get_span_context()
    parent, links = _parent(given, _span_context(run_carrier(run)))
    attributes = {telemetry.RUN_ID: run.run_id, telemetry.WORKFLOW_NAME: run.workflow_name}
    kind = SpanKind.CONSUMER if carrier is not None else SpanKind.INTERNAL
    with telemetry.TRACER.start_as_current_span(
        WORKFLOW_SPAN, context=parent, kind=kind, links=links, attributes=attributes
    ) as span:
        yield span


def _span_context(carrier: Mapping[str, str]) -> SpanContext:
    if not carrier:
        return INVALID_SPAN_CONTEXT
    return trace.get_current_span(W3C.extract(carrier)).get_span_context()


def _parent(given: SpanContext, root: SpanContext) -> tuple[Context | None, list[Link] | None]:
    """The parent context of a span, and its links.

    ``given`` is the parent if it is in the run's trace (or the run's trace is not
    known); otherwise the root is, linked to ``given`` and to the ambient span (a
    host's invocation span, say) if they are valid and of another trace. Neither
    known: None, the ambient context, as a span without world-aws context gets.
    """
    if root.is_valid and not (given.is_valid and given.trace_id == root.trace_id):
        chosen = root
    elif given.is_valid:
        chosen = given
    else:
        return None, None
    ambient = trace.get_current_span().get_span_context()
    links: list[Link] = []
    for other in (given, ambient):
        foreign = other.is_valid and other.trace_id != chosen.trace_id
        if foreign and all(link.context.span_id != other.span_id for link in links):
            links.append(Link(other))
    return trace.set_span_in_context(NonRecordingSpan(chosen)), links or None
