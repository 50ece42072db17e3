"""``MemoryScheduleStore``: the schedule store of the in-memory World (a dict behind a lock)."""

from __future__ import annotations

import threading
from dataclasses import replace
from datetime import datetime

from world_aws.contract.clock import Clock
from world_aws.contract.schedules import ScheduleState


class MemoryScheduleStore:
    """Schedule states by name; ``advance`` is a compare-and-set under one lock."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._states: dict[str, ScheduleState] = {}

    def get(self, name: str) -> ScheduleState | None:
        with self._lock:
            return self._states.get(name)

    def advance(self, state: ScheduleState, *, expected_tick: datetime | None) -> bool:
        with self._lock:
            stored = self._states.get(state.name)
            if (stored.last_tick if stored is not None else None) != expected_tick:
                return False
            self._states[state.name] = replace(state, updated_at=self._clock.now())
            return True
