"""Visibility heartbeat: a consumer keeps its in-flight SQS messages hidden only while it lives.

Lambda's SQS event source refuses a queue whose visibility timeout is below the
consuming function's timeout (it validates this when the mapping is created), so
the queues keep a long one (900 s, ``template.yaml``): with it alone, a message
whose invocation died (a crash, an out-of-memory kill, a Lambda timeout) came back
only 15 minutes later. So an invocation shortens the visibility of every message of
its batch as it starts and extends it every ``WORKFLOW_HEARTBEAT_SECONDS`` (H) while
it works: each beat hides the messages for ``visibility_seconds`` (1.5 H) from now.
An invocation that dies stops beating, and its messages are visible again at most
1.5 H after its last beat; one that lives keeps them hidden however long its bodies
run (up to the function's timeout). The queue's own timeout is left to cover the
moment between Lambda's receive and the first beat, and the retries of a throttled
invocation, as AWS recommends (docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html).

Per message, when its handler is done:

* acked: still beaten until the invocation returns (Lambda deletes it then);
* ``release``: no longer beaten (its handler set a visibility of its own: ``Redeliver``);
* ``fail``: no longer beaten, and hidden for the queue's timeout
  (``WORKFLOW_QUEUE_VISIBILITY_SECONDS``), as a failed record always was: a failure
  that repeats (a missing table, an outage) reaches the delivery cap over some
  twelve hours, not minutes.

A beat runs under a lock that ``release``, ``fail`` and ``stop`` take too, so no beat lands
after the handler's own visibility change, and none starts after the invocation returned.
The first beat is made at once on the heartbeat's thread, not on the invocation's path (no
round trip before the first body), and the invocation does not wait for a beat in flight
when it returns. A beat
that fails is logged and tried again at the next period; a failure of every beat
for 0.5 H makes the message visible while its handler still runs, and its
redelivery may then run a step beside it (at least once; one outcome wins).
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from world_aws.aws.errors import mapped_errors
from world_aws.errors import BadInput, WorldAwsError

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

logger = logging.getLogger(__name__)

DEFAULT_HEARTBEAT_SECONDS = 10.0
# The queues' VisibilityTimeout in template.yaml (6 x the consumers' 150 s timeout).
DEFAULT_QUEUE_VISIBILITY_SECONDS = 900
_BATCH = 10  # ChangeMessageVisibilityBatch takes at most 10 entries


@dataclass(frozen=True, slots=True)
class HeartbeatConfig:
    """How a consumer keeps its messages hidden while it works.

    Attributes:
        seconds: the period of the beats (``WORKFLOW_HEARTBEAT_SECONDS``, default 10;
            0 turns the heartbeat off: messages keep the queue's visibility timeout).
        queue_visibility_seconds: the visibility a failed record is given, the queues'
            own timeout (``WORKFLOW_QUEUE_VISIBILITY_SECONDS``, default 900).
    """

    seconds: float = DEFAULT_HEARTBEAT_SECONDS
    queue_visibility_seconds: int = DEFAULT_QUEUE_VISIBILITY_SECONDS

    def __post_init__(self) -> None:
        if not (math.isfinite(self.seconds) and 0 <= self.seconds <= 600):
            raise BadInput(f"WORKFLOW_HEARTBEAT_SECONDS must be within 0..600, got {self.seconds}")
        if not 0 <= self.queue_visibility_seconds <= 43_200:
            raise BadInput(
                "WORKFLOW_QUEUE_VISIBILITY_SECONDS must be within 0..43200 (SQS's 12 h), "
                f"got {self.queue_visibility_seconds}"
            )

    @property
    def enabled(self) -> bool:
        return self.seconds > 0

    @property
    def visibility_seconds(self) -> int:
        """How long one beat hides a message: 1.5 periods (whole seconds, as SQS takes them)."""
        return max(1, math.ceil(1.5 * self.seconds))

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> HeartbeatConfig:
        """The configuration from ``WORKFLOW_HEARTBEAT_SECONDS`` and ``WORKFLOW_QUEUE_VISIBILITY_SECONDS``.

        ``AwsConfig.from_env`` reads it (the one reader of the AWS World's environment).

        Raises:
            BadInput: a value that is not a number, or out of range.
        """
        seconds = env.get("WORKFLOW_HEARTBEAT_SECONDS", "").strip()
        visibility = env.get("WORKFLOW_QUEUE_VISIBILITY_SECONDS", "").strip()
        try:
            return cls(
                seconds=float(seconds) if seconds else DEFAULT_HEARTBEAT_SECONDS,
                queue_visibility_seconds=int(visibility) if visibility else DEFAULT_QUEUE_VISIBILITY_SECONDS,
            )
        except ValueError as exc:
            raise BadInput(f"heartbeat configuration: {exc}") from exc


@dataclass(frozen=True, slots=True)
class InFlight:
    """One received message the heartbeat keeps hidden."""

    message_id: str
    queue_url: str
    receipt_handle: str


class VisibilityHeartbeat:
    """Keeps the messages of one invocation hidden while it works; a context manager.

    Args:
        sqs: the SQS client.
        messages: the invocation's messages.
        config: the period and the failure visibility.
    """

    def __init__(self, sqs: SQSClient, messages: Iterable[InFlight], config: HeartbeatConfig) -> None:
        self._sqs = sqs
        self._config = config
        self._beating = {m.message_id: m for m in messages}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.beats = 0  # beats made (for tests and benches)

    def start(self) -> VisibilityHeartbeat:
        """Beat at once, then every period, on a thread of its own, until :meth:`stop`."""
        if self._config.enabled and self._beating:
            self._thread = threading.Thread(target=self._run, name="sqs-heartbeat", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop beating (the messages keep their last visibility). Idempotent.

        Does not wait for a beat in flight (the invocation returns without its round trip):
        one that lands after Lambda deleted a message is refused for that entry, and
        released or failed messages are out of the set already.
        """
        with self._lock:
            self._stopping.set()

    def release(self, message_id: str) -> None:
        """Beat ``message_id`` no more (its handler changes its visibility itself)."""
        with self._lock:
            self._beating.pop(message_id, None)

    def fail(self, message_id: str) -> None:
        """Beat ``message_id`` no more and hide it for the queue's visibility timeout (best effort)."""
        with self._lock:
            message = self._beating.pop(message_id, None)
            if message is None or not self._config.enabled:
                return
            try:
                with mapped_errors("SQS ChangeMessageVisibility", resource=f"queue {message.queue_url}"):
                    self._sqs.change_message_visibility(
                        QueueUrl=message.queue_url,
                        ReceiptHandle=message.receipt_handle,
                        VisibilityTimeout=self._config.queue_visibility_seconds,
                    )
            except WorldAwsError as exc:
                # It comes back after the last beat's visibility instead: sooner, never lost.
                logger.warning("could not hide failed message %s: %s", message_id, exc)

    def beat(self) -> None:
        """Hide every beaten message for ``visibility_seconds`` from now (nothing once stopped)."""
        with self._lock:
            if self._stopping.is_set():
                return
            by_queue: dict[str, list[InFlight]] = {}
            for message in self._beating.values():
                by_queue.setdefault(message.queue_url, []).append(message)
            for url, messages in by_queue.items():
                for start in range(0, len(messages), _BATCH):
                    self._change(url, messages[start : start + _BATCH])
            self.beats += 1

    def __enter__(self) -> VisibilityHeartbeat:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _change(self, url: str, messages: list[InFlight]) -> None:
        entries = [
            {
                "Id": str(i),
                "ReceiptHandle": m.receipt_handle,
                "VisibilityTimeout": self._config.visibility_seconds,
            }
            for i, m in enumerate(messages)
        ]
        try:
            with mapped_errors("SQS ChangeMessageVisibilityBatch", resource=f"queue {url}"):
                result = self._sqs.change_message_visibility_batch(QueueUrl=url, Entries=entries)  # type: ignore[arg-type]
        except WorldAwsError as exc:
            logger.warning("heartbeat of %d message(s) on %s failed: %s", len(messages), url, exc)
            return
        for failure in result.get("Failed", []):
            # A receipt handle no longer valid (the message was deleted): nothing to keep.
            logger.debug("heartbeat entry refused on %s: %s", url, failure)

    def _run(self) -> None:
        while True:
            self.beat()
            if self._stopping.wait(self._config.seconds):
                return
