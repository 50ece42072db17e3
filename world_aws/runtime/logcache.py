"""A warm handler's memory of the runs it has replayed (SPEC §8.3, replay cost).

Continuing a run reads only the events after the last cached position, so the
event items read over a run's life grow with its length, not its square. The
cache is per ``Runtime`` instance, bounded (least recently used runs drop out),
and thread-safe.
"""

from __future__ import annotations

import bisect
import threading
from collections import OrderedDict

from world_aws.contract.records import Event
from world_aws.contract.world import World


class LogCache:
    def __init__(self, world: World, max_runs: int) -> None:
        self._world = world
        self._max_runs = max_runs
        self._logs: OrderedDict[str, list[Event]] = OrderedDict()
        self._lock = threading.Lock()

    def read(self, run_id: str, *, after: int = 0) -> list[Event]:
        """The run's log after position ``after`` as known now: the cached part plus what is new.

        Costs what is returned plus what the World has that is new: the cached log is
        extended in place, never copied whole (a run of n steps reads O(n) in all).
        """
        with self._lock:
            cached = self._logs.get(run_id)
            known = cached[-1].position if cached else 0
        fresh = self._world.events.list(run_id, after=known)
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
            # Positions are increasing: find the first one after ``after`` by bisection.
            start = bisect.bisect_right(current, after, key=_position)
            return current[start:]

    def forget(self, run_id: str) -> None:
        with self._lock:
            self._logs.pop(run_id, None)


def _position(event: Event) -> int:
    return event.position
