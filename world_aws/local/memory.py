"""``MemoryWorld``: the in-memory World, reference model of the contract and fast test backend.

Build one with :func:`create_memory_world`. Every store shares one lock-guarded
state (:mod:`memory_state`); every decision goes through
:mod:`world_aws.contract.rules`. The queue (:mod:`memory_queue`) can be driven
synchronously (``world.memory_queue.drain(handler)``) or by background threads
(``world.start_consumers(handler)``). ``world.stats`` counts operations.

The protocol attributes (``events``, ``queue``, ...) are typed as the
protocols, so a ``MemoryWorld`` is a ``World``; the memory-only extras of the
queue are on ``memory_queue`` (the same object as ``queue``).
"""

from __future__ import annotations

import threading

from world_aws.contract.admission import AdmissionStore
from world_aws.contract.clock import Clock, SystemClock
from world_aws.contract.coalesce import GateStore
from world_aws.contract.erasure import Erasure
from world_aws.contract.schedules import ScheduleStore
from world_aws.contract.sealing import PLAIN_PAYLOADS, PayloadSeal
from world_aws.contract.streams import StreamStore
from world_aws.contract.world import (
    BlobStore,
    EventStore,
    HookStore,
    MessageHandler,
    Queue,
    RunEnds,
    RunStore,
    StepStore,
    WaitStore,
    WorldCapabilities,
)
from world_aws.local.memory_admission import MemoryAdmissionStore
from world_aws.local.memory_blobs import MemoryBlobStore
from world_aws.local.memory_consumers import DEFAULT_WORKERS_PER_QUEUE, MemoryConsumers
from world_aws.local.memory_erasure import MemoryErasure
from world_aws.local.memory_events import MemoryEventStore
from world_aws.local.memory_gates import MemoryGateStore
from world_aws.local.memory_queue import DEFAULT_MAX_RECEIVE_COUNT, MemoryQueue
from world_aws.local.memory_reads import MemoryHookStore, MemoryRunStore, MemoryStepStore, MemoryWaitStore
from world_aws.local.memory_schedules import MemoryScheduleStore
from world_aws.local.memory_state import MemoryState
from world_aws.local.memory_stats import WorldStats
from world_aws.local.memory_streams import MemoryStreamStore


class MemoryWorld:
    """Every World protocol, in memory. Thread-safe."""

    events: EventStore
    runs: RunStore
    steps: StepStore
    hooks: HookStore
    waits: WaitStore
    blobs: BlobStore
    queue: Queue
    clock: Clock
    schedules: ScheduleStore
    streams: StreamStore
    admission: AdmissionStore
    gates: GateStore
    erasure: Erasure
    ends: RunEnds

    def __init__(
        self,
        *,
        clock: Clock,
        deployment_id: str,
        capabilities: WorldCapabilities,
        visibility_timeout_seconds: float = 0.0,
        max_receive_count: int = DEFAULT_MAX_RECEIVE_COUNT,
        workers_per_queue: int = DEFAULT_WORKERS_PER_QUEUE,
    ) -> None:
        self.clock = clock
        self.stats = WorldStats()
        state = MemoryState()
        self.ends = RunEnds()
        self.events = MemoryEventStore(state, clock, self.stats, self.ends)
        self.runs = MemoryRunStore(state, self.stats)
        self.steps = MemoryStepStore(state, self.stats)
        self.hooks = MemoryHookStore(state, self.stats)
        self.waits = MemoryWaitStore(state, self.stats)
        blobs = MemoryBlobStore(self.stats)
        streams = MemoryStreamStore()
        self.blobs = blobs
        self.schedules = MemoryScheduleStore(clock)
        self.streams = MemoryStreamStore()
        self.admission = MemoryAdmissionStore(clock)
        self.gates = MemoryGateStore(clock)
        # A memory World does not encrypt (README "Security": the AWS World does).
        self.payloads: PayloadSeal = PLAIN_PAYLOADS
        self.streams = streams
        self.erasure = MemoryErasure(state, streams, blobs)
        self.memory_queue = MemoryQueue(
            clock,
            stats=self.stats,
            visibility_timeout_seconds=visibility_timeout_seconds,
            max_receive_count=max_receive_count,
        )
        self.queue = self.memory_queue
        self._deployment_id = deployment_id
        self._capabilities = capabilities
        self._workers_per_queue = workers_per_queue
        self._consumers: list[MemoryConsumers] = []
        self._consumers_lock = threading.Lock()

    @property
    def capabilities(self) -> WorldCapabilities:
        return self._capabilities

    def deployment_id(self) -> str:
        """The deployment this World serves, as configured (no backend call)."""
        return self._deployment_id

    def start_consumers(
        self, handler: MessageHandler, *, workers_per_queue: int | None = None
    ) -> MemoryConsumers:
        """Deliver both queues' messages to ``handler`` in background threads.

        Args:
            handler: called once per delivery, from a worker thread.
            workers_per_queue: threads per queue (default: the World's setting, 4).

        Returns:
            The running consumers; ``stop()`` them (``close()`` stops any left running).
        """
        consumers = MemoryConsumers(
            self.memory_queue, handler, workers_per_queue=workers_per_queue or self._workers_per_queue
        )
        with self._consumers_lock:
            self._consumers.append(consumers)
        return consumers

    def close(self) -> None:
        """Stop every consumer this World started. The state stays readable."""
        with self._consumers_lock:
            running, self._consumers = self._consumers, []
        for consumers in running:
            consumers.stop()


def create_memory_world(
    *,
    clock: Clock | None = None,
    deployment_id: str = "dpl_local",
    capabilities: WorldCapabilities | None = None,
    visibility_timeout_seconds: float = 0.0,
    max_receive_count: int = DEFAULT_MAX_RECEIVE_COUNT,
    workers_per_queue: int = DEFAULT_WORKERS_PER_QUEUE,
) -> MemoryWorld:
    """Build an in-memory World.

    Args:
        clock: the time source (default: the system clock; tests pass a ``ManualClock``).
        deployment_id: what ``deployment_id()`` returns.
        capabilities: what the World declares (default: ``WorldCapabilities()``, no
            deployment affinity, hook resume dedup on, which this World implements).
        visibility_timeout_seconds: how long a message whose handler raised stays invisible.
        max_receive_count: deliveries without an ack before a message is dead-lettered.
        workers_per_queue: default thread count per queue for ``start_consumers``.

    Returns:
        A fresh, empty ``MemoryWorld``.
    """
    return MemoryWorld(
        clock=clock if clock is not None else SystemClock(),
        deployment_id=deployment_id,
        capabilities=capabilities if capabilities is not None else WorldCapabilities(),
        visibility_timeout_seconds=visibility_timeout_seconds,
        max_receive_count=max_receive_count,
        workers_per_queue=workers_per_queue,
    )
