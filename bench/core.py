"""The moto pass of the fan-out benchmark: ``FanoutBench``, the AWS World on in-process moto.

``MotoWorlds`` holds in-process moto (``world_aws.testing.aws_factory``: request
processing serialised, as AWS makes single requests atomic) with a
``CallRecorder`` on its clients, and gives every run a freshly provisioned table,
queues and bucket: moto answers a Query by scanning every item of the *table*
(DynamoDB reads only the partition), so leftovers of earlier runs would slow
later ones. ``FanoutBench`` (and the cost meter, ``bench.cost``) run on it.
``FanoutBench.run_once`` is ``bench.measure.measure`` on that World, consumed by
a ``QueuePump``; the recorder attributes every AWS call to the World operation
that made it, which is what the model pass's costs come from (``bench.opcosts``).

The run itself (the app, the variants, the held and full modes, ``RunSample``)
is in ``bench.measure``; its names are re-exported here.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from functools import partial
from typing import cast

from bench.instrument import CallRecorder, Latency
from bench.measure import (
    DISPATCH_MODES,
    PROLOGUES,
    WORKFLOW,
    Backend,
    PumpShape,
    RunSample,
    Variant,
    all_variants,
    fanout_app,
    measure,
)
from bench.pump import QueuePump
from world_aws.aws.config import AwsConfig
from world_aws.aws.infra.provision import provision
from world_aws.aws.local_clients import local_kms_key
from world_aws.aws.world import AwsWorld, create_aws_world
from world_aws.contract.clock import ManualClock, SystemClock
from world_aws.contract.world import MessageHandler, QueueName
from world_aws.local.embedded import delete_provisioned
from world_aws.testing.aws_factory import aws_world

__all__ = [
    "DISPATCH_MODES",
    "PROLOGUES",
    "WORKFLOW",
    "FanoutBench",
    "MotoWorlds",
    "PumpShape",
    "RunSample",
    "Variant",
    "all_variants",
    "fanout_app",
]


class MotoWorlds:
    """In-process moto with a ``CallRecorder`` on its clients, and a freshly provisioned World per run.

    Every run gets its own table, queues and bucket: moto answers a Query by
    scanning every item of the *table*, so leftovers of earlier runs would slow
    later ones. Use as a context manager, or ``close()``.

    Args:
        recorder: attached to the clients every World of this object uses.
    """

    def __init__(self, recorder: CallRecorder) -> None:
        self.recorder = recorder
        self._stack = ExitStack()
        # aws_world is typed for tests on a manual clock; the World only needs a Clock,
        # and a benchmark needs real time (moto's SQS delays are real time anyway).
        self._base = self._stack.enter_context(aws_world(cast(ManualClock, SystemClock())))
        self.clients = self._base.clients
        recorder.attach(self.clients)
        self._runs = 0

    def close(self) -> None:
        self._stack.close()

    def __enter__(self) -> MotoWorlds:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def fresh_world(self, *, encrypt: bool = False) -> Iterator[AwsWorld]:
        """An AWS World on newly provisioned resources, over the recorded clients; deleted after.

        ``encrypt``: its payloads sealed under a new KMS key (moto's), as ``PayloadKmsKeyArn`` does.
        """
        self._runs += 1
        clients = self.clients
        with self.recorder.muted():
            resources = provision(clients, name_prefix=f"world-aws-bench-{self._runs}")
            key = local_kms_key(clients) if encrypt else None
        config = AwsConfig(
            table_name=resources.table_name,
            workflow_queue_url=resources.workflow_queue_url,
            step_queue_url=resources.step_queue_url,
            bucket_name=resources.bucket_name,
            region=self._base.config.region,
            payload_key_id=key,
        )
        world = create_aws_world(config, clients=clients, clock=SystemClock())
        try:
            yield world
        finally:
            world.close()
            with self.recorder.muted():
                delete_provisioned(clients, resources)


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
        self._moto = MotoWorlds(self.recorder)

    def close(self) -> None:
        self._moto.close()

    def __enter__(self) -> FanoutBench:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run_once(self, n: int, variant: Variant, *, held: bool = False) -> RunSample:
        """Run ``bench.fanout(n)`` under ``variant`` until it ends and its queues drain; measure it.

        Raises:
            RuntimeError: the run did not start or end within ``run_timeout``, or the queues did not drain.
        """
        with self._moto.fresh_world() as aws:
            backend = Backend("moto", aws, partial(self._pump, aws))
            return measure(
                self.recorder,
                backend,
                n,
                variant,
                held=held,
                step_workers=self.shape.step_workers,
                run_timeout=self.run_timeout,
            )

    # ---------------------------------------------------------------- internals

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
