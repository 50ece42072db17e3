"""``LocalEventSource``: Lambda's SQS event source mapping, played locally against any SQS endpoint.

moto cannot run the real event source (its Lambda needs Docker), so this does
what the mapping does, with the same function (``process_sqs_event``):

* per queue, one poller receives batches of up to 10 messages (long-polling a
  short ``WaitTimeSeconds`` so that ``stop`` is prompt), builds the Lambda SQS
  event and invokes the function on a thread pool, at most ``max_concurrency``
  invocations per queue at once (``ScalingConfig.MaximumConcurrency``); the poller
  only receives when a slot is free, so no message waits received but unprocessed;
* the successful records are deleted, as Lambda deletes them; failures stay and
  come back after the visibility timeout (or the one the function set), and the
  queue's RedrivePolicy moves them to the DLQ after ``maxReceiveCount``;
* ``stop()`` ends the polling; batches in flight finish and delete their
  successes, everything else is still in the queue.

``wait_idle`` asks SQS: no visible, in-flight or delayed message, and no
invocation running.
"""

from __future__ import annotations

import base64
import logging
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from world_aws.aws.errors import mapped_errors
from world_aws.aws.queue.heartbeat import HeartbeatConfig
from world_aws.aws.queue.lambda_sqs import PartialBatchResponse, process_sqs_event
from world_aws.contract.clock import Clock, SystemClock
from world_aws.contract.world import MessageHandler, QueueName
from world_aws.errors import Misconfigured, WorldAwsError

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageTypeDef

logger = logging.getLogger(__name__)

_IDLE_COUNTERS = (
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesNotVisible",
    "ApproximateNumberOfMessagesDelayed",
)


@dataclass(frozen=True, slots=True)
class EventSourceOptions:
    """How the local event source polls.

    Attributes:
        batch_size: messages per invocation, 1..10 (the SQS receive maximum).
        max_concurrency: invocations in flight per queue.
        wait_time_seconds: long-poll wait of each receive (bounds ``stop`` latency).
        visibility_timeout: override the queue's visibility timeout on receive
            (None: the queue's own, as Lambda does).
        error_backoff_seconds: pause after a failed receive.
        idle_pause_seconds: with short polling (``wait_time_seconds=0``), the pause
            after an empty receive.
    """

    batch_size: int = 10
    max_concurrency: int = 4
    wait_time_seconds: int = 1
    visibility_timeout: int | None = None
    error_backoff_seconds: float = 0.5
    idle_pause_seconds: float = 0.02


SqsFunction = Callable[[Mapping[str, Any]], PartialBatchResponse]


def lambda_sqs_event(messages: list[MessageTypeDef], queue_arn: str) -> dict[str, Any]:
    """The event Lambda's SQS event source would send for ``messages`` of ``queue_arn``.

    ``messages`` are ``ReceiveMessage`` results requested with all system and
    message attributes.
    """
    region = queue_arn.split(":")[3]
    records = []
    for message in messages:
        attributes = dict(message.get("Attributes", {}))
        message_attributes: dict[str, dict[str, Any]] = {}
        for name, value in message.get("MessageAttributes", {}).items():
            binary = value.get("BinaryValue")
            message_attributes[name] = {
                "stringValue": value.get("StringValue"),
                "binaryValue": base64.b64encode(bytes(binary)).decode("ascii")
                if binary is not None
                else None,
                "stringListValues": [],
                "binaryListValues": [],
                "dataType": value["DataType"],
            }
        records.append(
            {
                "messageId": message["MessageId"],
                "receiptHandle": message["ReceiptHandle"],
                "body": message["Body"],
                "attributes": attributes,
                "messageAttributes": message_attributes,
                "md5OfBody": message.get("MD5OfBody", ""),
                "eventSource": "aws:sqs",
                "eventSourceARN": queue_arn,
                "awsRegion": region,
            }
        )
    return {"Records": records}


class LocalEventSource:
    """Pollers over the World's queues that invoke ``process_sqs_event`` like Lambda would.

    Implements the ``Consumers`` protocol. Starts polling on construction.

    Args:
        sqs: a boto3 SQS client.
        queue_urls: the URL of each queue to consume.
        handler: the ``MessageHandler`` every valid record goes to.
        options: polling options.
        clock: "now" for chained delays.
        heartbeat: keep the records of an invocation hidden while it works (``heartbeat.py``).
    """

    def __init__(
        self,
        sqs: SQSClient,
        queue_urls: Mapping[QueueName, str],
        handler: MessageHandler,
        options: EventSourceOptions | None = None,
        *,
        clock: Clock | None = None,
        heartbeat: HeartbeatConfig | None = None,
    ) -> None:
        self._sqs = sqs
        self._heartbeat = heartbeat
        self._urls = {QueueName(name): url for name, url in queue_urls.items()}
        self._handler = handler
        self._options = options or EventSourceOptions()
        if not 1 <= self._options.batch_size <= 10:
            raise ValueError("batch_size must be within 1..10")
        if self._options.max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        self._clock = clock or SystemClock()
        self._stopping = threading.Event()
        self._running = 0  # invocations in flight
        self._started = 0  # invocations ever started (detects activity during wait_idle)
        self._running_lock = threading.Lock()
        with mapped_errors("SQS GetQueueAttributes", resource=f"queues {sorted(self._urls.values())}"):
            self._arns = {
                name: sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
                    "QueueArn"
                ]
                for name, url in self._urls.items()
            }
        self._pools = {
            name: ThreadPoolExecutor(self._options.max_concurrency, thread_name_prefix=f"sqs-{name.value}")
            for name in self._urls
        }
        self._pollers = [
            threading.Thread(target=self._poll, args=(name,), name=f"sqs-poller-{name.value}", daemon=True)
            for name in self._urls
        ]
        for thread in self._pollers:
            thread.start()

    def invoke(self, queue: QueueName, event: Mapping[str, Any]) -> PartialBatchResponse:
        """The function under the mapping: one Lambda SQS event through ``process_sqs_event``."""
        return process_sqs_event(
            event,
            self._handler,
            sqs=self._sqs,
            queue_urls=self._urls,
            clock=self._clock,
            heartbeat=self._heartbeat,
        )

    def stop(self) -> None:
        """Stop polling; in-flight batches finish, everything else stays in the queues."""
        self._stopping.set()
        for thread in self._pollers:
            if thread is not threading.current_thread():
                thread.join()
        for pool in self._pools.values():
            pool.shutdown(wait=True)

    def wait_idle(self, timeout: float) -> bool:
        """Block until no message is visible, in flight or delayed and no invocation runs.

        Returns:
            False if that did not happen within ``timeout`` real seconds.
        """
        deadline = time.monotonic() + timeout
        seen: int | None = None
        while True:
            # Idle twice in a row with no invocation between: moto computes each counter
            # at its own instant, so a message whose visibility timeout (or delay) ends
            # between two of them is counted in none, once.
            idle = self._idle()
            if idle is not None and idle == seen:
                return True
            seen = idle
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)

    def __enter__(self) -> LocalEventSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---------------------------------------------------------------- internals

    def _idle(self) -> int | None:
        """How many invocations ever started, if the queues and the pool look idle; else None."""
        with self._running_lock:
            before = (self._running, self._started)
        if before[0]:
            return None
        for url in self._urls.values():
            with mapped_errors("SQS GetQueueAttributes", resource=f"queue {url}"):
                counters = self._sqs.get_queue_attributes(QueueUrl=url, AttributeNames=list(_IDLE_COUNTERS))  # type: ignore[arg-type]
            values = cast("Mapping[str, str]", counters["Attributes"])
            if any(int(values.get(name, "0")) for name in _IDLE_COUNTERS):
                return None
        # An invocation that started and ended while the counters were read may have
        # moved a message into a queue already looked at: then look again.
        with self._running_lock:
            return before[1] if (self._running, self._started) == before else None

    def _poll(self, queue: QueueName) -> None:
        slots = threading.BoundedSemaphore(self._options.max_concurrency)
        while not self._stopping.is_set():
            if not slots.acquire(timeout=0.1):
                continue
            if self._stopping.is_set():
                slots.release()
                break
            messages = self._receive(queue)
            if not messages:
                slots.release()
                if not self._options.wait_time_seconds:
                    self._stopping.wait(self._options.idle_pause_seconds)
                continue
            with self._running_lock:
                self._running += 1
                self._started += 1
            self._pools[queue].submit(self._invoke_batch, queue, messages, slots)

    def _receive(self, queue: QueueName) -> list[MessageTypeDef]:
        request: dict[str, Any] = {
            "QueueUrl": self._urls[queue],
            "MaxNumberOfMessages": self._options.batch_size,
            "WaitTimeSeconds": self._options.wait_time_seconds,
            "MessageSystemAttributeNames": ["All"],
            "MessageAttributeNames": ["All"],
        }
        if self._options.visibility_timeout is not None:
            request["VisibilityTimeout"] = self._options.visibility_timeout
        try:
            with mapped_errors("SQS ReceiveMessage", resource=f"queue {self._urls[queue]}"):
                return list(self._sqs.receive_message(**request).get("Messages", []))
        except WorldAwsError as exc:
            level = logging.ERROR if isinstance(exc, Misconfigured) else logging.WARNING
            logger.log(level, "receive from the %s queue failed: %s", queue.value, exc)
            self._stopping.wait(self._options.error_backoff_seconds)
            return []

    def _invoke_batch(
        self, queue: QueueName, messages: list[MessageTypeDef], slots: threading.BoundedSemaphore
    ) -> None:
        try:
            response = self.invoke(queue, lambda_sqs_event(messages, self._arns[queue]))
            failed = {failure["itemIdentifier"] for failure in response["batchItemFailures"]}
            done = [m for m in messages if m["MessageId"] not in failed]
            if done:
                self._delete(queue, done)
        except Exception:
            # Like a failed Lambda invocation: nothing is deleted, the batch comes back.
            logger.exception("invocation on the %s queue failed; its batch will be redelivered", queue.value)
        finally:
            self._finished(slots)

    def _delete(self, queue: QueueName, messages: list[MessageTypeDef]) -> None:
        entries = [{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)]
        with mapped_errors("SQS DeleteMessageBatch", resource=f"queue {self._urls[queue]}"):
            result = self._sqs.delete_message_batch(QueueUrl=self._urls[queue], Entries=entries)  # type: ignore[arg-type]
        for failure in result.get("Failed", []):
            logger.warning("could not delete a processed %s message: %s", queue.value, failure)

    def _finished(self, slots: threading.BoundedSemaphore) -> None:
        with self._running_lock:
            self._running -= 1
        slots.release()
