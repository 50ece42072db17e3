"""A warm handler's memory of the runs it has replayed (contract §8.3, replay cost).

Continuing a run reads only the events after the last cached position, so the
event items read over a run's life grow with its length, not its square. The
cache is per ``Runtime`` instance, bounded (least recently used runs drop out),
and thread-safe.

A continuation that ran steps inline hands back the events it wrote
(:meth:`LogCache.feed`). When their positions follow the cached log's last one
without a gap, nothing else was written in between (positions are dense and
handed out in order, ARCHITECTURE §8), so the next round replays them without
reading the log: one round trip fewer between two inline steps (ARCHITECTURE §5,
"Inline execution", why that is as safe as a read).
"""

from __future__ import annotations

import bisect
import threading
from collections import OrderedDict

from world_aws.contract.records import Event, Run
from world_aws.contract.world import World
from world_aws.workflow.retry import retry_in_process

# Tries of one log read before the delivery fails (a Transient or Throttled page).
READ_ATTEMPTS = 3
READ_MAX_PAUSE_SECONDS = 0.5


class LogCache:
    def __init__(self, world: World, max_runs: int) -> None:
        self._world = world
        self._max_runs = max_runs
        self._logs: OrderedDict[str, list[Event]] = OrderedDict()
        self._lock = threading.Lock()

    def read(self, run_id: str, *, after: int = 0, fetch: bool = True) -> list[Event]:
        """The run's log after position ``after`` as known now: the cached part plus what is new.

        Costs what is returned plus what the World has that is new: the cached log is
        extended in place, never copied whole (a run of n steps reads O(n) in all).
        ``fetch=False`` (right after a successful :meth:`feed`): the cached part only.
        A read that fails with ``Transient`` or ``Throttled`` is tried again in process
        (``READ_ATTEMPTS``) before the error is raised to the delivery.
        """
        with self._lock:
            cached = self._logs.get(run_id)
            known = cached[-1].position if cached else 0
        fresh: list[Event] = []
        if fetch or cached is None:
            # A wide run's log is many Query pages: one transient page should not cost the
            # whole delivery (a redelivery replays it all, and the cap counts it).
            fresh = retry_in_process(
                lambda: self._world.events.list(run_id, after=known),
                attempts=READ_ATTEMPTS,
                clock=self._world.clock,
                max_pause=READ_MAX_PAUSE_SECONDS,
            )
        current = self._extend(run_id, cached, fresh)
        with self._lock:
            # Positions are increasing: find the first one after ``after`` by bisection.
            start = bisect.bisect_right(current, after, key=_position)
            return current[start:]

    def _extend(self, run_id: str, cached: list[Event] | None, fresh: list[Event]) -> list[Event]:
        """Add ``fresh`` (read after ``cached``'s last position) to the run's cached log; that log."""
        with self._lock:
            current = self._logs.get(run_id)
            if current is None:
                # Evicted meanwhile: the list we started from still holds the prefix.
                current = self._logs[run_id] = cached if cached is not None else []
            last = current[-1].position if current else 0
            current.extend(e for e in fresh if e.position > last)
            self._logs.move_to_end(run_id)
            while len(self._logs) > self._max_runs:
                self._logs.popitem(last=False)
            return current

    def read_with_run(self, run_id: str) -> Run:
        """The run, read with what is new of its log (``events.list_with_run``), which this cache keeps.

        A continuation's first read: the run is what it decides on, and the log it then
        replays was read right after it in the same call, so the replay's first
        :meth:`read` may pass ``fetch=False`` (one item read and one round trip fewer on
        the DynamoDB World, ARCHITECTURE §10). A terminal run's log is not read. Tried
        again in process like :meth:`read`.

        Raises:
            NotFound: the run is missing.
        """
        with self._lock:
            cached = self._logs.get(run_id)
            known = cached[-1].position if cached else 0
        log = retry_in_process(
            lambda: self._world.events.list_with_run(run_id, after=known),
            attempts=READ_ATTEMPTS,
            clock=self._world.clock,
            max_pause=READ_MAX_PAUSE_SECONDS,
        )
        if log.events is not None:
            self._extend(run_id, cached, log.events)
        return log.run

    def feed(self, run_id: str, written: list[Event]) -> bool:
        """Append events this handler wrote if they continue the cached log densely; whether they did.

        ``written`` must be sorted by position. False (and nothing appended) when the
        run is not cached, ``written`` is empty, or a position is missing: something
        else was written there, and only a read shows it.
        """
        if not written:
            return False
        with self._lock:
            cached = self._logs.get(run_id)
            if not cached:
                return False
            first = cached[-1].position + 1
            if [e.position for e in written] != list(range(first, first + len(written))):
                return False
            cached.extend(written)
            self._logs.move_to_end(run_id)
            return True

    def forget(self, run_id: str) -> None:
        with self._lock:
            self._logs.pop(run_id, None)


def _position(event: Event) -> int:
    return event.position
