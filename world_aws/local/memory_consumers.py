"""``MemoryConsumers``: background threads that deliver a ``MemoryQueue``'s messages.

``MemoryWorld.start_consumers(handler)`` starts ``workers_per_queue`` threads per
queue. Each claims the next visible message of its queue, calls ``handler`` with
it and settles the outcome (ack, redeliver, or redeliver after a raise).

``wait_idle(timeout)`` returns once no message is visible or in flight. A
delayed message counts only once it is due; with a ``ManualClock`` it never
becomes due until the test advances the clock, so ``wait_idle`` does not wait
for it. ``stop()`` lets in-flight deliveries finish and leaves the rest queued.
"""

from __future__ import annotations

import threading

from world_aws.contract.world import MessageHandler, QueueName
from world_aws.local.memory_queue import MemoryQueue

DEFAULT_WORKERS_PER_QUEUE = 4

# How long an idle worker sleeps before looking again. Publishes and settles wake
# it at once; the poll only matters when time moves (a delayed message falls due).
_POLL_SECONDS = 0.005


class MemoryConsumers:
    """Worker threads over both queues of a :class:`MemoryQueue`."""

    def __init__(
        self,
        queue: MemoryQueue,
        handler: MessageHandler,
        *,
        workers_per_queue: int = DEFAULT_WORKERS_PER_QUEUE,
        name: str = "memory-consumer",
    ) -> None:
        if workers_per_queue < 1:
            raise ValueError("workers_per_queue must be at least 1")
        self._queue = queue
        self._handler = handler
        self._stopping = threading.Event()
        self._threads = [
            threading.Thread(target=self._work, args=(qname,), name=f"{name}-{qname.value}-{i}", daemon=True)
            for qname in QueueName
            for i in range(workers_per_queue)
        ]
        for thread in self._threads:
            thread.start()

    @property
    def threads(self) -> list[threading.Thread]:
        """The worker threads (for tests)."""
        return list(self._threads)

    def stop(self, timeout: float = 30.0) -> None:
        """Stop consuming: in-flight deliveries finish, undelivered messages stay queued."""
        self._stopping.set()
        with self._queue.changed:
            self._queue.changed.notify_all()
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(timeout)

    def wait_idle(self, timeout: float) -> bool:
        """Block until no message is visible or in flight; False on timeout (real seconds)."""
        return self._queue.wait_idle(timeout)

    def __enter__(self) -> MemoryConsumers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _work(self, qname: QueueName) -> None:
        queues = (qname,)
        while not self._stopping.is_set():
            message = self._queue.claim(queues)
            if message is None:
                with self._queue.changed:
                    if not self._stopping.is_set():
                        self._queue.changed.wait(_POLL_SECONDS)
                continue
            self._queue.deliver(message, self._handler)
