"""Cancelling a continue_as_new chain reaches its live run; the reconciler finds the chain's end."""

from __future__ import annotations

from tests.runtime.harness import Harness
from world_aws import Workflows, continue_as_new, create_hook
from world_aws.contract.records import EventType, RunStatus
from world_aws.engine.chain_links import next_run_id
from world_aws.engine.children import CHILD_TOKEN_PREFIX


def chain_app() -> Workflows:
    app = Workflows()

    @app.workflow(name="rv.looper")
    async def looper(n: int) -> str:
        if n > 0:
            continue_as_new(n - 1)
        value: str = await create_hook(token="rv-loop-tok")
        return value

    @app.workflow(name="rv.parent")
    async def parent() -> str:
        return await looper(1)

    return app


def _kid(h: Harness, run_id: str) -> str:
    [kid] = [
        (e.data.token or "").removeprefix(CHILD_TOKEN_PREFIX)
        for e in h.events(run_id)
        if e.type is EventType.HOOK_CREATED
    ]
    return kid


def test_cancelling_a_parent_cancels_the_live_run_of_its_childs_chain(harness: Harness) -> None:
    # GIVEN a parent waiting on a child that continued as new once: the chain's second
    # run is running, waiting on a hook
    runtime = harness.runtime_for(chain_app())
    handle = runtime.start("rv.parent")
    harness.settle()
    kid = _kid(harness, handle.run_id)
    second = next_run_id(kid)
    assert harness.status(kid) is RunStatus.COMPLETED
    assert harness.status(second) is RunStatus.RUNNING
    # WHEN the parent is cancelled
    assert handle.cancel("stop") is True
    harness.settle()
    # THEN the child's live run is cancelled too (a cancelled parent's child does not run on)
    assert harness.status(second) is RunStatus.CANCELLED


def test_cancelling_the_first_run_of_a_chain_cancels_the_live_one(harness: Harness) -> None:
    app = Workflows()

    @app.workflow(name="rv.looper2")
    async def looper2(n: int) -> str:
        if n > 0:
            continue_as_new(n - 1)
        value: str = await create_hook(token="rv-loop-tok2")
        return value

    runtime = harness.runtime_for(app)
    handle = runtime.start("rv.looper2", 1)
    harness.settle()
    second = next_run_id(handle.run_id)
    assert harness.status(second) is RunStatus.RUNNING
    cancelled = handle.cancel("stop")
    harness.settle()
    # The handle's result() follows the chain; cancel() does not: the user's "cancel" is a no-op
    assert (cancelled, harness.status(second)) == (True, RunStatus.CANCELLED)


def test_a_chain_run_cancelled_by_a_caller_that_died_is_found_by_the_reconciler(harness: Harness) -> None:
    import pytest

    from tests.runtime.test_child_durability import writes
    from tests.runtime.test_stranding import Crash
    from world_aws.worker.config import ReconcilerConfig
    from world_aws.worker.reconciler import Reconciler

    # GIVEN a parent waiting on a child whose chain's second run waits on a hook, and a
    # caller whose cancel of that run died right after run_cancelled landed
    runtime = harness.runtime_for(chain_app())
    handle = runtime.start("rv.parent")
    harness.settle()
    second = next_run_id(_kid(harness, handle.run_id))
    harness.spy.inject("events.create", Crash(), match=writes(EventType.RUN_CANCELLED), after=True)
    with pytest.raises(Crash):
        runtime.get_run(second).cancel()
    harness.settle()
    assert harness.status(second) is RunStatus.CANCELLED
    assert handle.status() is RunStatus.RUNNING
    # WHEN the reconciler wakes the silent parent
    harness.advance(700)
    config = ReconcilerConfig(after_seconds=600, max_runs_per_tick=10, sweep_lag_seconds=600)
    woken = Reconciler(harness.world, config).tick().woken
    assert handle.run_id in [w.run_id for w in woken]
    # THEN its pass finds the ended chain and the parent ends (it fails with the cancellation)
    harness.settle()
    assert handle.status() is RunStatus.FAILED


def test_a_cancel_between_the_next_runs_start_and_the_links_end_stops_the_chain(harness: Harness) -> None:
    from tests.runtime.spy import Call
    from world_aws import Runtime

    app = Workflows()

    @app.workflow(name="rv.looper3")
    async def looper3(n: int) -> str:
        if n > 0:
            continue_as_new(n - 1)
        value: str = await create_hook(token="rv-loop-tok3")
        return value

    runtime = harness.runtime_for(app)
    caller = Runtime(harness.world, app)  # the user's process
    handle = runtime.start("rv.looper3", 1)
    second = next_run_id(handle.run_id)
    cancelled: list[bool] = []

    def cancel_before_the_link(call: Call) -> bool:
        # The continuation started the next run; before its run_completed{ContinuedAsNew}
        # lands, the user cancels the run.
        detail = call.detail
        ours = getattr(detail, "type", None) is EventType.RUN_COMPLETED and call.run_id == handle.run_id
        if ours and not cancelled:
            cancelled.append(caller.get_run(handle.run_id).cancel("stop"))
        return False

    harness.spy.inject("events.create", RuntimeError("unused"), match=cancel_before_the_link)
    harness.spy.inject("events.append_after", RuntimeError("unused"), match=cancel_before_the_link)
    harness.settle()
    try:
        assert cancelled == [True] and harness.status(handle.run_id) is RunStatus.CANCELLED
        # THEN the chain stops: the run started for it does not run on after the cancel
        assert harness.status(second) is RunStatus.CANCELLED
    finally:
        caller.close()
