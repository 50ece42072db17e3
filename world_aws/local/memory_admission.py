"""``MemoryAdmissionStore``: the flow-control records in memory, applied under one lock.

The policy is the contract's (``world_aws.contract.admission``); this keeps one
``SlotState`` and one ``RateWindow`` per scope and applies each call atomically.
"""

from __future__ import annotations

import threading
from datetime import datetime, timedelta

from world_aws.contract.admission import (
    Admission,
    RateWindow,
    SlotState,
    acquire_slot,
    check_rate_request,
    check_slot_request,
    release_slot,
    renew_slot,
    settle_token,
    take_token,
)
from world_aws.contract.clock import Clock


class MemoryAdmissionStore:
    """Slots and rate windows per scope. Thread-safe."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._slots: dict[str, SlotState] = {}
        self._windows: dict[str, RateWindow] = {}

    def acquire(
        self,
        scope: str,
        *,
        holder: str,
        ticket: str,
        limit: int,
        lease_seconds: float,
        wake: bytes = b"",
        priority: int = 0,
        audit: bool = False,
    ) -> Admission:
        check_slot_request(limit, lease_seconds)
        with self._lock:
            state = self._slots.get(scope, SlotState(scope))
            new, admission = acquire_slot(
                state,
                holder=holder,
                ticket=ticket,
                limit=limit,
                lease=timedelta(seconds=lease_seconds),
                now=self._clock.now(),
                wake=wake,
                priority=priority,
                audit=audit,
            )
            self._slots[scope] = new
            return admission

    def renew(self, scope: str, *, holder: str, lease_seconds: float) -> None:
        with self._lock:
            state = self._slots.get(scope)
            if state is not None:
                lease = timedelta(seconds=lease_seconds)
                self._slots[scope] = renew_slot(state, holder=holder, lease=lease, now=self._clock.now())

    def release(self, scope: str, *, holder: str, ticket: str | None = None) -> list[bytes]:
        with self._lock:
            state = self._slots.get(scope)
            if state is None:
                return []
            new, wakes = release_slot(state, holder=holder, ticket=ticket, now=self._clock.now())
            self._slots[scope] = new
            return wakes

    def slots(self, scope: str) -> SlotState:
        with self._lock:
            state = self._slots.get(scope, SlotState(scope))
        new, _ = release_slot(state, holder="", ticket="", now=self._clock.now())
        return new

    def take(self, scope: str, *, holder: str, limit: int, period_seconds: float) -> datetime | None:
        check_rate_request(limit, period_seconds)
        with self._lock:
            window = self._windows.get(scope, RateWindow(scope))
            new, due = take_token(
                window,
                holder=holder,
                limit=limit,
                period=timedelta(seconds=period_seconds),
                now=self._clock.now(),
            )
            self._windows[scope] = new
            return due

    def settle(self, scope: str, *, holder: str, started_at: datetime | None, period_seconds: float) -> None:
        with self._lock:
            window = self._windows.get(scope, RateWindow(scope))
            self._windows[scope] = settle_token(
                window,
                holder=holder,
                started_at=started_at,
                period=timedelta(seconds=period_seconds),
                now=self._clock.now(),
            )

    def window(self, scope: str) -> RateWindow:
        with self._lock:
            return self._windows.get(scope, RateWindow(scope))
