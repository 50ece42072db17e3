"""``AwsWorld``: the World on DynamoDB (log and entities), SQS (queues) and S3 (large payloads).

Build it with :func:`create_aws_world` from an :class:`AwsConfig` (``from_env()``
in Lambda) and, optionally, injected clients and clock. Nothing here is global:
every store, client and cache hangs off the World instance.
"""

from __future__ import annotations

import threading

from world_aws.aws.clients import AwsClients
from world_aws.aws.codec.dynamo import Table
from world_aws.aws.config import AwsConfig
from world_aws.aws.erasure import DynamoErasure
from world_aws.aws.event_store import DynamoEventStore
from world_aws.aws.kms import KmsKeyService
from world_aws.aws.queue.sqs import SqsQueue
from world_aws.aws.read.entity_stores import DynamoHookStore, DynamoRunStore, DynamoStepStore, DynamoWaitStore
from world_aws.aws.read.log_reader import HoleRepairPolicy
from world_aws.aws.read.schedule_store import DynamoScheduleStore
from world_aws.aws.read.stream_store import DynamoStreamStore
from world_aws.aws.s3 import S3BlobStore
from world_aws.aws.write.admission import DynamoAdmissionStore
from world_aws.aws.write.gates import DynamoGateStore
from world_aws.aws.write.sequencer import Sequencer
from world_aws.contract.admission import AdmissionStore
from world_aws.contract.clock import Clock, SystemClock
from world_aws.contract.coalesce import GateStore
from world_aws.contract.erasure import Erasure
from world_aws.contract.schedules import ScheduleStore
from world_aws.contract.sealing import PayloadSeal
from world_aws.contract.streams import StreamStore
from world_aws.contract.world import (
    BlobStore,
    Consumers,
    EventStore,
    HookStore,
    MessageHandler,
    Queue,
    QueueName,
    RunEnds,
    RunStore,
    StepStore,
    WaitStore,
    WorldCapabilities,
)
from world_aws.sealing import seal_stores

__all__ = ["AwsClients", "AwsConfig", "AwsWorld", "create_aws_world"]


class AwsWorld:
    """The AWS World. Thread-safe; one per process is the norm (a Lambda container keeps it warm)."""

    def __init__(
        self,
        config: AwsConfig,
        clients: AwsClients,
        clock: Clock,
        capabilities: WorldCapabilities,
        *,
        repair: HoleRepairPolicy | None = None,
        owns_clients: bool = False,
    ) -> None:
        self.config = config
        self.clients = clients
        self.clock: Clock = clock
        self._capabilities = capabilities
        self._owns_clients = owns_clients
        self.table = Table(clients.dynamodb, config.table_name)
        s3_blobs = S3BlobStore(clients.s3, config.bucket_name, self.table)
        self.blobs: BlobStore = s3_blobs
        # Exposed for tests and tools that simulate a writer dying between reserve and commit.
        self.sequencer = Sequencer(self.table, self.blobs)
        self.ends = RunEnds()
        self._event_store = DynamoEventStore(self.sequencer, self.blobs, clock, repair, self.ends)
        self.events: EventStore = self._event_store
        self.runs: RunStore = DynamoRunStore(self.table, self.blobs)
        self.steps: StepStore = DynamoStepStore(self.table, self.blobs, self.sequencer)
        self.hooks: HookStore = DynamoHookStore(self.table, self.blobs)
        self.waits: WaitStore = DynamoWaitStore(self.table, self.blobs)
        self.schedules: ScheduleStore = DynamoScheduleStore(self.table, clock)
        self.streams: StreamStore = DynamoStreamStore(self.table, self.blobs)
        self.admission: AdmissionStore = DynamoAdmissionStore(self.table, clock)
        self.gates: GateStore = DynamoGateStore(self.table, clock)
        # Payload encryption (README "Security"): always on the read side, so that any
        # process with kms:Decrypt opens runs sealed elsewhere; new runs get a key only
        # when a customer key is configured.
        sealed = seal_stores(
            events=self.events,
            runs=self.runs,
            steps=self.steps,
            hooks=self.hooks,
            streams=self.streams,
            service=KmsKeyService(clients.kms or clients.make_kms or self._kms_client, config.payload_key_id),
            encrypting=config.payload_key_id is not None,
        )
        self.events, self.runs, self.steps = sealed.events, sealed.runs, sealed.steps
        self.hooks, self.streams = sealed.hooks, sealed.streams
        self.payloads: PayloadSeal = sealed.payloads
        self.erasure: Erasure = DynamoErasure(self.table, s3_blobs, clock)
        self.queue: Queue = SqsQueue(
            clients.sqs,
            self.queue_urls(),
            dynamodb=clients.dynamodb,
            table_name=config.table_name,
            clock=clock,
        )
        self._consumers: list[Consumers] = []
        self._lock = threading.Lock()

    @property
    def capabilities(self) -> WorldCapabilities:
        return self._capabilities

    def _kms_client(self) -> object:
        """A KMS client for this World's region and endpoint, when its clients came without one."""
        import boto3  # only when a sealed run is met without an injected client

        session = boto3.session.Session(region_name=self.config.region)
        return session.client("kms", endpoint_url=self.config.endpoint_url)

    def deployment_id(self) -> str:
        """The deployment this process serves (from the configuration; no backend call)."""
        return self.config.deployment_id

    def queue_urls(self) -> dict[QueueName, str]:
        return {
            QueueName.WORKFLOW: self.config.workflow_queue_url,
            QueueName.STEP: self.config.step_queue_url,
        }

    def start_consumers(self, handler: MessageHandler) -> Consumers:
        """Poll both queues in background threads and deliver to ``handler`` (local runs and tests)."""
        # Imported here: the event source is only for local use, Lambda brings its own.
        from world_aws.aws.queue.event_source import LocalEventSource

        source = LocalEventSource(
            self.clients.sqs, self.queue_urls(), handler, clock=self.clock, heartbeat=self.config.heartbeat
        )
        with self._lock:
            self._consumers.append(source)
        return source

    def close(self) -> None:
        """Stop the consumers this World started, put any batch item still due; close its clients."""
        with self._lock:
            consumers, self._consumers = self._consumers, []
        for consumer in consumers:
            consumer.stop()
        self._event_store.settle()
        if self._owns_clients:
            self.clients.close()


def create_aws_world(
    config: AwsConfig,
    *,
    clients: AwsClients | None = None,
    clock: Clock | None = None,
    capabilities: WorldCapabilities | None = None,
    repair: HoleRepairPolicy | None = None,
) -> AwsWorld:
    """The AWS World over ``config``'s table, queues and bucket.

    Args:
        config: where the resources are.
        clients: boto3 clients to use (built from ``config`` if omitted; then the
            World closes them on ``close()``).
        clock: the time source (``SystemClock`` by default; tests pass a ``ManualClock``).
        capabilities: what the World declares beyond the base contract. Deployment
            affinity is off by default: local deployment ids are synthetic.
        repair: how readers wait for, and seal, positions of dead writers (contract §3.2).
    """
    return AwsWorld(
        config,
        clients if clients is not None else AwsClients.create(config),
        clock if clock is not None else SystemClock(),
        capabilities if capabilities is not None else WorldCapabilities(),
        repair=repair,
        owns_clients=clients is None,
    )
