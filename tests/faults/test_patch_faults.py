"""Faults on the writes of a ``patched()`` decision: the run still takes one branch, recorded once.

A marker's write fails before landing, or lands with its answer lost; the
append that carries it with a step's outcome fails, or lands with its answer lost.
Each time the continuation is redone (or takes the ordinary way) and the run ends
on the new branch, its log replays cold, and no step ran twice.
"""

from __future__ import annotations

from typing import Any

import pytest

from harness.harness import Harness
from harness.spy import Call
from world_aws import Workflows, create_hook, patched
from world_aws.contract.records import EventType, PatchAppliedData, RunStatus
from world_aws.errors import Transient
from world_aws.testing.kit import check_replay


def _app(ran: list[str], *, patched_code: bool) -> Workflows:
    app = Workflows()

    @app.step
    def add(x: int, y: int) -> int:
        ran.append(f"add {x} {y}")
        return x + y

    @app.workflow
    async def total(x: int, wait: bool) -> int:
        x = await add(x, 1)
        if wait:
            await create_hook(token=f"go:{x}")
        x = await add(x, 10 if patched_code and patched("bigger-steps") else 2)
        return await add(x, 3)

    return app


def _writes_marker(call: Any) -> bool:
    return isinstance(call, Call) and call.detail.type is EventType.PATCH_APPLIED


def _carries_marker(call: Any) -> bool:
    return isinstance(call, Call) and any(r.type is EventType.PATCH_APPLIED for r in call.detail)


def _markers(h: Harness, run_id: str) -> list[str]:
    return [
        e.data_as(PatchAppliedData).change_id for e in h.events(run_id) if e.type is EventType.PATCH_APPLIED
    ]


@pytest.mark.parametrize("after", [False, True], ids=["refused", "answer-lost"])
def test_a_failed_marker_write_is_redone_and_the_run_takes_the_new_branch(
    harness: Harness, after: bool
) -> None:
    # GIVEN a run waiting on its hook on the old code, the new code deployed, and the marker's
    # own write (the orchestrator's, after a hook) failing once
    h = harness
    ran: list[str] = []
    run = h.runtime_for(_app(ran, patched_code=False)).start("total", 0, True)
    assert h.settle(run) is RunStatus.RUNNING
    new = _app(ran, patched_code=True)
    h.runtime_for(new)
    h.spy.inject("events.create", Transient("marker write failed"), match=_writes_marker, after=after)
    # WHEN the hook is resumed
    h.runtime.resume_hook("go:1", None)
    # THEN the run ends on the new branch, with its marker, each step once, and replays cold
    assert h.settle(run) is RunStatus.COMPLETED
    assert run.result(timeout=0) == 14 and ran == ["add 0 1", "add 1 10", "add 11 3"]
    assert _markers(h, run.run_id) == ["bigger-steps"]
    check_replay(new, h.world, run.run_id)


@pytest.mark.parametrize("after", [False, True], ids=["refused", "answer-lost"])
def test_a_failed_append_carrying_the_marker_falls_back_and_the_run_takes_the_new_branch(
    harness: Harness, after: bool
) -> None:
    # GIVEN a new run whose marker rides on its first step's outcome append, which fails once
    h = harness
    ran: list[str] = []
    app = _app(ran, patched_code=True)
    runtime = h.runtime_for(app)
    h.spy.inject("events.append_after", Transient("append failed"), match=_carries_marker, after=after)
    # WHEN it runs
    run = runtime.start("total", 0, False)
    # THEN it ends on the new branch with its marker, and its log replays cold
    assert h.settle(run) is RunStatus.COMPLETED
    assert run.result(timeout=0) == 14
    assert ran.count("add 1 10") == 1 and "add 1 2" not in ran
    assert _markers(h, run.run_id) == ["bigger-steps"]
    check_replay(app, h.world, run.run_id)
