"""``MemoryQueue``: the two World queues in memory, with SQS-like delivery semantics.

What it models (contract §4.3, §4.4):
* at-least-once delivery; ``Delivery.attempt`` is the delivery count and the
  message id (a uuid4 string) is stable across redeliveries;
* a handler returns ``Ack`` (delete), ``Redeliver(seconds)`` (the same message is
  visible again after ``seconds``) or raises (visible again after
  ``visibility_timeout_seconds``, 0 by default in memory);
* after ``max_receive_count`` deliveries without an ack the message moves to the
  queue's dead-letter list (:meth:`MemoryQueue.dead_letters`);
* delays are honoured against the injected clock, by exact due time: a message
  is visible only when ``clock.now() >= due``. There is no 900 s cap in memory,
  so the chaining the AWS World needs never happens here;
* an idempotency key is retained ``IDEMPOTENCY_RETENTION_SECONDS`` by the
  injected clock from its first publish; a publish with a retained key
  enqueues nothing and returns the first message id. Keys are scoped per queue.

With a ``ManualClock`` a delayed message becomes due only when the test
advances the clock; nothing here ever moves time.

Delivery is either synchronous (:meth:`MemoryQueue.drain`, for deterministic
runtime tests) or by background threads (:class:`MemoryConsumers`, in
:mod:`memory_consumers`); both share the claim and settle steps below.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import NamedTuple

from world_aws.contract.clock import Clock
from world_aws.contract.limits import IDEMPOTENCY_RETENTION_SECONDS, MAX_DELAY_SECONDS
from world_aws.contract.world import Ack, Delivery, MessageHandler, QueueName, Redeliver
from world_aws.errors import BadInput, Misconfigured
from world_aws.local.memory_stats import Stat, WorldStats

logger = logging.getLogger(__name__)

# SQS's default maxReceiveCount for our redrive policy sits above the handler cap
# of 48 deliveries (contract §4.3); memory uses the same number.
DEFAULT_MAX_RECEIVE_COUNT = 50


class PendingMessage(NamedTuple):
    """A queued (not in-flight) message. ``attempt`` is the attempt its next delivery will carry."""

    message_id: str
    due: datetime
    attempt: int
    body: bytes


class DeadLetter(NamedTuple):
    """A message that was delivered ``attempt`` times without an ack."""

    message_id: str
    attempt: int
    body: bytes
    last_error: str | None


@dataclass(eq=False)
class QueuedMessage:
    """A message as the queue holds it; mutated only under the queue's lock."""

    message_id: str
    queue: QueueName
    body: bytes
    due: datetime
    seq: int  # FIFO tie-break among messages due at the same time; renewed on redelivery
    deliveries: int = 0
    in_flight: bool = False
    last_error: str | None = None


class DrainDidNotSettle(RuntimeError):
    """``drain`` made ``max_deliveries`` deliveries and messages were still visible."""


class MemoryQueue:
    """Both queues of one in-memory World. Thread-safe."""

    def __init__(
        self,
        clock: Clock,
        *,
        stats: WorldStats | None = None,
        visibility_timeout_seconds: float = 0.0,
        max_receive_count: int = DEFAULT_MAX_RECEIVE_COUNT,
        idempotency_retention_seconds: float = IDEMPOTENCY_RETENTION_SECONDS,
    ) -> None:
        if max_receive_count < 1:
            raise BadInput("max_receive_count must be at least 1")
        self._clock = clock
        self._stats = stats if stats is not None else WorldStats()
        self._visibility_timeout = max(0.0, visibility_timeout_seconds)
        self._max_receive_count = max_receive_count
        self._retention = timedelta(seconds=idempotency_retention_seconds)
        # Condition over one lock: publishes and settles notify waiting consumers.
        self.changed = threading.Condition(threading.Lock())
        self._messages: dict[QueueName, dict[str, QueuedMessage]] = {name: {} for name in QueueName}
        self._dead: dict[QueueName, list[DeadLetter]] = {name: [] for name in QueueName}
        # (queue, key) -> (first message id, retained until)
        self._keys: dict[tuple[QueueName, str], tuple[str, datetime]] = {}
        self._seq = 0

    # ------------------------------------------------------------------------- Queue protocol

    def publish(
        self,
        queue: QueueName,
        body: bytes,
        *,
        delay_seconds: float = 0,
        idempotency_key: str | None = None,
    ) -> str:
        """Enqueue ``body``; returns its message id (the first one for a retained key).

        Raises:
            BadInput: a negative delay, or one beyond the horizon.
        """
        self._stats.incr(Stat.PUBLISHES)
        if delay_seconds < 0:
            raise BadInput(f"delay_seconds must not be negative, got {delay_seconds}")
        if delay_seconds > MAX_DELAY_SECONDS:
            # The same horizon the SQS queue keeps (limits.MAX_DELAY_SECONDS).
            raise BadInput(
                f"delay_seconds {delay_seconds} is beyond the {MAX_DELAY_SECONDS} s (366-day) horizon"
            )
        queue = QueueName(queue)
        with self.changed:
            now = self._clock.now()
            if idempotency_key is not None:
                kept = self._keys.get((queue, idempotency_key))
                if kept is not None and kept[1] > now:
                    self._stats.incr(Stat.PUBLISHES_DEDUPLICATED)
                    return kept[0]
                self._forget_expired_keys(now)
            message = QueuedMessage(
                message_id=str(uuid.uuid4()),
                queue=queue,
                body=bytes(body),
                due=now + timedelta(seconds=delay_seconds),
                seq=self._next_seq(),
            )
            self._messages[queue][message.message_id] = message
            if idempotency_key is not None:
                # pop first so a re-used expired key moves to the end of the insertion order
                self._keys.pop((queue, idempotency_key), None)
                self._keys[(queue, idempotency_key)] = (message.message_id, now + self._retention)
            self.changed.notify_all()
            return message.message_id

    # ------------------------------------------------------------------------- inspection

    def pending(self, queue: QueueName) -> list[PendingMessage]:
        """The queued (not in-flight) messages of ``queue``, due ones first, in delivery order."""
        with self.changed:
            queued = [m for m in self._messages[QueueName(queue)].values() if not m.in_flight]
            queued.sort(key=lambda m: (m.due, m.seq))
            return [PendingMessage(m.message_id, m.due, m.deliveries + 1, m.body) for m in queued]

    def dead_letters(self, queue: QueueName) -> list[DeadLetter]:
        """The messages of ``queue`` moved to its dead-letter list, oldest first."""
        with self.changed:
            return list(self._dead[QueueName(queue)])

    def is_idle(self) -> bool:
        """True when no message is visible (due now) or in flight. Not-yet-due messages don't count."""
        with self.changed:
            return self._idle_locked(self._clock.now())

    def wait_idle(self, timeout: float) -> bool:
        """Block (real time) until :meth:`is_idle`; False on timeout.

        Delayed messages are waited for only once they are due: with a
        ``ManualClock`` that is when the test advances the clock.
        """
        deadline = time.monotonic() + timeout
        with self.changed:
            while not self._idle_locked(self._clock.now()):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                # Bounded wait: the clock can move without anyone notifying us.
                self.changed.wait(min(remaining, 0.01))
            return True

    # ------------------------------------------------------------------------- synchronous delivery

    def drain(
        self,
        handler: MessageHandler,
        *,
        max_deliveries: int = 10_000,
        queues: Iterable[QueueName] = tuple(QueueName),
    ) -> int:
        """Deliver every visible message on the calling thread, FIFO, until none is visible.

        Messages the handler publishes (or redelivers with no delay) are
        delivered too if they are visible; delayed ones stay queued.

        Returns:
            The number of deliveries made.

        Raises:
            DrainDidNotSettle: ``max_deliveries`` deliveries and still a visible message.
        """
        names = tuple(QueueName(q) for q in queues)
        count = 0
        while True:
            if count >= max_deliveries:
                with self.changed:
                    if self._visible_locked(names, self._clock.now()):
                        raise DrainDidNotSettle(
                            f"drain made {count} deliveries and messages are still visible"
                        )
                return count
            message = self.claim(names)
            if message is None:
                return count
            self.deliver(message, handler)
            count += 1

    # ------------------------------------------------------------------------- claim / deliver / settle

    def claim(self, queues: Iterable[QueueName]) -> QueuedMessage | None:
        """Take the first visible message of ``queues`` (by due time, then FIFO) and mark it in flight."""
        with self.changed:
            visible = self._visible_locked(queues, self._clock.now())
            if not visible:
                return None
            message = min(visible, key=lambda m: (m.due, m.seq))
            message.in_flight = True
            message.deliveries += 1
            return message

    def deliver(self, message: QueuedMessage, handler: MessageHandler) -> None:
        """Hand a claimed message to ``handler`` (outside the lock) and settle the outcome."""
        self._stats.incr(Stat.DELIVERIES)
        delivery = Delivery(message.queue, message.message_id, message.deliveries, message.body)
        settled = False
        try:
            result = handler(delivery)
            if not isinstance(result, Ack | Redeliver):
                raise TypeError(f"a queue handler must return Ack or Redeliver, not {result!r}")
            self._settle(message, result, None)
            settled = True
        except Exception as exc:
            misconfigured = isinstance(exc, Misconfigured)  # one error line naming the resource
            logger.log(
                logging.ERROR if misconfigured else logging.WARNING,
                "handler raised on %s message %s (attempt %d): redelivering: %s",
                message.queue.value,
                message.message_id,
                message.deliveries,
                exc,
                exc_info=not misconfigured,
            )
            self._settle(message, None, f"{type(exc).__name__}: {exc}")
            settled = True
        finally:
            if not settled:  # a BaseException escaped the handler: never leave the message in flight
                self._settle(message, None, "handler interrupted")

    def _settle(self, message: QueuedMessage, result: Ack | Redeliver | None, error: str | None) -> None:
        with self.changed:
            queued = self._messages[message.queue]
            if message.message_id not in queued:  # pragma: no cover - settled twice
                return
            if isinstance(result, Ack):
                del queued[message.message_id]
            elif message.deliveries >= self._max_receive_count:
                del queued[message.message_id]
                last_error = error if error is not None else message.last_error
                dead = DeadLetter(message.message_id, message.deliveries, message.body, last_error)
                self._dead[message.queue].append(dead)
                logger.warning("%s message %s dead-lettered", message.queue.value, message.message_id)
            else:
                delay = (
                    max(0.0, result.seconds) if isinstance(result, Redeliver) else self._visibility_timeout
                )
                message.due = self._clock.now() + timedelta(seconds=delay)
                message.seq = self._next_seq()
                message.in_flight = False
                message.last_error = error
            self.changed.notify_all()

    def _visible_locked(self, queues: Iterable[QueueName], now: datetime) -> list[QueuedMessage]:
        return [m for q in queues for m in self._messages[q].values() if not m.in_flight and m.due <= now]

    def _idle_locked(self, now: datetime) -> bool:
        return not any(
            m.in_flight or m.due <= now for queued in self._messages.values() for m in queued.values()
        )

    def _forget_expired_keys(self, now: datetime) -> None:
        # Keys sit in insertion order and all share one retention, so the expired
        # ones are a prefix: stop at the first live key (amortised O(1) per publish).
        while self._keys:
            oldest = next(iter(self._keys))
            if self._keys[oldest][1] > now:
                return
            del self._keys[oldest]

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq
