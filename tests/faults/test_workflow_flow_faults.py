"""Issue 41 under faults, for workflows: no over-admission of runs per key, no stuck run, slots given back.

The fault suite's groups (``harness.fault_plan``) fire at the World boundary, the
admission store's calls among them (``FaultyWorld``): crashes before and after a call,
lost answers, repeated writes, transient failures, deliveries that die or whose delete
is dropped. Some runs fail, some are cancelled by a client. A run's life is read from
its log (``run_started`` to its end): at no instant more than ``LIMIT`` of one key live.
A release lost to a fault leaves the slot to the audit of the next arrival after the
holder's lease: one more run per key, started after that lease, proves none is stuck.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from harness.chaos.run import memory_setup
from harness.fault_plan import Crash, FaultPlan, rates_for
from harness.harness import Harness
from tests.faults.test_flow_control_faults import VISIBILITY, _faulty_delivery
from world_aws import Concurrency, Workflows, sleep
from world_aws.contract.records import RunStatus
from world_aws.errors import WorldAwsError
from world_aws.runtime.runtime import Runtime
from world_aws.testing.flow_checks import max_run_overlap, run_intervals
from world_aws.worker.config import RuntimeConfig

CUSTOMERS = ["c1", "c2", "c3"]
RUNS = 30
LIMIT = 2
LEASE = 120.0


@pytest.fixture(autouse=True)
def _quiet_runtime_logs() -> Iterator[None]:
    logging.disable(logging.ERROR)
    yield
    logging.disable(logging.NOTSET)


def limited_app() -> Workflows:
    app = Workflows()

    @app.step
    def charge(customer: str, n: int) -> int:
        return n

    @app.workflow(concurrency=Concurrency(LIMIT, key=lambda c, *_: c, lease=LEASE))
    async def checkout(customer: str, n: int) -> int:
        paid = await charge(customer, n)
        await sleep("1s")  # a run lives a while: the runs of one key would overlap without the limit
        if n % 5 == 4:
            raise ValueError(f"order {n} refused")
        return paid

    return app


def _cancel(runtime: Runtime, run_id: str) -> None:
    """A client's cancel, called again until it goes through (a fault may stop it half-way)."""
    for _ in range(20):
        try:
            runtime.get_run(run_id).cancel("changed my mind")
            return
        except (Crash, WorldAwsError):
            continue
    raise AssertionError(f"the cancel of {run_id} never went through")


def _start(runtime: Runtime, customer: str, n: int) -> str:
    for attempt in range(20):
        try:
            return runtime.start("checkout", customer, n, idempotency_key=f"{customer}-{n}").run_id
        except (Crash, WorldAwsError):
            if attempt == 19:
                raise
    raise AssertionError("unreachable")


@pytest.mark.parametrize("group_name", ["transient", "lost", "delivery", "crash", "all"])
def test_a_limited_workflow_under_faults_never_over_admits_and_every_run_ends(group_name: str) -> None:
    plan = FaultPlan(11, rates_for([group_name], 1.0))
    with memory_setup(plan, VISIBILITY) as setup:
        harness, faulty = setup.harness, setup.faulty
        runtime = harness.runtime_for(limited_app(), RuntimeConfig(), world=faulty)
        deliver = _faulty_delivery(plan, faulty)
        # GIVEN runs of a workflow limited to 2 live runs per customer, under one fault group
        handles = {_start(runtime, CUSTOMERS[i % 3], i): CUSTOMERS[i % 3] for i in range(RUNS)}
        ids = list(handles)
        # WHEN some are cancelled by a client (in line or running) and every run is pumped to its end
        harness.drain(intercept=deliver)
        for run_id in ids[3::7]:
            _cancel(runtime, run_id)
        for run_id in ids:
            harness.settle(run_id, intercept=deliver, max_rounds=5000)
        world = faulty.inner
        # THEN faults fired and every run ended as it should (none stuck)
        assert sum(plan.fired.values()) > 0
        statuses = {run_id: world.runs.get(run_id).status for run_id in ids}
        cancelled = set(ids[3::7])
        for i, run_id in enumerate(ids):
            expected = {RunStatus.CANCELLED} if run_id in cancelled else set()
            expected.add(RunStatus.FAILED if i % 5 == 4 else RunStatus.COMPLETED)
            assert statuses[run_id] in expected, (i, statuses[run_id])
        # AND at no instant were more than 2 runs of one customer live (from their start and end)
        for customer in CUSTOMERS:
            mine = [r for r in ids if handles[r] == customer]
            assert max_run_overlap(run_intervals(world, mine)) <= LIMIT, customer
        # AND once a lease has passed, 2 more runs per customer start together and end: a slot
        # whose release a fault lost is freed by the audit of the one refused, none is lost
        _after_a_lease(harness, runtime, deliver)
        # AND no live run holds a slot: a holder left is an ended run whose release a fault lost,
        # which the next arrival after its lease audits away (as the late runs just showed)
        for customer in CUSTOMERS:
            for held in world.admission.slots(f"workflow:checkout:{customer}").holders:
                assert world.runs.get(held.holder).status.terminal, held


def _after_a_lease(harness: Harness, runtime: Runtime, deliver: object) -> None:
    harness.advance(LEASE + 1)
    late = [
        _start(runtime, customer, 200 + 5 * (3 * j + i))
        for j in range(LIMIT)
        for i, customer in enumerate(CUSTOMERS)
    ]
    harness.drain(intercept=deliver)  # type: ignore[arg-type]
    for run_id in late:
        harness.settle(run_id, intercept=deliver, max_rounds=5000)  # type: ignore[arg-type]
        assert harness.world.runs.get(run_id).status is RunStatus.COMPLETED
