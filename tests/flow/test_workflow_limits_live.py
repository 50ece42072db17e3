"""Issue 41 item 1 for workflows, through real consumers: runs of a limited workflow never overlap past it.

Runs go through a local stack's consumer threads (several deliveries at once) on the
memory World and on the embedded stack (moto); each run's life is read back from its
log (``run_started`` to its end, ``testing/flow_checks.py``).
"""

from __future__ import annotations

import time

from world_aws import Concurrency, Workflows
from world_aws.contract.records import RunStatus
from world_aws.contract.world import World
from world_aws.local.memory import create_memory_world
from world_aws.local.stack import local_stack
from world_aws.runtime.runtime import Runtime
from world_aws.testing.flow_checks import max_run_overlap, run_intervals

CUSTOMERS = ["cust-1", "cust-2", "cust-3", "cust-4"]
LIMIT = 2


def checkout_app() -> Workflows:
    app = Workflows()

    @app.step
    def charge(customer: str, n: int) -> int:
        time.sleep(0.02)  # the provider's call: long enough for runs to overlap
        return n

    @app.workflow(concurrency=Concurrency(LIMIT, key=lambda customer, *_: customer))
    async def checkout(customer: str, n: int) -> int:
        return await charge(customer, n) + await charge(customer, n)

    return app


def _run_all(runtime: Runtime, runs: int) -> dict[str, str]:
    handles = {}
    for i in range(runs):
        customer = CUSTOMERS[i % len(CUSTOMERS)]
        handles[runtime.start("checkout", customer, i).run_id] = customer
    results = [runtime.client.get_run(run_id).result(timeout=120) for run_id in handles]
    assert sorted(results) == [2 * i for i in range(runs)]
    return handles


def _check(world: World, handles: dict[str, str]) -> int:
    """Every run completed, at most LIMIT live runs of a customer at once, every slot given back."""
    assert {world.runs.get(run_id).status for run_id in handles} == {RunStatus.COMPLETED}
    most = 0
    for customer in CUSTOMERS:
        mine = [r for r, c in handles.items() if c == customer]
        overlap = max_run_overlap(run_intervals(world, mine))
        assert overlap <= LIMIT, (customer, overlap)
        most = max(most, overlap)
        state = world.admission.slots(f"workflow:checkout:{customer}")
        assert state.holders == () and state.waiters == ()
    return most


def test_runs_of_a_limited_workflow_on_the_memory_world_never_overlap_past_the_limit() -> None:
    world = create_memory_world(workers_per_queue=8)
    runtime = Runtime(world, checkout_app())
    world.start_consumers(runtime.handle)
    try:
        handles = _run_all(runtime, 60)
        # THEN never more than 2 of a customer at once, and runs did overlap (the check is not vacuous)
        assert _check(world, handles) == LIMIT
    finally:
        world.close()
        runtime.close()


def test_runs_of_a_limited_workflow_on_the_embedded_stack_never_overlap_past_the_limit() -> None:
    with local_stack(checkout_app(), kind="embedded") as stack:
        handles = _run_all(stack.runtime, 16)
        _check(stack.world, handles)
