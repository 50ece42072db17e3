"""Operation counters of one in-memory World, for tests and benchmarks.

A test asserts on *how much* the runtime asked of its World (e.g. that a step
consumer with ``run_context`` never reads the run, or that a continuation does
not re-read the whole log) by reading ``MemoryWorld.stats`` before and after.
The counters live on the World instance (contract §9), behind their own lock.
"""

from __future__ import annotations

import threading
from enum import StrEnum


class Stat(StrEnum):
    """The names of the counters. Each counts calls unless its name says items."""

    EVENTS_CREATED = "events_created"  # events.create calls, accepted or refused
    EVENTS_APPENDED = "events_appended"  # event records appended to logs (incl. World-written ones)
    EVENT_LISTS = "event_lists"  # events.list calls
    EVENT_ITEMS_READ = "event_items_read"  # Event records returned by events.list
    RUN_READS = "run_reads"  # runs.get
    RUN_LISTS = "run_lists"  # runs.list
    STEP_READS = "step_reads"  # steps.get
    STEP_LISTS = "step_lists"  # steps.list
    STEP_PENDING_CHECKS = "step_pending_checks"  # steps.any_pending
    LEASE_RENEWALS = "lease_renewals"  # steps.renew_lease
    LEASE_READS = "lease_reads"  # steps.lease
    HOOK_READS = "hook_reads"  # hooks.get_by_token
    HOOK_LISTS = "hook_lists"  # hooks.list
    WAIT_READS = "wait_reads"  # waits.get
    WAIT_LISTS = "wait_lists"  # waits.list
    BLOB_PUTS = "blob_puts"
    BLOB_GETS = "blob_gets"
    PUBLISHES = "publishes"  # queue.publish calls
    PUBLISHES_DEDUPLICATED = "publishes_deduplicated"  # publishes absorbed by an idempotency key
    DELIVERIES = "deliveries"  # messages handed to a handler


class WorldStats:
    """Thread-safe counters by :class:`Stat`; read with ``stats[Stat.RUN_READS]`` or ``stats.run_reads``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts = dict.fromkeys(Stat, 0)

    def incr(self, stat: Stat, n: int = 1) -> None:
        """Add ``n`` to ``stat``."""
        with self._lock:
            self._counts[stat] += n

    def __getitem__(self, stat: Stat | str) -> int:
        with self._lock:
            return self._counts[Stat(stat)]

    def snapshot(self) -> dict[str, int]:
        """Every counter by name, zeros included: diff two snapshots to measure a piece of work."""
        with self._lock:
            return {stat.value: count for stat, count in self._counts.items()}

    def reset(self) -> None:
        """Set every counter back to zero."""
        with self._lock:
            self._counts = dict.fromkeys(Stat, 0)

    # Named read-outs of the counters tests use most (typed, unlike __getattr__).
    @property
    def events_created(self) -> int:
        return self[Stat.EVENTS_CREATED]

    @property
    def events_appended(self) -> int:
        return self[Stat.EVENTS_APPENDED]

    @property
    def event_lists(self) -> int:
        return self[Stat.EVENT_LISTS]

    @property
    def event_items_read(self) -> int:
        return self[Stat.EVENT_ITEMS_READ]

    @property
    def run_reads(self) -> int:
        return self[Stat.RUN_READS]

    @property
    def step_reads(self) -> int:
        return self[Stat.STEP_READS]

    @property
    def step_lists(self) -> int:
        return self[Stat.STEP_LISTS]

    @property
    def step_pending_checks(self) -> int:
        return self[Stat.STEP_PENDING_CHECKS]

    @property
    def publishes(self) -> int:
        return self[Stat.PUBLISHES]

    @property
    def deliveries(self) -> int:
        return self[Stat.DELIVERIES]
