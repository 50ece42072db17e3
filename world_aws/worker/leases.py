"""Inline leases: an owner renews its claim on the steps it runs while it lives.

An inline step is left to its owner (``worker/inline.py``, "Ownership") for
``inline_lease_seconds`` (L, 30 by default: 3 × the visibility heartbeat's 10 s)
from the owner's last write of it. A body may run longer than that (up to the step
consumer's 150 s timeout), so while it runs its owner *renews* the lease: every
L / 3 seconds (R) a thread of the runtime writes, for each (run, owner) whose
bodies have run R or more since its last write, one renewal
(``steps.renew_lease``: one small item per run and owner, overwritten). Another
delivery that finds an owned step older than L reads that item before taking the
step over (``steps.lease``), and leaves it alone while the renewal is younger than L.

The cost is per run and owner, not per step: a wave of ten inline bodies of one run
costs one write per R they run together, and bodies shorter than R (nearly all) cost
none. A dead owner stops renewing: its steps may be taken over at most L after its
last renewal, L plus the time to the next wake-up of the run (the hold of the
continuation that found them, ``InlineSteps.hold``).

Why R = L / 3: a renewal that fails is tried again at the next period, so one failed
renewal in a row leaves one period for the write; two in a row, and another delivery
may start the step beside a live owner (at least once; one outcome wins).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta

from world_aws.contract.world import World
from world_aws.errors import WorldAwsError

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class _Held:
    """One (run, owner) with bodies running: how many, and when its lease was last written."""

    bodies: int
    written: datetime


class LeaseKeeper:
    """Renews the leases of the inline bodies this runtime runs, on a thread of its own.

    Args:
        world: the World whose ``steps.renew_lease`` records the renewals.
        lease_seconds: the lease (``inline_lease_seconds``); renewals every third of it.
    """

    def __init__(self, world: World, lease_seconds: float) -> None:
        self._world = world
        self.period = lease_seconds / 3
        self._held: dict[tuple[str, str], _Held] = {}
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._thread: threading.Thread | None = None
        self.renewals = 0  # renewals written (tests and benches)

    @contextlib.contextmanager
    def holding(self, run_id: str, owner: str) -> Iterator[None]:
        """Renew ``owner``'s lease on ``run_id`` while the block (its bodies) runs.

        The owner's claim was written just before: the first renewal is due one period later.
        """
        key = (run_id, owner)
        with self._lock:
            held = self._held.get(key)
            if held is None:
                self._held[key] = _Held(1, self._world.clock.now())
            else:
                held.bodies += 1
            if self._thread is None and self.period > 0:
                self._thread = threading.Thread(target=self._run, name="inline-leases", daemon=True)
                self._thread.start()
        try:
            yield
        finally:
            with self._lock:
                held = self._held[key]
                held.bodies -= 1
                if held.bodies == 0:
                    del self._held[key]

    def beat(self) -> int:
        """Write every lease due for renewal (its last write a period ago or more); how many were written.

        A renewal that fails is logged and tried at the next beat.
        """
        now = self._world.clock.now()
        due_after = timedelta(seconds=self.period)
        with self._lock:
            due = [key for key, held in self._held.items() if now - held.written >= due_after]
        written = 0
        for run_id, owner in due:
            try:
                self._world.steps.renew_lease(run_id, owner, at=now)
            except WorldAwsError as exc:
                logger.warning("lease renewal of %s on run %s failed: %s", owner, run_id, exc)
                continue
            written += 1
            with self._lock:
                held = self._held.get((run_id, owner))
                if held is not None:
                    held.written = now
                self.renewals += 1
        return written

    def _run(self) -> None:
        # Beats while any body runs; the thread ends when none does (the next hold starts another).
        while True:
            with self._lock:
                if not self._held:
                    self._thread = None
                    return
                self._wake.wait(self.period)
            try:
                self.beat()
            except BaseException:  # a dying process (a test's injected crash): the owner is gone
                logger.debug("lease renewals stopped", exc_info=True)
                with self._lock:
                    self._thread = None
                return


def lease_end(since: datetime, renewed: datetime | None, lease_seconds: float) -> datetime:
    """When a lease written at ``since`` and last renewed at ``renewed`` (if ever) runs out."""
    latest = since if renewed is None or renewed < since else renewed
    return latest + timedelta(seconds=lease_seconds)
