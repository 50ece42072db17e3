"""The reconciler on a background thread, for local stacks (``local_stack``, ``world-aws dev``).

On AWS an EventBridge schedule invokes the reconciler function; locally this
thread calls ``Reconciler.tick()`` every ``period_seconds`` until ``stop()``.
A failing tick is logged and the next one runs on time (as a failed scheduled
invocation would be followed by the next).
"""

from __future__ import annotations

import threading

from world_aws.runtime.reconciler import Reconciler
from world_aws.runtime.telemetry import LOG


class ReconcilerLoop:
    """Ticks ``reconciler`` every ``period_seconds`` on a daemon thread. Start with ``start()``."""

    def __init__(self, reconciler: Reconciler, period_seconds: float) -> None:
        self.reconciler = reconciler
        self._period = period_seconds
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="world-aws-reconciler", daemon=True)

    def start(self) -> ReconcilerLoop:
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
                self.reconciler.tick()
            except Exception:  # a tick that failed is followed by the next, as on AWS
                LOG.exception("reconciler tick failed")
