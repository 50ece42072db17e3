"""``QueuePump``: Lambda's SQS event source with ``BatchSize: 1``, played with threads.

The template's step function takes one record per invocation (``BatchSize: 1``)
with up to ``MaximumConcurrency`` invocations at once, and Lambda's pollers
receive up to 10 messages per ``ReceiveMessage`` to feed them. The package's
``LocalEventSource`` hands a whole receive to one invocation and runs one poller
per queue, which for a fan-out would measure its own receive loop more than the
step consumer. This pump does what the mapping does for a fan-out:

* per queue, ``pollers`` threads; each takes as many free invocation slots as it
  can (1..10), receives up to that many messages, and starts one invocation per
  message on the queue's pool of ``workers`` threads. Receives are short polls
  with a pause of ``idle_pause`` after an empty one: the benchmark serialises
  whole calls (``bench.instrument``), and a long poll would hold that lock while
  it waits (in-process moto replays a long poll as short polls 20 ms apart anyway);
* an invocation is ``process_sqs_event`` on a one-record Lambda SQS event (the
  same code as the deployed functions); a record that succeeded is deleted, a
  failed one stays for redelivery (``process_sqs_event`` set its visibility).

``idle()`` says no invocation runs and SQS holds no visible, in-flight or delayed
message (the caller mutes its own ``GetQueueAttributes`` calls from the counts).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, cast

from world_aws.aws.event_source import lambda_sqs_event
from world_aws.aws.lambda_sqs import process_sqs_event
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


class QueuePump:
    """Consumes the given queues until ``stop()``; the handler can be swapped while idle.

    Args:
        sqs: the World's SQS client.
        queue_urls: the queues to consume.
        handler: where each record goes (``Runtime.handle`` or a wrapper of it).
        clock: "now" for chained delays.
        workers: concurrent invocations per queue (``ScalingConfig.MaximumConcurrency``).
        pollers: receiving threads per queue.
        idle_pause: pause of a poller after an empty receive, in seconds.
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
    ) -> None:
        self.handler = handler
        self._sqs = sqs
        self._urls = dict(queue_urls)
        self._clock = clock
        self._idle_pause = idle_pause
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._running = 0
        self._started = 0
        self._arns = {
            name: sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
                "QueueArn"
            ]
            for name, url in self._urls.items()
        }
        self._slots = {name: threading.BoundedSemaphore(workers[name]) for name in self._urls}
        self._pools = {
            name: ThreadPoolExecutor(workers[name], thread_name_prefix=f"pump-{name.value}")
            for name in self._urls
        }
        self._threads = [
            threading.Thread(target=self._poll, args=(name,), name=f"poller-{name.value}-{i}", daemon=True)
            for name in self._urls
            for i in range(pollers[name])
        ]
        for thread in self._threads:
            thread.start()

    def idle(self) -> bool:
        """No invocation running and no message visible, in flight or delayed."""
        with self._lock:
            before = (self._running, self._started)
        if before[0]:
            return False
        for url in self._urls.values():
            response = self._sqs.get_queue_attributes(QueueUrl=url, AttributeNames=list(_COUNTERS))  # type: ignore[arg-type]
            values = cast("Mapping[str, str]", response["Attributes"])
            if any(int(values.get(name, "0")) for name in _COUNTERS):
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

    # ---------------------------------------------------------------- internals

    def _poll(self, queue: QueueName) -> None:
        slots = self._slots[queue]
        while not self._stopping.is_set():
            if not slots.acquire(timeout=0.1):
                continue
            taken = 1
            while taken < MAX_RECEIVE and slots.acquire(blocking=False):
                taken += 1
            messages = self._receive(queue, taken) if not self._stopping.is_set() else []
            for _ in range(taken - len(messages)):
                slots.release()
            if not messages:
                self._stopping.wait(self._idle_pause)
            for message in messages:
                with self._lock:
                    self._running += 1
                    self._started += 1
                self._pools[queue].submit(self._invoke, queue, message)

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

    def _invoke(self, queue: QueueName, message: MessageTypeDef) -> None:
        try:
            event = lambda_sqs_event([message], self._arns[queue])
            response = process_sqs_event(
                event, self.handler, sqs=self._sqs, queue_urls=self._urls, clock=self._clock
            )
            if not response["batchItemFailures"]:
                self._sqs.delete_message(QueueUrl=self._urls[queue], ReceiptHandle=message["ReceiptHandle"])
        except Exception:
            logger.exception(
                "invocation on the %s queue failed; the message will be redelivered", queue.value
            )
        finally:
            with self._lock:
                self._running -= 1
            self._slots[queue].release()
