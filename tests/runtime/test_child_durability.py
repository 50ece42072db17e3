"""Issue 16 item 1: a parent is never stranded by a crash around its child's start or end.

Each test injects one fault at the World call where a child's start or end could
be lost, on both Worlds, and settles the queues: the parent must end with its
fault-free result, with one child run and one outcome in its log. The last test
is the defence in depth: a child ended by a caller that died before telling the
parent is found by the reconciler's wake of the parent.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from world_aws import WorkflowFailedError, Workflows, create_hook
from world_aws.contract.payload import InvokePayload
from world_aws.contract.records import EventType, RunStatus
from world_aws.contract.transport import decode_payload
from world_aws.contract.world import Delivery, HandlerResult, MessageHandler, Redeliver
from world_aws.engine.children import CHILD_TOKEN_PREFIX
from world_aws.errors import Transient
from world_aws.worker.config import ReconcilerConfig
from world_aws.worker.reconciler import Reconciler

from .harness import Harness
from .spy import Call
from .test_stranding import Crash, survive_crashes


def lineage_app() -> Workflows:
    app = Workflows()

    @app.step(name="dur.add")
    def add(x: int) -> int:
        return x + 1

    @app.workflow(name="dur.stepped")
    async def stepped(x: int) -> int:
        return await add(x)  # ends in the step consumer's inline continuation

    @app.workflow(name="dur.bare")
    async def bare(x: int) -> int:
        return x * 10  # ends on its first workflow delivery

    @app.workflow(name="dur.held")
    async def held(token: str) -> str:
        value: str = await create_hook(token=token)
        return value

    @app.workflow(name="dur.parent")
    async def parent(x: int) -> list[int]:
        return [await stepped(x), await bare(x)]

    @app.workflow(name="dur.waiter")
    async def waiter(token: str) -> str:
        return await held(token)

    return app


def writes(etype: EventType, *, child_end: bool = False, child_hook: bool = False) -> Callable[[Call], bool]:
    def match(call: Call) -> bool:
        request = call.detail
        if getattr(request, "type", None) is not etype:
            return False
        if child_end:
            return str(getattr(request.data, "resume_id", "")).endswith(":end")
        if child_hook:
            return str(getattr(request.data, "token", "")).startswith(CHILD_TOKEN_PREFIX)
        return True

    return match


def outcomes_in_parent(harness: Harness, run_id: str) -> int:
    return sum(1 for e in harness.events(run_id) if e.type is EventType.HOOK_RECEIVED)


CHILD_END_CRASHES = {
    # the child told its parent, then died before its own run_completed
    "before_run_completed": (EventType.RUN_COMPLETED, False, False),
    # ... or after it
    "after_run_completed": (EventType.RUN_COMPLETED, True, False),
    # the outcome landed in the parent, then the child died before waking it
    "after_outcome": (EventType.HOOK_RECEIVED, True, True),
}


@pytest.mark.parametrize("times", [1, 2], ids=["first_end", "both_ends"])
@pytest.mark.parametrize("crash", list(CHILD_END_CRASHES))
def test_a_crash_around_a_childs_end_does_not_strand_its_parent(
    harness: Harness, crash: str, times: int
) -> None:
    # GIVEN children whose invocations die around their end: the first child ends in a
    # step consumer's inline continuation, the second on a workflow delivery
    etype, after, child_end = CHILD_END_CRASHES[crash]
    runtime = harness.runtime_for(lineage_app())
    harness.spy.inject(
        "events.create", Crash(), match=writes(etype, child_end=child_end), times=times, after=after
    )
    # WHEN the queues settle (the messages of the children come back)
    handle = runtime.start("dur.parent", 4)
    # THEN the parent got both results, each outcome recorded once, each child ended once
    assert harness.settle(handle, intercept=survive_crashes) is RunStatus.COMPLETED
    assert handle.result(timeout=0) == [5, 40]
    assert outcomes_in_parent(harness, handle.run_id) == 2
    kids = [
        (e.data.token or "").removeprefix(CHILD_TOKEN_PREFIX)
        for e in harness.events(handle.run_id)
        if e.type is EventType.HOOK_CREATED
    ]
    for kid in kids:
        assert harness.event_types(kid).count(EventType.RUN_COMPLETED) == 1


def test_a_crash_before_the_parents_child_hook_is_written(harness: Harness) -> None:
    # GIVEN a parent pass that dies after starting its child, before the call's hook_created
    runtime = harness.runtime_for(lineage_app())
    harness.spy.inject("events.create", Crash(), match=writes(EventType.HOOK_CREATED, child_hook=True))
    # WHEN the queues settle
    handle = runtime.start("dur.parent", 1)
    # THEN the parent completed; each child was started once and its hook created once
    assert harness.settle(handle, intercept=survive_crashes) is RunStatus.COMPLETED
    assert handle.result(timeout=0) == [2, 10]
    types = harness.event_types(handle.run_id)
    assert types.count(EventType.HOOK_CREATED) == 2 and types.count(EventType.HOOK_RECEIVED) == 2


def test_a_lost_answer_to_the_childs_outcome_is_recorded_once(harness: Harness) -> None:
    # GIVEN an outcome write into the parent that lands while its caller sees a timeout
    runtime = harness.runtime_for(lineage_app())
    harness.spy.inject(
        "events.create",
        Transient("timed out"),
        match=writes(EventType.HOOK_RECEIVED, child_end=True),
        after=True,
    )
    # WHEN the queues settle
    handle = runtime.start("dur.parent", 2)
    # THEN the retry was deduplicated: one outcome per child
    assert harness.settle(handle) is RunStatus.COMPLETED
    assert handle.result(timeout=0) == [3, 20]
    assert outcomes_in_parent(harness, handle.run_id) == 2


def test_a_child_cancelled_by_a_caller_that_died_is_found_by_the_reconciler(harness: Harness) -> None:
    # GIVEN a parent waiting on a child, and a caller whose cancel of the child died
    # right after run_cancelled landed (it never told the parent, and never retried)
    runtime = harness.runtime_for(lineage_app())
    handle = runtime.start("dur.waiter", "tok-rec")
    harness.settle()
    [kid] = [
        (e.data.token or "").removeprefix(CHILD_TOKEN_PREFIX)
        for e in harness.events(handle.run_id)
        if e.type is EventType.HOOK_CREATED
    ]
    harness.spy.inject("events.create", Crash(), match=writes(EventType.RUN_CANCELLED), after=True)
    with pytest.raises(Crash):
        runtime.get_run(kid).cancel()
    harness.settle()
    assert harness.status(kid) is RunStatus.CANCELLED
    assert handle.status() is RunStatus.RUNNING
    # WHEN the reconciler wakes the silent parent
    harness.advance(700)
    config = ReconcilerConfig(after_seconds=600, max_runs_per_tick=10, sweep_lag_seconds=600)
    woken = Reconciler(harness.world, config).tick().woken
    assert handle.run_id in [w.run_id for w in woken]
    # THEN its pass finds the ended child and the parent fails with the child's cancellation
    assert harness.settle(handle) is RunStatus.FAILED
    with pytest.raises(WorkflowFailedError) as failed:
        handle.result(timeout=0)
    assert failed.value.error_type.endswith("RunCancelledError")


def test_a_child_whose_parent_was_cancelled_before_its_first_delivery_cancels_itself(
    harness: Harness,
) -> None:
    # GIVEN a parent pass that started its child and died before the call's hook, and a
    # cancel of the parent before the child's first delivery (so the cancel knows no child)
    runtime = harness.runtime_for(lineage_app())
    harness.spy.inject("events.create", Crash(), match=writes(EventType.HOOK_CREATED, child_hook=True))
    handle = runtime.start("dur.waiter", "tok-orphan")

    def hold_children(delivery: Delivery, handle_it: MessageHandler) -> HandlerResult:
        payload = decode_payload(delivery.body)
        if isinstance(payload, InvokePayload) and payload.run_id != handle.run_id:
            return Redeliver(5.0)
        return survive_crashes(delivery, handle_it)

    harness.drain(intercept=hold_children)
    [kid] = [c.run_id for c in harness.spy.calls("events.create") if c.run_id not in (None, handle.run_id)][
        :1
    ]
    assert handle.cancel() is True
    # WHEN the child's first message is delivered
    harness.settle()
    # THEN the child found its parent cancelled and cancelled itself, before running anything
    assert harness.status(kid) is RunStatus.CANCELLED
    assert EventType.HOOK_CREATED not in harness.event_types(kid)
