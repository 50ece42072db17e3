"""A wave's inline outcomes, appended a batch at a time as its bodies finish (ARCHITECTURE §5).

An inline wave's steps run in parallel on the pool. Each outcome written alone costs
a reservation and a commit; appended together after the log's known end they share
one write of the run item and the batch items (``events.append_after``). So the
bodies hand their outcomes here: a batch is appended when it holds
``rules.MAX_BATCH_EVENTS`` of them or ``LINGER_SECONDS`` after its first, whichever is
sooner, and what is left when the wave is over (``flush``). So bodies that finish
together share a write, a finished body's outcome never waits on a slow sibling, and a
crash loses at most one batch of finished bodies' work: they run again, as any step
whose outcome was not written (at least once, contract §5).

The log's end is known only while nothing else wrote: a batch that does not land
(the log moved) or whose answer was lost is written one event at a time, and so is
everything after it, each judged by the World as before (a landed one is refused,
which leaves ``complete`` false: the caller reads the log instead of trusting
``written``).
"""

from __future__ import annotations

import threading
from datetime import datetime

from world_aws.contract import rules
from world_aws.contract.records import Event, EventRequest, EventResult
from world_aws.contract.world import World
from world_aws.errors import Throttled, Transient
from world_aws.worker import stepbody


def append_or_none(
    world: World,
    run_id: str,
    after: int,
    requests: list[EventRequest],
    at: datetime | None = None,
    *,
    flush_later: bool = False,
) -> list[EventResult] | None:
    """``events.append_after`` stamped ``at`` (default: now); None if it did not land or its answer was lost.

    Either way the caller writes the same requests one by one, which finds out: a
    landed one is refused as a duplicate, and the next read of the log shows it.
    """
    try:
        return world.events.append_after(
            run_id, after, requests, at=at or world.clock.now(), flush_later=flush_later
        )
    except (Throttled, Transient):
        return None


def append_batches(
    world: World,
    run_id: str,
    after: int,
    requests: list[EventRequest],
    *,
    lead: EventRequest | None = None,
    flush_later: bool = False,
) -> tuple[list[EventResult], int | None]:
    """Append ``requests`` after ``after``, ``rules.MAX_BATCH_EVENTS`` to a write, until one does not land.

    ``lead`` (a pending run's ``run_started``) goes first in the first write.
    ``flush_later``: each append is made so (the caller flushes the run's log, ``events.flush``).

    Returns:
        The results of the writes that landed, in order (``lead``'s first), and where the
        log ends if every one did. The caller writes what is left one by one.
    """
    results: list[EventResult] = []
    index = 0
    while index < len(requests):
        head = [lead] if lead is not None else []
        chunk = requests[index : index + rules.MAX_BATCH_EVENTS - len(head)]
        landed = append_or_none(world, run_id, after, [*head, *chunk], flush_later=flush_later)
        if landed is None:
            return results, None
        results += landed
        after += len(head) + len(chunk)
        index += len(chunk)
        lead = None
    return results, after


# How long a batch waits for more outcomes after its first: bodies that finish together share
# a write, and a finished body's outcome is in the log this soon even while a sibling runs on.
LINGER_SECONDS = 0.05


class OutcomeBatch:
    """Collects the outcomes of one inline wave and appends them after ``after`` (the log's end)."""

    def __init__(self, world: World, run_id: str, after: int, *, linger: float = LINGER_SECONDS) -> None:
        self._world = world
        self._run_id = run_id
        self._after: int | None = after
        self._linger = linger
        self._pending: list[EventRequest] = []
        self._written: list[Event] = []
        self._complete = True
        self._failure: BaseException | None = None
        self._timers: list[threading.Timer] = []
        self._lock = threading.Lock()

    def add(self, outcome: EventRequest) -> None:
        """An outcome to write: a full batch now, by the thread that filled it, else within ``linger``."""
        with self._lock:
            self._pending.append(outcome)
            if len(self._pending) >= rules.MAX_BATCH_EVENTS:
                self._write()
            elif len(self._pending) == 1:
                timer = threading.Timer(self._linger, self._lingered)
                timer.daemon = True
                self._timers.append(timer)
                timer.start()

    def flush(self) -> tuple[list[Event], bool]:
        """Write what is left; returns the events written and whether every write landed.

        Raises:
            BaseException: whatever a write made on a linger timer's thread raised.
        """
        with self._lock:
            for timer in self._timers:
                timer.cancel()
            if self._pending:
                self._write()
            if self._failure is not None:
                raise self._failure
            return list(self._written), self._complete

    def _lingered(self) -> None:
        """A batch not full ``linger`` after its first outcome: written now, not after a slow sibling."""
        with self._lock:
            if not self._pending or self._failure is not None:
                return
            try:
                self._write()
            except BaseException as failure:  # handed to flush(), on the wave's thread
                self._failure = failure

    def _write(self) -> None:
        batch, self._pending = self._pending, []
        results = (
            None if self._after is None else append_or_none(self._world, self._run_id, self._after, batch)
        )
        if results is not None:
            events = [r.event for r in results if r.event is not None]
            self._written += events
            self._after = events[-1].position
            return
        self._after = None
        for outcome in batch:
            recorded = stepbody.record(self._world, self._run_id, outcome)
            if isinstance(recorded, Event):
                self._written.append(recorded)
            else:
                self._complete = False
