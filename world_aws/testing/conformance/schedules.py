"""Conformance: the schedule store (``world.schedules``): a compare-and-set on the last tick."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

from world_aws.contract.clock import ManualClock
from world_aws.contract.schedules import ScheduleState
from world_aws.contract.world import World
from world_aws.testing.conformance.support import new_id


def test_a_schedule_never_advanced_has_no_state(world: World) -> None:
    assert world.schedules.get(new_id("sched")) is None


def test_the_first_advance_expects_no_state_and_is_read_back(world: World, clock: ManualClock) -> None:
    name = new_id("sched")
    tick = clock.now() - timedelta(minutes=5)
    state = ScheduleState(name, last_tick=tick, last_run_id="wrun_1", started=1, skipped=2, missed=3)
    assert world.schedules.advance(state, expected_tick=None) is True
    stored = world.schedules.get(name)
    assert stored is not None
    assert (stored.last_tick, stored.last_run_id, stored.started, stored.skipped, stored.missed) == (
        tick,
        "wrun_1",
        1,
        2,
        3,
    )
    assert stored.updated_at == clock.now()
    # AND a second "first" advance is refused, leaving the state as it was
    assert world.schedules.advance(ScheduleState(name, last_tick=clock.now()), expected_tick=None) is False
    assert world.schedules.get(name) == stored


def test_an_advance_from_a_stale_tick_writes_nothing(world: World, clock: ManualClock) -> None:
    name = new_id("sched")
    first = clock.now()
    world.schedules.advance(ScheduleState(name, last_tick=first), expected_tick=None)
    second = first + timedelta(minutes=1)
    assert world.schedules.advance(ScheduleState(name, last_tick=second, started=1), expected_tick=first)
    # WHEN a pass that read the first state advances it too THEN it is refused
    late = ScheduleState(name, last_tick=second + timedelta(minutes=1), started=9)
    assert world.schedules.advance(late, expected_tick=first) is False
    stored = world.schedules.get(name)
    assert stored is not None and (stored.last_tick, stored.started, stored.last_run_id) == (second, 1, None)


def test_of_concurrent_advances_from_one_state_exactly_one_wins(world: World, clock: ManualClock) -> None:
    name = new_id("sched")
    start = clock.now()
    world.schedules.advance(ScheduleState(name, last_tick=start), expected_tick=None)
    barrier = threading.Barrier(8)

    def advance(n: int) -> bool:
        barrier.wait()
        state = ScheduleState(name, last_tick=start + timedelta(minutes=1), last_run_id=f"wrun_{n}")
        return world.schedules.advance(state, expected_tick=start)

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(advance, range(8)))
    assert results.count(True) == 1
    stored = world.schedules.get(name)
    assert stored is not None and stored.last_run_id == f"wrun_{results.index(True)}"
