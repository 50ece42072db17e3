"""A fork's new crash windows: its copied prefix written in part, its ``run_created`` lost.

A fork's log is a copy of its original's, written by the fork's first workflow
delivery before the run starts (``client/forks.py``). A handler that dies midway
leaves the fork pending with part of its copy; whatever continues it next (the
redelivered message, a reconciler's wake) writes the rest first, so no replay of
the fork reads a part of its prefix, no copied step runs again, and no copied
event is written twice. Over both Worlds.
"""

from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest

from harness.harness import Harness
from harness.spy import Call
from tests.runtime.test_fork import order_app
from world_aws.client.forks import FORKED_FROM, Forks
from world_aws.contract.records import EventType, RunStatus
from world_aws.contract.world import Ack, Delivery, HandlerResult, MessageHandler, QueueName
from world_aws.errors import Transient
from world_aws.worker.config import ReconcilerConfig
from world_aws.worker.reconciler import Reconciler

AFTER = 600
RECONCILE = ReconcilerConfig(after_seconds=AFTER, max_runs_per_tick=10, sweep_lag_seconds=AFTER)


def failed_order(h: Harness, bodies: Counter[str]) -> str:
    runtime = h.runtime_for(order_app(bodies, fixed=False))
    handle = runtime.start("order", "o-f")
    assert h.settle(handle) is RunStatus.FAILED
    return handle.run_id


def copy_write(fork_id: dict[str, str], etype: EventType) -> object:
    """Matches the fork's copy of an ``etype`` event (the fork's id is known once it exists)."""
    return lambda call: (
        isinstance(call, Call) and call.run_id == fork_id.get("id") and call.detail.type is etype
    )


def assert_copied_once(h: Harness, run_id: str) -> None:
    """Each step of the fork has one create, one start and one outcome: nothing was copied twice."""
    per_step = Counter((e.correlation_id, e.type) for e in h.events(run_id) if e.type.is_step_event)
    assert set(per_step.values()) == {1}, per_step


def test_a_copy_whose_write_landed_unanswered_is_finished_by_the_redelivery(harness: Harness) -> None:
    # GIVEN a run that failed in its third step, forked onto fixed code, and the fork's copy
    # of its second step's start lands but its answer is lost (the handler fails midway)
    h = harness
    bodies: Counter[str] = Counter()
    original = failed_order(h, bodies)
    fixed = h.runtime_for(order_app(bodies, fixed=True))
    fork = fixed.fork(original)
    ids = {"id": fork.run_id}
    fault = h.spy.inject(
        "events.create", Transient("timed out"), match=copy_write(ids, EventType.STEP_COMPLETED), after=True
    )
    # WHEN the queues settle (the fork's first message is redelivered)
    assert h.settle(fork) is RunStatus.COMPLETED
    # THEN the fault fired, the redelivery went on where the copy stopped, and the fork
    # completed without running the copied steps again or copying anything twice
    assert fault.fired == 1
    assert bodies == Counter(reserve=1, charge=1, ship=2)
    assert_copied_once(h, fork.run_id)


def test_a_fork_left_half_copied_without_a_message_is_finished_by_the_reconcilers_wake(
    harness: Harness,
) -> None:
    # GIVEN a fork whose first delivery died after copying one step, its message gone
    h = harness
    bodies: Counter[str] = Counter()
    original = failed_order(h, bodies)
    fixed = h.runtime_for(order_app(bodies, fixed=True))
    fork = fixed.fork(original)
    ids = {"id": fork.run_id}
    h.spy.inject(
        "events.create", Transient("connection reset"), match=copy_write(ids, EventType.STEP_CREATED)
    )
    h.spy.inject(
        "events.create", Transient("connection reset"), match=copy_write(ids, EventType.STEP_STARTED)
    )

    def die_and_lose(delivery: Delivery, handle: MessageHandler) -> HandlerResult:
        try:
            return handle(delivery)
        except Transient:
            return Ack()  # the process died and the message is gone (dead-lettered, say)

    h.drain(queues=[QueueName.WORKFLOW], intercept=die_and_lose)
    types = h.event_types(fork.run_id)
    assert h.status(fork.run_id) is RunStatus.PENDING
    assert types.count(EventType.STEP_COMPLETED) < 2  # part of the copy
    # WHEN the reconciler finds it silent and wakes it
    h.advance(AFTER + 1)
    (repair,) = Reconciler(h.world, RECONCILE).tick().woken
    assert repair.run_id == fork.run_id and repair.status is RunStatus.PENDING
    # THEN the wake finishes the copy before the run starts, and the fork completes
    assert h.settle(fork) is RunStatus.COMPLETED
    assert bodies == Counter(reserve=1, charge=1, ship=2)
    assert_copied_once(h, fork.run_id)
    started = h.event_types(fork.run_id).index(EventType.RUN_STARTED)
    assert h.event_types(fork.run_id)[:started].count(EventType.STEP_COMPLETED) == 2


def test_a_fork_whose_run_created_failed_is_created_by_its_message_with_its_copy(harness: Harness) -> None:
    # GIVEN a fork whose run_created never landed (its first message went)
    h = harness
    bodies: Counter[str] = Counter()
    original = failed_order(h, bodies)
    fixed = h.runtime_for(order_app(bodies, fixed=True))
    fault = h.spy.inject(
        "events.create",
        Transient("throttled"),
        match=lambda call: (
            isinstance(call, Call)
            and call.detail.type is EventType.RUN_CREATED
            and FORKED_FROM in call.detail.data.creation.attributes
        ),
    )
    fork = fixed.fork(original)
    assert fault.fired == 1
    # WHEN its message is handled
    assert h.settle(fork) is RunStatus.COMPLETED
    # THEN the consumer created the fork, not started it empty: the copied steps did not run again
    assert bodies == Counter(reserve=1, charge=1, ship=2)
    assert h.world.runs.get(fork.run_id).attributes[FORKED_FROM] == original


@pytest.mark.parametrize("from_step", [None, "charge"])
def test_two_copiers_at_once_write_one_copy(memory_harness: Harness, from_step: str | None) -> None:
    # GIVEN a fork being copied by its first delivery and, meanwhile, a second copier (a
    # redelivery of the same message whose first handler is still running)
    h = memory_harness
    bodies: Counter[str] = Counter()
    original = failed_order(h, bodies)
    fixed = h.runtime_for(order_app(bodies, fixed=True))
    fork = fixed.fork(original, from_step=from_step)
    ids = {"id": fork.run_id}
    run: dict[str, object] = {}

    def second_copier(call: Call) -> bool:
        if copy_write(ids, EventType.STEP_STARTED)(call) and not run:
            # The whole copy, inside the first copier's write (on the World itself: this
            # runs under the spy's lock).
            run["fork"] = pending = h.world.runs.get(fork.run_id)
            Forks(h.world, fixed.app, ThreadPoolExecutor(1)).finish(pending)
        return False

    h.spy.inject("events.create", Transient("never"), match=second_copier)
    # WHEN the queues settle
    assert h.settle(fork) is RunStatus.COMPLETED
    # THEN the steps copied were not run again, and the fork has each copied event once
    assert run, "the second copier ran"
    assert bodies["reserve"] == 1
    assert_copied_once(h, fork.run_id)
