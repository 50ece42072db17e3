"""Issue 5 (contract §8.3): continuing a long run costs the same at step 200 as at step 2.

A 200-step sequential workflow is continued ~200 times. A warm handler reads
only the events after what it has already seen, and continues the replay it left
suspended instead of re-running the workflow from its first line, so both the
event items read and the workflow code executed over the whole run grow with
its length, not with its square.
"""

from __future__ import annotations

import pytest

from harness.harness import Harness
from world_aws import Workflows
from world_aws.contract.records import RunLog, RunStatus

from .conftest import memory_world_of

STEPS = 200


def counter_app(iterations: list[int]) -> Workflows:
    app = Workflows()

    @app.step
    def increment(n: int) -> int:
        return n + 1

    @app.workflow
    async def count_up(steps: int) -> int:
        n = 0
        for i in range(steps):
            iterations.append(i)
            n = await increment(n)
        return n

    return app


@pytest.mark.dispatched  # about the step-message path
def test_two_hundred_step_run_reads_its_log_in_linear_total(memory_harness: Harness) -> None:
    # GIVEN a 200-step sequential workflow
    h = memory_harness
    stats = memory_world_of(h).stats
    iterations: list[int] = []
    runtime = h.runtime_for(counter_app(iterations))
    before = stats.snapshot()
    # WHEN it runs to the end (each step's completer continues the run)
    handle = runtime.start("count_up", STEPS)
    assert h.settle(handle) is RunStatus.COMPLETED
    assert handle.result(timeout=0) == STEPS
    # THEN the event items read in total stay within a small multiple of the log's length
    read = stats.snapshot()["event_items_read"] - before["event_items_read"]
    logged = len(h.events(handle.run_id))
    assert logged > 3 * STEPS
    assert read < 10 * logged, f"{read} event items read for a log of {logged}"
    # AND no single continuation read more than a handful of events
    per_delivery: dict[int | None, int] = {}
    for call in h.spy.calls("events.list"):
        per_delivery[call.delivery] = per_delivery.get(call.delivery, 0) + len(call.result or [])
    for call in h.spy.calls("events.list_with_run"):
        read = call.result.events if isinstance(call.result, RunLog) else None
        per_delivery[call.delivery] = per_delivery.get(call.delivery, 0) + len(read or [])
    assert max(per_delivery.values()) <= 10
    # AND the workflow's loop body ran about once per step, not once per step per continuation
    assert len(iterations) < 2 * STEPS, f"{len(iterations)} loop iterations for {STEPS} steps"
