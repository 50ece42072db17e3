"""``FakeMonotonic``: a monotonic clock for ``HoleRepairPolicy`` that moves only when slept on.

Readers of the AWS World wait a grace period before sealing a dead writer's
position (contract §3.2); with this clock a test covers that wait without really
waiting, and can act "while the reader sleeps" through ``on_sleep``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class FakeMonotonic:
    """``monotonic()`` and ``sleep()`` for a ``HoleRepairPolicy``. Thread-safe."""

    def __init__(self) -> None:
        self._now = 0.0
        self._lock = threading.Lock()
        # Called after each sleep, e.g. to let a slow writer commit during a reader's backoff.
        self.on_sleep: Callable[[], None] | None = None

    @property
    def now(self) -> float:
        with self._lock:
            return self._now

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self._now += max(0.0, seconds)
        hook = self.on_sleep
        if hook is not None:
            hook()
