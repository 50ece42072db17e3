"""A wave's inline outcomes, appended a batch at a time as its bodies finish (ARCHITECTURE §5).

An inline wave's steps run in parallel on the pool. Each outcome written alone costs
a reservation and a commit; appended together after the log's known end they share
one write of the run item and the batch items (``events.append_after``). So the
bodies hand their outcomes here: every ``rules.MAX_BATCH_EVENTS`` of them are
appended at once, and the rest when the wave is over (``flush``). A batch waits for
at most that many bodies, so a crash loses at most that many finished bodies' work:
they run again, as any step whose outcome was not written (at least once, SPEC §5).

The log's end is known only while nothing else wrote: a batch that does not land
(the log moved) or whose answer was lost is written one event at a time, and so is
everything after it, each judged by the World as before (a landed one is refused,
which leaves ``complete`` false: the caller reads the log instead of trusting
``written``).
"""

from __future__ import annotations

import threading
from operator import attrgetter

from world_aws.contract import rules
from world_aws.contract.records import Event, EventRequest
from world_aws.contract.world import World
from world_aws.errors import Throttled, Transient
from world_aws.runtime import stepbody


class OutcomeBatch:
    """Collects the outcomes of one inline wave and appends them after ``after`` (the log's end)."""

    def __init__(self, world: World, run_id: str, after: int) -> None:
        self._world = world
        self._run_id = run_id
        self._after: int | None = after
        self._pending: list[EventRequest] = []
        self._written: list[Event] = []
        self._complete = True
        self._lock = threading.Lock()

    def add(self, outcome: EventRequest) -> None:
        """An outcome to write; a full batch is appended now, by the thread that filled it."""
        with self._lock:
            self._pending.append(outcome)
            if len(self._pending) >= rules.MAX_BATCH_EVENTS:
                self._write()

    def flush(self) -> tuple[list[Event], bool]:
        """Write what is left; returns the events written, by position, and whether every write landed."""
        with self._lock:
            if self._pending:
                self._write()
            return sorted(self._written, key=attrgetter("position")), self._complete

    def _write(self) -> None:
        batch, self._pending = self._pending, []
        results = None
        if self._after is not None:
            try:
                results = self._world.events.append_after(
                    self._run_id, self._after, batch, at=self._world.clock.now()
                )
            except (Throttled, Transient):
                results = None  # unknown whether it landed: the one-by-one writes find out
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
