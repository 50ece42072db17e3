"""The core of the fan-out benchmark: one run of an N-branch fan-out, measured.

``FanoutBench`` holds in-process moto (``world_aws.testing.aws_factory``: request
processing serialised, as AWS makes single requests atomic) with a
``CallRecorder`` on its clients. Every run gets a freshly provisioned table,
queues and bucket: moto answers a Query by scanning every item of the *table*
(DynamoDB reads only the partition), so leftovers of earlier runs would slow
later ones. ``run_once`` starts ``bench.fanout(n)``, a workflow that awaits
``asyncio.gather`` of ``n`` steps, under one ``Variant``
(step-message prologue x dispatch mode), consumes both queues with a
``QueuePump``, and returns a ``RunSample``: the AWS calls the run made, the run
reads its step deliveries made before their claims, and the time from ``start()``
to the last branch's ``step_started`` (TTLS).

Two modes:

* full (default): the steps are trivial and return at once; ``workers`` step
  consumers; the run completes. What a fan-out costs end to end.
* held: every step blocks until all ``n`` branches have started (so ``n`` step
  consumers), then the bench cancels the run and releases them; each raises a
  retryable error whose ``step_retrying`` the terminal-run fence refuses, so the
  deliveries ack as "gone" and the run ends without any last-completer check.
  TTLS then measures the start path alone (dispatch, prologue, claim), with no
  completion work competing for the emulator.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import cast

from bench.instrument import CallRecorder, Latency, Snapshot
from bench.pump import QueuePump
from bench.world import BenchWorld, RunTimeline
from infra.provision import ProvisionedResources, provision
from world_aws import RetryableError, Runtime, RuntimeConfig, Workflows
from world_aws.aws.clients import AwsClients
from world_aws.aws.config import AwsConfig
from world_aws.aws.world import AwsWorld, create_aws_world
from world_aws.contract.clock import ManualClock, SystemClock
from world_aws.contract.payload import InvokePayload
from world_aws.contract.records import ResolveData, StepStatus
from world_aws.contract.transport import decode_payload
from world_aws.contract.world import Delivery, HandlerResult, QueueName
from world_aws.errors import BadInput
from world_aws.testing.aws_factory import aws_world

WORKFLOW = "bench.fanout"
PROLOGUES = ("run_context", "legacy")
DISPATCH_MODES = ("resilient", "sequential")


def fanout_app(gate: threading.Event | None = None, gate_timeout: float = 600.0) -> Workflows:
    """``bench.fanout(n)``: ``asyncio.gather`` of ``n`` calls of the step ``bench.leaf``.

    Args:
        gate: None for a trivial step; else the step waits for it, then raises a
            retryable error (held mode: the run is cancelled by then).
        gate_timeout: how long a held step waits at most.
    """
    app = Workflows()

    @app.step(name="bench.leaf", max_retries=1)
    def leaf(i: int) -> int:
        if gate is not None:
            gate.wait(gate_timeout)
            raise RetryableError("released after every branch started")
        return i

    @app.workflow(name=WORKFLOW)
    async def fanout(n: int) -> int:
        values = await asyncio.gather(*(leaf(i) for i in range(n)))
        return len(values)

    return app


@dataclass(frozen=True, slots=True)
class Variant:
    """``prologue``: "run_context" (SPEC §5.1) or "legacy" (no run_context on step messages).
    ``dispatch``: "resilient" (SPEC §5.2) or "sequential"."""

    prologue: str
    dispatch: str

    @property
    def label(self) -> str:
        return f"{self.prologue} / {self.dispatch}"


def all_variants() -> list[Variant]:
    return [Variant(p, d) for p in PROLOGUES for d in DISPATCH_MODES]


@dataclass(frozen=True, slots=True)
class RunSample:
    """What one run cost and how long its fan-out took to start.

    ``calls`` are per ``service.Operation`` over the whole run (``sqs.ReceiveMessage``
    only the receives that brought messages), ``calls_to_last_start`` the same from
    ``start()`` until the last branch's ``step_started``; ``emulator_busy`` the
    seconds moto spent per operation over the whole run.
    """

    n: int
    variant: Variant
    held: bool
    ttls_seconds: float
    calls: dict[str, int]
    calls_to_last_start: dict[str, int]
    pre_claim_run_reads: int
    steps_completed: int
    step_starts: int
    run_status: str
    wall_seconds: float
    emulator_busy: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PumpShape:
    """Consumer concurrency: invocations and polling threads per queue."""

    step_workers: int = 16
    step_pollers: int = 2
    workflow_workers: int = 4
    workflow_pollers: int = 1


class FanoutBench:
    """One moto World, instrumented, reused by every run. Use as a context manager.

    Args:
        latency: the injected per-call latency.
        shape: consumer concurrency (full mode; held mode runs one step consumer per branch).
        run_timeout: real seconds a run may take before the bench gives up on it.
    """

    def __init__(
        self, latency: Latency | None = None, shape: PumpShape | None = None, *, run_timeout: float = 900
    ) -> None:
        self.recorder = CallRecorder(latency)
        self.shape = shape or PumpShape()
        self.run_timeout = run_timeout
        self._stack = ExitStack()
        # aws_world is typed for tests on a manual clock; the World only needs a Clock,
        # and a benchmark needs real time (moto's SQS delays are real time anyway).
        self._base = self._stack.enter_context(aws_world(cast(ManualClock, SystemClock())))
        self.recorder.attach(self._base.clients)
        self._runs = 0

    def close(self) -> None:
        self._stack.close()

    def __enter__(self) -> FanoutBench:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run_once(self, n: int, variant: Variant, *, held: bool = False) -> RunSample:
        """Run ``bench.fanout(n)`` under ``variant`` until it ends and its queues drain; measure it.

        Raises:
            RuntimeError: the run did not start or end within ``run_timeout``, or the queues did not drain.
        """
        with self._fresh_world() as aws:
            return self._run(aws, n, variant, held=held)

    def _run(self, aws: AwsWorld, n: int, variant: Variant, *, held: bool) -> RunSample:
        timeline = RunTimeline()
        gate = threading.Event() if held else None
        world = BenchWorld(aws, timeline, self.recorder, legacy_producer=variant.prologue == "legacy")
        config = RuntimeConfig(resilient_step_dispatch=variant.dispatch == "resilient")
        runtime = Runtime(world, fanout_app(gate, self.run_timeout), config)
        pump = self._pump(
            aws, runtime.handle, max(self.shape.step_workers, n) if held else self.shape.step_workers
        )
        at_last_start: list[Snapshot] = []
        try:
            before = self.recorder.snapshot()
            began = time.perf_counter()
            handle = runtime.start(WORKFLOW, n)
            timeline.expect(handle.run_id, n, lambda: at_last_start.append(self.recorder.snapshot()))
            if gate is not None:
                if not timeline.wait_started(handle.run_id, n, self.run_timeout):
                    raise RuntimeError(f"run {handle.run_id} (n={n}, {variant.label}) did not start in time")
                handle.cancel("benchmark: every branch started")
                gate.set()
            if not timeline.wait_ended(handle.run_id, self.run_timeout):
                raise RuntimeError(f"run {handle.run_id} (n={n}, {variant.label}) did not end in time")
            self._wait_idle(pump)
            used = self.recorder.snapshot() - before
            wall = time.perf_counter() - began
        finally:
            if gate is not None:
                gate.set()
            with self.recorder.muted():
                pump.stop()
            runtime.close()
        with self.recorder.muted():
            run = aws.runs.get(handle.run_id, resolve_data=ResolveData.NONE)
            steps = aws.steps.list(handle.run_id, resolve_data=ResolveData.NONE)
        starts = timeline.starts(handle.run_id)
        to_start = at_last_start[0] - before if at_last_start else used
        return RunSample(
            n=n,
            variant=variant,
            held=held,
            ttls_seconds=max(starts.values()) - began if starts else float("nan"),
            calls=dict(sorted(used.calls.items())),
            calls_to_last_start=dict(sorted(to_start.calls.items())),
            pre_claim_run_reads=used.pre_claim_run_reads,
            steps_completed=sum(1 for s in steps if s.status is StepStatus.COMPLETED),
            step_starts=len(starts),
            run_status=run.status.value,
            wall_seconds=wall,
            emulator_busy={k: round(v, 4) for k, v in sorted(used.busy.items())},
        )

    # ---------------------------------------------------------------- internals

    @contextmanager
    def _fresh_world(self) -> Iterator[AwsWorld]:
        """An AWS World on newly provisioned resources, over the recorded clients; deleted after."""
        self._runs += 1
        clients = self._base.clients
        with self.recorder.muted():
            resources = provision(clients, name_prefix=f"world-aws-bench-{self._runs}")
        config = AwsConfig(
            table_name=resources.table_name,
            workflow_queue_url=resources.workflow_queue_url,
            step_queue_url=resources.step_queue_url,
            bucket_name=resources.bucket_name,
            region=self._base.config.region,
        )
        world = create_aws_world(config, clients=clients, clock=SystemClock())
        try:
            yield world
        finally:
            world.close()
            with self.recorder.muted():
                _delete(clients, resources)

    def _pump(
        self, aws: AwsWorld, handler: Callable[[Delivery], HandlerResult], step_workers: int
    ) -> QueuePump:
        def handle(delivery: Delivery) -> HandlerResult:
            if _is_step_message(delivery.body):
                with self.recorder.step_delivery():
                    return handler(delivery)
            return handler(delivery)

        with self.recorder.muted():
            return QueuePump(
                aws.clients.sqs,
                aws.queue_urls(),
                handle,
                aws.clock,
                workers={QueueName.STEP: step_workers, QueueName.WORKFLOW: self.shape.workflow_workers},
                pollers={
                    QueueName.STEP: self.shape.step_pollers,
                    QueueName.WORKFLOW: self.shape.workflow_pollers,
                },
            )

    def _wait_idle(self, pump: QueuePump) -> None:
        """Wait until the run's last messages are handled and deleted (not counted)."""
        deadline = time.monotonic() + self.run_timeout
        with self.recorder.muted():
            while not pump.idle():
                if time.monotonic() > deadline:
                    raise RuntimeError("the queues did not drain after the run ended")
                time.sleep(0.05)


def _delete(clients: AwsClients, resources: ProvisionedResources) -> None:
    """Delete one run's table, queues and bucket (moto keeps them, and their items, otherwise)."""
    for url in (
        resources.workflow_queue_url,
        resources.step_queue_url,
        resources.workflow_dlq_url,
        resources.step_dlq_url,
    ):
        clients.sqs.delete_queue(QueueUrl=url)
    clients.dynamodb.delete_table(TableName=resources.table_name)
    listed = clients.s3.list_objects_v2(Bucket=resources.bucket_name).get("Contents", [])
    for item in listed:
        clients.s3.delete_object(Bucket=resources.bucket_name, Key=item["Key"])
    clients.s3.delete_bucket(Bucket=resources.bucket_name)


def _is_step_message(body: bytes) -> bool:
    try:
        payload = decode_payload(body)
    except BadInput:
        return False
    return isinstance(payload, InvokePayload) and payload.step_id is not None
