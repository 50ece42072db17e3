"""The gate store: debounce windows, batches and singleton keys of workflow starts (flow control).

One record per scope (``debounce:<workflow>:<key>``, ``batch:<workflow>:<key>``,
``singleton:<workflow>:<key>``), a ``Gate``:

- ``open``: the window (debounce) or batch accepting starts: the run id every caller
  of it was given, when it is due to start, and its inputs (a debounce keeps the last).
- ``closed``: windows and batches whose time came (or that filled up), their run's
  start not yet confirmed: the delayed message that starts one removes it only after
  ``run_created`` and the first message are written, so a crash in between starts it
  again (under the same run id) rather than losing it.
- ``recent``: the items of batches started lately (item id, run id), so that an
  append repeated after a lost answer finds its batch instead of joining another.
- ``live``: the run that holds a singleton key, and since when.

The policy is here, as pure functions over the record (``debounce``, ``append``,
``close_due``, ``confirm``, ``claim``, ``free``); a World applies them linearizably
(``GateStore.change``: a lock in memory, a version-conditioned put on DynamoDB).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Protocol, TypeVar

from world_aws.errors import Throttled

# The items of started batches remembered per scope (to answer an append repeated after a lost
# answer); an item id is at most ~40 bytes (``client/coalesce.py`` digests a caller's key).
RECENT_ITEMS = 500
# A DynamoDB item holds 400 KB: a batch closes once its inputs reach ``MAX_BATCH_BYTES``, one
# input is at most ``MAX_ITEM_BYTES`` (a larger value goes by reference), and a record whose
# windows and batches hold ``MAX_GATE_BYTES`` refuses more (``Throttled``) until they start.
MAX_BATCH_BYTES = 128 * 1024
MAX_ITEM_BYTES = 64 * 1024
MAX_GATE_BYTES = 300 * 1024
# How long a caller refused for a full record waits before trying again.
FULL_RETRY_SECONDS = 1.0

A = TypeVar("A")


@dataclass(frozen=True, slots=True)
class Item:
    """One start's input: the caller's item id (its retries reuse it) and the serialized arguments."""

    id: str
    data: bytes


@dataclass(frozen=True, slots=True)
class Pending:
    """A window or batch: its run id, when it opened, when it is due, its inputs."""

    run_id: str
    opened_at: datetime
    due: datetime
    items: tuple[Item, ...] = ()

    @property
    def size(self) -> int:
        return sum(len(i.data) for i in self.items)


@dataclass(frozen=True, slots=True)
class Gate:
    scope: str
    open: Pending | None = None
    closed: tuple[Pending, ...] = ()
    recent: tuple[tuple[str, str], ...] = ()  # (item id, run id), oldest first
    live: str = ""
    live_since: datetime | None = None
    version: int = 0

    def run_of(self, item_id: str) -> str | None:
        """The run an item already joined (open, closed or recently started), None if none."""
        pendings: tuple[Pending, ...] = (self.open, *self.closed) if self.open else self.closed
        for pending in pendings:
            if any(i.id == item_id for i in pending.items):
                return pending.run_id
        return next((str(run) for item, run in self.recent if item == item_id), None)


class Due(StrEnum):
    START = "start"  # start the run now (it is in ``closed``)
    LATER = "later"  # a later start moved the window: come back at ``Decision.due``
    DONE = "done"  # started already (confirmed)
    UNKNOWN = "unknown"  # no such window: a start that lost the race to open one, or not written yet


@dataclass(frozen=True, slots=True)
class Decision:
    """What a due message does: ``Due``, and the pending window (START) or its new time (LATER)."""

    due: Due
    pending: Pending | None = None
    at: datetime | None = None


def debounce(gate: Gate, *, run_id: str, item: Item, window: timedelta, now: datetime) -> tuple[Gate, str]:
    """A start within the open window replaces its input and moves its time; else it opens one.

    Returns the new record and the run id the caller is given: the open window's, or
    ``run_id`` for a new one. An item seen already (a repeated write) changes nothing.
    """
    seen = gate.run_of(item.id)
    if seen is not None:
        return gate, seen
    _check_room(gate, item)
    if gate.open is not None:
        moved = replace(gate.open, due=now + window, items=(item,))
        return replace(gate, open=moved), gate.open.run_id
    return replace(gate, open=Pending(run_id, now, now + window, (item,))), run_id


def append(
    gate: Gate, *, run_id: str, item: Item, max_size: int, max_wait: timedelta, now: datetime
) -> tuple[Gate, str, bool]:
    """Add ``item`` to the open batch (or open one under ``run_id``); full, the batch closes.

    Returns the record, the batch's run id, and whether this append closed it (the
    caller then sends its start message at once).
    """
    seen = gate.run_of(item.id)
    if seen is not None:
        return gate, seen, False
    _check_room(gate, item)
    batch = gate.open or Pending(run_id, now, now + max_wait)
    batch = replace(batch, items=(*batch.items, item))
    if len(batch.items) >= max_size or batch.size >= MAX_BATCH_BYTES:
        return replace(gate, open=None, closed=(*gate.closed, batch)), batch.run_id, True
    return replace(gate, open=batch), batch.run_id, False


def _check_room(gate: Gate, item: Item) -> None:
    """Raises Throttled when the record's windows and batches cannot take ``item`` (they must start first)."""
    held = sum(p.size for p in (*((gate.open,) if gate.open else ()), *gate.closed))
    if held + len(item.data) > MAX_GATE_BYTES:
        raise Throttled(
            f"gate {gate.scope!r} holds {held} bytes of inputs still to start; try again",
            retry_after=FULL_RETRY_SECONDS,
        )


def close_due(gate: Gate, *, run_id: str, now: datetime) -> tuple[Gate, Decision]:
    """The due message of ``run_id`` came: close its window if its time has come."""
    closed = next((p for p in gate.closed if p.run_id == run_id), None)
    if closed is not None:
        return gate, Decision(Due.START, closed)
    if gate.open is not None and gate.open.run_id == run_id:
        if gate.open.due > now:
            return gate, Decision(Due.LATER, at=gate.open.due)
        return replace(gate, open=None, closed=(*gate.closed, gate.open)), Decision(Due.START, gate.open)
    if any(run == run_id for _, run in gate.recent) or gate.live == run_id:
        return gate, Decision(Due.DONE)
    return gate, Decision(Due.UNKNOWN)


def confirm(gate: Gate, *, run_id: str) -> tuple[Gate, None]:
    """The run of a closed window was started: forget the window, remember its items."""
    done = [p for p in gate.closed if p.run_id == run_id]
    if not done:
        return gate, None
    recent = (*gate.recent, *((i.id, run_id) for p in done for i in p.items))
    if not any(p.items for p in done):
        recent = (*recent, ("", run_id))
    return replace(
        gate, closed=tuple(p for p in gate.closed if p.run_id != run_id), recent=recent[-RECENT_ITEMS:]
    ), None


def claim(gate: Gate, *, run_id: str, dead: str, now: datetime) -> tuple[Gate, str]:
    """Take a singleton key for ``run_id`` if it is free, or held by ``dead`` (a run found ended).

    Returns the record and the key's holder (``run_id`` if the claim won).
    """
    if gate.live and gate.live != dead:
        return gate, gate.live
    return replace(gate, live=run_id, live_since=now), run_id


def free(gate: Gate, *, run_id: str) -> tuple[Gate, None]:
    """Let go of a singleton key held by ``run_id`` (a start that failed, a run found ended)."""
    if gate.live != run_id:
        return gate, None
    return replace(gate, live="", live_since=None), None


class GateStore(Protocol):
    def get(self, scope: str) -> Gate:
        """The scope's record as stored now (an empty ``Gate`` if none)."""
        ...

    def change(self, scope: str, rule: Callable[[Gate, datetime], tuple[Gate, A]]) -> A:
        """Apply ``rule`` (record, now) -> (new record, answer) linearizably; the answer.

        Raises:
            Throttled, Transient: the outcome is unknown; the caller retries (each rule
                is idempotent: an item id or a run id names what it does).
        """
        ...
