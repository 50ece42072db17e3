"""The reconciler: a run stranded by a lost message is woken and completes; healthy runs are left alone.

Runs are stranded by construction: a message is deleted without being handled
(the harness's intercept answers Ack), so nothing durable moves the run on. The
reconciler ticks on the harness's manual clock, over both Worlds.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import cast

import pytest

from world_aws import RetryableError, Workflows
from world_aws.contract.clock import ManualClock
from world_aws.contract.payload import InvokePayload
from world_aws.contract.records import EventType, RunStatus
from world_aws.contract.transport import decode_payload
from world_aws.contract.world import (
    Ack,
    Delivery,
    ForwardingWorld,
    HandlerResult,
    MessageHandler,
    QueueName,
    Redeliver,
    RunStore,
)
from world_aws.errors import Transient
from world_aws.local.memory import create_memory_world
from world_aws.local.reconcile_loop import ReconcilerLoop
from world_aws.local.stack import local_stack
from world_aws.testing.conformance.support import create_run
from world_aws.worker.config import ReconcilerConfig, RuntimeConfig
from world_aws.worker.reconciler import Reconciler, bucket_of

from .harness import Harness, Intercept

AFTER = 600
CONFIG = ReconcilerConfig(after_seconds=AFTER, max_runs_per_tick=10, sweep_lag_seconds=AFTER)


# About runs whose step messages were lost: the step-message path (inline execution off).
pytestmark = pytest.mark.dispatched


def two_steps_app() -> Workflows:
    app = Workflows()

    @app.step(name="rec.first")
    def first(x: int) -> int:
        return x + 1

    @app.step(name="rec.second")
    def second(x: int) -> int:
        return x * 2

    @app.workflow(name="rec.flow")
    async def flow(x: int) -> int:
        return await second(await first(x))

    return app


def drop(_delivery: Delivery, _handle: MessageHandler) -> HandlerResult:
    """Delete the message without handling it: whatever it would have done is lost."""
    return Ack()


def hold_second_step(delivery: Delivery, handle: MessageHandler) -> HandlerResult:
    """Run the first step (its last completer creates and publishes the second); hold the second."""
    payload = decode_payload(delivery.body)
    if isinstance(payload, InvokePayload) and payload.step_name == "rec.second":
        return Redeliver(1.0)
    return handle(delivery)


def reconcile_wakes(harness: Harness) -> list[InvokePayload]:
    """The reconciler's workflow messages the harness delivered."""
    return [
        d.payload
        for d in harness.deliveries
        if isinstance(d.payload, InvokePayload) and d.payload.reconcile_tag is not None
    ]


def stranded_run(harness: Harness) -> str:
    """A running run whose first step was created and published, and its message deleted unhandled."""
    runtime = harness.runtime_for(two_steps_app())
    run_id = runtime.start("rec.flow", 3).run_id
    harness.drain(queues=[QueueName.WORKFLOW])
    harness.drain(queues=[QueueName.STEP], intercept=drop)
    assert harness.settle(run_id) is RunStatus.RUNNING
    assert harness.event_types(run_id)[-1] is EventType.STEP_CREATED
    return run_id


def test_a_run_whose_step_message_was_lost_is_woken_and_completes(harness: Harness) -> None:
    # GIVEN a run stranded with a created step whose message is gone
    run_id = stranded_run(harness)
    reconciler = Reconciler(harness.world, CONFIG)
    # WHEN the reconciler ticks before the threshold, nothing happens
    harness.advance(AFTER - 60)
    early = reconciler.tick()
    assert (early.looked_at, early.woken) == (0, [])
    # AND when it ticks after it, the run is woken once
    harness.advance(120)
    report = reconciler.tick()
    assert [r.run_id for r in report.woken] == [run_id]
    assert report.woken[0].status is RunStatus.RUNNING and report.woken[0].bucket == 0
    # THEN the run completes with the fault-free result, each step created once
    assert harness.settle(run_id) is RunStatus.COMPLETED
    assert harness.runtime.get_run(run_id).result() == 8
    types = harness.event_types(run_id)
    assert types.count(EventType.STEP_CREATED) == 2 and types.count(EventType.RUN_COMPLETED) == 1
    assert len(reconcile_wakes(harness)) == 1
    # AND a later tick finds nothing: the run left the live index when it ended
    harness.advance(10 * AFTER)
    assert reconciler.tick().looked_at == 0


def test_a_run_whose_first_workflow_message_was_lost_is_started(harness: Harness) -> None:
    # GIVEN a started run whose first workflow message was deleted unhandled: pending, no message
    runtime = harness.runtime_for(two_steps_app())
    run_id = runtime.start("rec.flow", 1).run_id
    harness.drain(queues=[QueueName.WORKFLOW], intercept=drop)
    assert harness.status(run_id) is RunStatus.PENDING
    # WHEN the reconciler ticks after the threshold
    harness.advance(AFTER + 1)
    (repair,) = Reconciler(harness.world, CONFIG).tick().woken
    # THEN the pending run is started and completes
    assert repair.status is RunStatus.PENDING
    assert harness.settle(run_id) is RunStatus.COMPLETED
    assert harness.runtime.get_run(run_id).result() == 4


def test_healthy_young_and_terminal_runs_are_not_woken(harness: Harness) -> None:
    runtime = harness.runtime_for(two_steps_app())
    reconciler = Reconciler(harness.world, CONFIG)
    # GIVEN a run that ended long ago
    done = runtime.start("rec.flow", 1).run_id
    assert harness.settle(done) is RunStatus.COMPLETED
    # AND a run created long ago that made progress a moment ago (its second step is queued)
    healthy = runtime.start("rec.flow", 2).run_id
    harness.drain(queues=[QueueName.WORKFLOW])
    harness.advance(AFTER + 100)
    harness.drain(queues=[QueueName.STEP], intercept=hold_second_step)
    assert harness.event_types(healthy)[-1] is EventType.STEP_CREATED
    # AND a run younger than the threshold, stuck or not
    young = runtime.start("rec.flow", 3).run_id
    harness.advance(1)
    # WHEN the reconciler ticks
    report = reconciler.tick()
    # THEN its sweep read the two runs created before the lag, put only the healthy one in the
    # live index, at its progress, and the tick woke nothing
    assert (report.swept, report.looked_at, report.remarked, report.woken, report.failed) == (2, 0, 0, [], 0)
    (live,) = harness.world.runs.list_live(marked_before=harness.clock.now() + timedelta(days=1), limit=10)
    assert (live.run_id, live.mark) == (healthy, live.progress_at)
    assert harness.clock.now() - live.progress_at < timedelta(seconds=AFTER)
    # AND the healthy run is not listed again until the threshold has passed since its progress
    harness.advance(AFTER - 10)
    assert reconciler.tick().looked_at == 0
    # AND every run completes without a reconciler wake
    for run_id in (healthy, young):
        assert harness.settle(run_id) is RunStatus.COMPLETED
    assert reconcile_wakes(harness) == []


class _MarksFail(ForwardingWorld):
    """A World whose runs.mark_live raises: a reconciler tick that dies before moving its marks."""

    def __init__(self, inner: Harness) -> None:
        super().__init__(inner.world)
        self.runs = cast(RunStore, _FailingMarks(inner.world.runs))


class _FailingMarks:
    def __init__(self, inner: object) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)

    def mark_live(self, run_id: str, **_kwargs: object) -> bool:
        raise Transient(f"mark of {run_id} lost")


def test_two_ticks_in_one_bucket_publish_one_wake(harness: Harness) -> None:
    # GIVEN a stranded run, and a tick that woke it but could not move its mark
    run_id = stranded_run(harness)
    harness.advance(AFTER + 1)
    first = Reconciler(_MarksFail(harness), CONFIG).tick()
    assert [r.run_id for r in first.woken] == [run_id] and first.failed == 1
    # WHEN another tick in the same bucket sees the run again
    harness.advance(30)
    second = Reconciler(harness.world, CONFIG).tick()
    # THEN it wakes under the same key, and the queue returns the first message
    (again,) = second.woken
    assert (again.key, again.message_id) == (first.woken[0].key, first.woken[0].message_id)
    # AND the run gets one wake and completes
    assert harness.settle(run_id) is RunStatus.COMPLETED
    assert len(reconcile_wakes(harness)) == 1


def test_a_tick_looks_at_no_more_than_its_limit_and_the_next_tick_goes_on(harness: Harness) -> None:
    # GIVEN five pending runs with no message at all, created a second apart
    runs = []
    for _ in range(5):
        runs.append(create_run(harness.world, started=False))
        harness.advance(1)
    harness.advance(AFTER)
    reconciler = Reconciler(
        harness.world, ReconcilerConfig(after_seconds=AFTER, max_runs_per_tick=2, sweep_lag_seconds=AFTER)
    )
    # WHEN the reconciler ticks, 2 runs at most each time
    woken: list[list[str]] = []
    for _ in range(4):
        report = reconciler.tick()
        assert report.looked_at <= 2
        woken.append([r.run_id for r in report.woken])
    # THEN successive ticks woke every run once, oldest first, then nothing is left
    assert woken == [runs[:2], runs[2:4], runs[4:], []]


def flaky_app(calls: list[int]) -> Workflows:
    """A step whose first attempt fails (a retry by message, after its backoff), then succeeds."""
    app = Workflows()

    @app.step(name="rec.flaky")
    def flaky(x: int) -> int:
        calls.append(x)
        if len(calls) == 1:
            raise ValueError("the first attempt fails")
        return x + 1

    @app.workflow(name="rec.retried")
    async def retried(x: int) -> int:
        return await flaky(x)

    return app


def tick_every_period(h: Harness, reconciler: Reconciler, seconds: int, period: int = 300) -> None:
    """The reconciler's schedule for ``seconds``: advance a period, tick, deliver what is visible."""
    for _ in range(seconds // period):
        h.advance(period)
        reconciler.tick()
        h.drain()


@pytest.mark.parametrize("max_inline", [0, 3], ids=["dispatched", "inline"])
def test_a_run_whose_retry_message_was_lost_is_woken_and_completes(
    memory_harness: Harness, max_inline: int
) -> None:
    # GIVEN a run whose step failed its first attempt (by a step message, or inline) and
    # whose retry message was deleted unhandled: the step is pending, and the retry's key
    # is retained (a plain re-publish of it is absorbed for 24 h)
    h, calls, dropped = memory_harness, list[int](), list[str]()
    runtime = h.runtime_for(flaky_app(calls), RuntimeConfig(max_inline_steps=max_inline))
    run_id = runtime.start("rec.retried", 1).run_id

    def drop_the_retry(delivery: Delivery, handle: MessageHandler) -> HandlerResult:
        payload = decode_payload(delivery.body)
        if isinstance(payload, InvokePayload) and payload.step_id is not None and calls and not dropped:
            dropped.append(delivery.message_id)
            return Ack()
        return handle(delivery)

    for _ in range(3):
        h.drain(intercept=drop_the_retry)
        h.advance(60)
    assert dropped and calls == [1] and h.status(run_id) is RunStatus.RUNNING
    assert h.event_types(run_id)[-1] is EventType.STEP_RETRYING
    # WHEN the reconciler ticks on its schedule for an hour
    tick_every_period(h, Reconciler(h.world, CONFIG), 3600)
    # THEN the run was woken, its step's next attempt ran once, and it completed
    assert h.status(run_id) is RunStatus.COMPLETED
    assert runtime.get_run(run_id).result() == 2
    assert calls == [1, 1]
    assert reconcile_wakes(h)


@pytest.mark.parametrize("max_inline", [0, 3], ids=["dispatched", "inline"])
def test_a_retry_due_later_is_not_sent_again_by_the_reconciler(
    memory_harness: Harness, max_inline: int
) -> None:
    # GIVEN a run whose step asked to be retried in an hour (its retry message is on its way)
    h, calls = memory_harness, list[int]()
    app = Workflows()

    @app.step(name="rec.later")
    def later(x: int) -> int:
        calls.append(x)
        if len(calls) == 1:
            raise RetryableError("not yet", retry_after=3600)
        return x + 1

    @app.workflow(name="rec.patient")
    async def patient(x: int) -> int:
        return await later(x)

    runtime = h.runtime_for(app, RuntimeConfig(max_inline_steps=max_inline))
    run_id = runtime.start("rec.patient", 1).run_id
    h.drain()
    assert calls == [1] and h.event_types(run_id)[-1] is EventType.STEP_RETRYING
    # WHEN the reconciler wakes the silent run meanwhile, on its schedule
    tick_every_period(h, Reconciler(h.world, CONFIG), 2 * 3600)
    # THEN it was woken, sent no copy of the retry, and the step's second attempt ran once
    assert reconcile_wakes(h)
    assert h.status(run_id) is RunStatus.COMPLETED and calls == [1, 1]
    types = h.event_types(run_id)
    assert types[types.index(EventType.STEP_RETRYING) :].count(EventType.STEP_STARTED) == 1


def test_a_run_idle_on_purpose_is_woken_with_doubling_gaps(memory_harness: Harness) -> None:
    # GIVEN a run sleeping for an hour (its wake-up is a delayed message)
    app = Workflows()

    @app.workflow(name="rec.sleeper")
    async def sleeper() -> str:
        await asyncio.sleep(3600)
        return "rested"

    h = memory_harness
    run_id = h.runtime_for(app).start("rec.sleeper").run_id
    h.drain()
    reconciler = Reconciler(h.world, CONFIG)
    # WHEN the reconciler ticks every minute while it sleeps
    buckets: list[int] = []
    for _ in range(59):
        h.advance(60)
        buckets += [r.bucket for r in reconciler.tick().woken]
        h.drain()
    # THEN it was woken at 10, 20 and 40 minutes of silence only, harmlessly
    assert buckets == [0, 1, 2]
    assert h.status(run_id) is RunStatus.RUNNING
    # AND it completes when its own wake-up comes
    assert h.settle(run_id) is RunStatus.COMPLETED
    assert h.event_types(run_id).count(EventType.WAIT_COMPLETED) == 1


def _lose_first(h: Harness, matches: Callable[[InvokePayload], bool]) -> tuple[list[datetime], Intercept]:
    """An intercept that acks, unhandled, the first workflow or step message ``matches`` picks.

    Returns the list it notes the loss's time in, and the intercept.
    """
    lost_at: list[datetime] = []

    def lose(delivery: Delivery, handle: MessageHandler) -> HandlerResult:
        payload = decode_payload(delivery.body)
        if isinstance(payload, InvokePayload) and matches(payload) and not lost_at:
            lost_at.append(h.clock.now())
            return Ack()
        return handle(delivery)

    return lost_at, lose


def _tick_every_five_minutes(h: Harness, run_id: str, intercept: Intercept) -> list[datetime]:
    """Tick the reconciler every 5 minutes for up to 12 hours, delivering through ``intercept``,
    until the run ends; when it woke a run."""
    reconciler, woken = Reconciler(h.world, CONFIG), list[datetime]()
    for _ in range(12 * 12):
        h.advance(300)
        woken += [h.clock.now() for _ in reconciler.tick().woken]
        h.drain(intercept=intercept)
        if h.status(run_id).terminal:
            break
    return woken


def test_a_run_stranded_after_a_long_sleep_is_woken_within_the_threshold(memory_harness: Harness) -> None:
    # GIVEN a run that sleeps six hours, then runs a step; the reconciler ticks every 5 minutes
    # and wakes the sleeper with doubling gaps, its mark moved to its next bucket each time
    app = Workflows()

    @app.step(name="rec.after_nap")
    def after_nap(x: int) -> int:
        return x + 1

    @app.workflow(name="rec.napper")
    async def napper(x: int) -> int:
        await asyncio.sleep(6 * 3600)
        return await after_nap(x)

    h = memory_harness
    run_id = h.runtime_for(app).start("rec.napper", 1).run_id
    h.drain()
    lost_at, lose_the_step_message = _lose_first(h, lambda payload: payload.step_id is not None)
    # WHEN the sleep ends, its step's message is lost, and the reconciler goes on ticking
    woken = _tick_every_five_minutes(h, run_id, lose_the_step_message)
    # THEN the stranded run was woken within T and a tick of its last event (the step's create),
    # not when the bucket its sleep was last woken in ends (about 5 hours later), and completes
    assert lost_at and h.status(run_id) is RunStatus.COMPLETED
    first_wake = min(moment for moment in woken if moment > lost_at[0])
    assert first_wake - lost_at[0] <= timedelta(seconds=AFTER + 2 * 300)


def test_a_sleepers_lost_wake_up_is_repaired_within_the_threshold_of_its_due_time(harness: Harness) -> None:
    # GIVEN a run sleeping six hours, woken by the reconciler with doubling gaps meanwhile
    app = Workflows()

    @app.workflow(name="rec.sleeps_6h")
    async def sleeps() -> str:
        await asyncio.sleep(6 * 3600)
        return "rested"

    h = harness
    run_id = h.runtime_for(app).start("rec.sleeps_6h").run_id
    h.drain()
    lost_at, lose_the_wake_up = _lose_first(h, lambda payload: payload.wakes is not None)
    # WHEN its wake-up is lost when due, and the reconciler ticks every 5 minutes
    _tick_every_five_minutes(h, run_id, lose_the_wake_up)
    # THEN the run completes within T and a tick or two of its wake-up's due time
    assert lost_at and h.status(run_id) is RunStatus.COMPLETED
    (completed,) = [e for e in h.events(run_id) if e.type is EventType.RUN_COMPLETED]
    assert completed.created_at - lost_at[0] <= timedelta(seconds=AFTER + 2 * 300)


@pytest.mark.parametrize(
    ("idle_minutes", "expected"),
    [(10, (0, 10, 20)), (19, (0, 10, 20)), (20, (1, 20, 40)), (79, (2, 40, 80)), (160, (4, 160, 320))],
)
def test_wake_buckets_double_from_the_threshold(idle_minutes: int, expected: tuple[int, int, int]) -> None:
    bucket = bucket_of(timedelta(minutes=idle_minutes), timedelta(minutes=10), timedelta(days=1))
    assert (bucket.index, bucket.start, bucket.end) == (
        expected[0],
        timedelta(minutes=expected[1]),
        timedelta(minutes=expected[2]),
    )


def test_wake_buckets_stop_growing_at_the_cap() -> None:
    # GIVEN T = 10 min and a 1 h cap: buckets [10, 20), [20, 40), [40, 80), then 1 h each
    after, cap = timedelta(minutes=10), timedelta(hours=1)
    assert bucket_of(timedelta(minutes=79), after, cap).index == 2
    assert bucket_of(timedelta(minutes=85), after, cap).index == 3
    later = bucket_of(timedelta(minutes=80 + 60 * 4 + 1), after, cap)
    assert (later.start, later.end - later.start) == (timedelta(minutes=320), cap)
    assert later.index == bucket_of(timedelta(minutes=379), after, cap).index == 7


def test_the_local_loop_ticks_on_its_period_and_stops_cleanly() -> None:
    # GIVEN a memory World with a pending run silent past the threshold
    clock = ManualClock()
    world = create_memory_world(clock=clock)
    run_id = create_run(world, started=False)
    clock.advance(AFTER + 1)
    repaired = threading.Event()
    reconciler = Reconciler(world, CONFIG, on_repair=lambda repair: repaired.set())
    # WHEN the loop runs with a short period
    before = _reconciler_threads()  # another test's leftover is not this loop's
    loop = ReconcilerLoop(reconciler, period_seconds=0.01).start()
    try:
        # THEN a tick wakes the run (a bounded wait for the loop's thread, not a sleep)
        assert repaired.wait(timeout=10)
    finally:
        loop.stop()
    assert _reconciler_threads() <= before
    (message,) = world.memory_queue.pending(QueueName.WORKFLOW)
    payload = decode_payload(message.body)
    assert isinstance(payload, InvokePayload) and payload.run_id == run_id


def test_the_local_stack_runs_the_reconciler_until_it_exits() -> None:
    before = _reconciler_threads()
    with local_stack(two_steps_app(), kind="memory") as stack:
        assert stack.reconciler.config == ReconcilerConfig.from_env()
        assert _reconciler_threads() - before
    assert _reconciler_threads() <= before


def _reconciler_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == "world-aws-reconciler"}
