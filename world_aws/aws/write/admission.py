"""``DynamoAdmissionStore``: flow-control slots and rate windows, one item per scope, versioned.

Item ``pk = flow#<scope>``, ``sk = slots`` holds the holders (holder, ticket, lease
end), the line of waiters (holder, since, last seen, wake message) and the limit;
``sk = rate`` the start times of the last ``limit`` admissions. Every change is a
read (one consistent GetItem) and a put conditioned on the version read, so of two
consumers that read one state only one writes it; the other reads again. The policy
is the contract's (``world_aws.contract.admission``): this translates records to
items and back. An admission costs a GetItem and a PutItem; its release the same.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Protocol, TypeVar

from world_aws.aws.codec import items, keys
from world_aws.aws.codec.dynamo import ConditionFailed, Item, Table
from world_aws.contract.admission import (
    Admission,
    Holder,
    RateWindow,
    SlotState,
    Start,
    TokenState,
    Waiter,
    acquire_slot,
    check_rate_request,
    check_slot_request,
    release_slot,
    renew_slot,
    settle_token,
    take_token,
)
from world_aws.contract.clock import Clock
from world_aws.errors import Transient

# Conditional puts lost to a concurrent writer before giving up (Transient: the caller's
# delivery comes back). Each loss means another consumer's write landed: progress.
WRITE_ATTEMPTS = 32

S = TypeVar("S", SlotState, RateWindow)
A = TypeVar("A")


class DynamoAdmissionStore:
    """Flow-control records in the world's table."""

    def __init__(self, table: Table, clock: Clock) -> None:
        self._table = table
        self._clock = clock

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
        lease = timedelta(seconds=lease_seconds)
        return self._change(
            scope,
            "slots",
            _slots_from,
            _slots_item,
            lambda state, now: acquire_slot(
                state,
                holder=holder,
                ticket=ticket,
                limit=limit,
                lease=lease,
                now=now,
                wake=wake,
                priority=priority,
                audit=audit,
            ),
        )

    def renew(self, scope: str, *, holder: str, lease_seconds: float) -> None:
        lease = timedelta(seconds=lease_seconds)
        self._change(
            scope,
            "slots",
            _slots_from,
            _slots_item,
            lambda state, now: (renew_slot(state, holder=holder, lease=lease, now=now), None),
        )

    def release(self, scope: str, *, holder: str, ticket: str | None = None) -> list[bytes]:
        return self._change(
            scope,
            "slots",
            _slots_from,
            _slots_item,
            lambda state, now: release_slot(state, holder=holder, ticket=ticket, now=now),
        )

    def slots(self, scope: str) -> SlotState:
        state = _slots_from(scope, self._table.get(keys.flow_key(scope, "slots")))
        return release_slot(state, holder="", ticket="", now=self._clock.now())[0]

    def take(self, scope: str, *, holder: str, limit: int, period_seconds: float) -> datetime | None:
        check_rate_request(limit, period_seconds)
        period = timedelta(seconds=period_seconds)
        return self._change(
            scope,
            "rate",
            _window_from,
            _window_item,
            lambda window, now: take_token(window, holder=holder, limit=limit, period=period, now=now),
        )

    def settle(self, scope: str, *, holder: str, started_at: datetime | None, period_seconds: float) -> None:
        period = timedelta(seconds=period_seconds)
        self._change(
            scope,
            "rate",
            _window_from,
            _window_item,
            lambda window, now: (
                settle_token(window, holder=holder, started_at=started_at, period=period, now=now),
                None,
            ),
        )

    def window(self, scope: str) -> RateWindow:
        return _window_from(scope, self._table.get(keys.flow_key(scope, "rate")))

    def _change(
        self,
        scope: str,
        kind: str,
        decode: Callable[[str, Item | None], S],
        encode: Callable[[S], dict[str, object]],
        change: Callable[[S, datetime], tuple[S, A]],
    ) -> A:
        return change_versioned(
            self._table,
            self._clock,
            keys.flow_key(scope, kind),
            lambda item: decode(scope, item),
            encode,
            change,
        )


class Versioned(Protocol):
    """A record kept in one item whose ``version`` conditions every put."""

    @property
    def version(self) -> int: ...


V = TypeVar("V", bound=Versioned)


def change_versioned(
    table: Table,
    clock: Clock,
    key: keys.Key,
    decode: Callable[[Item | None], V],
    encode: Callable[[V], dict[str, object]],
    change: Callable[[V, datetime], tuple[V, A]],
) -> A:
    """Read the record at ``key``, apply ``change``, put it if its version is still the one read.

    The flow-control records (slots, rate windows, gates) all change this way.

    Raises:
        Transient: ``WRITE_ATTEMPTS`` puts each lost to a concurrent writer.
    """
    item = table.get(key)
    for _ in range(WRITE_ATTEMPTS):
        state = decode(item)
        new, answer = change(state, clock.now())
        if new == state:
            return answer  # nothing to write (a refusal that changed nothing)
        # Timeline: two consumers read version v and both decide; the first put moves the
        # version to v + 1, the second's condition fails and it decides again on what it got.
        if state.version == 0:
            condition, values = f"attribute_not_exists({keys.PK})", None
        else:
            condition, values = "version = :v", {":v": state.version}
        try:
            table.put(
                {**key, **encode(new), "version": state.version + 1}, condition=condition, values=values
            )
        except ConditionFailed as lost:
            item = lost.item if lost.item is not None else table.get(key)
            continue
        return answer
    record = f"{key[keys.PK]}/{key[keys.SK]}"
    raise Transient(f"flow-control record {record!r} kept changing under {WRITE_ATTEMPTS} writes")


def at_us(us: object) -> datetime:
    """A time this module's records stored as epoch microseconds."""
    moment = items.from_epoch_us(us)
    assert moment is not None  # written by these stores, always a number
    return moment


def _us(moment: datetime) -> int:
    return items.epoch_us(moment)


def _slots_item(state: SlotState) -> dict[str, object]:
    return {
        "limit": state.limit,
        "audited": state.audited,
        "holders": [{"h": h.holder, "t": h.ticket, "x": _us(h.expires_at)} for h in state.holders],
        "waiters": [
            {"h": w.holder, "s": _us(w.since), "n": _us(w.seen_at), "w": w.wake, "p": w.priority}
            for w in state.waiters
        ],
    }


def _slots_from(scope: str, item: Item | None) -> SlotState:
    if item is None:
        return SlotState(scope)
    holders = tuple(Holder(str(h["h"]), str(h["t"]), at_us(h["x"])) for h in item.get("holders", []))
    waiters = tuple(
        Waiter(
            str(w["h"]),
            since=at_us(w["s"]),
            seen_at=at_us(w["n"]),
            wake=bytes(w.get("w", b"")),
            priority=int(w.get("p", 0)),
        )
        for w in item.get("waiters", [])
    )
    return SlotState(
        scope,
        limit=int(item.get("limit", 0)),
        holders=holders,
        waiters=waiters,
        version=int(item["version"]),
        audited=bool(item.get("audited", False)),
    )


def _window_item(window: RateWindow) -> dict[str, object]:
    return {"starts": [{"h": s.holder, "t": _us(s.at), "s": s.state.value} for s in window.starts]}


def _window_from(scope: str, item: Item | None) -> RateWindow:
    if item is None:
        return RateWindow(scope)
    starts = tuple(Start(str(s["h"]), at_us(s["t"]), TokenState(str(s["s"]))) for s in item.get("starts", []))
    return RateWindow(scope, starts=starts, version=int(item["version"]))
