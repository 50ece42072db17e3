"""A child whose parent was cancelled before it knew of it cancels itself, or was never created."""

from __future__ import annotations

import pytest

from tests.runtime.failures import Crash, survive_crashes
from tests.runtime.harness import Harness
from tests.runtime.spy import Call, Publish
from world_aws import Workflows, create_hook
from world_aws.contract.records import RunStatus
from world_aws.contract.world import Delivery, HandlerResult, MessageHandler, QueueName, Redeliver
from world_aws.errors import NotFound


def family_app() -> Workflows:
    app = Workflows()

    @app.workflow(name="rv.held")
    async def held(token: str) -> str:
        value: str = await create_hook(token=token)
        return value

    @app.workflow(name="rv.waiter")
    async def waiter(token: str) -> str:
        return await held(token)

    return app


@pytest.mark.parametrize("side", ["before", "after"])
def test_a_parent_cancelled_after_its_pass_died_inside_a_child_start_leaves_no_child_behind(
    harness: Harness, side: str
) -> None:
    runtime = harness.runtime_for(family_app())
    handle = runtime.start("rv.waiter", f"tok-orphan-{side}")

    def child_start(call: Call) -> bool:
        detail = call.detail
        return (
            isinstance(detail, Publish)
            and detail.payload.run_input is not None
            and detail.payload.run_id != handle.run_id
        )

    # GIVEN a parent pass that died at its child's first message: before it was sent, or
    # after (the child's run_created never made either way: the message goes first)
    harness.spy.inject("queue.publish", Crash(), match=child_start, after=side == "after")

    def hold_parent(delivery: Delivery, handle_it: MessageHandler) -> HandlerResult:
        if delivery.queue is QueueName.WORKFLOW and delivery.attempt > 1:
            return Redeliver(60.0)  # its redelivery comes after the cancel
        return survive_crashes(delivery, handle_it)

    harness.drain(intercept=hold_parent)
    kids = {c.detail.payload.run_id for c in harness.spy.calls("queue.publish") if child_start(c)}
    assert len(kids) == 1
    [kid] = kids
    # ... and the parent is cancelled before its message comes back (its cancel knows no child)
    assert handle.cancel() is True
    # WHEN the queues settle, with no reconciler tick
    harness.settle()
    # THEN the child never existed (its message never left), or its first delivery found the
    # parent cancelled and cancelled itself: nothing waits for the reconciler
    assert harness.status(handle.run_id) is RunStatus.CANCELLED
    if side == "before":
        with pytest.raises(NotFound):
            harness.world.runs.get(kid)
    else:
        assert harness.status(kid) is RunStatus.CANCELLED
    assert not [
        c
        for c in harness.spy.calls("events.create")
        if c.run_id == kid and c.detail.type.value == "run_created"
    ]
