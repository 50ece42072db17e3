"""The AWS World passes of the fan-out benchmark: ``FanoutBench`` on in-process moto or the embedded stack.

``MotoWorlds`` holds in-process moto (requests serialised, as AWS makes single requests
atomic) with a ``CallRecorder`` on its clients; ``EmbeddedWorlds`` the embedded stack (one
moto server on a loopback port, ``world_aws.local.embedded``), which ``bench.dispatch_modes``
runs without injected latency. Both give every run freshly provisioned resources: moto answers
a Query by scanning the whole *table*. ``FanoutBench.run_once`` is ``bench.measure.measure`` on
such a World, consumed by a ``QueuePump``; the recorder attributes every AWS call to the World
operation that made it (the model pass's costs, ``bench.opcosts``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from functools import partial
from typing import cast

from bench.instrument import CallRecorder, Latency
from bench.measure import Backend, PumpShape, RunSample, Variant, measure
from bench.pump import QueuePump
from world_aws.aws.config import AwsConfig
from world_aws.aws.infra.provision import provision
from world_aws.aws.local_clients import local_kms_key
from world_aws.aws.world import AwsWorld, create_aws_world
from world_aws.contract.clock import ManualClock, SystemClock
from world_aws.contract.world import MessageHandler
from world_aws.local.embedded import EmbeddedAws, delete_provisioned
from world_aws.testing.aws_factory import aws_world

NO_LATENCY = Latency(dynamodb=0.0, sqs=0.0, s3=0.0)


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


class EmbeddedWorlds:
    """The embedded stack with a ``CallRecorder`` on its clients, and a freshly provisioned World per run."""

    def __init__(self, recorder: CallRecorder) -> None:
        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        self.recorder = recorder
        self._aws = EmbeddedAws(apply_settings=False, name_prefix="bench-dispatch")
        recorder.attach(self._aws.clients)
        self._runs = 0

    def close(self) -> None:
        self._aws.stop()

    @contextmanager
    def fresh_world(self) -> Iterator[AwsWorld]:
        self._runs += 1
        with self.recorder.muted():
            resources = self._aws.provision(f"bench-dispatch-{self._runs}")
        config = AwsConfig(
            table_name=resources.table_name,
            workflow_queue_url=resources.workflow_queue_url,
            step_queue_url=resources.step_queue_url,
            bucket_name=resources.bucket_name,
            region=self._aws.region,
        )
        world = create_aws_world(config, clients=self._aws.clients, clock=SystemClock())
        try:
            yield world
        finally:
            world.close()  # its resources are deleted with the stack's (``EmbeddedAws.stop``)


class FanoutBench:
    """One instrumented AWS backend, reused by every run (fresh resources each). Use as a context manager.

    Args:
        latency: the injected per-call latency (in-process moto only).
        shape: consumer concurrency (full mode; held mode runs one step consumer per branch).
        run_timeout: real seconds a run may take before the bench gives up on it.
        embedded: the embedded stack over loopback HTTP, no latency injected, calls not serialised.
    """

    def __init__(
        self,
        latency: Latency | None = None,
        shape: PumpShape | None = None,
        *,
        run_timeout: float = 900,
        embedded: bool = False,
    ) -> None:
        self.shape = shape or PumpShape()
        self.run_timeout = run_timeout
        self._name = "embedded" if embedded else "moto"
        self._worlds: MotoWorlds | EmbeddedWorlds
        if embedded:
            self.recorder = CallRecorder(NO_LATENCY, serialize_calls=False)
            self._worlds = EmbeddedWorlds(self.recorder)
        else:
            self.recorder = CallRecorder(latency)
            self._worlds = MotoWorlds(self.recorder)

    def close(self) -> None:
        self._worlds.close()

    def __enter__(self) -> FanoutBench:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run_once(self, n: int, variant: Variant, *, held: bool = False) -> RunSample:
        """Run ``bench.fanout(n)`` under ``variant`` until it ends and its queues drain; measure it.

        Raises:
            RuntimeError: the run did not start or end within ``run_timeout``, or the queues did not drain.
        """
        with self._worlds.fresh_world() as aws:
            backend = Backend(self._name, aws, partial(self._pump, aws))
            return measure(
                self.recorder,
                backend,
                n,
                variant,
                held=held,
                step_workers=self.shape.step_workers,
                run_timeout=self.run_timeout,
            )

    def _pump(self, aws: AwsWorld, handler: MessageHandler, step_workers: int) -> QueuePump:
        return QueuePump(
            aws.clients.sqs,
            aws.queue_urls(),
            handler,
            aws.clock,
            workers=self.shape.workers(step_workers),
            pollers=self.shape.pollers(),
        )
