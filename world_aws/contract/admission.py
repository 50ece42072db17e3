"""The admission store: concurrency slots and rate windows shared by every consumer (flow control).

Two records, one per key (a *scope*: ``step:<name>:<key>``):

- ``SlotState``: who holds one of the key's ``limit`` slots (each holder under a lease,
  so a crashed holder's slot frees itself) and who waits for one, first come first
  served. A waiter keeps the message that wakes it (``Waiter.wake``): a holder that
  releases hands the woken waiters' messages back, and its caller publishes them.
- ``RateWindow``: the start times of the key's last ``limit`` admissions. A start is
  admitted when fewer than ``limit`` fell in the last ``period``: the bucket of
  ``limit`` tokens in which each token comes back ``period`` after it was spent, so no
  window of ``period`` ever holds more than ``limit`` starts.

The policy is here, as pure functions over the records (``acquire_slot``,
``release_slot``, ``take_token``); a World stores the records and applies them
linearizably (a lock in memory, a version-conditioned put on DynamoDB).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Protocol

from world_aws.errors import BadInput

# A waiter not seen for this long (its messages lost, its run ended) leaves the line, so a
# dead waiter never blocks the ones behind it. Every waiter comes back at least once per
# ``ADMISSION_RECHECK_SECONDS`` (its fallback message).
ADMISSION_RECHECK_SECONDS = 30.0
WAITER_STALE_SECONDS = 4 * ADMISSION_RECHECK_SECONDS


@dataclass(frozen=True, slots=True)
class Holder:
    """A slot held by ``holder`` (``run_id/step_id``) through the delivery ``ticket`` until ``expires_at``."""

    holder: str
    ticket: str
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class Waiter:
    """One in line for a slot: since when, last seen when, and the message that wakes it."""

    holder: str
    since: datetime
    seen_at: datetime
    wake: bytes = b""


@dataclass(frozen=True, slots=True)
class SlotState:
    """The slots of one scope: holders, the line, the limit last asked for, a version for writes."""

    scope: str
    limit: int = 0
    holders: tuple[Holder, ...] = ()
    waiters: tuple[Waiter, ...] = ()
    version: int = 0

    def holder(self, holder: str) -> Holder | None:
        return next((h for h in self.holders if h.holder == holder), None)

    def position(self, holder: str) -> int | None:
        """Where ``holder`` waits in line (0: first), None if it does not."""
        return next((i for i, w in enumerate(self.waiters) if w.holder == holder), None)


class Verdict(StrEnum):
    GRANTED = "granted"  # the slot is this delivery's: run the attempt
    WAITING = "waiting"  # in line: come back when woken (or at the recheck)
    HELD_ELSEWHERE = "held_elsewhere"  # another delivery of this holder runs it: drop this one


@dataclass(frozen=True, slots=True)
class Admission:
    """The answer to ``acquire``: the verdict and, waiting, the place in line (0: next)."""

    verdict: Verdict
    position: int | None = None
    holders: int = 0


@dataclass(frozen=True, slots=True)
class RateWindow:
    """The recent admissions of one rate-limited scope (at most ``limit`` start times kept)."""

    scope: str
    starts: tuple[datetime, ...] = ()
    version: int = 0

    def next_due(self, limit: int, period: timedelta, now: datetime) -> datetime | None:
        """When the next token comes back (None: one is free now)."""
        recent = [t for t in self.starts if t > now - period]
        if len(recent) < limit:
            return None
        return sorted(recent)[len(recent) - limit] + period


def _live(state: SlotState, now: datetime) -> SlotState:
    """``state`` without expired holders and stale waiters."""
    stale = now - timedelta(seconds=WAITER_STALE_SECONDS)
    return replace(
        state,
        holders=tuple(h for h in state.holders if h.expires_at > now),
        waiters=tuple(w for w in state.waiters if w.seen_at > stale),
    )


def acquire_slot(
    state: SlotState,
    *,
    holder: str,
    ticket: str,
    limit: int,
    lease: timedelta,
    now: datetime,
    wake: bytes,
) -> tuple[SlotState, Admission]:
    """Admit ``holder`` to a slot if it is free for it, else put it (or keep it) in line.

    A holder already holding under this ``ticket`` (a redelivery of the delivery that
    holds it, after its handler died) renews its lease. Under another ticket the slot is
    the other delivery's (``HELD_ELSEWHERE``). Otherwise, with ``free`` slots open, the
    holder is admitted if fewer than ``free`` wait ahead of it: nobody ahead loses a slot
    it was woken for (first come, first served).
    """
    state = replace(_live(state, now), limit=limit)
    held = state.holder(holder)
    expires = now + lease
    if held is not None:
        if held.ticket != ticket:
            return state, Admission(Verdict.HELD_ELSEWHERE, holders=len(state.holders))
        renewed = tuple(h if h.holder != holder else replace(h, expires_at=expires) for h in state.holders)
        return replace(state, holders=renewed), Admission(Verdict.GRANTED, holders=len(renewed))
    free = max(0, limit - len(state.holders))
    position = state.position(holder)
    waiters = list(state.waiters)
    if position is None:
        waiters.append(Waiter(holder, since=now, seen_at=now, wake=wake))
        position = len(waiters) - 1
    if position < free:
        del waiters[position]
        holders = (*state.holders, Holder(holder, ticket, expires))
        return replace(state, holders=holders, waiters=tuple(waiters)), Admission(
            Verdict.GRANTED, holders=len(holders)
        )
    waiters[position] = replace(waiters[position], seen_at=now, wake=wake)
    return replace(state, waiters=tuple(waiters)), Admission(
        Verdict.WAITING, position=position - free, holders=len(state.holders)
    )


def release_slot(
    state: SlotState, *, holder: str, ticket: str | None, now: datetime
) -> tuple[SlotState, list[bytes]]:
    """Free ``holder``'s slot (if ``ticket`` holds it; None: whoever does) and wake the next in line.

    Returns the new state and the wake messages of the waiters the free slots now admit.
    """
    state = _live(state, now)
    holders = tuple(
        h for h in state.holders if not (h.holder == holder and (ticket is None or h.ticket == ticket))
    )
    waiters = tuple(w for w in state.waiters if w.holder != holder)
    state = replace(state, holders=holders, waiters=waiters)
    free = max(0, state.limit - len(holders))
    return state, [w.wake for w in waiters[:free] if w.wake]


def take_token(
    window: RateWindow, *, limit: int, period: timedelta, now: datetime
) -> tuple[RateWindow, datetime | None]:
    """Spend a token of ``window`` if one is free: (new window, None); else (window, when one is due)."""
    due = window.next_due(limit, period, now)
    if due is not None:
        return window, due
    recent = sorted(t for t in window.starts if t > now - period)
    starts = (*recent[max(0, len(recent) - limit + 1) :], now)
    return replace(window, starts=starts), None


def check_slot_request(limit: int, lease_seconds: float) -> None:
    """Raises BadInput for a limit below 1 or a lease that is not positive."""
    if limit < 1:
        raise BadInput(f"a concurrency limit must be at least 1, got {limit}")
    if lease_seconds <= 0:
        raise BadInput(f"a slot's lease must be positive, got {lease_seconds}s")


def check_rate_request(limit: int, period_seconds: float) -> None:
    """Raises BadInput for a rate limit below 1 or a period that is not positive."""
    if limit < 1:
        raise BadInput(f"a rate limit must allow at least 1 start, got {limit}")
    if period_seconds <= 0:
        raise BadInput(f"a rate limit's period must be positive, got {period_seconds}s")


class AdmissionStore(Protocol):
    def acquire(
        self,
        scope: str,
        *,
        holder: str,
        ticket: str,
        limit: int,
        lease_seconds: float,
        wake: bytes = b"",
    ) -> Admission:
        """Admit ``holder`` to a slot of ``scope`` or keep it in line (``acquire_slot``), linearizably.

        Raises:
            BadInput: ``limit`` below 1 or a lease not positive.
            Throttled, Transient: the outcome is unknown; the caller retries.
        """
        ...

    def release(self, scope: str, *, holder: str, ticket: str | None = None) -> list[bytes]:
        """Free ``holder``'s slot and leave the line (``release_slot``); the woken waiters' messages."""
        ...

    def slots(self, scope: str) -> SlotState:
        """The scope's slots as stored now (expired holders and stale waiters left out)."""
        ...

    def take(self, scope: str, *, limit: int, period_seconds: float) -> datetime | None:
        """Spend a token of ``scope`` (``take_token``): None if admitted, else when the next one is due."""
        ...

    def window(self, scope: str) -> RateWindow:
        """The scope's recent admissions as stored now."""
        ...
