"""``QueuePump``: Lambda's SQS event source (``BatchSize`` per queue, 1 by default), played with threads.

``PollingPump`` is the shape, shared with the model pass's pump (``bench.model``): per queue,
``pollers`` threads take free invocation slots (1..10), receive up to that many messages
(short polls, ``idle_pause`` after an empty one: a long poll would hold the recorder's call
lock) and start one invocation per batch of ``batch_sizes[queue]`` on the queue's pool of
``workers`` threads. ``QueuePump`` is it over SQS: an invocation is ``process_sqs_event`` on a
Lambda SQS event (the deployed functions' code), the records that succeeded are deleted (one
``DeleteMessageBatch`` for several), a failed one stays for redelivery; ``on_invoke`` brackets
the handler call (the cost meter times invocations there). ``idle()``: no invocation runs and
SQS holds no visible, in-flight or delayed message.
"""

from __future__ import annotations

import logging
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from world_aws.aws.queue.event_source import lambda_sqs_event
from world_aws.aws.queue.heartbeat import HeartbeatConfig
from world_aws.aws.queue.lambda_sqs import process_sqs_event
from world_aws.contract.clock import Clock
from world_aws.contract.world import MessageHandler, QueueName

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageTypeDef

logger = logging.getLogger(__name__)

MAX_RECEIVE = 10  # SQS ReceiveMessage maximum
_COUNTERS = (
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesNotVisible",
    "ApproximateNumberOfMessagesDelayed",
)

M = TypeVar("M")


class PollingPump(ABC, Generic[M]):
    """Pollers feeding per-queue pools of invocations until ``stop()``; the handler may change while idle.

    Per queue, ``pollers`` threads each take as many free invocation slots as they
    can (1..10 / batch size), receive up to ``slots x batch size`` messages (at most
    10, ``_receive``) and start one invocation per batch of at most ``batch_sizes[queue]``
    messages (``_invoke``) on the queue's pool of ``workers`` threads.
    Subclasses start the threads by calling ``__init__`` last.

    Args:
        queues: the queues to consume.
        handler: where each message goes (``Runtime.handle`` or a wrapper of it).
        workers: concurrent invocations per queue (``ScalingConfig.MaximumConcurrency``).
        pollers: receiving threads per queue.
        idle_pause: pause of a poller after an empty receive, in seconds.
        batch_sizes: records per invocation by queue (the event source's ``BatchSize``; 1 if absent).
    """

    def __init__(
        self,
        queues: Iterable[QueueName],
        handler: MessageHandler,
        *,
        workers: Mapping[QueueName, int],
        pollers: Mapping[QueueName, int],
        idle_pause: float,
        batch_sizes: Mapping[QueueName, int] | None = None,
    ) -> None:
        self.handler = handler
        self._queues = list(queues)
        self._batch = {name: max(1, (batch_sizes or {}).get(name, 1)) for name in self._queues}
        self._idle_pause = idle_pause
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._running = 0
        self._started = 0
        self._slots = {name: threading.BoundedSemaphore(workers[name]) for name in self._queues}
        self._pools = {
            name: ThreadPoolExecutor(workers[name], thread_name_prefix=f"pump-{name.value}")
            for name in self._queues
        }
        self._threads = [
            threading.Thread(target=self._poll, args=(name,), name=f"poller-{name.value}-{i}", daemon=True)
            for name in self._queues
            for i in range(pollers[name])
        ]
        for thread in self._threads:
            thread.start()

    def idle(self) -> bool:
        """No invocation running and no message visible, in flight or delayed."""
        with self._lock:
            before = (self._running, self._started)
        if before[0] or not self._quiet():
            return False
        with self._lock:
            return (self._running, self._started) == before

    def stop(self) -> None:
        """Stop receiving; invocations in flight finish."""
        self._stopping.set()
        for thread in self._threads:
            thread.join()
        for pool in self._pools.values():
            pool.shutdown(wait=True)

    # ---------------------------------------------------------------- what a backend provides

    @abstractmethod
    def _receive(self, queue: QueueName, count: int) -> list[M]:
        """Up to ``count`` messages of ``queue``, now invisible to other receivers ([] if none)."""

    @abstractmethod
    def _invoke(self, queue: QueueName, messages: list[M]) -> None:
        """One invocation: hand ``messages`` to the handler, then delete each or leave it for redelivery."""

    @abstractmethod
    def _quiet(self) -> bool:
        """No message of any queue visible, in flight or delayed."""

    # ---------------------------------------------------------------- internals

    def _poll(self, queue: QueueName) -> None:
        slots, size = self._slots[queue], self._batch[queue]
        most = max(1, MAX_RECEIVE // size)
        while not self._stopping.is_set():
            if not slots.acquire(timeout=0.1):
                continue
            taken = 1
            while taken < most and slots.acquire(blocking=False):
                taken += 1
            wanted = min(MAX_RECEIVE, taken * size)
            messages = self._receive(queue, wanted) if not self._stopping.is_set() else []
            batches = [messages[i : i + size] for i in range(0, len(messages), size)]
            for _ in range(taken - len(batches)):
                slots.release()
            if not messages:
                self._stopping.wait(self._idle_pause)
            for batch in batches:
                with self._lock:
                    self._running += 1
                    self._started += 1
                self._pools[queue].submit(self._run, queue, batch)

    def _run(self, queue: QueueName, messages: list[M]) -> None:
        try:
            self._invoke(queue, messages)
        except Exception:
            logger.exception(
                "invocation on the %s queue failed; the message will be redelivered", queue.value
            )
        finally:
            with self._lock:
                self._running -= 1
            self._slots[queue].release()


# Brackets one invocation's handler call: (queue, records in the batch) -> context.
InvocationHook = Callable[[QueueName, int], AbstractContextManager[object]]


class QueuePump(PollingPump["MessageTypeDef"]):
    """``PollingPump`` over SQS: short-poll receives, ``process_sqs_event`` per batch, delete on success.

    Args:
        sqs: the World's SQS client.
        queue_urls: the queues to consume.
        handler: where each record goes (``Runtime.handle`` or a wrapper of it).
        clock: "now" for chained delays.
        workers: concurrent invocations per queue (``ScalingConfig.MaximumConcurrency``).
        pollers: receiving threads per queue.
        idle_pause: pause of a poller after an empty receive, in seconds.
        batch_sizes: records per invocation by queue (1 if absent).
        on_invoke: brackets each invocation's handler call (not its delete).
        heartbeat: the consumer's visibility heartbeat (``world_aws/aws/queue/heartbeat.py``), as a
            Lambda invocation keeps it.
    """

    def __init__(
        self,
        sqs: SQSClient,
        queue_urls: Mapping[QueueName, str],
        handler: MessageHandler,
        clock: Clock,
        *,
        workers: Mapping[QueueName, int],
        pollers: Mapping[QueueName, int],
        idle_pause: float = 0.02,
        batch_sizes: Mapping[QueueName, int] | None = None,
        on_invoke: InvocationHook | None = None,
        heartbeat: HeartbeatConfig | None = None,
    ) -> None:
        self._sqs = sqs
        self._urls = dict(queue_urls)
        self._clock = clock
        self._heartbeat = heartbeat
        self._on_invoke = on_invoke
        self._arns = {
            name: sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
                "QueueArn"
            ]
            for name, url in self._urls.items()
        }
        super().__init__(
            self._urls,
            handler,
            workers=workers,
            pollers=pollers,
            idle_pause=idle_pause,
            batch_sizes=batch_sizes,
        )

    def _quiet(self) -> bool:
        for url in self._urls.values():
            response = self._sqs.get_queue_attributes(QueueUrl=url, AttributeNames=list(_COUNTERS))  # type: ignore[arg-type]
            values = cast("Mapping[str, str]", response["Attributes"])
            if any(int(values.get(name, "0")) for name in _COUNTERS):
                return False
        return True

    def _receive(self, queue: QueueName, count: int) -> list[MessageTypeDef]:
        request: dict[str, Any] = {
            "QueueUrl": self._urls[queue],
            "MaxNumberOfMessages": count,
            "WaitTimeSeconds": 0,
            "MessageSystemAttributeNames": ["All"],
            "MessageAttributeNames": ["All"],
        }
        try:
            return list(self._sqs.receive_message(**request).get("Messages", []))
        except Exception:
            logger.exception("receive from the %s queue failed", queue.value)
            self._stopping.wait(0.5)
            return []

    def _invoke(self, queue: QueueName, messages: list[MessageTypeDef]) -> None:
        event = lambda_sqs_event(messages, self._arns[queue])
        bracket = self._on_invoke(queue, len(messages)) if self._on_invoke else nullcontext()
        with bracket:
            response = process_sqs_event(
                event,
                self.handler,
                sqs=self._sqs,
                queue_urls=self._urls,
                clock=self._clock,
                heartbeat=self._heartbeat,
            )
        failed = {failure["itemIdentifier"] for failure in response["batchItemFailures"]}
        done = [m for m in messages if m["MessageId"] not in failed]
        url = self._urls[queue]
        if len(done) == 1:
            self._sqs.delete_message(QueueUrl=url, ReceiptHandle=done[0]["ReceiptHandle"])
        elif done:
            entries = [{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done)]
            self._sqs.delete_message_batch(QueueUrl=url, Entries=entries)  # type: ignore[arg-type]
