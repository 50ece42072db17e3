"""What the Lambda functions count, and how: committed events, read at the World's seam.

Run and step outcomes are counted from the events the World *committed*
(``events.create`` returned), not from what the runtime attempted: a refused
``step_started`` (the terminal-run fence) or a duplicate ``run_completed`` is
not a start or a completion. ``ObservedWorld`` wraps a World and counts through
its event store, so the runtime needs no hook of its own.

Counts are collected in an ``EventCounts`` (thread-safe: the runtime writes from
its dispatch threads) and handed to Powertools ``Metrics`` once per invocation,
from the handler's thread, as CloudWatch EMF.

The run and step counts of a run whose workflow the invocation knows without a
read are also emitted per workflow (dimensions ``service`` and ``workflow``, one
EMF document per workflow): the name comes from the message (``run_input``,
``run_context.workflow_name``), the creation data of ``run_created`` /
``run_started``, or the run an event returned. The totals (dimension ``service``)
stay whole either way.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from aws_lambda_powertools.metrics import EphemeralMetrics

from world_aws.contract.records import (
    Event,
    EventRequest,
    EventResult,
    EventType,
    ResolveData,
    Run,
    RunFailedData,
    RunLog,
    creation_of,
)
from world_aws.contract.world import EventStore, ForwardingWorld, RunStore, World

if TYPE_CHECKING:
    from aws_lambda_powertools import Metrics

# Metric names (namespace: POWERTOOLS_METRICS_NAMESPACE, dimension: service).
# The dimension of the per-workflow copies of the run and step counts.
WORKFLOW_DIMENSION = "workflow"
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
# The reconciler, per tick: the held runs it saw (their replay diverged on newer code and no
# deploy has released them yet, worker/holding.py), and those it released onto its deployment.
# template.yaml alarms on any held run.
RUNS_HELD = "RunsHeld"
RUNS_RELEASED = "RunsReleased"
# The reconciler, per tick: ended runs erased because their retention passed (runtime/retention.py).
RUNS_ERASED = "RunsErased"
# The scheduler, per pass: ticks started, skipped (overlap="skip"), dropped by the catch-up bound,
# and schedules it could not handle (the next pass retries them).
SCHEDULED_RUNS_STARTED = "ScheduledRunsStarted"
SCHEDULED_TICKS_SKIPPED = "ScheduledTicksSkipped"
SCHEDULED_TICKS_MISSED = "ScheduledTicksMissed"
SCHEDULE_FAILURES = "ScheduleFailures"

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
# The error code the runtime gives a run whose message exceeded the delivery cap (contract §4.3).
_OVER_DELIVERY_CAP = "MAX_DELIVERIES_EXCEEDED"


class EventCounts:
    """Counts by metric name (and by workflow, for runs it was told of), safe to add to from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        self._by_workflow: Counter[tuple[str, str]] = Counter()
        self._workflows: dict[str, str] = {}  # run id -> workflow name, for this invocation

    def learn(self, run_id: str, workflow_name: str) -> None:
        """Note ``run_id``'s workflow, so its counts in this invocation are also counted per workflow."""
        with self._lock:
            self._workflows[run_id] = workflow_name

    def add(self, name: str, value: int = 1, *, run_id: str | None = None) -> None:
        with self._lock:
            self._counts[name] += value
            workflow = self._workflows.get(run_id) if run_id is not None else None
            if workflow is not None:
                self._by_workflow[(workflow, name)] += value

    def drain(self) -> dict[str, int]:
        """The counts so far, which start again from zero."""
        return self._drain()[0]

    def publish(self, metrics: Metrics) -> None:
        """Move the counts into ``metrics`` (flushed as EMF by ``@metrics.log_metrics``).

        The per-workflow counts are printed here, one EMF document per workflow.
        """
        totals, by_workflow = self._drain()
        for name, value in sorted(totals.items()):
            metrics.add_metric(name=name, unit="Count", value=value)
        documents: dict[str, EphemeralMetrics] = {}
        for (workflow, name), value in sorted(by_workflow.items()):
            document = documents.get(workflow)
            if document is None:
                document = documents[workflow] = EphemeralMetrics(
                    namespace=metrics.namespace, service=metrics.service
                )
                document.add_dimension(name=WORKFLOW_DIMENSION, value=workflow)
            document.add_metric(name=name, unit="Count", value=value)
        for document in documents.values():
            document.flush_metrics()

    def _drain(self) -> tuple[dict[str, int], dict[tuple[str, str], int]]:
        with self._lock:
            counts, self._counts = dict(self._counts), Counter()
            by_workflow, self._by_workflow = dict(self._by_workflow), Counter()
            self._workflows.clear()
        return counts, by_workflow


class CountingEventStore:
    """An ``EventStore`` that counts the run and step events it committed."""

    def __init__(self, inner: EventStore, counts: EventCounts) -> None:
        self._inner = inner
        self._counts = counts

    def create(self, run_id: str, request: EventRequest) -> EventResult:
        creation = creation_of(request.data)
        if creation is not None:
            self._counts.learn(run_id, creation.workflow_name)
        result = self._inner.create(run_id, request)
        if result.run is not None:
            self._counts.learn(run_id, result.run.workflow_name)
        if result.event is None:
            return result  # run_started on a running run: accepted, nothing changed
        self._count(run_id, result.event)
        if isinstance(request.data, RunFailedData) and request.data.error_code == _OVER_DELIVERY_CAP:
            self._counts.add(DELIVERIES_DEAD_LETTERED)
        return result

    def append_after(
        self,
        run_id: str,
        after: int,
        requests: Sequence[EventRequest],
        *,
        at: datetime,
        flush_later: bool = False,
    ) -> list[EventResult] | None:
        results = self._inner.append_after(run_id, after, requests, at=at, flush_later=flush_later)
        for result in results or ():
            if result.event is not None:
                self._count(run_id, result.event)
        return results

    def flush(self, run_id: str) -> None:
        self._inner.flush(run_id)

    def _count(self, run_id: str, event: Event) -> None:
        """Count one committed event, if it is one this store counts.

        A step is started by its ``step_started``, or, run inline, by its owned
        ``step_created`` (``Event.starts_attempt``): both count as ``StepsStarted``.
        """
        name = STEPS_STARTED if event.starts_attempt else _BY_EVENT.get(event.type)
        if name is not None:
            self._counts.add(name, run_id=run_id)

    def list(
        self, run_id: str, *, after: int = 0, resolve_data: ResolveData = ResolveData.ALL
    ) -> list[Event]:
        return self._inner.list(run_id, after=after, resolve_data=resolve_data)

    def list_with_run(
        self, run_id: str, *, after: int = 0, resolve_data: ResolveData = ResolveData.ALL
    ) -> RunLog:
        log = self._inner.list_with_run(run_id, after=after, resolve_data=resolve_data)
        self._counts.learn(run_id, log.run.workflow_name)  # as ``LearningRunStore.get`` does
        return log


class LearningRunStore:
    """A ``RunStore`` that tells ``counts`` the workflow of every run it reads.

    A workflow delivery reads its run instead of writing ``run_started`` (the runtime's
    ``_seen``, with its log: ``events.list_with_run``, or alone): a wake-up names no
    workflow, so that read is where its counts learn it.
    """

    def __init__(self, inner: RunStore, counts: EventCounts) -> None:
        self._inner = inner
        self._counts = counts

    def get(self, run_id: str, *, resolve_data: ResolveData = ResolveData.ALL) -> Run:
        run = self._inner.get(run_id, resolve_data=resolve_data)
        self._counts.learn(run_id, run.workflow_name)
        return run

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class ObservedWorld(ForwardingWorld):
    """A World whose events count into ``counts`` (and whose run reads teach it workflows); else ``inner``."""

    def __init__(self, inner: World, counts: EventCounts) -> None:
        super().__init__(inner)
        self.events = CountingEventStore(inner.events, counts)
        self.runs = cast(RunStore, LearningRunStore(inner.runs, counts))
