"""Periodic passes on a background thread, for local stacks (``local_stack``, ``world-aws dev``).

On AWS an EventBridge rule invokes the reconciler and the scheduler functions;
locally a :class:`TickLoop` calls ``tick()`` every ``period_seconds`` until
``stop()``: :class:`ReconcilerLoop` for the reconciler, a ``TickLoop`` named
``world-aws-scheduler`` for the scheduler. A failing tick is logged and the next
one runs on time (as a failed scheduled invocation would be followed by the next).
"""

from __future__ import annotations

import threading
from typing import Protocol

from world_aws.observe.telemetry import LOG
from world_aws.worker.reconciler import Reconciler


class Ticker(Protocol):
    def tick(self) -> object: ...


class TickLoop:
    """Ticks ``ticker`` every ``period_seconds`` on a daemon thread. Start with ``start()``."""

    def __init__(self, ticker: Ticker, period_seconds: float, *, name: str) -> None:
        self.ticker = ticker
        self._period = period_seconds
        self._name = name
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> TickLoop:
        self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop ticking; waits for a tick in progress to finish. Idempotent."""
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stopping.wait(self._period):
            try:
                self.ticker.tick()
            except Exception:  # a tick that failed is followed by the next, as on AWS
                LOG.exception("%s tick failed", self._name)


class ReconcilerLoop(TickLoop):
    """The reconciler's loop (``world-aws-reconciler``)."""

    def __init__(self, reconciler: Reconciler, period_seconds: float) -> None:
        super().__init__(reconciler, period_seconds, name="world-aws-reconciler")
        self.reconciler = reconciler
