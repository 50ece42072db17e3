"""A child's continue_as_new keeps its parent link on every continuation path."""

from __future__ import annotations

import pytest

from tests.runtime.harness import Harness
from world_aws import Workflows, continue_as_new
from world_aws.contract.records import RunStatus
from world_aws.worker.config import RuntimeConfig


def app_with_stepped_chain() -> Workflows:
    app = Workflows()

    @app.step(name="rv.inc")
    def inc(x: int) -> int:
        return x + 1

    @app.workflow(name="rv.stepper")
    async def stepper(n: int) -> int:
        n = await inc(n)  # the continue_as_new is reached after a step's outcome
        if n < 3:
            continue_as_new(n)
        return n

    @app.workflow(name="rv.top")
    async def top() -> int:
        return await stepper(0) * 10

    return app


@pytest.mark.parametrize("inline", [0, 3, 1])
def test_a_childs_chain_reached_after_steps_tells_its_parent(harness: Harness, inline: int) -> None:
    runtime = harness.runtime_for(app_with_stepped_chain(), RuntimeConfig(max_inline_steps=inline))
    handle = runtime.start("rv.top")
    assert harness.settle(handle) is RunStatus.COMPLETED
    assert handle.result(timeout=0) == 30
