"""The embedded-stack backend of ``bench.dispatch_modes``: the fan-out on moto over loopback HTTP.

``EmbeddedFanout.run_once`` is ``bench.measure.measure`` on the AWS World of the embedded
stack (``world_aws.local.embedded.EmbeddedAws``: one serialised moto server on a loopback
port, provisioned from ``template.yaml``), consumed by a ``QueuePump`` that receives over
HTTP as Lambda's event source does. No latency is injected: a call costs its HTTP round
trip and moto's work, one request at a time, so from some tens of branches on the times
are the emulator's total work; read them next to the latency model's (AWS's regime, where
calls run in parallel). Every run gets freshly provisioned resources (moto's Query scans
the whole table), deleted with the stack.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial

from bench.instrument import CallRecorder, Latency
from bench.measure import Backend, PumpShape, RunSample, Variant, measure
from bench.pump import QueuePump
from world_aws.aws.config import AwsConfig
from world_aws.aws.world import AwsWorld, create_aws_world
from world_aws.contract.clock import SystemClock
from world_aws.contract.world import MessageHandler, QueueName
from world_aws.local.embedded import EmbeddedAws

NO_LATENCY = Latency(dynamodb=0.0, sqs=0.0, s3=0.0)


class EmbeddedFanout:
    """The embedded stack, reused by every run (fresh resources each). Use as a context manager.

    Args:
        shape: consumer concurrency (held mode runs one step consumer per branch).
        run_timeout: real seconds a run may take before the bench gives up on it.
    """

    def __init__(self, shape: PumpShape | None = None, *, run_timeout: float = 900) -> None:
        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        self.recorder = CallRecorder(NO_LATENCY, serialize_calls=False)
        self.shape = shape or PumpShape()
        self.run_timeout = run_timeout
        self._aws = EmbeddedAws(apply_settings=False, name_prefix="bench-dispatch")
        self.recorder.attach(self._aws.clients)
        self._runs = 0

    def close(self) -> None:
        self._aws.stop()

    def __enter__(self) -> EmbeddedFanout:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run_once(self, n: int, variant: Variant, *, held: bool = False) -> RunSample:
        """Run ``bench.fanout(n)`` under ``variant`` until it ends and its queues drain; measure it."""
        with self._fresh_world() as world:
            backend = Backend("embedded", world, partial(self._pump, world))
            return measure(
                self.recorder,
                backend,
                n,
                variant,
                held=held,
                step_workers=self.shape.step_workers,
                run_timeout=self.run_timeout,
            )

    @contextmanager
    def _fresh_world(self) -> Iterator[AwsWorld]:
        self._runs += 1
        clients = self._aws.clients
        with self.recorder.muted():
            resources = self._aws.provision(f"bench-dispatch-{self._runs}")
        config = AwsConfig(
            table_name=resources.table_name,
            workflow_queue_url=resources.workflow_queue_url,
            step_queue_url=resources.step_queue_url,
            bucket_name=resources.bucket_name,
            region=self._aws.region,
        )
        world = create_aws_world(config, clients=clients, clock=SystemClock())
        try:
            yield world
        finally:
            world.close()  # its resources are deleted with the stack's (``EmbeddedAws.stop``)

    def _pump(self, aws: AwsWorld, handler: MessageHandler, step_workers: int) -> QueuePump:
        return QueuePump(
            aws.clients.sqs,
            aws.queue_urls(),
            handler,
            aws.clock,
            workers={QueueName.STEP: step_workers, QueueName.WORKFLOW: self.shape.workflow_workers},
            pollers={
                QueueName.STEP: self.shape.step_pollers,
                QueueName.WORKFLOW: self.shape.workflow_pollers,
            },
        )
