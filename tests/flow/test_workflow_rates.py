"""Issue 41 item 2 for workflows: ``@app.workflow(rate_limit=RateLimit(...))`` spaces the runs' starts.

A run without a token stays pending: its first message is acked and a copy comes back
when its reserved token is due (keyed ``rate:<run_id>:<due>``), so nothing holds a
consumer. On the memory World with a manual clock (the pump jumps to the copy's due).
"""

from __future__ import annotations

import itertools
from datetime import timedelta

from harness.harness import memory_harness
from world_aws import Concurrency, RateLimit, Workflows
from world_aws.contract.records import RunStatus
from world_aws.contract.world import QueueName
from world_aws.testing.flow_checks import max_starts_in_window, run_intervals

RUNS = 12


def rated_app() -> Workflows:
    app = Workflows()

    @app.workflow(rate_limit=RateLimit("2/s", key=lambda tenant, *_: tenant))
    async def sync(tenant: str, n: int) -> int:
        return n

    return app


def test_runs_of_a_rate_limited_workflow_never_start_more_than_the_rate() -> None:
    with memory_harness() as harness:
        runtime = harness.runtime_for(rated_app())
        # GIVEN 12 runs of tenant t1 and 2 of t2 started at once, at 2 starts a second per tenant
        ids = [runtime.start("sync", "t1", i).run_id for i in range(RUNS)]
        other = [runtime.start("sync", "t2", i).run_id for i in range(2)]
        harness.drain()
        # THEN two of t1 and both of t2 started now; the rest of t1 are pending, their copies queued
        assert sum(harness.status(r) is RunStatus.COMPLETED for r in ids) == 2
        assert {harness.status(r) for r in other} == {RunStatus.COMPLETED}
        assert {harness.status(r) for r in ids if harness.status(r) is not RunStatus.COMPLETED} == {
            RunStatus.PENDING
        }
        assert len(harness.pending_messages(QueueName.WORKFLOW)) == RUNS - 2
        # WHEN the clock runs until they all end
        for run_id in ids:
            assert harness.settle(run_id, max_rounds=500) is RunStatus.COMPLETED
        # THEN no one-second window saw more than 2 starts of t1, spread over the 5 s 12 starts need
        found = run_intervals(harness.world, ids)
        assert len(found) == RUNS
        assert max_starts_in_window(found, timedelta(seconds=1)) == 2
        assert max(a.start for a in found) - min(a.start for a in found) >= timedelta(seconds=5)


def test_rate_and_concurrency_together_on_a_workflow() -> None:
    app = Workflows()

    @app.workflow(concurrency=Concurrency(1), rate_limit=RateLimit("1/s"))
    async def one(n: int) -> int:
        return n

    with memory_harness() as harness:
        runtime = harness.runtime_for(app)
        # GIVEN three runs of a workflow with one slot and one start a second
        ids = [runtime.start("one", i).run_id for i in range(3)]
        for run_id in ids:
            assert harness.settle(run_id, max_rounds=500) is RunStatus.COMPLETED
        # THEN they ran one at a time, a second apart, and left no slot held
        found = sorted(run_intervals(harness.world, ids), key=lambda a: a.start)
        assert all(b.start - a.start >= timedelta(seconds=1) for a, b in itertools.pairwise(found))
        assert harness.world.admission.slots("workflow:one:*").holders == ()
