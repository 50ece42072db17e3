"""Issue 41 items 4 and 5 under faults: no start lost, one run per debounce window and singleton key,
every batched item in exactly one batch.

The fault suite's groups (``harness.fault_plan``) fire at the World boundary, the gate
store's calls among them (``FaultyWorld``): on the callers' side (inside
``faulty.client()``) transient failures, lost answers and repeated writes; on the
consumers' side also crashes before and after a call (between recording a window and
starting its run, between starting it and forgetting the window) and deliveries that
die or whose delete is dropped. A caller whose start raised retries it under the same
idempotency key, as a caller should. What is checked is read back from the memory World.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

import pytest

from harness.chaos.run import memory_setup
from harness.fault_plan import Crash, Fault, FaultPlan, rates_for
from harness.faulty_world import FaultyWorld
from harness.harness import Harness, memory_harness
from world_aws import Batch, Debounce, Workflows, sleep
from world_aws.client.handle import RunHandle
from world_aws.client.starting import start_run
from world_aws.contract.coalesce import Decision, Due, Gate
from world_aws.contract.records import Run, RunCreation, RunStatus
from world_aws.contract.world import (
    SPEC_VERSION_CURRENT,
    Ack,
    Delivery,
    ForwardingWorld,
    HandlerResult,
    MessageHandler,
    Redeliver,
    World,
)
from world_aws.errors import NotFound, WorldAwsError
from world_aws.runtime.runtime import Runtime
from world_aws.testing.pump import settle
from world_aws.worker.config import RuntimeConfig
from world_aws.worker.gates import GATE_ATTRIBUTE

VISIBILITY = 2.0
GROUPS = ["transient", "lost", "delivery", "crash", "all"]


@pytest.fixture(autouse=True)
def _quiet_runtime_logs() -> Iterator[None]:
    logging.disable(logging.ERROR)
    yield
    logging.disable(logging.NOTSET)


def gated_app() -> Workflows:
    app = Workflows()

    @app.workflow(batch=Batch(max_size=4, max_wait="3s", key=lambda item: item["shard"]))
    async def ingest(items: list[dict[str, int]]) -> int:
        return len(items)

    @app.workflow(debounce=Debounce("10s", key=lambda user, _n: user))
    async def reindex(user: str, n: int) -> str:
        return f"{user}:{n}"

    @app.workflow(singleton=True)
    async def rebuild(n: int) -> int:
        await sleep("60s")  # live while the other starts come
        return n

    return app


def _start(faulty: FaultyWorld, runtime: Runtime, workflow: str, *args: Any, key: str) -> RunHandle:
    """A caller's start, retried under its idempotency key until it answers."""
    for _ in range(20):
        with faulty.client():
            try:
                return runtime.start(workflow, *args, idempotency_key=key)
            except WorldAwsError:
                continue
    raise AssertionError(f"start {key} never answered")


def _pump(
    harness: Harness, plan: FaultPlan, faulty: FaultyWorld, runtime: Runtime, done: Callable[[], bool]
) -> None:
    def deliver(delivery: Delivery) -> HandlerResult:
        key = f"{delivery.message_id}|{delivery.attempt}"
        if plan.fires(Fault.CRASH_DELIVERY, key):
            return Redeliver(VISIBILITY)
        faulty.delivering = True
        try:
            result = runtime.handle(delivery)
        except (Crash, Exception):
            return Redeliver(VISIBILITY)
        finally:
            faulty.delivering = False
        if isinstance(result, Ack) and plan.fires(Fault.DROP_DELETE, key):
            return Redeliver(VISIBILITY)
        return result

    assert settle(harness.pump, harness.clock, deliver, done, max_rounds=5000), "runs stuck"


def _ended(world: World, run_ids: set[str]) -> Callable[[], bool]:
    def done() -> bool:
        for run_id in run_ids:
            try:
                if not world.runs.get(run_id).status.terminal:
                    return False
            except NotFound:
                return False
        return True

    return done


def _runs(world: World, workflow: str) -> list[Run]:
    return world.runs.list(workflow_name=workflow, limit=1000).runs


@pytest.mark.parametrize("group_name", GROUPS)
def test_batched_starts_under_faults_each_land_in_exactly_one_batch(group_name: str) -> None:
    plan = FaultPlan(11, rates_for([group_name], 3.0))
    with memory_setup(plan, VISIBILITY) as setup:
        harness, faulty = setup.harness, setup.faulty
        runtime = harness.runtime_for(gated_app(), RuntimeConfig(), world=faulty)
        world = faulty.inner
        # GIVEN 30 items over 2 shards, started a few at a time while batches fill and flush
        handles = {}
        for n in range(30):
            handles[n] = _start(faulty, runtime, "ingest", {"shard": n % 2, "n": n}, key=f"item-{n}")
            if n % 7 == 6:
                harness.advance(2)
                _pump(harness, plan, faulty, runtime, lambda: True)
        # WHEN every batch is pumped until its run ends
        _pump(harness, plan, faulty, runtime, _ended(world, {h.run_id for h in handles.values()}))
        # THEN faults fired, every batch run completed, and each item is in exactly one of them: its caller's
        assert sum(plan.fired.values()) > 0
        runs = _runs(world, "ingest")
        assert {r.status for r in runs} == {RunStatus.COMPLETED}
        seen: Counter[int] = Counter()
        for run in runs:
            items = runtime.app.serializer.loads(run.input or b"")["args"][0]
            assert 1 <= len(items) <= 4 and len({i["shard"] for i in items}) == 1
            for item in items:
                seen[item["n"]] += 1
                assert handles[item["n"]].run_id == run.run_id
        assert seen == Counter(range(30))


@pytest.mark.parametrize("group_name", GROUPS)
def test_debounced_and_singleton_starts_under_faults_make_one_run_per_window_and_key(group_name: str) -> None:
    plan = FaultPlan(13, rates_for([group_name], 3.0))
    with memory_setup(plan, VISIBILITY) as setup:
        harness, faulty = setup.harness, setup.faulty
        runtime = harness.runtime_for(gated_app(), RuntimeConfig(), world=faulty)
        world = faulty.inner
        users = ["u0", "u1", "u2"]
        # GIVEN three starts per user 4 s apart (a 10 s window), and three starts of a singleton
        debounced: dict[str, set[str]] = {u: set() for u in users}
        singles = set()
        for n in range(3):
            for user in users:
                debounced[user].add(_start(faulty, runtime, "reindex", user, n, key=f"{user}-{n}").run_id)
            singles.add(_start(faulty, runtime, "rebuild", n, key=f"rebuild-{n}").run_id)
            harness.advance(4)
            _pump(harness, plan, faulty, runtime, lambda: True)
        # THEN each user's starts got one run, and the singleton's starts one run
        assert all(len(ids) == 1 for ids in debounced.values()), debounced
        assert len(singles) == 1
        wanted = {next(iter(ids)) for ids in debounced.values()} | singles
        # WHEN they are pumped until they end
        _pump(harness, plan, faulty, runtime, _ended(world, wanted))
        # THEN faults fired; each user has exactly one run, with the last arguments; one singleton run
        assert sum(plan.fired.values()) > 0
        runs = _runs(world, "reindex")
        assert sorted(r.output and runtime.app.serializer.loads(r.output) for r in runs) == [
            f"{u}:2" for u in users
        ]
        assert {r.run_id for r in runs} == wanted - singles
        assert [r.run_id for r in _runs(world, "rebuild")] == list(singles)
        # AND once the singleton ended, its key is free: the next start is a new run
        after = _start(faulty, runtime, "rebuild", 9, key="rebuild-9")
        assert after.run_id not in singles
        _pump(harness, plan, faulty, runtime, _ended(world, {after.run_id}))
        assert world.runs.get(after.run_id).status is RunStatus.COMPLETED


class _CrashingGates:
    """The gate store, but the consumer dies once right after ``point``."""

    def __init__(self, world: World, point: str, pool: ThreadPoolExecutor) -> None:
        self._inner = world.gates
        self._pool = pool
        self._world = world
        self.point = point
        self.crashed = False

    def get(self, scope: str) -> Gate:
        return self._inner.get(scope)

    def change(self, scope: str, rule: Callable[[Gate, datetime], tuple[Gate, Any]]) -> Any:
        answer = self._inner.change(scope, rule)
        if self.crashed or not isinstance(answer, Decision) or answer.due is not Due.START:
            return answer
        if self.point == "after-start":  # the run's start written, the window not forgotten
            assert answer.pending is not None
            start_run(
                self._world, self._pool, answer.pending.run_id, _creation(self._world, answer), keyed=True
            )
        self.crashed = True
        raise Crash(f"died {self.point}")


def _creation(world: World, decision: Decision) -> RunCreation:
    assert decision.pending is not None
    return RunCreation(
        workflow_name="reindex",
        deployment_id=world.deployment_id(),
        spec_version=SPEC_VERSION_CURRENT,
        input=decision.pending.items[-1].data,
        attributes={GATE_ATTRIBUTE: "debounce:reindex:ann"},
    )


@pytest.mark.parametrize("point", ["after-close", "after-start"])
def test_a_consumer_dying_between_closing_a_window_and_forgetting_it_starts_its_run_once(point: str) -> None:
    with memory_harness() as harness, ThreadPoolExecutor(2) as pool:
        world = ForwardingWorld(harness.world)
        gates = _CrashingGates(harness.world, point, pool)
        world.gates = gates
        runtime = harness.runtime_for(gated_app(), world=world)

        def deliver(delivery: Delivery, handle: MessageHandler) -> HandlerResult:
            try:
                return handle(delivery)
            except Crash:
                return Redeliver(1)  # the invocation died: the queue brings the message back

        # GIVEN a debounced start whose window's consumer dies once, at ``point``
        handle = runtime.start("reindex", "ann", 1)
        harness.advance(10)
        harness.drain(intercept=deliver)
        assert gates.crashed
        # WHEN the message comes back THEN the run starts, once, with its arguments
        harness.advance(1)
        harness.drain(intercept=deliver)
        assert harness.settle(handle, intercept=deliver) is RunStatus.COMPLETED
        assert handle.result() == "ann:1"
        assert [r.run_id for r in _runs(harness.world, "reindex")] == [handle.run_id]
        gate = harness.world.gates.get("debounce:reindex:ann")
        assert gate.open is None and gate.closed == ()
