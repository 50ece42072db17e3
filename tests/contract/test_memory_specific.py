"""What only the in-memory World has: its queue helpers, consumer threads, stats and its own choices.

The behaviour every World shares is in the conformance suite (test_conformance.py).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta

import pytest

from world_aws.contract.clock import ManualClock, SystemClock
from world_aws.contract.records import (
    EventType,
    ResolveData,
    RunCreatedData,
    RunStartedData,
    StepCompletedData,
    StepCreatedData,
)
from world_aws.contract.world import (
    Ack,
    Delivery,
    HandlerResult,
    QueueName,
    Redeliver,
    World,
    WorldCapabilities,
)
from world_aws.errors import BadInput, Conflict
from world_aws.local.memory import MemoryWorld, create_memory_world
from world_aws.local.memory_queue import DrainDidNotSettle, PendingMessage
from world_aws.local.memory_stats import Stat
from world_aws.testing.conformance.support import (
    Recorder,
    create_hook,
    create_run,
    creation,
    new_id,
    receive_hook,
    running_step,
    write,
)


@pytest.fixture
def mem(clock: ManualClock) -> Iterator[MemoryWorld]:
    world = create_memory_world(clock=clock)
    yield world
    world.close()


def _raise(delivery: Delivery) -> HandlerResult:
    raise RuntimeError(f"handler failed on attempt {delivery.attempt}")


# ----------------------------------------------------------------------------- factory


def test_create_memory_world_defaults() -> None:
    world = create_memory_world()
    typed: World = world  # MemoryWorld satisfies the World protocol
    assert typed.deployment_id() == "dpl_local"
    assert typed.capabilities == WorldCapabilities()
    assert isinstance(world.clock, SystemClock)
    assert world.queue is world.memory_queue


def test_create_memory_world_takes_deployment_id_and_capabilities(clock: ManualClock) -> None:
    caps = WorldCapabilities(deployment_affinity=True, hook_resume_dedup=True)
    world = create_memory_world(clock=clock, deployment_id="dpl_abc", capabilities=caps)
    assert (world.deployment_id(), world.capabilities, world.clock) == ("dpl_abc", caps, clock)


# ----------------------------------------------------------------------------- drain


def test_drain_delivers_visible_messages_in_fifo_order_on_the_calling_thread(mem: MemoryWorld) -> None:
    ids = [mem.queue.publish(QueueName.STEP if i % 2 else QueueName.WORKFLOW, bytes([i])) for i in range(6)]
    threads: set[str] = set()

    def handler(delivery: Delivery) -> HandlerResult:
        threads.add(threading.current_thread().name)
        return Ack()

    recorder = Recorder(handler)
    assert mem.memory_queue.drain(recorder) == 6
    assert [d.message_id for d in recorder.deliveries] == ids
    assert threads == {threading.current_thread().name}
    assert mem.memory_queue.pending(QueueName.STEP) == []


def test_drain_delivers_what_handlers_publish_but_leaves_delayed_messages(
    mem: MemoryWorld, clock: ManualClock
) -> None:
    def handler(delivery: Delivery) -> HandlerResult:
        if delivery.body == b"first":
            mem.queue.publish(QueueName.STEP, b"follow-up")
            mem.queue.publish(QueueName.STEP, b"later", delay_seconds=10)
        return Ack()

    recorder = Recorder(handler)
    mem.queue.publish(QueueName.WORKFLOW, b"first")
    assert mem.memory_queue.drain(recorder) == 2
    assert [d.body for d in recorder.deliveries] == [b"first", b"follow-up"]
    assert [p.body for p in mem.memory_queue.pending(QueueName.STEP)] == [b"later"]
    clock.advance(10)
    assert mem.memory_queue.drain(recorder) == 1


def test_drain_can_be_limited_to_one_queue(mem: MemoryWorld) -> None:
    mem.queue.publish(QueueName.WORKFLOW, b"flow")
    mem.queue.publish(QueueName.STEP, b"step")
    recorder = Recorder()
    assert mem.memory_queue.drain(recorder, queues=[QueueName.STEP]) == 1
    assert [d.queue for d in recorder.deliveries] == [QueueName.STEP]
    assert len(mem.memory_queue.pending(QueueName.WORKFLOW)) == 1


def test_drain_that_cannot_settle_raises(mem: MemoryWorld) -> None:
    def forever(delivery: Delivery) -> HandlerResult:
        mem.queue.publish(QueueName.WORKFLOW, b"again")
        return Ack()

    mem.queue.publish(QueueName.WORKFLOW, b"start")
    with pytest.raises(DrainDidNotSettle):
        mem.memory_queue.drain(forever, max_deliveries=25)
    assert mem.stats.deliveries == 25


# ----------------------------------------------------------------------------- redelivery, dead letters


def test_raising_handler_gets_the_message_again_after_the_visibility_timeout(clock: ManualClock) -> None:
    world = create_memory_world(clock=clock, visibility_timeout_seconds=30)
    message_id = world.queue.publish(QueueName.STEP, b"body")
    assert world.memory_queue.drain(_raise) == 1
    # the message waits out the visibility timeout, then comes back as attempt 2
    assert world.memory_queue.pending(QueueName.STEP) == [
        PendingMessage(message_id, clock.now() + timedelta(seconds=30), 2, b"body")
    ]
    assert world.memory_queue.drain(_raise) == 0
    clock.advance(30)
    recorder = Recorder()
    assert world.memory_queue.drain(recorder) == 1
    assert [(d.message_id, d.attempt) for d in recorder.deliveries] == [(message_id, 2)]


def test_raising_handler_is_redelivered_at_once_by_default(mem: MemoryWorld) -> None:
    attempts: list[int] = []

    def flaky(delivery: Delivery) -> HandlerResult:
        attempts.append(delivery.attempt)
        if delivery.attempt < 3:
            raise RuntimeError("not yet")
        return Ack()

    mem.queue.publish(QueueName.STEP, b"x")
    assert mem.memory_queue.drain(flaky) == 3
    assert attempts == [1, 2, 3]


def test_handler_returning_neither_ack_nor_redeliver_counts_as_a_failure(mem: MemoryWorld) -> None:
    mem.queue.publish(QueueName.STEP, b"x")
    answers: list[object] = [None, Ack()]

    def odd(delivery: Delivery) -> HandlerResult:
        return answers.pop(0)  # type: ignore[return-value]

    assert mem.memory_queue.drain(odd) == 2
    assert mem.memory_queue.pending(QueueName.STEP) == []


def test_message_is_dead_lettered_after_max_receive_count(clock: ManualClock) -> None:
    world = create_memory_world(clock=clock, max_receive_count=3)
    message_id = world.queue.publish(QueueName.STEP, b"poison")
    assert world.memory_queue.drain(_raise) == 3
    dead = world.memory_queue.dead_letters(QueueName.STEP)
    assert [(d.message_id, d.attempt, d.body) for d in dead] == [(message_id, 3, b"poison")]
    assert dead[0].last_error == "RuntimeError: handler failed on attempt 3"
    assert world.memory_queue.pending(QueueName.STEP) == []
    assert world.memory_queue.dead_letters(QueueName.WORKFLOW) == []


def test_default_max_receive_count_is_fifty(mem: MemoryWorld) -> None:
    mem.queue.publish(QueueName.WORKFLOW, b"never acked")
    assert mem.memory_queue.drain(lambda d: Redeliver(0)) == 50
    assert [d.attempt for d in mem.memory_queue.dead_letters(QueueName.WORKFLOW)] == [50]


# ----------------------------------------------------------------------------- publish


def test_pending_shows_due_time_next_attempt_and_body(mem: MemoryWorld, clock: ManualClock) -> None:
    late = mem.queue.publish(QueueName.STEP, b"late", delay_seconds=20)
    soon = mem.queue.publish(QueueName.STEP, b"soon", delay_seconds=5)
    assert mem.memory_queue.pending(QueueName.STEP) == [
        PendingMessage(soon, clock.now() + timedelta(seconds=5), 1, b"soon"),
        PendingMessage(late, clock.now() + timedelta(seconds=20), 1, b"late"),
    ]


def test_long_delays_are_tracked_exactly_by_due_time(mem: MemoryWorld, clock: ManualClock) -> None:
    mem.queue.publish(QueueName.WORKFLOW, b"x", delay_seconds=3600.5)
    clock.advance(3600)
    assert mem.memory_queue.drain(Recorder()) == 0
    clock.advance(0.5)
    assert mem.memory_queue.drain(Recorder()) == 1


def test_idempotency_keys_are_scoped_per_queue(mem: MemoryWorld) -> None:
    key = new_id("key")
    assert mem.queue.publish(QueueName.STEP, b"x", idempotency_key=key) != mem.queue.publish(
        QueueName.WORKFLOW, b"x", idempotency_key=key
    )


def test_negative_delay_is_bad_input(mem: MemoryWorld) -> None:
    with pytest.raises(BadInput):
        mem.queue.publish(QueueName.STEP, b"x", delay_seconds=-1)


# ----------------------------------------------------------------------------- consumers


def test_consumers_run_four_threads_per_queue_and_stop_them(mem: MemoryWorld) -> None:
    consumers = mem.start_consumers(Recorder())
    assert len(consumers.threads) == 8 and all(t.is_alive() for t in consumers.threads)
    consumers.stop()
    assert not any(t.is_alive() for t in consumers.threads)


def test_consumers_deliver_in_parallel(mem: MemoryWorld) -> None:
    # Four deliveries of one queue must be in flight at once to pass the barrier.
    barrier = threading.Barrier(4, timeout=10)

    def handler(delivery: Delivery) -> HandlerResult:
        barrier.wait()
        return Ack()

    with mem.start_consumers(handler) as consumers:
        for i in range(4):
            mem.queue.publish(QueueName.STEP, bytes([i]))
        assert consumers.wait_idle(10)
    assert mem.stats.deliveries == 4 and not barrier.broken


def test_stop_lets_in_flight_deliveries_finish_and_keeps_the_rest_queued(
    mem: MemoryWorld, clock: ManualClock
) -> None:
    started, release = threading.Event(), threading.Event()

    def slow(delivery: Delivery) -> HandlerResult:
        started.set()
        release.wait(10)
        return Ack()

    consumers = mem.start_consumers(slow, workers_per_queue=1)
    mem.queue.publish(QueueName.STEP, b"in flight")
    assert started.wait(10)
    queued = mem.queue.publish(QueueName.STEP, b"queued")
    delayed = mem.queue.publish(QueueName.WORKFLOW, b"delayed", delay_seconds=60)
    # WHEN stop is called while a delivery is in flight
    stopper = threading.Thread(target=consumers.stop)
    stopper.start()
    assert not consumers.wait_idle(0.05)  # still in flight: not idle
    release.set()
    stopper.join(10)
    # THEN the in-flight one was acked, the others are still queued
    assert not stopper.is_alive()
    assert [p.message_id for p in mem.memory_queue.pending(QueueName.STEP)] == [queued]
    assert [p.message_id for p in mem.memory_queue.pending(QueueName.WORKFLOW)] == [delayed]


def test_wait_idle_ignores_messages_that_are_not_due(mem: MemoryWorld, clock: ManualClock) -> None:
    mem.queue.publish(QueueName.WORKFLOW, b"x", delay_seconds=5)
    assert mem.memory_queue.is_idle()
    clock.advance(5)
    assert not mem.memory_queue.is_idle()
    assert not mem.memory_queue.wait_idle(0.02)  # due, and nobody consumes it


def test_close_stops_the_consumers_it_started(clock: ManualClock) -> None:
    world = create_memory_world(clock=clock)
    consumers = world.start_consumers(Recorder(), workers_per_queue=2)
    world.close()
    assert len(consumers.threads) == 4 and not any(t.is_alive() for t in consumers.threads)


# ----------------------------------------------------------------------------- stats


def test_stats_count_operations_by_kind(mem: MemoryWorld) -> None:
    # GIVEN a fresh World
    assert set(mem.stats.snapshot().values()) == {0}
    # WHEN a run, a step and a refused event are written and read
    run_id = create_run(mem)
    step_id = running_step(mem, run_id)
    with pytest.raises(Conflict):
        write(mem, run_id, EventType.STEP_CREATED, step_id, StepCreatedData(step_name="s", input=b""))
    mem.events.list(run_id)
    mem.events.list(run_id, after=3)
    mem.runs.get(run_id)
    mem.steps.get(run_id, step_id)
    mem.steps.list(run_id)
    mem.queue.publish(QueueName.STEP, b"x", idempotency_key="k")
    mem.queue.publish(QueueName.STEP, b"x", idempotency_key="k")
    mem.memory_queue.drain(Recorder())
    # THEN each kind is counted
    stats = mem.stats
    assert (stats.events_created, stats.events_appended) == (5, 4)
    assert (stats.event_lists, stats.event_items_read) == (2, 4 + 1)
    assert (stats.run_reads, stats.step_reads, stats.step_lists) == (1, 1, 1)
    assert (stats.publishes, stats[Stat.PUBLISHES_DEDUPLICATED], stats.deliveries) == (2, 1, 1)
    # AND reset zeroes them
    stats.reset()
    assert set(stats.snapshot().values()) == {0}


def test_stats_belong_to_one_world(clock: ManualClock) -> None:
    first, second = create_memory_world(clock=clock), create_memory_world(clock=clock)
    create_run(first)
    assert first.stats.events_created == 2 and second.stats.events_created == 0


# ----------------------------------------------------------------------------- memory's own choices


def test_hook_id_cannot_be_created_again_after_dispose(mem: MemoryWorld) -> None:
    run_id = create_run(mem)
    hook_id = new_id("hook")
    create_hook(mem, run_id, new_id("tok"), hook_id=hook_id)
    write(mem, run_id, EventType.HOOK_DISPOSED, hook_id)
    with pytest.raises(Conflict):
        create_hook(mem, run_id, new_id("tok"), hook_id=hook_id)


def test_repeated_resume_returns_the_first_event_even_after_dispose(mem: MemoryWorld) -> None:
    run_id = create_run(mem)
    hook = create_hook(mem, run_id, new_id("tok")).hook
    assert hook is not None
    resume_id = new_id("resume")
    first = receive_hook(mem, run_id, hook.hook_id, b"p", resume_id=resume_id).event
    write(mem, run_id, EventType.HOOK_DISPOSED, hook.hook_id)
    again = receive_hook(mem, run_id, hook.hook_id, b"p", resume_id=resume_id).event
    assert again == first


def test_creating_run_started_keeps_creation_data_on_run_created_only(mem: MemoryWorld) -> None:
    run_id = new_id("wrun")
    write(mem, run_id, EventType.RUN_STARTED, data=RunStartedData(creation=creation(b"in")))
    created, started = mem.events.list(run_id, resolve_data=ResolveData.ALL)
    assert (
        created.data_as(RunCreatedData).creation is not None
        and started.data_as(RunStartedData).creation is None
    )


def test_runs_list_rejects_a_foreign_cursor_and_a_bad_limit(mem: MemoryWorld) -> None:
    with pytest.raises(BadInput):
        mem.runs.list(cursor="not-a-cursor")
    with pytest.raises(BadInput):
        mem.runs.list(limit=0)


def test_memory_log_stays_dense_through_refused_writes(mem: MemoryWorld) -> None:
    # The memory World judges before it appends, so a refusal never costs a position.
    run_id = create_run(mem)
    step_id = running_step(mem, run_id)
    for _ in range(3):
        with pytest.raises(Conflict):
            write(mem, run_id, EventType.STEP_CREATED, step_id, StepCreatedData(step_name="s", input=b""))
    write(mem, run_id, EventType.STEP_COMPLETED, step_id, StepCompletedData(output=b"x"))
    assert [e.position for e in mem.events.list(run_id)] == [1, 2, 3, 4, 5]
