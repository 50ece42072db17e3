"""Conformance: the gate store (``world.gates``): debounce windows, batches, singleton keys."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta

from world_aws.contract.clock import ManualClock
from world_aws.contract.coalesce import (
    Decision,
    Due,
    Gate,
    Item,
    append,
    claim,
    close_due,
    confirm,
    debounce,
    free,
)
from world_aws.contract.world import World
from world_aws.errors import Throttled
from world_aws.testing.conformance.support import new_id

WINDOW = timedelta(seconds=30)


def _debounce(world: World, scope: str, run_id: str, item: str, data: bytes) -> str:
    def rule(gate: Gate, now: datetime) -> tuple[Gate, str]:
        return debounce(gate, run_id=run_id, item=Item(item, data), window=WINDOW, now=now)

    result: str = world.gates.change(scope, rule)
    return result


def _append(world: World, scope: str, run_id: str, item: str, size: int = 3) -> tuple[str, bool]:
    def rule(gate: Gate, now: datetime) -> tuple[Gate, tuple[str, bool]]:
        new, run, full = append(
            gate, run_id=run_id, item=Item(item, item.encode()), max_size=size, max_wait=WINDOW, now=now
        )
        return new, (run, full)

    result: tuple[str, bool] = world.gates.change(scope, rule)
    return result


def _due(world: World, scope: str, run_id: str) -> Decision:
    result: Decision = world.gates.change(scope, lambda g, now: close_due(g, run_id=run_id, now=now))
    return result


def test_a_debounce_window_keeps_its_run_and_the_last_input_and_moves_its_time(
    world: World, clock: ManualClock
) -> None:
    scope = new_id("debounce")
    start = clock.now()
    # GIVEN a window opened by a start, then another start 10 s later (with another run id in hand)
    assert _debounce(world, scope, "run-1", "i1", b"\x00first") == "run-1"
    clock.advance(10)
    assert _debounce(world, scope, "run-2", "i2", b"\x01second") == "run-1"
    gate = world.gates.get(scope)
    assert gate.open is not None
    assert [i.data for i in gate.open.items] == [b"\x01second"]
    assert gate.open.due == start + timedelta(seconds=40)
    # WHEN the first due message comes at 30 s THEN the window is due again later
    clock.advance(20)
    assert _due(world, scope, "run-1") == Decision(Due.LATER, at=start + timedelta(seconds=40))
    # AND at its time it is closed and started, and once confirmed it is done
    clock.advance(10)
    started = _due(world, scope, "run-1")
    assert started.due is Due.START and started.pending is not None
    assert _due(world, scope, "run-1").due is Due.START  # a redelivery before the confirm starts it again
    world.gates.change(scope, lambda g, _: confirm(g, run_id="run-1"))
    assert _due(world, scope, "run-1").due is Due.DONE
    assert _due(world, scope, "run-9").due is Due.UNKNOWN
    # AND a repeated write of the first start (its answer lost) still names its run
    assert _debounce(world, scope, "run-3", "i2", b"\x01second") == "run-1"


def test_a_batch_closes_at_its_size_and_an_item_written_twice_joins_once(world: World) -> None:
    scope = new_id("batch")
    assert _append(world, scope, "b1", "x1") == ("b1", False)
    assert _append(world, scope, "b2", "x2") == ("b1", False)
    assert _append(world, scope, "b2", "x2") == ("b1", False)  # repeated: not a third item
    assert _append(world, scope, "b3", "x3") == ("b1", True)  # the third closes it
    assert _append(world, scope, "b4", "x4") == ("b4", False)  # the next opens another
    gate = world.gates.get(scope)
    assert [[i.id for i in p.items] for p in gate.closed] == [["x1", "x2", "x3"]]
    assert gate.open is not None and [i.id for i in gate.open.items] == ["x4"]
    # AND after the batch started, a late repeat of one of its items still names it
    world.gates.change(scope, lambda g, _: confirm(g, run_id="b1"))
    assert _append(world, scope, "b5", "x1") == ("b1", False)


def test_concurrent_appends_each_land_in_exactly_one_batch(world: World) -> None:
    scope = new_id("batch")
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda n: _append(world, scope, f"run-{n}", f"item-{n}", size=5), range(40)))
    gate = world.gates.get(scope)
    batches = {p.run_id: [i.id for i in p.items] for p in gate.closed}
    assert sorted(len(items) for items in batches.values()) == [5] * 8
    assert sorted(i for items in batches.values() for i in items) == sorted(f"item-{n}" for n in range(40))
    assert {run for run, _ in answers} == set(batches)
    assert sum(full for _, full in answers) == 8


def test_a_singleton_key_has_one_holder_until_freed_or_found_dead(world: World) -> None:
    scope = new_id("singleton")

    def take(run_id: str, dead: str = "") -> str:
        result: str = world.gates.change(scope, lambda g, now: claim(g, run_id=run_id, dead=dead, now=now))
        return result

    with ThreadPoolExecutor(6) as pool:
        holders = set(pool.map(lambda n: take(f"r{n}"), range(12)))
    assert len(holders) == 1
    (holder,) = holders
    assert take("late") == holder
    assert take("late", dead=holder) == "late"  # its holder was found ended
    world.gates.change(scope, lambda g, _: free(g, run_id="late"))
    assert world.gates.get(scope).live == ""
    assert take("next") == "next"


def test_a_gate_full_of_inputs_still_to_start_refuses_more_until_they_start(world: World) -> None:
    scope = new_id("batch")

    def add(n: int) -> tuple[str, bool]:
        def rule(gate: Gate, now: datetime) -> tuple[Gate, tuple[str, bool]]:
            item = Item(f"big-{n}", bytes(60_000))
            new, run, full = append(gate, run_id=f"r{n}", item=item, max_size=1000, max_wait=WINDOW, now=now)
            return new, (run, full)

        result: tuple[str, bool] = world.gates.change(scope, rule)
        return result

    # GIVEN five inputs of 60 KB: the first three close a batch at 128 KiB, two wait in the next
    answers = [add(n) for n in range(5)]
    assert [full for _, full in answers] == [False, False, True, False, False]
    # WHEN a sixth comes before the closed batch started THEN it is refused, to try again
    try:
        add(5)
    except Throttled as exc:
        assert "try again" in str(exc)
    else:
        raise AssertionError("a gate past its size took another input")
    # AND once the closed batch started it is taken
    world.gates.change(scope, lambda g, _: confirm(g, run_id="r0"))
    assert add(5) == ("r3", True)  # and closes its batch
