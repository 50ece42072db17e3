"""Schedules: one run per tick, never two; overlap and catch-up policies; on both Worlds, on a manual clock.

The scheduler's passes are called by hand (``Scheduler.tick()``) with the
harness's clock moved between them, as the EventBridge rule (or the local
loop) would call them every minute.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import cast

import pytest

from world_aws import BadInput, Workflows, create_hook
from world_aws.contract.records import ResolveData, RunStatus
from world_aws.contract.schedules import ScheduleState, ScheduleStore
from world_aws.contract.world import ForwardingWorld, World
from world_aws.engine import ids
from world_aws.errors import Transient
from world_aws.worker.scheduler import HandledTick, Scheduler, TickOutcome
from world_aws.workflow.schedule_expr import iso_tick

from .harness import Harness

# 10:00:30 on a Sunday: rate(5 minutes) ticks at 10:05, 10:10, ...
START = datetime(2026, 3, 1, 10, 0, 30, tzinfo=UTC)


def report_app(calls: list[str]) -> Workflows:
    app = Workflows()

    @app.step(name="sched.collect")
    def collect() -> int:
        calls.append("collect")
        return len(calls)

    @app.workflow(name="sched.report", schedule="rate(5 minutes)")
    async def report() -> int:
        return await collect()

    return app


def gated_app(overlap: str) -> Workflows:
    """A schedule whose runs wait on a hook: a run stays running until resumed (:func:`open_gate`)."""
    app = Workflows()

    @app.workflow(name="sched.gated")
    async def gated(label: str) -> str:
        return f"{label}:{await create_hook()}"

    app.schedule(gated, "rate(5 minutes)", name="gated", overlap=overlap, args=("g",))
    return app


def at_start(harness: Harness) -> None:
    harness.clock.advance((START - harness.clock.now()).total_seconds())


def open_gate(harness: Harness, run_id: str) -> None:
    (hook,) = harness.world.hooks.list(run_id)
    harness.runtime.resume_hook(hook.token, "open")


def scheduled_runs(harness: Harness) -> list[str]:
    page = harness.world.runs.list(limit=100)
    return sorted(r.run_id for r in page.runs if "schedule" in r.attributes)


def test_a_rate_schedule_starts_one_run_per_tick_however_many_passes(harness: Harness) -> None:
    calls: list[str] = []
    runtime = harness.runtime_for(report_app(calls))
    scheduler = Scheduler(runtime)
    at_start(harness)
    # GIVEN the scheduler's first pass: the schedule is recorded, nothing due yet is started
    assert scheduler.tick().ticks == []
    assert scheduled_runs(harness) == []
    # WHEN passes run every minute across two ticks, one of them twice
    outcomes = []
    for _ in range(10):
        harness.clock.advance(60)
        outcomes += scheduler.tick().ticks
        harness.drain()
    outcomes += scheduler.tick().ticks
    # THEN each tick was started once, under the run id its key names
    assert [(iso_tick(t.tick), t.outcome) for t in outcomes] == [
        ("2026-03-01T10:05:00Z", TickOutcome.STARTED),
        ("2026-03-01T10:10:00Z", TickOutcome.STARTED),
    ]
    expected = [ids.schedule_run_id(f"schedule:sched.report:{iso_tick(t.tick)}") for t in outcomes]
    assert [t.run_id for t in outcomes] == expected
    assert scheduled_runs(harness) == sorted(expected)
    # AND the runs complete, each carrying its schedule and tick
    for run_id in expected:
        assert harness.settle(run_id) is RunStatus.COMPLETED
    run = harness.world.runs.get(expected[0])
    assert (run.workflow_name, run.attributes["schedule"], run.attributes["schedule_tick"]) == (
        "sched.report",
        "sched.report",
        "2026-03-01T10:05:00Z",
    )
    state = harness.world.schedules.get("sched.report")
    assert state is not None and (state.started, state.last_run_id) == (2, expected[1])


def first_gated_run(harness: Harness, overlap: str) -> tuple[Scheduler, HandledTick]:
    """A gated schedule's first tick started, its run waiting on its hook."""
    scheduler = Scheduler(harness.runtime_for(gated_app(overlap)))
    at_start(harness)
    scheduler.tick()
    harness.clock.advance(5 * 60)
    (first,) = scheduler.tick().ticks
    assert first.outcome is TickOutcome.STARTED and first.run_id is not None
    harness.drain()
    assert harness.status(first.run_id) is RunStatus.RUNNING
    return scheduler, first


def test_overlap_skip_drops_a_tick_while_the_previous_run_is_still_going(harness: Harness) -> None:
    scheduler, first = first_gated_run(harness, "skip")
    assert first.run_id is not None
    # WHEN the next tick comes while the first run waits on its hook
    harness.clock.advance(5 * 60)
    (second,) = scheduler.tick().ticks
    # THEN it is skipped, and never started later, even once the first run has ended
    assert (second.outcome, second.run_id) == (TickOutcome.SKIPPED, None)
    open_gate(harness, first.run_id)
    assert harness.settle(first.run_id) is RunStatus.COMPLETED
    assert scheduler.tick().ticks == []
    harness.clock.advance(5 * 60)
    (third,) = scheduler.tick().ticks
    assert third.outcome is TickOutcome.STARTED
    skipped_id = ids.schedule_run_id(f"schedule:gated:{iso_tick(second.tick)}")
    assert scheduled_runs(harness) == sorted([first.run_id, cast(str, third.run_id)])
    assert skipped_id not in scheduled_runs(harness)
    state = harness.world.schedules.get("gated")
    assert state is not None and (state.started, state.skipped) == (2, 1)


def test_overlap_allow_starts_a_tick_while_the_previous_run_is_still_going(harness: Harness) -> None:
    scheduler, first = first_gated_run(harness, "allow")
    harness.clock.advance(5 * 60)
    (second,) = scheduler.tick().ticks
    assert (first.outcome, second.outcome) == (TickOutcome.STARTED, TickOutcome.STARTED)
    harness.drain()
    assert harness.status(cast(str, first.run_id)) is harness.status(cast(str, second.run_id))
    assert harness.status(cast(str, second.run_id)) is RunStatus.RUNNING


@pytest.mark.parametrize("catch_up", [1, 3])
def test_after_downtime_only_the_most_recent_due_ticks_start(harness: Harness, catch_up: int) -> None:
    app = Workflows()

    @app.workflow(name="sched.noop")
    async def noop() -> int:
        return 1

    app.schedule(noop, "rate(5 minutes)", catch_up=catch_up, overlap="allow")
    scheduler = Scheduler(harness.runtime_for(app))
    at_start(harness)
    scheduler.tick()
    # WHEN no pass runs for an hour (12 ticks due: 10:05 ... 11:00)
    harness.clock.advance(3600)
    report = scheduler.tick()
    # THEN the catch_up most recent start, the rest are counted as missed
    started = [iso_tick(t.tick) for t in report.ticks if t.outcome is TickOutcome.STARTED]
    assert started == ["2026-03-01T10:50:00Z", "2026-03-01T10:55:00Z", "2026-03-01T11:00:00Z"][-catch_up:]
    assert report.count(TickOutcome.MISSED) == 12 - catch_up
    assert len(scheduled_runs(harness)) == catch_up
    state = harness.world.schedules.get("sched.noop")
    assert state is not None and (state.missed, iso_tick(state.last_tick)) == (12 - catch_up, started[-1])


class _AdvanceFailsOnce(ForwardingWorld):
    """A World whose first ``schedules.advance`` fails after the pass started its runs (a crash there)."""

    def __init__(self, inner: World) -> None:
        super().__init__(inner)
        self.failures = 1
        store = inner.schedules
        outer = self

        class Store:
            def get(self, name: str) -> ScheduleState | None:
                return store.get(name)

            def advance(self, state: ScheduleState, *, expected_tick: datetime | None) -> bool:
                if expected_tick is not None and outer.failures:
                    outer.failures -= 1
                    raise Transient("the pass died before recording its tick")
                return store.advance(state, expected_tick=expected_tick)

        self.schedules = cast(ScheduleStore, Store())


def test_a_pass_that_died_before_recording_its_tick_does_not_start_it_twice(harness: Harness) -> None:
    calls: list[str] = []
    world = _AdvanceFailsOnce(harness.spy)
    scheduler = Scheduler(harness.runtime_for(report_app(calls), world=world))
    at_start(harness)
    scheduler.tick()
    harness.clock.advance(5 * 60)
    # GIVEN a pass that started the 10:05 run, then failed to record it
    failed = scheduler.tick()
    assert failed.failed == ["sched.report"] and scheduled_runs(harness) != []
    (run_id,) = scheduled_runs(harness)
    # WHEN the next pass handles the same tick
    (again,) = scheduler.tick().ticks
    # THEN it finds the run and starts nothing; the state records the tick
    assert (again.outcome, again.run_id) == (TickOutcome.ALREADY_STARTED, run_id)
    assert scheduled_runs(harness) == [run_id]
    assert harness.settle(run_id) is RunStatus.COMPLETED and calls == ["collect"]
    state = world.schedules.get("sched.report")
    assert state is not None and (state.started, state.last_run_id) == (1, run_id)


def test_two_schedulers_racing_on_one_tick_start_one_run(harness: Harness) -> None:
    calls: list[str] = []
    app = report_app(calls)
    first, second = Scheduler(harness.runtime_for(app)), Scheduler(harness.runtime_for(app))
    at_start(harness)
    first.tick()
    harness.clock.advance(5 * 60)
    # GIVEN two passes that read the same state (the second reads before the first records)
    stale = harness.world.schedules.get("sched.report")
    a = first.tick().ticks
    harness.world.schedules.advance(cast(ScheduleState, stale), expected_tick=a[0].tick)  # rewind
    b = second.tick().ticks
    # THEN both handled the tick, one run exists
    assert [t.run_id for t in a] == [t.run_id for t in b]
    assert (a[0].outcome, b[0].outcome) == (TickOutcome.STARTED, TickOutcome.ALREADY_STARTED)
    assert len(scheduled_runs(harness)) == 1
    run = harness.world.runs.get(cast(str, a[0].run_id), resolve_data=ResolveData.NONE)
    assert run.status in (RunStatus.PENDING, RunStatus.RUNNING)


def test_a_schedule_is_checked_when_declared() -> None:
    app = Workflows()

    @app.workflow(name="sched.needs_arg")
    async def needs_arg(x: int) -> int:
        return x

    with pytest.raises(BadInput, match="do not fit"):
        app.schedule(needs_arg, "rate(1 hour)")
    with pytest.raises(BadInput, match="rate"):
        app.schedule(needs_arg, "rate(1 hours)", args=(1,))
    with pytest.raises(BadInput, match="overlap"):
        app.schedule(needs_arg, "rate(1 hour)", args=(1,), overlap="queue")
    app.schedule(needs_arg, "cron(0 12 * * ? *)", args=(1,))
    with pytest.raises(BadInput, match="already registered"):
        app.schedule(needs_arg, "rate(1 hour)", args=(2,))
    with pytest.raises(BadInput, match="do not fit"):

        @app.workflow(name="sched.decorated", schedule="rate(1 hour)")
        async def decorated(y: int) -> int:
            return y
