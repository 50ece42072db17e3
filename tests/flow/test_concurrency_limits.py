"""Issue 41 item 1: ``Concurrency(limit, key)`` on a step, across consumers and runs, on both local Worlds.

The runs go through a local stack's real consumers (threads, several deliveries at
once); the check reads the attempts back from the log (``testing/flow_checks.py``).
"""

from __future__ import annotations

import time

from world_aws import Concurrency, Workflows
from world_aws.contract.records import RunStatus
from world_aws.contract.world import World
from world_aws.local.memory import create_memory_world
from world_aws.local.stack import local_stack
from world_aws.runtime.runtime import Runtime
from world_aws.testing.flow_checks import attempts, group, max_overlap_by_key

CUSTOMERS = ["cust-1", "cust-2", "cust-3", "cust-4"]
# 200 on the memory World (the figure); the embedded stack's moto costs ~0.3 s a
# run, so CI runs 40 there and `python -m bench.flow` runs the 200.
RUNS = {"memory": 200, "embedded": 40}


def charge_app() -> Workflows:
    app = Workflows()

    @app.step(name="charge", concurrency=Concurrency(limit=3, key=lambda customer, *_: customer))
    def charge(customer: str, n: int) -> int:
        time.sleep(0.03)  # the provider's call: long enough for attempts to overlap
        return n

    @app.workflow
    async def checkout(customer: str, n: int) -> int:
        return await charge(customer, n)

    return app


def _run_all(runtime: Runtime, runs: int) -> dict[str, str]:
    """Start ``runs`` checkouts over the customers and wait for each; the run ids' customers."""
    handles = {}
    for i in range(runs):
        customer = CUSTOMERS[i % len(CUSTOMERS)]
        handles[runtime.start("checkout", customer, i).run_id] = customer
    results = [runtime.client.get_run(run_id).result(timeout=120) for run_id in handles]
    assert sorted(results) == list(range(runs))
    return handles


def _check(world: World, handles: dict[str, str]) -> dict[str, int]:
    """Every run completed, at most 3 attempts of a customer at once, every slot given back."""
    assert all(world.runs.get(run_id).status is RunStatus.COMPLETED for run_id in handles)
    found = attempts(world, handles, "charge")
    assert len(found) >= len(handles)
    overlaps = max_overlap_by_key(group(found, handles), until=world.clock.now())
    assert set(overlaps) == set(CUSTOMERS)
    assert max(overlaps.values()) <= 3
    for customer in CUSTOMERS:
        state = world.admission.slots(f"step:charge:{customer}")
        assert state.holders == () and state.waiters == ()
    return overlaps


def test_two_hundred_runs_on_the_memory_world_never_overlap_more_than_three_per_customer() -> None:
    # GIVEN a step limited to 3 attempts at once per customer, 16 consumers of each queue
    world = create_memory_world(workers_per_queue=16)
    runtime = Runtime(world, charge_app())
    world.start_consumers(runtime.handle)
    try:
        # WHEN 200 runs over 4 customers run
        handles = _run_all(runtime, RUNS["memory"])
        # THEN all finished, never more than 3 of a customer at once, and attempts did overlap
        # (the check is not vacuous; how close to 3 they came depends on the machine's load)
        overlaps = _check(world, handles)
        assert max(overlaps.values()) >= 2
    finally:
        world.close()
        runtime.close()


def test_runs_of_a_limited_step_on_the_embedded_stack_never_overlap_more_than_three() -> None:
    # GIVEN the same app on the embedded stack (moto), its own consumers
    with local_stack(charge_app(), kind="embedded") as stack:
        # WHEN runs over 4 customers run
        handles = _run_all(stack.runtime, RUNS["embedded"])
        # THEN all finished, never more than 3 attempts of a customer at once
        _check(stack.world, handles)
