"""Fixtures of the runtime scenario suite.

* ``harness``: a :class:`Harness` over every World that can run scenarios
  ("memory" always, "aws" when ``world_aws.testing.aws_factory`` exists), on a
  fresh ``ManualClock``. Scenarios whose timing rests on queue delays (sleeps,
  retries after N seconds, deployment re-routes) use ``memory_harness``: moto
  honours SQS ``DelaySeconds`` in wall-clock time, which a manual clock cannot move.
* ``memory_harness``: the same over the in-memory World only (also for tests that
  read ``MemoryWorld.stats`` or the memory queue's pending messages).
* ``spans``: the OpenTelemetry spans finished during the test.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import ExitStack

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from harness.harness import Harness, MemoryPump
from harness.harness import memory_harness as fresh_memory_harness
from world_aws.contract.clock import ManualClock
from world_aws.local.memory import MemoryWorld, create_memory_world
from world_aws.testing.factories import world_factories
from world_aws.worker.config import RuntimeConfig


def _kinds() -> list[str]:
    return [kind for kind in world_factories() if kind in ("memory", "aws")]


DISPATCHED = RuntimeConfig(max_inline_steps=0)


def _configure(built: Harness, request: pytest.FixtureRequest) -> Harness:
    if request.node.get_closest_marker("dispatched") is not None:
        built.default_config = DISPATCHED
    return built


@pytest.fixture(params=_kinds())
def harness(request: pytest.FixtureRequest) -> Iterator[Harness]:
    """A harness over a fresh World of the parametrised kind (``@pytest.mark.dispatched``: inline off)."""
    clock = ManualClock()
    with ExitStack() as stack:
        if request.param == "memory":
            world = create_memory_world(clock=clock)
            stack.callback(world.close)
            built = Harness("memory", world, clock, MemoryPump(world))
        else:
            from harness.sqs_pump import aws_harness

            built = stack.enter_context(aws_harness(clock))
        stack.callback(built.close)
        yield _configure(built, request)


@pytest.fixture
def memory_harness(request: pytest.FixtureRequest) -> Iterator[Harness]:
    """A harness over a fresh in-memory World (``@pytest.mark.dispatched``: inline off)."""
    with fresh_memory_harness() as built:
        yield _configure(built, request)


def memory_world_of(h: Harness) -> MemoryWorld:
    assert isinstance(h.world, MemoryWorld)
    return h.world


class _SwitchExporter(SpanExporter):
    """Forwards spans to the in-memory exporter only while a test asks for them."""

    def __init__(self) -> None:
        self.target = InMemorySpanExporter()
        self.enabled = False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self.enabled:
            return self.target.export(spans)
        return SpanExportResult.SUCCESS


@pytest.fixture(scope="session")
def _span_switch() -> _SwitchExporter:
    # The global tracer provider can be set once per process: reuse an SDK provider
    # someone else set, else set ours (the runtime's ProxyTracer picks it up lazily).
    switch = _SwitchExporter()
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        trace.set_tracer_provider(TracerProvider())
        provider = trace.get_tracer_provider()
    assert isinstance(provider, TracerProvider), "another non-SDK tracer provider is installed"
    provider.add_span_processor(SimpleSpanProcessor(switch))
    return switch


@pytest.fixture
def spans(_span_switch: _SwitchExporter) -> Iterator[InMemorySpanExporter]:
    """The spans finished during this test (``spans.get_finished_spans()``)."""
    _span_switch.target.clear()
    _span_switch.enabled = True
    try:
        yield _span_switch.target
    finally:
        _span_switch.enabled = False
        _span_switch.target.clear()
