"""Batched and parallel dispatch of a fan-out's steps: both complete the run; each writes as it says.

Batched (the default, ``WORKFLOW_BATCHED_STEP_DISPATCH``): a pass that writes nothing but step
creates appends them in batches, then publishes their messages. Parallel (``0``): every
``step_created`` and its message in parallel (contract §5.2).
"""

from __future__ import annotations

import asyncio

import pytest

from harness.harness import Harness
from world_aws import RuntimeConfig, Workflows
from world_aws.contract.records import EventRequest, EventType, RunStatus


def fan_app() -> Workflows:
    app = Workflows()

    @app.step(name="modes.part")
    def part(i: int) -> int:
        return i * i

    @app.workflow(name="modes.fan")
    async def fan(n: int) -> int:
        return sum(await asyncio.gather(*(part(i) for i in range(n))))

    return app


def _step_creates(requests: object) -> int:
    listed = requests if isinstance(requests, list) else [requests]
    return sum(isinstance(r, EventRequest) and r.type is EventType.STEP_CREATED for r in listed)


@pytest.mark.parametrize("batched", [True, False], ids=["batched", "parallel"])
def test_a_dispatched_fan_out_completes_with_its_creates_batched_or_in_parallel(
    harness: Harness, batched: bool
) -> None:
    # GIVEN a 12-way fan-out, every step by message, in one dispatch mode
    config = RuntimeConfig(max_inline_steps=0, batched_step_dispatch=batched)
    runtime = harness.runtime_for(fan_app(), config)
    # WHEN the run settles
    handle = runtime.start("modes.fan", 12)
    assert harness.settle(handle) is RunStatus.COMPLETED
    assert handle.result(timeout=0) == sum(i * i for i in range(12))
    # THEN its creates went in appends of at most ten (batched) or one by one (parallel)
    appended = [_step_creates(c.detail) for c in harness.spy.calls("events.append_after")]
    single = sum(_step_creates(c.detail) for c in harness.spy.calls("events.create"))
    if batched:
        assert sorted(n for n in appended if n) == [2, 10] and single == 0
    else:
        assert not any(appended) and single == 12
    # AND each step was created once
    created = [e.correlation_id for e in harness.events(handle.run_id) if e.type is EventType.STEP_CREATED]
    assert len(created) == len(set(created)) == 12


def test_the_mode_is_read_from_the_environment() -> None:
    assert RuntimeConfig.from_env({}).batched_step_dispatch is True
    assert RuntimeConfig.from_env({"WORKFLOW_BATCHED_STEP_DISPATCH": "0"}).batched_step_dispatch is False
