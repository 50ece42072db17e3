"""The model pass: the fan-out on the in-memory World, each operation delayed by its measured round trips.

On moto calls are served one at a time, so from some tens of branches on a run's time is the
emulator's work; on AWS a call costs its round trip and calls from different Lambdas overlap.
The model plays that regime: ``MemoryWorld`` behind ``BenchWorld`` whose ``charge`` is a
``LatencyCharge`` (before each op it sleeps the op's mean sequential round trips measured on
moto, releasing the GIL), consumed by ``ModelPump`` (``bench.pump.PollingPump`` over the memory
queue: one SQS round trip per receive of up to 10, one per delete or visibility change). The
rest is ``bench.measure.measure``. Left out: a latency tail, and the runtime's CPU spread over
Lambdas (at N=256 CPU queueing blurs TTLS; ``delivery_to_claim_p50`` is the figure it does not).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial

from bench.instrument import CallRecorder, Latency
from bench.measure import Backend, PumpShape, RunSample, Variant, measure, run_get_ops
from bench.opcosts import LatencyCharge, OpCosts, modeled_round_trips
from bench.pump import PollingPump
from world_aws.contract.clock import SystemClock
from world_aws.contract.world import Ack, Delivery, HandlerResult, MessageHandler, QueueName
from world_aws.local.memory import MemoryWorld, create_memory_world
from world_aws.local.memory_queue import MemoryQueue, QueuedMessage

RECEIVE = "sqs.ReceiveMessage"
DELETE = "sqs.DeleteMessage"
VISIBILITY = "sqs.ChangeMessageVisibility"
# A message whose handler raised is visible again after this, as with the template's queues.
VISIBILITY_TIMEOUT_SECONDS = 30.0
# How long an idle poller waits for a publish before it looks again (a publish wakes it at once).
LONG_POLL_SLICE_SECONDS = 0.005


class ModelPump(PollingPump[QueuedMessage]):
    """``PollingPump`` over a ``MemoryQueue``, paying the SQS round trips of Lambda's event source.

    Args:
        queue: the memory World's queue.
        handler: where each message goes.
        recorder: counts the modeled SQS calls (receives that brought messages, deletes, visibility changes).
        latency: round-trip time per service.
        workers: concurrent invocations per queue.
        pollers: receiving threads per queue.
        sleep: how to wait a round trip.
    """

    def __init__(
        self,
        queue: MemoryQueue,
        handler: MessageHandler,
        recorder: CallRecorder,
        latency: Latency,
        *,
        workers: dict[QueueName, int],
        pollers: dict[QueueName, int],
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._queue = queue
        self._recorder = recorder
        self._latency = latency
        self._sleep = sleep
        super().__init__(tuple(QueueName), handler, workers=workers, pollers=pollers, idle_pause=0.0)

    def _receive(self, queue: QueueName, count: int) -> list[QueuedMessage]:
        messages: list[QueuedMessage] = []
        while len(messages) < count:
            message = self._queue.claim((queue,))
            if message is None:
                break
            messages.append(message)
        if not messages:
            with self._queue.changed:
                if not self._stopping.is_set():
                    self._queue.changed.wait(LONG_POLL_SLICE_SECONDS)
            return []
        # The receive's round trip; the claimed messages are in flight (invisible) meanwhile.
        self._recorder.record_call(RECEIVE)
        self._sleep(self._latency.sqs)
        return messages

    def _invoke(self, queue: QueueName, messages: list[QueuedMessage]) -> None:
        for message in messages:  # batches of one: the model's queues keep the default BatchSize
            self._queue.deliver(message, self._settling)

    def _settling(self, delivery: Delivery) -> HandlerResult:
        """The handler, then the round trip of the delete or visibility change it leads to.

        Inside the handler call, so that the queue settles the message when that call
        would have returned on AWS. A handler that raises pays nothing: the message
        comes back when its visibility timeout runs out.
        """
        result = self.handler(delivery)
        self._recorder.record_call(DELETE if isinstance(result, Ack) else VISIBILITY)
        self._sleep(self._latency.sqs)
        return result

    def _quiet(self) -> bool:
        return self._queue.is_idle() and not any(self._queue.pending(name) for name in QueueName)


class ModelBench:
    """The model pass: one fresh in-memory World per run, each op charged its measured round trips.

    Args:
        costs: round trips per op, measured by the moto pass.
        latency: round-trip time per service.
        shape: consumer concurrency (full mode; held mode runs one step consumer per branch).
        run_timeout: real seconds a run may take.
        sleep: how to wait a round trip (tests may inject their own).
    """

    def __init__(
        self,
        costs: OpCosts,
        latency: Latency,
        shape: PumpShape | None = None,
        *,
        run_timeout: float = 300,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.costs = costs
        self.latency = latency
        self.shape = shape or PumpShape()
        self.run_timeout = run_timeout
        # Never attached to clients: it counts ops, pre-claim ops and the pump's modeled calls.
        self.recorder = CallRecorder(latency)
        self.charge = LatencyCharge(costs, latency, sleep)
        self._sleep = sleep

    def run_once(self, n: int, variant: Variant, *, held: bool = False) -> RunSample:
        """Run ``bench.fanout(n)`` under ``variant`` on a fresh model World; measure it.

        Raises:
            RuntimeError: the run did not start or end within ``run_timeout``, or the queues did not drain.
        """
        world = create_memory_world(
            clock=SystemClock(), visibility_timeout_seconds=VISIBILITY_TIMEOUT_SECONDS
        )
        try:
            backend = Backend(
                "model",
                world,
                partial(self._pump, world),
                charge=self.charge,
                round_trips=modeled_round_trips(self.costs),
                run_reads=run_get_ops,
            )
            return measure(
                self.recorder,
                backend,
                n,
                variant,
                held=held,
                step_workers=self.shape.step_workers,
                run_timeout=self.run_timeout,
            )
        finally:
            world.close()

    def _pump(self, world: MemoryWorld, handler: MessageHandler, step_workers: int) -> ModelPump:
        return ModelPump(
            world.memory_queue,
            handler,
            self.recorder,
            self.latency,
            workers=self.shape.workers(step_workers),
            pollers=self.shape.pollers(),
            sleep=self._sleep,
        )
