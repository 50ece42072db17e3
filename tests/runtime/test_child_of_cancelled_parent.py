"""A child whose parent was cancelled before it knew of it cancels itself, however it is first woken."""

from __future__ import annotations

from tests.runtime.failures import Crash, survive_crashes
from tests.runtime.harness import Harness
from tests.runtime.spy import Call, Publish
from world_aws import Workflows, create_hook
from world_aws.contract.records import RunStatus
from world_aws.contract.world import Delivery, HandlerResult, MessageHandler, Redeliver
from world_aws.runtime.config import ReconcilerConfig
from world_aws.runtime.reconciler import Reconciler


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


def test_a_child_whose_first_message_never_left_is_cancelled_with_its_parent(harness: Harness) -> None:
    runtime = harness.runtime_for(family_app())
    handle = runtime.start("rv.waiter", "tok-orphan-2")

    def child_start(call: Call) -> bool:
        detail = call.detail
        return (
            isinstance(detail, Publish)
            and detail.payload.run_input is not None
            and detail.payload.run_id != handle.run_id
        )

    # GIVEN a parent pass that died while sending its child's first message (run_created landed)
    harness.spy.inject("queue.publish", Crash(), match=child_start)

    def hold_parent(delivery: Delivery, handle_it: MessageHandler) -> HandlerResult:
        if delivery.attempt > 1:
            return Redeliver(60.0)  # its redelivery comes after the cancel
        return survive_crashes(delivery, handle_it)

    harness.drain(intercept=hold_parent)
    [kid] = [c.run_id for c in harness.spy.calls("events.create") if c.run_id not in (None, handle.run_id)][
        :1
    ]
    assert harness.status(kid) is RunStatus.PENDING
    # ... and the parent cancelled before its message came back (its cancel knows no child)
    assert handle.cancel() is True
    harness.settle()
    assert harness.status(kid) is RunStatus.PENDING
    # WHEN the reconciler sweeps and wakes the silent child
    harness.advance(700)
    config = ReconcilerConfig(after_seconds=600, max_runs_per_tick=10, sweep_lag_seconds=600)
    woken = Reconciler(harness.world, config).tick().woken
    assert kid in [w.run_id for w in woken]
    harness.settle()
    # THEN it finds its parent cancelled and cancels itself (ARCHITECTURE §6 says so)
    assert harness.status(kid) is RunStatus.CANCELLED
