"""The composition root of the Lambda functions: one World, Runtime and telemetry per container.

A Lambda container imports a handler module once and then serves many
invocations. ``PROCESS`` is what lives that long: the Powertools ``Logger`` (JSON,
with ``run_id``/``step_id`` appended per record) and ``Metrics`` (EMF), and a
``LazyContainer`` that builds the ``Container`` on the first invocation, from
the environment that ``template.yaml`` sets:

* ``WORKFLOW_APP`` = ``MODULE:ATTR`` (the uvicorn convention), the user's ``Workflows``;
* ``WORKFLOW_LOG_USER_VALUES`` = ``1`` keeps user values in logs (``_redact.py``; default off);
* ``AwsConfig.from_env``, ``RuntimeConfig.from_env``, ``ReconcilerConfig.from_env`` and
  ``SchedulerConfig.from_env`` read the rest.

Building lazily keeps a broken configuration out of the import (Lambda would
report an init failure without the reason) and lets tests set the environment
first. Nothing here decides anything about runs or steps: records go to
``Runtime.handle``, HTTP events to ``world_aws.api.app.handle_http``, the reconciler's
rule to ``Reconciler.tick``, the scheduler's to ``Scheduler.tick``.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, cast

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.logging.utils import copy_config_to_registered_loggers

from functions._metrics import (
    API_REQUESTS,
    API_SERVER_ERRORS,
    DELIVERIES,
    DELIVERIES_REJECTED,
    MISCONFIGURATIONS,
    PROLOGUE_RUN_CONTEXT,
    PROLOGUE_RUNS_GET,
    RECONCILE_FAILURES,
    RUNS_ERASED,
    RUNS_HELD,
    RUNS_RECONCILED,
    RUNS_RELEASED,
    SCHEDULE_FAILURES,
    SCHEDULED_RUNS_STARTED,
    SCHEDULED_TICKS_MISSED,
    SCHEDULED_TICKS_SKIPPED,
    EventCounts,
    ObservedWorld,
)
from functions._redact import RedactingFormatter
from world_aws.aws.config import AwsConfig
from world_aws.aws.queue.lambda_sqs import PartialBatchResponse, process_sqs_event
from world_aws.aws.versions import (
    LambdaDeployments,
    LambdaHandover,
    LambdaInvoker,
    handed_over,
    handover_answer,
    lambda_client,
)
from world_aws.aws.world import AwsWorld, create_aws_world
from world_aws.contract.payload import InvokePayload
from world_aws.contract.world import Delivery, HandlerResult, World
from world_aws.errors import BadInput, ErrorKind, Misconfigured
from world_aws.runtime.runtime import Runtime
from world_aws.worker.config import ReconcilerConfig, RuntimeConfig, SchedulerConfig
from world_aws.worker.reconciler import Reconciler, TickReport
from world_aws.worker.scheduler import Scheduler, SchedulerReport, TickOutcome
from world_aws.workflow.loading import load_app

APP_VARIABLE = "WORKFLOW_APP"
LOG_USER_VALUES_VARIABLE = "WORKFLOW_LOG_USER_VALUES"
DEFAULT_SERVICE = "world_aws"
DEFAULT_NAMESPACE = "WorldAws"


@dataclass(frozen=True)
class Container:
    """The per-container objects: the AWS World, the Runtime, Reconciler and Scheduler over it, the counts."""

    runtime: Runtime
    world: AwsWorld
    counts: EventCounts
    logger: Logger
    metrics: Metrics
    reconciler: Reconciler
    scheduler: Scheduler

    @classmethod
    def from_env(
        cls, logger: Logger, metrics: Metrics, environ: Mapping[str, str] | None = None
    ) -> Container:
        """Build the World and Runtime from the environment (``os.environ`` by default).

        Raises:
            BadInput: a variable is missing or invalid, or ``WORKFLOW_APP`` names no ``Workflows``.
        """
        env = os.environ if environ is None else environ
        spec = env.get(APP_VARIABLE, "").strip()
        if not spec:
            raise BadInput(
                f"environment variable {APP_VARIABLE} is not set (MODULE:ATTR naming the Workflows)"
            )
        app = load_app(spec)
        world = create_aws_world(AwsConfig.from_env(env))
        counts = EventCounts()
        # cast: AwsWorld's stores are concrete classes, which mypy will not match to the
        # protocol's (invariant) attributes; it implements the World contract.
        observed = ObservedWorld(cast("World", world), counts)
        config = world.config
        # Deployments are versions of the workflow function: a delivery for a run pinned to
        # an older one is handed to it (world_aws/aws/versions.py).
        handover, deployments = None, None
        if config.pinned_function:
            client = lambda_client(config)
            handover = LambdaHandover(LambdaInvoker(client), config.pinned_function)
            deployments = LambdaDeployments(client, config.pinned_function, observed.runs)
        runtime = Runtime(
            observed, app, RuntimeConfig.from_env(env), handover=handover, deployments=deployments
        )
        reconciler = Reconciler(observed, ReconcilerConfig.from_env(env))
        scheduler = Scheduler(runtime, SchedulerConfig.from_env(env))
        return cls(runtime, world, counts, logger, metrics, reconciler, scheduler)

    def process_sqs(self, event: Mapping[str, Any], remaining_ms: int | None = None) -> PartialBatchResponse:
        """One SQS batch through ``Runtime.handle``; the partial batch response.

        ``remaining_ms`` is the Lambda context's remaining time: inline step execution
        hands the run on by message before the invocation is stopped.
        """
        self.counts.add(DELIVERIES, len(event.get("Records") or ()))
        deadline = None
        if remaining_ms is not None:
            deadline = self.world.clock.now() + timedelta(milliseconds=remaining_ms)
        try:
            return process_sqs_event(
                event,
                self._handle,
                sqs=self.world.clients.sqs,
                queue_urls=self.world.queue_urls(),
                logger=self.logger,
                on_malformed=lambda _reason: self.counts.add(DELIVERIES_REJECTED),
                on_misconfigured=lambda _error: self.counts.add(MISCONFIGURATIONS),
                deadline=deadline,
                heartbeat=self.world.config.heartbeat,
            )
        finally:
            self.counts.publish(self.metrics)

    def handed_over(self, event: Mapping[str, Any], remaining_ms: int | None = None) -> dict[str, Any] | None:
        """A hand-over from a newer version (``aws/versions.py``): this version's answer; None otherwise.

        ``remaining_ms``: the Lambda context's remaining time (the event may name an earlier deadline,
        the receiver's).
        """
        own = None
        if remaining_ms is not None:
            own = self.world.clock.now() + timedelta(milliseconds=remaining_ms)
        delivery = handed_over(event, own)
        if delivery is None:
            return None
        try:
            return handover_answer(self._handle(delivery))
        finally:
            self.counts.publish(self.metrics)

    def record_http(self, response: Mapping[str, Any]) -> None:
        """Count one answered HTTP request (``handle_http``'s response)."""
        status = int(response.get("statusCode", 500))
        self.counts.add(API_REQUESTS)
        if status >= 500:
            self.counts.add(API_SERVER_ERRORS)
        if status == Misconfigured.code and _error_kind(response) == ErrorKind.MISCONFIGURED:
            self.counts.add(MISCONFIGURATIONS)
        self.counts.publish(self.metrics)

    def reconcile(self) -> TickReport:
        """One reconciler tick; its repairs and failures counted (a misconfiguration raises, counted)."""
        with self._counted():
            report = self.reconciler.tick()
            self.counts.add(RUNS_RECONCILED, len(report.woken))
            self.counts.add(RECONCILE_FAILURES, report.failed)
            self.counts.add(RUNS_HELD, report.held)
            self.counts.add(RUNS_RELEASED, len(report.released))
            self.counts.add(RUNS_ERASED, len(report.erased))
            return report

    def schedule(self) -> SchedulerReport:
        """One scheduler pass; its outcomes counted (a misconfiguration raises, counted)."""
        with self._counted():
            report = self.scheduler.tick()
            self.counts.add(SCHEDULED_RUNS_STARTED, report.count(TickOutcome.STARTED))
            self.counts.add(SCHEDULED_TICKS_SKIPPED, report.count(TickOutcome.SKIPPED))
            self.counts.add(SCHEDULED_TICKS_MISSED, report.count(TickOutcome.MISSED))
            self.counts.add(SCHEDULE_FAILURES, len(report.failed))
            return report

    @contextmanager
    def _counted(self) -> Iterator[None]:
        """A scheduled invocation's counts published at its end, a misconfiguration counted on its way out."""
        try:
            yield
        except Misconfigured:
            self.counts.add(MISCONFIGURATIONS)
            raise
        finally:
            self.counts.publish(self.metrics)

    def close(self) -> None:
        self.runtime.close()
        self.world.close()

    def _handle(self, delivery: Delivery) -> HandlerResult:
        payload = delivery.parsed()  # decoded once, by process_sqs_event
        keys: dict[str, str] = {}
        if isinstance(payload, InvokePayload):
            keys["run_id"] = payload.run_id
            workflow = _workflow_of(payload)
            if workflow is not None:
                self.counts.learn(payload.run_id, workflow)
            if payload.step_id is not None:
                keys["step_id"] = payload.step_id
                # The kind of prologue the message asks for (contract §5.1): run identity carried or not.
                self.counts.add(
                    PROLOGUE_RUN_CONTEXT if payload.run_context is not None else PROLOGUE_RUNS_GET
                )
        self.logger.append_keys(**keys)
        try:
            return self.runtime.handle(delivery)
        except BadInput:
            self.counts.add(DELIVERIES_REJECTED)
            raise
        finally:
            self.logger.remove_keys(list(keys))


def _workflow_of(payload: InvokePayload) -> str | None:
    """The run's workflow, if the message names it (a first message, a step message)."""
    if payload.run_input is not None:
        return payload.run_input.workflow_name
    if payload.run_context is not None:
        return payload.run_context.workflow_name
    return None


def _error_kind(response: Mapping[str, Any]) -> str | None:
    """The ``error.kind`` of an error response's JSON body (``None`` for any other body)."""
    try:
        error = json.loads(str(response.get("body") or "{}")).get("error")
    except (ValueError, AttributeError):
        return None
    return str(error.get("kind")) if isinstance(error, dict) else None


class LazyContainer:
    """Builds the ``Container`` on first use and keeps it for the life of the Lambda container."""

    def __init__(self, build: Callable[[], Container]) -> None:
        self._build = build
        self._lock = threading.Lock()
        self._container: Container | None = None

    def get(self) -> Container:
        with self._lock:
            if self._container is None:
                self._container = self._build()
            return self._container

    def reset(self) -> None:
        """Close and forget the container (tests; the next ``get`` builds a new one)."""
        with self._lock:
            container, self._container = self._container, None
        if container is not None:
            container.close()


@dataclass(frozen=True)
class LambdaProcess:
    """What one Lambda container keeps between invocations."""

    logger: Logger
    metrics: Metrics
    container: LazyContainer

    @classmethod
    def create(cls, environ: Mapping[str, str] | None = None) -> LambdaProcess:
        env = os.environ if environ is None else environ
        service = env.get("POWERTOOLS_SERVICE_NAME") or DEFAULT_SERVICE
        logger = Logger(service=service)
        if env.get(LOG_USER_VALUES_VARIABLE, "0") != "1":
            handler = logger.registered_handler
            handler.setFormatter(RedactingFormatter(handler.formatter or logging.Formatter()))
        # The runtime logs through the stdlib logger "world_aws": same JSON handler, same appended keys.
        copy_config_to_registered_loggers(source_logger=logger, include={"world_aws"})
        metrics = Metrics(
            namespace=env.get("POWERTOOLS_METRICS_NAMESPACE") or DEFAULT_NAMESPACE, service=service
        )
        return cls(logger, metrics, LazyContainer(lambda: Container.from_env(logger, metrics)))

    def built(self) -> Container:
        """The container, built on first use; a build that fails is logged and counted, then raised.

        A wrong ``WORKFLOW_APP`` (or any variable ``Container.from_env`` refuses, or an
        import error in the app's module) fails every invocation of every container the same
        way. The failure is raised, so Lambda deletes nothing (the records come back after
        the queue's visibility timeout); it is also a misconfiguration like a missing table,
        counted for ``MisconfigurationAlarm`` (the handler's ``log_metrics`` flushes it).
        """
        try:
            return self.container.get()
        except Exception as exc:
            self.logger.error(
                "misconfigured: the function could not be built from its environment; "
                "every invocation fails until it is fixed",
                extra={"reason": str(exc), "error_type": type(exc).__name__},
            )
            self.metrics.add_metric(name=MISCONFIGURATIONS, unit="Count", value=1)
            raise


# module-state-ok: Lambda keeps a container's module state between invocations; this one holder
# is where the World, its clients and the Runtime are cached for that life (contract §9 registry).
PROCESS = LambdaProcess.create()
