"""``LogCache``: a warm handler reads each event of a run once and hands out only what was asked for."""

from __future__ import annotations

import pytest

from world_aws.contract.clock import ManualClock
from world_aws.contract.records import EventType
from world_aws.engine.logcache import READ_ATTEMPTS, LogCache
from world_aws.errors import Transient
from world_aws.local.memory import create_memory_world
from world_aws.testing.conformance.support import create_run, create_step


def test_read_after_a_position_returns_only_the_later_events_and_reads_only_new_ones() -> None:
    # GIVEN a run with four events, and a cache that has read them
    world = create_memory_world(clock=ManualClock())
    run_id = create_run(world)
    create_step(world, run_id)
    create_step(world, run_id)
    cache = LogCache(world, max_runs=4)
    assert [e.position for e in cache.read(run_id)] == [1, 2, 3, 4]
    read_before = world.stats.snapshot()["event_items_read"]
    # WHEN one more event lands and the cache is asked for what follows position 3
    create_step(world, run_id)
    tail = cache.read(run_id, after=3)
    # THEN it returns 4 and 5, having read only the new event from the World
    assert [e.position for e in tail] == [4, 5]
    assert world.stats.snapshot()["event_items_read"] - read_before == 1
    # AND asking again from the start still gives the whole log, without a read of old items
    assert [e.type for e in cache.read(run_id)][:2] == [EventType.RUN_CREATED, EventType.RUN_STARTED]
    assert world.stats.snapshot()["event_items_read"] - read_before == 1


def test_an_evicted_run_is_read_again_from_the_start() -> None:
    # GIVEN a cache of one run that reads two runs in turn
    world = create_memory_world(clock=ManualClock())
    first, second = create_run(world), create_run(world)
    cache = LogCache(world, max_runs=1)
    cache.read(first)
    cache.read(second)  # evicts the first
    create_step(world, first)
    # WHEN the first run is read again
    log = cache.read(first)
    # THEN its whole log comes back, the new event included
    assert [e.position for e in log] == [1, 2, 3]


class _FlakyEvents:
    """The World's events store whose ``list`` fails ``failures`` times with a Transient first."""

    def __init__(self, inner: object, failures: int) -> None:
        self._inner = inner
        self.failures = failures
        self.calls = 0

    def list(self, run_id: str, **kwargs: object) -> object:
        self.calls += 1
        if self.calls <= self.failures:
            raise Transient("injected: a Query page timed out")
        return self._inner.list(run_id, **kwargs)  # type: ignore[attr-defined]


def test_a_transient_log_read_is_tried_again_in_process_and_then_raised() -> None:
    # GIVEN a run, and a World whose log reads fail twice before they answer
    world = create_memory_world(clock=ManualClock())
    run_id = create_run(world)
    flaky = _FlakyEvents(world.events, failures=2)
    world.events = flaky  # type: ignore[misc, assignment]
    # WHEN the cache reads the log
    events = LogCache(world, max_runs=4).read(run_id)
    # THEN it got the log on the third try, without handing the failure to the delivery
    assert [e.type for e in events] == [EventType.RUN_CREATED, EventType.RUN_STARTED]
    assert flaky.calls == 3
    # AND a read that keeps failing raises after READ_ATTEMPTS tries
    flaky.failures, flaky.calls = 10, 0
    with pytest.raises(Transient):
        LogCache(world, max_runs=4).read(run_id)
    assert flaky.calls == READ_ATTEMPTS
