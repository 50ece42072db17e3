"""Issue 16 item 1: child workflows, on every World (``engine/children.py``, ``client/lineage.py``)."""

from __future__ import annotations

import asyncio

import pytest

from harness.harness import Harness
from world_aws import (
    FatalError,
    RunCancelledError,
    RunHandle,
    Runtime,
    WorkflowFailedError,
    Workflows,
    create_hook,
)
from world_aws.contract.records import EventType, RunStatus
from world_aws.engine.children import CHILD_TOKEN_PREFIX, PARENT_CALL_ID, PARENT_RUN_ID, ROOT_RUN_ID
from world_aws.errors import BadInput


def family_app(bodies: list[str]) -> Workflows:
    app = Workflows()

    @app.step
    def double(n: int) -> int:
        bodies.append(f"double:{n}")
        return 2 * n

    @app.step
    def explode(n: int) -> int:
        raise FatalError(f"no {n}")

    @app.workflow
    async def grandchild(n: int) -> int:
        return await double(n)

    @app.workflow
    async def child(n: int) -> int:
        return await grandchild(n) + 1

    @app.workflow
    async def failing_child(n: int) -> int:
        return await explode(n)

    @app.workflow
    async def waiting_child(token: str) -> str:
        value: str = await create_hook(token=token)
        return value

    @app.workflow
    async def parent(n: int) -> dict[str, object]:
        one = await child(n)
        many = await asyncio.gather(*(double(i) for i in range(2)), *(child(i) for i in range(3)))
        try:
            await failing_child(n)
            caught = ""
        except WorkflowFailedError as err:
            caught = f"{err.error_type}: {err.error_message}"
        return {"one": one, "many": list(many), "caught": caught}

    @app.workflow
    async def waiting_parent(token: str) -> str:
        return await waiting_child(token)

    return app


def children_of(h: Harness, run_id: str) -> list[str]:
    return [
        e.data.token.removeprefix(CHILD_TOKEN_PREFIX)
        for e in h.events(run_id)
        if e.type is EventType.HOOK_CREATED and (e.data.token or "").startswith(CHILD_TOKEN_PREFIX)
    ]


def test_awaited_children_return_results_and_failures_and_link_to_the_root(harness: Harness) -> None:
    # GIVEN a parent that awaits a child (which awaits a grandchild), a gather of steps and
    # children, and a child that fails
    h = harness
    bodies: list[str] = []
    runtime = h.runtime_for(family_app(bodies))
    handle = runtime.start("parent", 5)
    # WHEN it settles
    assert h.settle(handle) is RunStatus.COMPLETED
    # THEN the results are the children's, and the failure is the child's error
    result = handle.result(timeout=0)
    assert result["one"] == 11
    assert result["many"] == [0, 2, 1, 3, 5]
    assert result["caught"].startswith("world_aws.errors.StepFailedError") and "no 5" in result["caught"]
    # AND each child is its own run, linked to the parent and the root, started once
    kids = children_of(h, handle.run_id)
    assert len(kids) == len(set(kids)) == 5
    for kid in kids:
        run = h.world.runs.get(kid)
        assert run.status.terminal
        assert run.attributes[PARENT_RUN_ID] == handle.run_id
        assert run.attributes[ROOT_RUN_ID] == handle.run_id
        assert run.attributes[PARENT_CALL_ID].startswith("child_")
        assert [e.type for e in h.events(kid)].count(EventType.RUN_CREATED) == 1
    [grandkid] = children_of(h, kids[0])
    assert h.world.runs.get(grandkid).attributes[ROOT_RUN_ID] == handle.run_id
    # AND each grandchild body ran once per call: no second child was started by a replay
    assert sorted(bodies) == sorted(["double:5", "double:0", "double:1", "double:0", "double:1", "double:2"])
    # AND each outcome reached the parent exactly once
    received = [e.correlation_id for e in h.events(handle.run_id) if e.type is EventType.HOOK_RECEIVED]
    assert len(received) == len(set(received)) == 5


def waiting_family(h: Harness, token: str) -> tuple[Runtime, RunHandle, str]:
    """A parent waiting on its one child, which waits on the hook ``token``: (runtime, parent, child id)."""
    runtime = h.runtime_for(family_app([]))
    handle = runtime.start("waiting_parent", token)
    h.settle()
    [kid] = children_of(h, handle.run_id)
    assert h.status(kid) is RunStatus.RUNNING
    return runtime, handle, kid


def test_cancelling_a_parent_cancels_its_waiting_child(harness: Harness) -> None:
    # GIVEN a parent whose child waits on a hook
    h = harness
    _, handle, kid = waiting_family(h, "tok-cancel")
    # WHEN the parent is cancelled
    assert handle.cancel("stop") is True
    h.settle()
    # THEN the child is cancelled too, and the parent stays cancelled
    assert h.status(kid) is RunStatus.CANCELLED
    assert handle.status() is RunStatus.CANCELLED
    with pytest.raises(RunCancelledError):
        handle.result(timeout=0)


def test_a_cancelled_child_raises_in_its_parent(harness: Harness) -> None:
    # GIVEN a parent waiting on a child that waits on a hook
    h = harness
    runtime, handle, kid = waiting_family(h, "tok-child")
    # WHEN the child alone is cancelled
    assert runtime.get_run(kid).cancel() is True
    # THEN the parent hears of it and fails with the child's cancellation
    assert h.settle(handle) is RunStatus.FAILED
    with pytest.raises(WorkflowFailedError) as failed:
        handle.result(timeout=0)
    assert failed.value.error_type == "world_aws.errors.RunCancelledError"


def test_a_child_resumed_by_its_hook_completes_its_parent(harness: Harness) -> None:
    h = harness
    runtime, handle, _ = waiting_family(h, "tok-ok")
    runtime.resume_hook("tok-ok", "yes")
    assert h.settle(handle) is RunStatus.COMPLETED
    assert handle.result(timeout=0) == "yes"


def test_child_hook_tokens_are_reserved(harness: Harness) -> None:
    # GIVEN a parent waiting on a child
    h = harness
    runtime, handle, kid = waiting_family(h, "tok-forge")
    # THEN nobody can forge the child's outcome through resume_hook
    with pytest.raises(BadInput):
        runtime.resume_hook(CHILD_TOKEN_PREFIX + kid, {"status": "completed", "output": b""})
    assert handle.status() is RunStatus.RUNNING
