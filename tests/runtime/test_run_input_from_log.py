"""A continuation needs the run's input only to start the workflow, and takes it from the log.

The DynamoDB World keeps a run's input out of its run item (ARCHITECTURE §8), so a
claimed run and a transition's result come without it. A replay that starts the
workflow reads the log from its first event, ``run_created``, which holds the input:
no continuation reads the run with its data.
"""

from __future__ import annotations

from harness.harness import Harness
from world_aws import RuntimeConfig, Workflows
from world_aws.contract.records import ResolveData, RunStatus

BIG = "x" * 60_000


def echo_app() -> Workflows:
    app = Workflows()

    @app.step
    def measure(text: str) -> int:
        return len(text)

    @app.step
    def label(name: str, size: int) -> str:
        return f"{name}:{size}"

    @app.workflow
    async def sized(name: str, text: str) -> str:
        size = await measure(text)
        return await label(name, size + len(text))

    return app


def test_cold_continuations_take_the_run_input_from_the_log(harness: Harness) -> None:
    # GIVEN a workflow whose steps need its 60 KB argument, every continuation replayed cold
    runtime = harness.runtime_for(echo_app(), RuntimeConfig(replay_cache_runs=0))
    # WHEN it runs to its end through the queues
    handle = runtime.start("sized", "doc", BIG)
    status = harness.settle(handle)
    # THEN each replay started the workflow with the input, and none read the run with its data
    assert status is RunStatus.COMPLETED
    assert handle.result(timeout=0) == f"doc:{2 * len(BIG)}"
    with_data = [
        c
        for c in harness.spy.calls("runs.get")
        if c.delivery is not None and c.detail is not ResolveData.NONE
    ]
    assert with_data == []
