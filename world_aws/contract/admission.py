"""The admission store: concurrency slots and rate windows shared by every consumer (flow control).

Two records, one per key (a *scope*: ``step:<name>:<key>``):

- ``SlotState``: who holds one of the key's ``limit`` slots (each holder under a lease,
  so a crashed holder's slot frees itself) and who waits for one, higher priority
  first, first come first served within a priority. An *audited* scope (a workflow's
  runs) never drops a holder on time alone: a lapsed lease is reported to the next
  arrival, which checks the holder's run and releases or renews it (``renew_slot``).
  A waiter keeps the message that wakes it (``Waiter.wake``): a holder that
  releases hands the woken waiters' messages back, and its caller publishes them.
- ``RateWindow``: the key's recent starts. A token is taken before the claim and
  settled after it with the time the attempt started (``settle_token``); until then it
  counts in every window (its start is not known yet). A start is admitted when fewer
  than ``limit`` count in the last ``period``: a bucket of ``limit`` tokens in which a
  token comes back ``period`` after its start, so no window of ``period`` ever holds
  more than ``limit`` recorded starts.

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
    priority: int = 0


@dataclass(frozen=True, slots=True)
class SlotState:
    """The slots of one scope: holders, the line, the limit last asked for, a version for writes."""

    scope: str
    limit: int = 0
    holders: tuple[Holder, ...] = ()
    waiters: tuple[Waiter, ...] = ()
    version: int = 0
    audited: bool = False  # holders leave by release (or an audit), never on time alone

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
    lapsed: tuple[str, ...] = ()  # an audited scope's holders whose lease passed: check them


# A token taken and never settled (its taker died) stops counting this long after it was taken;
# one reserved and never claimed (its step ended meanwhile, its message lost) this long after
# its time (its copy comes then, late by at most a queue's delay rounding and a consumer's lag).
UNSETTLED_TOKEN_SECONDS = 300.0
RESERVATION_GRACE_SECONDS = 30.0
# Reservations kept per scope at most: past them a refused start is told when to come back
# without one (a DynamoDB item holds 400 KB; an entry takes some 60 bytes).
MAX_RESERVATIONS = 2000


class TokenState(StrEnum):
    SETTLED = "settled"  # ``at`` is when the attempt started (its ``step_started`` was written)
    TAKEN = "taken"  # taken at ``at``; its attempt's start is not known yet: it counts in every window
    RESERVED = "reserved"  # promised to ``holder`` at ``at``: its copy comes then, and is admitted first


@dataclass(frozen=True, slots=True)
class Start:
    """A token of ``holder``, at ``at``, in ``state``."""

    holder: str
    at: datetime
    state: TokenState


@dataclass(frozen=True, slots=True)
class RateWindow:
    """The recent starts and promised tokens of one rate-limited scope, and a version for writes."""

    scope: str
    starts: tuple[Start, ...] = ()
    version: int = 0

    def live(self, period: timedelta, now: datetime) -> list[Start]:
        """Settled starts within the period, and the taken and reserved tokens not expired."""
        oldest = {
            TokenState.SETTLED: now - period,
            TokenState.TAKEN: now - timedelta(seconds=UNSETTLED_TOKEN_SECONDS),
            TokenState.RESERVED: now - timedelta(seconds=RESERVATION_GRACE_SECONDS),
        }
        return [s for s in self.starts if s.at > oldest[s.state]]

    def next_due(self, limit: int, period: timedelta, now: datetime) -> datetime | None:
        """When a newcomer would get a token (None: now), as ``take_token`` reckons it."""
        live = self.live(period, now)
        if _admits(live, limit, period, now, reserved=False):
            return None
        return _reserve_at(live, limit, period, now)


def _admits(live: list[Start], limit: int, period: timedelta, now: datetime, *, reserved: bool) -> bool:
    """Whether a start now keeps every window of ``period`` at ``limit`` starts or fewer.

    The starts recorded within the period and every taken token count (a taken token's start
    is still to come). A newcomer (``reserved=False``) also counts the tokens promised within
    the coming period, so that it never takes one a waiter was promised.
    """
    counted = sum(1 for s in live if s.state is not TokenState.RESERVED)
    if not reserved:
        counted += sum(1 for s in live if s.state is TokenState.RESERVED and s.at <= now + period)
    return counted < limit


def _reserve_at(live: list[Start], limit: int, period: timedelta, now: datetime) -> datetime:
    """When the next token frees: each live token frees a period after its time (a taken one's: from now)."""
    frees = sorted((now if s.state is TokenState.TAKEN else s.at) + period for s in live)
    at = frees[len(frees) - limit] if len(frees) >= limit else now
    return at if at > now else now + period / 10


def _live(state: SlotState, now: datetime) -> SlotState:
    """``state`` without expired holders (kept in an audited scope) and stale waiters."""
    stale = now - timedelta(seconds=WAITER_STALE_SECONDS)
    return replace(
        state,
        holders=tuple(h for h in state.holders if state.audited or h.expires_at > now),
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
    priority: int = 0,
    audit: bool = False,
) -> tuple[SlotState, Admission]:
    """Admit ``holder`` to a slot if it is free for it, else put it (or keep it) in line.

    A newcomer joins the line behind every waiter of its ``priority`` or higher, ahead
    of the lower ones. ``audit`` makes the scope audited (see the module's docstring):
    an answer then names the holders whose lease has passed (``Admission.lapsed``).

    A holder already holding under this ``ticket`` (a redelivery of the delivery that
    holds it, after its handler died) renews its lease. Under another ticket the slot is
    the other delivery's (``HELD_ELSEWHERE``). Otherwise, with ``free`` slots open, the
    holder is admitted if fewer than ``free`` wait ahead of it: nobody ahead loses a slot
    it was woken for (first come, first served).
    """
    state = replace(_live(replace(state, audited=state.audited or audit), now), limit=limit)
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
        position = next((i for i, w in enumerate(waiters) if w.priority < priority), len(waiters))
        waiters.insert(position, Waiter(holder, since=now, seen_at=now, wake=wake, priority=priority))
    lapsed = tuple(h.holder for h in state.holders if h.expires_at <= now) if state.audited else ()
    if position < free:
        del waiters[position]
        holders = (*state.holders, Holder(holder, ticket, expires))
        return replace(state, holders=holders, waiters=tuple(waiters)), Admission(
            Verdict.GRANTED, holders=len(holders), lapsed=lapsed
        )
    waiters[position] = replace(waiters[position], seen_at=now, wake=wake)
    return replace(state, waiters=tuple(waiters)), Admission(
        Verdict.WAITING, position=position - free, holders=len(state.holders), lapsed=lapsed
    )


def renew_slot(state: SlotState, *, holder: str, lease: timedelta, now: datetime) -> SlotState:
    """``holder``'s lease, if it holds a slot, renewed to ``lease`` from ``now`` (else nothing changes)."""
    state = _live(state, now)
    holders = tuple(h if h.holder != holder else replace(h, expires_at=now + lease) for h in state.holders)
    return replace(state, holders=holders)


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
    window: RateWindow, *, holder: str, limit: int, period: timedelta, now: datetime
) -> tuple[RateWindow, datetime | None]:
    """Take a token for ``holder``: (window, None) if taken; else (window, when to come back).

    A holder with a taken token is a redelivery whose claim may have been written (its answer
    lost) at a time not known: that token is settled now (no earlier than that claim) and
    the redelivery needs another. One with a reservation not yet
    due is told its time again; at or past it, it takes a token if the recorded starts
    allow (the reservations do not count against it), else it is reserved again. A
    newcomer refused is reserved the next token to free (first come, first served), so
    each waiter comes back once, when its token is due.
    """
    live = window.live(period, now)
    mine = next((s for s in live if s.holder == holder and s.state is not TokenState.SETTLED), None)
    if mine is not None and mine.state is TokenState.TAKEN:
        live = [s if s is not mine else Start(holder, now, TokenState.SETTLED) for s in live]
        mine = None
    if mine is not None and mine.at > now:
        return replace(window, starts=tuple(live)), mine.at
    others = [s for s in live if s is not mine]
    if _admits(others, limit, period, now, reserved=mine is not None):
        return replace(window, starts=(*others, Start(holder, now, TokenState.TAKEN))), None
    at = _reserve_at(others, limit, period, now)
    if sum(1 for s in others if s.state is TokenState.RESERVED) >= MAX_RESERVATIONS:
        return replace(window, starts=tuple(others)), at
    return replace(window, starts=(*others, Start(holder, at, TokenState.RESERVED))), at


def settle_token(
    window: RateWindow, *, holder: str, started_at: datetime | None, period: timedelta, now: datetime
) -> RateWindow:
    """Settle ``holder``'s taken token at ``started_at`` (None: no attempt started, it is given back)."""
    starts = []
    for start in window.live(period, now):
        if start.holder == holder and start.state is TokenState.TAKEN:
            if started_at is None:
                continue
            start = Start(holder, started_at, TokenState.SETTLED)
        starts.append(start)
    return replace(window, starts=tuple(starts))


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
        priority: int = 0,
        audit: bool = False,
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

    def renew(self, scope: str, *, holder: str, lease_seconds: float) -> None:
        """Renew ``holder``'s lease if it holds a slot of ``scope`` (``renew_slot``)."""
        ...

    def slots(self, scope: str) -> SlotState:
        """The scope's slots as stored now (expired holders and stale waiters left out)."""
        ...

    def take(self, scope: str, *, holder: str, limit: int, period_seconds: float) -> datetime | None:
        """Spend a token of ``scope`` for ``holder`` (``take_token``): None if admitted, else when due."""
        ...

    def settle(self, scope: str, *, holder: str, started_at: datetime | None, period_seconds: float) -> None:
        """Settle ``holder``'s token at its attempt's start (``settle_token``; None: give it back)."""
        ...

    def window(self, scope: str) -> RateWindow:
        """The scope's recent admissions as stored now."""
        ...
