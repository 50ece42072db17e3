"""``QueueSignals``: when a long poll of the embedded moto may find a message, so it need not spin.

``SerializedApp`` answers an SQS long poll as a series of short polls (a long poll
waiting inside moto would hold the request lock). Between two short polls it waits
here until one of these can have made a message of that queue visible:

* a ``SendMessage``/``SendMessageBatch`` to the queue (now, or when its
  ``DelaySeconds`` is over);
* a ``ChangeMessageVisibility``/``...Batch`` on the queue (when its new
  ``VisibilityTimeout`` is over; 0 is now);
* ``release()``: the stack is stopping, every wait ends now.

What it cannot see (a received message whose visibility timeout runs out, a queue's
own ``DelaySeconds``) is found by the next short poll: the waiter's own timeout (its
``WaitTimeSeconds``) bounds every wait. Due times are taken when the request has been
answered, so moto (which stamps them while it handles the request) already counts
the message visible when the waiter wakes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

_SENDS = {"AmazonSQS.SendMessage", "AmazonSQS.SendMessageBatch"}
_VISIBILITY = {"AmazonSQS.ChangeMessageVisibility", "AmazonSQS.ChangeMessageVisibilityBatch"}
SIGNALLING_TARGETS = frozenset(_SENDS | _VISIBILITY)
# Due times are forgotten this long after they passed: longer than any long poll (20 s at most).
_DUE_KEPT_SECONDS = 60.0


class WaitEnd(Enum):
    """Why :meth:`QueueSignals.wait` returned."""

    SENT = "sent"  # a message was sent (or made visible) on the queue
    DUE = "due"  # a delayed message's delay (or a changed visibility) ran out
    TIMEOUT = "timeout"  # the waiter's own deadline
    RELEASED = "released"  # the stack is stopping


@dataclass(frozen=True, slots=True)
class Mark:
    """A queue's version and the time it was read (:meth:`QueueSignals.mark`)."""

    version: int
    at: float


class QueueSignals:
    """Per-queue "something may be visible now, or at t" for waiting long polls (``time.monotonic``)."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._versions: dict[str, int] = {}
        self._due: dict[str, list[float]] = {}
        self._released = False

    @property
    def released(self) -> bool:
        return self._released

    def mark(self, queue_url: str) -> Mark:
        """Where ``queue_url`` stands now: take it before a short poll, then :meth:`wait` on it."""
        with self._changed:
            return Mark(self._versions.get(queue_url, 0), time.monotonic())

    def record(self, target: str, body: Mapping[str, Any]) -> None:
        """Note an answered request ``target`` with JSON ``body`` (anything else is ignored)."""
        url = body.get("QueueUrl")
        if target not in SIGNALLING_TARGETS or not isinstance(url, str):
            return
        key = "DelaySeconds" if target in _SENDS else "VisibilityTimeout"
        entries = body.get("Entries") if target.endswith("Batch") else [body]
        delays = {_seconds(entry.get(key)) for entry in _maps(entries)}
        now = time.monotonic()
        with self._changed:
            if 0 in delays:
                self._versions[url] = self._versions.get(url, 0) + 1
            kept = [t for t in self._due.get(url, []) if t > now - _DUE_KEPT_SECONDS]
            self._due[url] = sorted(kept + [now + delay for delay in delays if delay > 0])
            self._changed.notify_all()  # waiters look again: at the version, or at a nearer due time

    def wait(self, queue_url: str, mark: Mark, until: float) -> WaitEnd:
        """Block until a message of ``queue_url`` may be visible that was not at ``mark``, or ``until``.

        Returns at once after :meth:`release`. ``until`` is a ``time.monotonic()`` time.

        Returns:
            Why the wait ended.
        """
        with self._changed:
            while True:
                if self._released:
                    return WaitEnd.RELEASED
                if self._versions.get(queue_url, 0) != mark.version:
                    return WaitEnd.SENT
                now = time.monotonic()
                due = [t for t in self._due.get(queue_url, []) if t > mark.at]
                if due and due[0] <= now:
                    return WaitEnd.DUE
                if now >= until:
                    return WaitEnd.TIMEOUT
                self._changed.wait(min(due[0] if due else until, until) - now)

    def release(self) -> None:
        """End every wait now and from now on (the stack is stopping)."""
        with self._changed:
            self._released = True
            self._changed.notify_all()


def _maps(entries: object) -> Iterable[Mapping[str, Any]]:
    return [e for e in entries if isinstance(e, Mapping)] if isinstance(entries, list) else []


def _seconds(value: object) -> float:
    try:
        return max(0.0, float(value)) if value is not None else 0.0  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return 0.0
