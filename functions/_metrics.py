"""What the Lambda functions count, and how: committed events, read at the World's seam.

Run and step outcomes are counted from the events the World *committed*
(``events.create`` returned), not from what the runtime attempted: a refused
``step_started`` (the terminal-run fence) or a duplicate ``run_completed`` is
not a start or a completion. ``ObservedWorld`` wraps a World and counts through
its event store, so the runtime needs no hook of its own.

Counts are collected in an ``EventCounts`` (thread-safe: the runtime writes from
its dispatch threads) and handed to Powertools ``Metrics`` once per invocation,
from the handler's thread, as CloudWatch EMF.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import TYPE_CHECKING

from world_aws.contract.records import Event, EventRequest, EventResult, EventType, ResolveData
from world_aws.contract.world import EventStore, ForwardingWorld, World

if TYPE_CHECKING:
    from aws_lambda_powertools import Metrics

# Metric names (namespace: POWERTOOLS_METRICS_NAMESPACE, dimension: service).
RUNS_CREATED = "RunsCreated"
RUNS_STARTED = "RunsStarted"
RUNS_COMPLETED = "RunsCompleted"
RUNS_FAILED = "RunsFailed"
RUNS_CANCELLED = "RunsCancelled"
STEPS_STARTED = "StepsStarted"
STEPS_COMPLETED = "StepsCompleted"
STEPS_FAILED = "StepsFailed"
STEPS_RETRIED = "StepsRetried"
DELIVERIES = "Deliveries"
# Malformed messages: reported as batch item failures, they reach the DLQ after the redrive count.
DELIVERIES_REJECTED = "DeliveriesRejected"
# Messages over the delivery cap: their run failed with MAX_DELIVERIES_EXCEEDED, the message was dropped.
DELIVERIES_DEAD_LETTERED = "DeliveriesDeadLettered"
# A missing table, queue or bucket, or refused access: the delivery was redelivered (or the API
# answered 503). template.yaml alarms on it.
MISCONFIGURATIONS = "Misconfigurations"
PROLOGUE_RUN_CONTEXT = "StepPrologueRunContext"
PROLOGUE_RUNS_GET = "StepPrologueRunsGet"
API_REQUESTS = "ApiRequests"
API_SERVER_ERRORS = "ApiServerErrors"
# The reconciler, per tick: runs woken because they made no progress (each a repair, each
# logged), and runs it could not handle (a failed publish or mark; the next tick retries).
RUNS_RECONCILED = "RunsReconciled"
RECONCILE_FAILURES = "ReconcileFailures"

_BY_EVENT = {
    EventType.RUN_CREATED: RUNS_CREATED,
    EventType.RUN_STARTED: RUNS_STARTED,
    EventType.RUN_COMPLETED: RUNS_COMPLETED,
    EventType.RUN_FAILED: RUNS_FAILED,
    EventType.RUN_CANCELLED: RUNS_CANCELLED,
    EventType.STEP_STARTED: STEPS_STARTED,
    EventType.STEP_COMPLETED: STEPS_COMPLETED,
    EventType.STEP_FAILED: STEPS_FAILED,
    EventType.STEP_RETRYING: STEPS_RETRIED,
}
# The error code the runtime gives a run whose message exceeded the delivery cap (SPEC §4.3).
_OVER_DELIVERY_CAP = "MAX_DELIVERIES_EXCEEDED"


class EventCounts:
    """Counts by metric name, safe to add to from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()

    def add(self, name: str, value: int = 1) -> None:
        with self._lock:
            self._counts[name] += value

    def drain(self) -> dict[str, int]:
        """The counts so far, which start again from zero."""
        with self._lock:
            counts, self._counts = dict(self._counts), Counter()
        return counts

    def publish(self, metrics: Metrics) -> None:
        """Move the counts into ``metrics`` (flushed as EMF by ``@metrics.log_metrics``)."""
        for name, value in sorted(self.drain().items()):
            metrics.add_metric(name=name, unit="Count", value=value)


class CountingEventStore:
    """An ``EventStore`` that counts the run and step events it committed."""

    def __init__(self, inner: EventStore, counts: EventCounts) -> None:
        self._inner = inner
        self._counts = counts

    def create(self, run_id: str, request: EventRequest) -> EventResult:
        result = self._inner.create(run_id, request)
        name = _BY_EVENT.get(request.type)
        # result.event is None only for run_started on a running run: accepted, nothing changed.
        if name is not None and result.event is not None:
            self._counts.add(name)
            if request.type is EventType.RUN_FAILED and request.data.error_code == _OVER_DELIVERY_CAP:
                self._counts.add(DELIVERIES_DEAD_LETTERED)
        return result

    def list(
        self, run_id: str, *, after: int = 0, resolve_data: ResolveData = ResolveData.ALL
    ) -> list[Event]:
        return self._inner.list(run_id, after=after, resolve_data=resolve_data)


class ObservedWorld(ForwardingWorld):
    """A World whose event store counts into ``counts``; everything else is ``inner``'s."""

    def __init__(self, inner: World, counts: EventCounts) -> None:
        super().__init__(inner)
        self.events = CountingEventStore(inner.events, counts)
