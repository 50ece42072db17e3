"""Forks under every fault at once: seeded, each fork checked (``client/forks.py``).

Runs of a three-step order fail in their third step on a World without faults.
Then, on the same World behind a ``FaultyWorld`` (transient and lost calls,
repeated writes, crashed calls and deliveries, dropped deletes, concurrent copies,
reordered messages), a client forks each onto fixed code (retrying under an
idempotency key, as a caller of an unreliable API does) and the queues are pumped
until they settle, the reconciler waking whatever went silent. Every fork must
complete with the fixed result, no copied step's body may run again, and each
copied step must be created and completed once in the fork's log.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta

import pytest

from harness.fault_plan import Crash, Fault, FaultPlan, rates_for
from harness.faulty_world import FaultyWorld
from harness.harness import Harness, MemoryPump
from tests.runtime.test_fork import order_app
from world_aws.client.handle import RunHandle
from world_aws.contract.clock import ManualClock
from world_aws.contract.records import EventType, RunStatus
from world_aws.contract.world import Ack, Delivery, HandlerResult, MessageHandler, Redeliver
from world_aws.errors import NotFound, RetryLater, WorldAwsError
from world_aws.local.memory import MemoryWorld, create_memory_world
from world_aws.runtime.runtime import Runtime
from world_aws.worker.config import ReconcilerConfig
from world_aws.worker.reconciler import Reconciler

RUNS = 12
VISIBILITY = 2.0
RECONCILE = ReconcilerConfig(after_seconds=600, max_runs_per_tick=100, sweep_lag_seconds=600)


@pytest.fixture(autouse=True)
def _quiet_runtime_logs() -> Iterator[None]:
    logging.disable(logging.ERROR)  # the runtime logs every injected failure it survives
    yield
    logging.disable(logging.NOTSET)


class Pumping:
    """What the queue does with a delivery under the plan: crashes and errors are redeliveries."""

    def __init__(self, faulty: FaultyWorld, copies: Runtime) -> None:
        self.faulty = faulty
        self.plan = faulty.plan
        self.copies = copies

    def intercept(self, delivery: Delivery, handle: MessageHandler) -> HandlerResult:
        key = f"{delivery.queue}|{delivery.message_id}|{delivery.attempt}"
        if self.plan.fires(Fault.CRASH_DELIVERY, key):
            return Redeliver(VISIBILITY)
        if self.plan.fires(Fault.COPY, key):
            self.faulty.arm_copy(
                1 + self.plan.choose(f"copy|{key}", 12), lambda: self._settle(delivery, self.copies.handle)
            )
        self.faulty.delivering = True
        try:
            result = self._settle(delivery, handle)
        finally:
            self.faulty.delivering = False
            self.faulty.disarm_copy()
        if isinstance(result, Ack) and self.plan.fires(Fault.DROP_DELETE, key):
            return Redeliver(VISIBILITY)
        return result

    def _settle(self, delivery: Delivery, handle: MessageHandler) -> HandlerResult:
        try:
            return handle(delivery)
        except (Crash, WorldAwsError):
            return Redeliver(VISIBILITY)


def fork_as_client(faulty: FaultyWorld, runtime: Runtime, run_id: str, key: str) -> RunHandle:
    with faulty.client():
        for _ in range(20):
            try:
                return runtime.fork(run_id, idempotency_key=key)
            except RetryLater:
                continue
    raise AssertionError(f"fork of {run_id} never got through")


@pytest.mark.parametrize("seed", [3, 17])
def test_every_fork_completes_without_rerunning_its_copied_steps_under_every_fault(seed: int) -> None:
    # GIVEN runs that failed in their third step (no faults yet)
    clock = ManualClock()
    world = create_memory_world(clock=clock, visibility_timeout_seconds=VISIBILITY)
    bodies: Counter[str] = Counter()
    plain = Harness("memory", world, clock, MemoryPump(world))
    broken = plain.runtime_for(order_app(bodies, fixed=False), world=world)
    originals = [broken.start("order", f"o-{i}").run_id for i in range(RUNS)]
    plain.settle()
    assert all(plain.status(run_id) is RunStatus.FAILED for run_id in originals)
    assert bodies == Counter(reserve=RUNS, charge=RUNS, ship=RUNS)
    # WHEN each is forked onto fixed code, and the forks run, all under every fault
    plan = FaultPlan(seed, rates_for(["all"], scale=2.0))
    faulty = FaultyWorld(world, plan)
    h = Harness("memory", faulty, clock, MemoryPump(world))
    fixed = h.runtime_for(order_app(bodies, fixed=True), world=faulty)
    copies = h.runtime_for(order_app(bodies, fixed=True), world=faulty)  # a second process
    pumping = Pumping(faulty, copies)
    forks = [fork_as_client(faulty, fixed, run_id, f"fix-{run_id}") for run_id in originals]
    for _ in range(4):
        h.settle(runtime=fixed, intercept=pumping.intercept, max_rounds=400)
        if all(_ended(world, f.run_id) for f in forks):
            break
        clock.advance(timedelta(seconds=RECONCILE.after_seconds + 1).total_seconds())
        Reconciler(world, RECONCILE).tick()
    # THEN faults fired, and every fork completed with the fixed result
    assert sum(plan.fired.values()) > 0
    copy_writes = {
        f"events.create|{f.run_id}|step_{kind}:step_{f.run_id[5:]}_{n}"
        for f in forks
        for kind in ("created", "started", "completed")
        for n in (1, 2)
    }
    assert any(where.split(" ", 1)[1] in copy_writes for where in plan.journal)  # faults hit copies
    for fork in forks:
        assert world.runs.get(fork.run_id).status is RunStatus.COMPLETED, h.event_types(fork.run_id)
        assert fork.result(timeout=0)["shipped"].startswith("shipped:o-")
    # AND no copied step ran again (the third ran at least once per fork: at-least-once)
    assert (bodies["reserve"], bodies["charge"]) == (RUNS, RUNS)
    assert bodies["ship"] >= 2 * RUNS
    # AND each copied step was created and completed once in its fork
    for fork in forks:
        events = world.events.list(fork.run_id)
        started = [e.type for e in events].index(EventType.RUN_STARTED)
        copied = Counter((e.correlation_id, e.type) for e in events[:started] if e.type.is_step_event)
        per_type = Counter(etype for (_, etype) in copied)
        assert per_type[EventType.STEP_CREATED] == per_type[EventType.STEP_COMPLETED] == 2, copied
        assert all(n == 1 for (_, etype), n in copied.items() if etype is not EventType.STEP_STARTED), copied
    world.close()


def _ended(world: MemoryWorld, run_id: str) -> bool:
    try:
        return world.runs.get(run_id).status.terminal
    except NotFound:
        return False  # its run_created was lost, and its message has not made it yet
