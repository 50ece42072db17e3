"""Issue 16 item 5: continue-as-new and the events-per-run bound, on every World (``workflow/chain.py``)."""

from __future__ import annotations

import itertools

import pytest

from world_aws import ContinuedAsNew, Workflows, continue_as_new, create_hook
from world_aws.contract.payload import InvokePayload
from world_aws.contract.records import EventType, RunStatus
from world_aws.contract.transport import decode_payload
from world_aws.contract.world import Delivery, HandlerResult, MessageHandler, Redeliver
from world_aws.engine.chain_links import next_run_id
from world_aws.engine.children import ROOT_RUN_ID
from world_aws.errors import Transient
from world_aws.worker.config import RuntimeConfig
from world_aws.workflow.chain import CONTINUED_FROM, ERROR_CODE_EVENT_LIMIT

from .failures import failure_of
from .harness import Harness
from .spy import Call
from .test_stranding import Crash, survive_crashes


def looping_app(bodies: list[int]) -> Workflows:
    app = Workflows()

    @app.step(name="can.tick")
    def tick(i: int) -> int:
        bodies.append(i)
        return i

    @app.workflow(name="can.loop")
    async def loop(start: int, total: int, per_run: int) -> int:
        i = start
        while i < total:
            await tick(i)
            i += 1
            if i - start == per_run and i < total:
                continue_as_new(i, total, per_run)
        return i

    @app.workflow(name="can.parent")
    async def parent(total: int) -> int:
        return await loop(0, total, 2) + 100

    @app.workflow(name="can.forever")
    async def forever() -> int:
        i = 0
        while True:
            i += await tick(i)

    return app


def chain_of(harness: Harness, run_id: str) -> list[str]:
    """The run ids of a chain from ``run_id``, following each completed run's link."""
    runs = [run_id]
    while True:
        run = harness.world.runs.get(runs[-1])
        value = harness.runtime.app.serializer.loads(run.output or b"") if run.output else None
        if not isinstance(value, ContinuedAsNew):
            return runs
        runs.append(value.run_id)


def test_continue_as_new_chains_fresh_runs_with_one_root(harness: Harness) -> None:
    # GIVEN a loop of 5 steps that continues as new every 2 steps
    bodies: list[int] = []
    runtime = harness.runtime_for(looping_app(bodies))
    handle = runtime.start("can.loop", 0, 5, 2)
    # WHEN it settles
    assert harness.settle(handle) is RunStatus.COMPLETED
    runs = chain_of(harness, handle.run_id)
    assert harness.settle(runs[-1]) is RunStatus.COMPLETED
    # THEN the chain is 3 runs, each completed, linked and with the first run as root
    assert len(runs) == 3
    for before, after in itertools.pairwise(runs):
        run = harness.world.runs.get(after)
        assert run.attributes[CONTINUED_FROM] == before
        assert run.attributes[ROOT_RUN_ID] == handle.run_id
    # AND each run's log holds only its own steps; the result follows the chain
    assert [harness.event_types(r).count(EventType.STEP_COMPLETED) for r in runs] == [2, 2, 1]
    assert handle.result(timeout=0) == 5
    assert bodies == [0, 1, 2, 3, 4]


def test_a_crash_after_starting_the_next_run_starts_it_once(harness: Harness) -> None:
    # GIVEN a continuation that dies after starting the next run, before its own run_completed
    bodies: list[int] = []
    runtime = harness.runtime_for(looping_app(bodies))
    harness.spy.inject(
        "events.create", Crash(), match=lambda c: getattr(c.detail, "type", None) is EventType.RUN_COMPLETED
    )
    handle = runtime.start("can.loop", 0, 3, 2)
    # WHEN the queues settle
    harness.settle(handle, intercept=survive_crashes)
    runs = chain_of(harness, handle.run_id)
    assert harness.settle(runs[-1]) is RunStatus.COMPLETED
    # THEN the chain is the fault-free one: 2 runs, each step ran once
    assert len(runs) == 2
    assert handle.result(timeout=0) == 3
    assert bodies == [0, 1, 2]


def test_a_child_that_continues_as_new_returns_the_last_runs_result(harness: Harness) -> None:
    runtime = harness.runtime_for(looping_app([]))
    handle = runtime.start("can.parent", 5)
    assert harness.settle(handle) is RunStatus.COMPLETED
    assert handle.result(timeout=0) == 105
    # one outcome reached the parent: the last run's
    assert harness.event_types(handle.run_id).count(EventType.HOOK_RECEIVED) == 1


def test_a_run_over_the_event_limit_fails_with_a_clear_error(harness: Harness) -> None:
    # GIVEN a never-ending loop and a limit of 20 events per run
    runtime = harness.runtime_for(looping_app([]), RuntimeConfig(max_events_per_run=20))
    handle = runtime.start("can.forever")
    # WHEN it runs into the limit
    failed = failure_of(harness, handle)
    # THEN it failed with EVENT_LIMIT_EXCEEDED naming the limit and the way out
    assert failed.error_code == ERROR_CODE_EVENT_LIMIT
    assert "over the limit of 20" in failed.error_message and "continue_as_new" in failed.error_message
    assert len(harness.events(handle.run_id)) <= 20 + 4  # the last continuation's steps, then run_failed


def test_the_event_limit_comes_from_the_environment() -> None:
    assert RuntimeConfig.from_env({"WORKFLOW_MAX_EVENTS_PER_RUN": "123"}).max_events_per_run == 123
    assert RuntimeConfig.from_env({}).max_events_per_run == 50_000


def test_continue_as_new_outside_a_workflow_is_refused() -> None:
    with pytest.raises(RuntimeError, match="inside a workflow"):
        continue_as_new(1)


def inbox_app() -> Workflows:
    """A mailbox that continues as new after each payload, awaiting every one on the same token."""
    app = Workflows()

    @app.workflow(name="can.inbox")
    async def inbox(total: int) -> int:
        got: int = await create_hook(token="can-inbox")
        if total + got >= 2:
            return total + got
        continue_as_new(total + got)

    return app


def test_the_next_run_gets_the_token_its_predecessor_held_even_when_it_comes_first(
    harness: Harness,
) -> None:
    # GIVEN a mailbox run waiting on its hook, whose continuation will start the next run
    # and then fail to write its own run_completed once (a timeout): its message comes
    # back later (after SQS's visibility timeout), so the next run's first delivery comes
    # first, while the link is still running (a run's end releases its hooks)
    runtime = harness.runtime_for(inbox_app())
    handle = runtime.start("can.inbox", 0)
    harness.settle()
    second = next_run_id(handle.run_id)

    def link_end(call: Call) -> bool:
        return getattr(call.detail, "type", None) is EventType.RUN_COMPLETED and call.run_id == handle.run_id

    faults = [
        harness.spy.inject("events.create", Transient("timed out"), match=link_end),
        harness.spy.inject("events.append_after", Transient("timed out"), match=link_end),
    ]
    link_when_next_came: list[RunStatus] = []

    def next_run_first(delivery: Delivery, handle_message: MessageHandler) -> HandlerResult:
        # Any message of the link after the timeout (its redelivery, or a hand-on) waits
        # for the next run's first delivery.
        payload = decode_payload(delivery.body)
        run_id = payload.run_id if isinstance(payload, InvokePayload) else None
        if run_id == second and not link_when_next_came:
            link_when_next_came.append(harness.status(handle.run_id))
        if run_id == handle.run_id and any(f.fired for f in faults) and not link_when_next_came:
            return Redeliver(30.0)
        return handle_message(delivery)

    # WHEN the mailbox gets a payload and the queues settle
    runtime.resume_hook("can-inbox", 1)
    harness.settle(intercept=next_run_first)
    # THEN the next run came while the link was running; the link completed and the next
    # run waits on the same token (no hook_conflict)
    assert link_when_next_came == [RunStatus.RUNNING]
    assert harness.status(handle.run_id) is RunStatus.COMPLETED
    assert harness.status(second) is RunStatus.RUNNING
    assert EventType.HOOK_CONFLICT not in harness.event_types(second)
    # AND the next payload reaches it and ends the chain with the total
    runtime.resume_hook("can-inbox", 1)
    assert harness.settle(second) is RunStatus.COMPLETED
    assert handle.result(timeout=0) == 2
