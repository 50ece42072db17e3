"""A synchronous pump: deliver a World's queued messages on the calling thread, skipping time.

No consumer threads run: :func:`settle` delivers every visible message to a
handler (usually ``Runtime.handle``), then moves the ``ManualClock`` to the next
due message (a sleep's wake-up, a retry's delay, a hook's timeout) and delivers
again, until the caller's condition holds or nothing is queued. Nothing sleeps,
so a workflow that sleeps an hour finishes in milliseconds.

A pump knows one World's queues: :class:`MemoryPump` drives the in-memory
World's ``MemoryQueue``. The test kit (:mod:`world_aws.testing.kit`) and the
project's scenario harness are built on it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Protocol

from world_aws.contract.clock import ManualClock
from world_aws.contract.world import MessageHandler, QueueName
from world_aws.local.memory import MemoryWorld

ALL_QUEUES: tuple[QueueName, ...] = tuple(QueueName)
DEFAULT_MAX_ROUNDS = 200


class Pump(Protocol):
    def deliver_visible(self, handler: MessageHandler, queues: Iterable[QueueName]) -> int:
        """Deliver every message visible now (and those the handler makes visible); returns the count."""
        ...

    def next_due(self) -> datetime | None:
        """When the next not-yet-visible message becomes visible; None if nothing is queued."""
        ...

    def clock_moved(self) -> None:
        """The clock was advanced (a pump may make deferred messages visible)."""
        ...


class MemoryPump:
    """The pump of the in-memory World: its queue's due messages, delivered in order."""

    def __init__(self, world: MemoryWorld) -> None:
        self._queue = world.memory_queue

    def deliver_visible(self, handler: MessageHandler, queues: Iterable[QueueName]) -> int:
        return self._queue.drain(handler, queues=tuple(queues))

    def next_due(self) -> datetime | None:
        dues = [m.due for q in QueueName for m in self._queue.pending(q)]
        return min(dues, default=None)

    def clock_moved(self) -> None:
        pass


class Stalled(AssertionError):
    """The queues did not settle within the allowed rounds (a run that keeps waking itself)."""


def settle(
    pump: Pump,
    clock: ManualClock,
    handler: MessageHandler,
    done: Callable[[], bool],
    *,
    until: datetime | None = None,
    max_rounds: int = DEFAULT_MAX_ROUNDS,
) -> bool:
    """Deliver, then jump the clock to the next due message, until ``done()`` or nothing is due.

    Args:
        pump: the World's queues.
        clock: the World's manual clock; moved forward, never back.
        handler: gets every delivery.
        done: checked after each round of deliveries.
        until: do not move the clock past this moment (messages due later stay queued).
        max_rounds: rounds of delivery before giving up.

    Returns:
        Whether ``done()`` held at the end.

    Raises:
        Stalled: ``max_rounds`` rounds passed and messages were still due.
    """
    for _ in range(max_rounds):
        pump.deliver_visible(handler, ALL_QUEUES)
        if done():
            return True
        due = pump.next_due()
        if due is None or (until is not None and due > until):
            if until is not None and clock.now() < until:
                advance(pump, clock, (until - clock.now()).total_seconds())
                pump.deliver_visible(handler, ALL_QUEUES)
            return done()
        now = clock.now()
        if due > now:
            advance(pump, clock, (due - now).total_seconds())
    raise Stalled(f"the queues did not settle in {max_rounds} rounds")


def advance(pump: Pump, clock: ManualClock, seconds: float) -> None:
    """Move ``clock`` forward and tell ``pump``."""
    clock.advance(seconds)
    pump.clock_moved()
