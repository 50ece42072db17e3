"""Issue 2: a workflow runs to its result; failures, unknown workflows and bad arguments are clear.

The result and failure scenarios run in both dispatch modes (contract §5.2): resilient
(create and publish in parallel, the message carries the input) and sequential.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from harness.harness import Harness
from world_aws import BadInput, RuntimeConfig, WorkflowFailedError, Workflows
from world_aws.contract.records import EventType, RunStatus, owner_of
from world_aws.errors import SerializationError, UnknownWorkflow

MODES = {
    "inline": RuntimeConfig(),
    "resilient": RuntimeConfig(max_inline_steps=0, resilient_step_dispatch=True),
    "sequential": RuntimeConfig(max_inline_steps=0, resilient_step_dispatch=False),
}


@pytest.fixture(params=list(MODES))
def config(request: pytest.FixtureRequest) -> RuntimeConfig:
    return MODES[request.param]


def order_app() -> Workflows:
    app = Workflows()

    @app.step
    def price(item: str) -> int:
        return {"book": 1299, "lamp": 4500}[item]

    @app.step
    async def add_tax(cents: int) -> int:
        return cents + cents // 5

    @app.step
    def receipt(order_id: str, total: int) -> str:
        return f"{order_id}:{total}"

    @app.workflow
    async def checkout(order_id: str, item: str) -> dict[str, object]:
        cents = await price(item)
        total = await add_tax(cents)
        return {"receipt": await receipt(order_id, total), "total": total}

    @app.step(max_retries=2)
    def charge(order_id: str) -> None:
        raise ValueError(f"card declined for {order_id}")

    @app.workflow
    async def pay(order_id: str) -> None:
        await charge(order_id)

    return app


def test_three_step_workflow_completes_with_its_result(harness: Harness, config: RuntimeConfig) -> None:
    # GIVEN a workflow of three sequential steps
    runtime = harness.runtime_for(order_app(), config)
    # WHEN it runs to the end through the queues
    handle = runtime.start("checkout", "o-1", "lamp")
    status = harness.settle(handle)
    # THEN it completed with the value the steps computed, each step once, in order
    assert status is RunStatus.COMPLETED
    assert handle.result(timeout=0) == {"receipt": "o-1:5400", "total": 5400}
    events = harness.events(handle.run_id)
    completed = [e for e in events if e.type is EventType.STEP_COMPLETED]
    created = [e for e in events if e.type is EventType.STEP_CREATED]
    assert [(e.data.step_name or "").rsplit(".", 1)[-1] for e in created] == ["price", "add_tax", "receipt"]
    assert len(completed) == 3
    assert events[-1].type is EventType.RUN_COMPLETED


def test_step_that_keeps_raising_fails_the_run_with_its_error_kept(
    harness: Harness, config: RuntimeConfig
) -> None:
    # GIVEN a step that always raises, allowed 2 retries
    runtime = harness.runtime_for(order_app(), config)
    # WHEN the workflow runs
    handle = runtime.start("pay", "o-9")
    assert harness.settle(handle) is RunStatus.FAILED
    # THEN the run failed as a user error, keeping the step's exception type and message
    with pytest.raises(WorkflowFailedError) as caught:
        handle.result(timeout=0)
    assert caught.value.error_code == "USER_ERROR"
    assert "ValueError" in caught.value.error_message
    assert "card declined for o-9" in caught.value.error_message
    # AND the step ran its 3 attempts before failing (an inline first attempt starts in its create)
    events = harness.events(handle.run_id)
    types = [e.type for e in events]
    owned_creates = [e for e in events if e.type is EventType.STEP_CREATED and owner_of(e.data) is not None]
    assert types.count(EventType.STEP_STARTED) + len(owned_creates) == 3
    assert types.count(EventType.STEP_RETRYING) == 2
    assert types.count(EventType.STEP_FAILED) == 1


def test_start_of_an_unknown_workflow_is_refused_before_anything_is_written(harness: Harness) -> None:
    # GIVEN an app without a workflow called "refund"
    runtime = harness.runtime_for(order_app())
    # WHEN a client starts it
    with pytest.raises(UnknownWorkflow) as caught:
        runtime.start("refund", "o-1")
    # THEN the error names it and the registered ones, and nothing was written or published
    assert "'refund'" in str(caught.value)
    assert "checkout" in str(caught.value)
    assert harness.spy.calls("events.create") == []
    assert harness.spy.calls("queue.publish") == []


def test_message_for_a_workflow_this_deployment_lacks_fails_the_run_as_unknown_workflow(
    harness: Harness,
) -> None:
    # GIVEN a run started by an app that has "checkout", consumed by an app that does not
    starter = harness.runtime_for(order_app())
    handle = starter.start("checkout", "o-2", "book")
    other = Workflows()

    @other.workflow
    async def unrelated() -> None:
        return None

    consumer = harness.runtime_for(other)
    # WHEN its message is handled
    assert harness.settle(handle, runtime=consumer) is RunStatus.FAILED
    # THEN the run failed with UNKNOWN_WORKFLOW, naming the workflow
    with pytest.raises(WorkflowFailedError) as caught:
        handle.result(timeout=0)
    assert caught.value.error_code == "UNKNOWN_WORKFLOW"
    assert "'checkout'" in caught.value.error_message
    assert EventType.STEP_CREATED not in harness.event_types(handle.run_id)


@pytest.mark.parametrize(
    ("args", "kwargs", "complaint"),
    [
        (("o-1",), {}, "missing a required argument: 'item'"),
        (("o-1", "book", "extra"), {}, "too many positional arguments"),
        (("o-1", "book"), {"coupon": "X"}, "unexpected keyword argument 'coupon'"),
    ],
)
def test_arguments_that_do_not_bind_are_bad_input(
    harness: Harness, args: tuple[object, ...], kwargs: dict[str, Any], complaint: str
) -> None:
    # GIVEN checkout(order_id, item)
    runtime = harness.runtime_for(order_app())
    # WHEN started with arguments that do not fit
    with pytest.raises(BadInput) as caught:
        runtime.start("checkout", *args, **kwargs)
    # THEN the error names the workflow and the problem, and no run exists
    assert "'checkout'" in str(caught.value)
    assert complaint in str(caught.value)
    assert harness.spy.calls("queue.publish") == []


def test_unserializable_workflow_argument_is_refused_at_start(harness: Harness) -> None:
    # GIVEN a value the serializer does not know
    runtime = harness.runtime_for(order_app())
    # WHEN it is passed to start()
    with pytest.raises(SerializationError) as caught:
        runtime.start("checkout", "o-1", threading.Lock())
    # THEN the error names the type and the workflow; nothing was published
    assert "lock" in str(caught.value).lower()
    assert "'checkout'" in str(caught.value)
    assert harness.spy.calls("queue.publish") == []


def test_two_starts_with_one_idempotency_key_make_one_run(harness: Harness) -> None:
    # GIVEN two starts with the same idempotency key
    runtime = harness.runtime_for(order_app())
    first = runtime.start("checkout", "o-7", "book", idempotency_key="order-7")
    second = runtime.start("checkout", "o-7", "book", idempotency_key="order-7")
    # WHEN everything is delivered
    assert harness.settle(first) is RunStatus.COMPLETED
    # THEN both handles name one run, which ran once
    assert first.run_id == second.run_id
    assert second.result(timeout=0) == {"receipt": "o-7:1558", "total": 1558}
    types = harness.event_types(first.run_id)
    assert types.count(EventType.RUN_CREATED) == 1
    assert types.count(EventType.STEP_COMPLETED) == 3
    workflow_deliveries = [d for d in harness.deliveries if d.step_id is None]
    assert len({d.message_id for d in workflow_deliveries}) == 1
    # AND a third start after completion still names the same, completed run
    third = runtime.start("checkout", "o-7", "book", idempotency_key="order-7")
    harness.settle(third)
    assert third.run_id == first.run_id
    assert harness.event_types(first.run_id) == types
