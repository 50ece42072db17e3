"""The scenario harness: a World, its manual clock, runtimes bound to it, and a synchronous pump.

Every scenario runs through the World's real queues: ``start()`` publishes, the
harness delivers each visible message to ``runtime.handle`` (through a recording
wrapper) and settles it as the handler said (ack, redeliver, or redeliver after
a raise). ``settle()`` repeats that, moving the ``ManualClock`` to the next due
message, until the run is terminal or nothing is left. Nothing sleeps.

The pump and its settle loop are the test kit's (:mod:`world_aws.testing.pump`):
:class:`MemoryPump` drives ``MemoryQueue``; the AWS pump (``harness.sqs_pump``)
receives from SQS.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime

from harness.spy import SpyWorld
from world_aws.client.handle import RunHandle
from world_aws.contract.clock import ManualClock
from world_aws.contract.payload import HealthCheck, InvokePayload
from world_aws.contract.records import Event, EventType, ResolveData, RunStatus
from world_aws.contract.transport import decode_payload
from world_aws.contract.world import Delivery, HandlerResult, MessageHandler, QueueName, World
from world_aws.errors import BadInput
from world_aws.local.memory import MemoryWorld, create_memory_world
from world_aws.local.memory_queue import PendingMessage
from world_aws.runtime.runtime import Runtime
from world_aws.testing.pump import ALL_QUEUES, MemoryPump, Pump, Stalled, advance, settle
from world_aws.worker.config import RuntimeConfig
from world_aws.worker.deployments import Handover
from world_aws.workflow.registry import Workflows

# Wraps one delivery: gets the delivery and the runtime's handler, returns the result
# (a test uses it to lose an ack, or to look at a message before it is handled).
Intercept = Callable[[Delivery, MessageHandler], HandlerResult]

__all__ = ["ALL_QUEUES", "DeliveryRecord", "Harness", "Intercept", "MemoryPump", "Pump"]


@dataclass
class DeliveryRecord:
    """One delivery the harness made, and what the handler did with it."""

    index: int
    queue: QueueName
    message_id: str
    attempt: int
    at: datetime
    payload: InvokePayload | HealthCheck | None  # None: the body does not parse
    result: HandlerResult | None = None
    error: BaseException | None = None

    @property
    def step_id(self) -> str | None:
        return self.payload.step_id if isinstance(self.payload, InvokePayload) else None


class Harness:
    """A World, its clock, the runtimes bound to it and the pump that delivers their messages."""

    def __init__(self, kind: str, world: World, clock: ManualClock, pump: Pump) -> None:
        self.kind = kind
        self.world = world
        self.clock = clock
        self.pump = pump
        self.deliveries: list[DeliveryRecord] = []
        self._current: DeliveryRecord | None = None
        self.spy = SpyWorld(world, self._current_index)
        self._runtimes: list[Runtime] = []
        # What ``runtime_for`` uses when given no config (a suite about dispatched steps
        # sets ``RuntimeConfig(max_inline_steps=0)``).
        self.default_config = RuntimeConfig()

    # --- runtimes -------------------------------------------------------------------

    def runtime_for(
        self,
        app: Workflows,
        config: RuntimeConfig | None = None,
        *,
        world: World | None = None,
        handover: Handover | None = None,
    ) -> Runtime:
        """A runtime for ``app`` over the spied World (or ``world``); the latest one handles deliveries.

        ``handover``: the app's other deployments (``worker/deployments.py``), for a test of a deploy.
        """
        runtime = Runtime(world or self.spy, app, config or self.default_config, handover=handover)
        self._runtimes.append(runtime)
        return runtime

    @property
    def runtime(self) -> Runtime:
        assert self._runtimes, "call harness.runtime_for(app) first"
        return self._runtimes[-1]

    def close(self) -> None:
        for runtime in self._runtimes:
            runtime.close()

    # --- delivering -----------------------------------------------------------------

    def drain(
        self,
        runtime: Runtime | None = None,
        *,
        queues: Iterable[QueueName] = ALL_QUEUES,
        intercept: Intercept | None = None,
    ) -> int:
        """Deliver every visible message (without moving the clock); returns how many."""
        return self.pump.deliver_visible(self._handler(runtime or self.runtime, intercept), queues)

    def advance(self, seconds: float) -> None:
        advance(self.pump, self.clock, seconds)

    def settle(
        self,
        run: RunHandle | str | None = None,
        *,
        runtime: Runtime | None = None,
        intercept: Intercept | None = None,
        max_rounds: int = 200,
    ) -> RunStatus | None:
        """Drain, then jump the clock to the next due message, until ``run`` is terminal or nothing is queued.

        Returns:
            The run's status (None without a run).
        """
        run_id = run.run_id if isinstance(run, RunHandle) else run
        handler = self._handler(runtime or self.runtime, intercept)

        def done() -> bool:
            return run_id is not None and self.status(run_id).terminal

        try:
            settle(self.pump, self.clock, handler, done, max_rounds=max_rounds)
        except Stalled as exc:
            raise AssertionError(str(exc)) from None
        return self.status(run_id) if run_id is not None else None

    # --- reading back ---------------------------------------------------------------

    def status(self, run_id: str) -> RunStatus:
        return self.world.runs.get(run_id, resolve_data=ResolveData.NONE).status

    def events(self, run_id: str, *, resolve_data: ResolveData = ResolveData.ALL) -> list[Event]:
        return self.world.events.list(run_id, resolve_data=resolve_data)

    def event_types(self, run_id: str) -> list[EventType]:
        return [e.type for e in self.events(run_id, resolve_data=ResolveData.NONE)]

    def pending_messages(self, queue: QueueName) -> list[PendingMessage]:
        """The queued messages of ``queue``, due ones first (in-memory World only)."""
        assert isinstance(self.world, MemoryWorld), "pending_messages needs the in-memory World"
        return self.world.memory_queue.pending(queue)

    def pending_messages_count(self) -> int:
        """Messages still queued on both queues (in-memory World only)."""
        return sum(len(self.pending_messages(q)) for q in QueueName)

    def step_deliveries(self) -> list[DeliveryRecord]:
        return [d for d in self.deliveries if d.step_id is not None]

    # --- internals ------------------------------------------------------------------

    def _current_index(self) -> int | None:
        current = self._current
        return current.index if current is not None else None

    def _handler(self, runtime: Runtime, intercept: Intercept | None) -> MessageHandler:
        def record(delivery: Delivery) -> HandlerResult:
            entry = DeliveryRecord(
                index=len(self.deliveries),
                queue=delivery.queue,
                message_id=delivery.message_id,
                attempt=delivery.attempt,
                at=self.clock.now(),
                payload=_parse(delivery.body),
            )
            self.deliveries.append(entry)
            self._current = entry
            try:
                result = intercept(delivery, runtime.handle) if intercept else runtime.handle(delivery)
            except BaseException as exc:
                entry.error = exc
                raise
            finally:
                self._current = None
            entry.result = result
            return result

        return record


@contextmanager
def memory_harness(visibility_timeout_seconds: float = 0.0) -> Iterator[Harness]:
    """A harness over a fresh in-memory World on a fresh ``ManualClock``, closed on exit.

    ``visibility_timeout_seconds``: how long a message whose handler raised stays invisible.
    """
    clock = ManualClock()
    world = create_memory_world(clock=clock, visibility_timeout_seconds=visibility_timeout_seconds)
    built = Harness("memory", world, clock, MemoryPump(world))
    try:
        yield built
    finally:
        built.close()
        world.close()


def _parse(body: bytes) -> InvokePayload | HealthCheck | None:
    try:
        return decode_payload(body)
    except BadInput:
        return None  # the runtime must refuse it; the record just says it did not parse
