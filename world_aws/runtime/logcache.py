"""A warm handler's memory of the runs it has replayed (SPEC §8.3, replay cost).

Continuing a run reads only the events after the last cached position, so the
event items read over a run's life grow with its length, not its square. The
cache is per ``Runtime`` instance, bounded (least recently used runs drop out),
and thread-safe.
"""

from __future__ import annotations

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

    def read(self, run_id: str) -> list[Event]:
        """The run's whole log as known now: the cached prefix plus what is new."""
        with self._lock:
            cached = list(self._logs.get(run_id, ()))
        after = cached[-1].position if cached else 0
        fresh = self._world.events.list(run_id, after=after)
        log = cached + [e for e in fresh if e.position > after]
        with self._lock:
            current = self._logs.get(run_id)
            if current is None or len(current) <= len(log):
                self._logs[run_id] = log
            self._logs.move_to_end(run_id)
            while len(self._logs) > self._max_runs:
                self._logs.popitem(last=False)
        return log

    def forget(self, run_id: str) -> None:
        with self._lock:
            self._logs.pop(run_id, None)
