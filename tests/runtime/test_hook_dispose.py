"""``hook.dispose()`` in a workflow: the token is released while the run goes on, on both Worlds."""

from __future__ import annotations

import pytest

from harness.harness import Harness
from world_aws import HookDisposedError, NotFound, Workflows, create_hook
from world_aws.contract.records import EventType, RunStatus


def rounds_app() -> Workflows:
    """Takes one vote on a token, disposes the hook, then reuses the token for a second round."""
    app = Workflows()

    @app.workflow()
    async def rounds(topic: str) -> list[str]:
        first = create_hook(token=f"vote:{topic}")
        votes = [await first]
        first.dispose()
        try:
            await first
        except HookDisposedError:
            votes.append("first hook closed")
        second = create_hook(token=f"vote:{topic}")  # the released token, reused
        votes.append(await second)
        second.dispose()
        await create_hook(token=f"close:{topic}")  # suspends with the dispose to write
        return votes

    return app


def test_disposed_hook_frees_its_token_for_a_new_hook_in_the_same_run(harness: Harness) -> None:
    # GIVEN a run waiting on its first hook
    runtime = harness.runtime_for(rounds_app())
    handle = runtime.start("rounds", "budget")
    assert harness.settle(handle) is RunStatus.RUNNING
    first = harness.world.hooks.get_by_token("vote:budget")
    # WHEN it is resumed, the workflow disposes the hook and creates a new one on the same token
    runtime.resume_hook("vote:budget", "yes")
    assert harness.settle(handle) is RunStatus.RUNNING
    # THEN the token now belongs to the second hook, the first is disposed
    second = harness.world.hooks.get_by_token("vote:budget")
    assert second.hook_id != first.hook_id
    assert [h.hook_id for h in harness.world.hooks.list(handle.run_id)] == [second.hook_id]
    # WHEN the second is resumed and disposed, and the run waits on another hook
    runtime.resume_hook("vote:budget", "no")
    assert harness.settle(handle) is RunStatus.RUNNING
    # THEN the token is free while the run still runs: a resume is NotFound
    with pytest.raises(NotFound):
        runtime.resume_hook("vote:budget", "late")
    types = harness.event_types(handle.run_id)
    assert types.count(EventType.HOOK_DISPOSED) == 2
    assert types.count(EventType.HOOK_CONFLICT) == 0
    # AND when that one is resumed the run completes with what the hooks received
    runtime.resume_hook("close:budget", None)
    assert harness.settle(handle) is RunStatus.COMPLETED
    assert handle.result(timeout=0) == ["yes", "first hook closed", "no"]


def test_async_for_over_a_hook_ends_when_the_workflow_disposes_it(memory_harness: Harness) -> None:
    app = Workflows()

    @app.workflow()
    async def collect(topic: str) -> list[str]:
        hook = create_hook(token=f"items:{topic}")
        items: list[str] = []
        async for item in hook:
            items.append(item)
            if item == "last":
                hook.dispose()
        return items

    runtime = memory_harness.runtime_for(app)
    handle = runtime.start("collect", "t")
    memory_harness.settle(handle)
    for item in ("a", "last"):
        runtime.resume_hook("items:t", item)
        memory_harness.settle(handle)
    assert handle.status() is RunStatus.COMPLETED
    assert handle.result(timeout=0) == ["a", "last"]
