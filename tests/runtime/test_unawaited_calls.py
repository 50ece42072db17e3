"""A step or child call the workflow forgot to await is reported, and a run that returns with one fails."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import pytest

from world_aws import Workflows, sleep
from world_aws.contract.records import RunStatus
from world_aws.testing.kit import WorkflowKit

KitFactory = Callable[..., WorkflowKit]
app = Workflows()


@app.step
def charge(order_id: str) -> str:
    return f"receipt-{order_id}"


@app.step
def pack(order_id: str, box: int) -> str:
    return f"{order_id}/{box}"


@app.workflow
async def forgetful(order_id: str) -> str:
    charge(order_id)  # no await
    return "done"


@app.workflow
async def returns_the_call(order_id: str) -> object:
    return charge(order_id)  # the future itself, never awaited


@app.workflow
async def forgets_then_fails(order_id: str) -> str:
    charge(order_id)
    raise ValueError("no stock")


@app.workflow
async def child_forgotten(order_id: str) -> str:
    forgetful(order_id)  # a child workflow's call, no await
    return "done"


@app.workflow
async def careful(order_id: str) -> list[str]:
    later = charge(order_id)  # awaited after a sleep: fine
    boxes = await asyncio.gather(*(pack(order_id, i) for i in range(3)))  # gather takes them: fine
    first, _ = await asyncio.wait([pack(order_id, 9)])  # so does asyncio.wait
    await sleep("1m")
    return [await later, *boxes, next(iter(first)).result()]


def test_a_step_called_without_await_fails_the_run_and_is_logged(
    workflow_kit: KitFactory, caplog: pytest.LogCaptureFixture
) -> None:
    kit = workflow_kit(app)
    with caplog.at_level(logging.WARNING, logger="world_aws.runtime"):
        run = kit.run(forgetful, "o-1")
    assert run.status is RunStatus.FAILED
    record = run.record()
    assert record.error_code == "UNAWAITED_CALL"
    assert run.error is not None and run.error.type.endswith("UnawaitedCallError")
    assert charge.name in run.error.message and "gather" in run.error.message
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(charge.name in w and "without awaiting" in w for w in warnings), warnings


def test_returning_the_call_itself_fails_the_same_way(workflow_kit: KitFactory) -> None:
    run = workflow_kit(app).run(returns_the_call, "o-2")
    assert (run.status, run.record().error_code) == (RunStatus.FAILED, "UNAWAITED_CALL")


def test_a_workflow_that_raises_keeps_its_error_and_the_call_is_logged(
    workflow_kit: KitFactory, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="world_aws.runtime"):
        run = workflow_kit(app).run(forgets_then_fails, "o-3")
    assert run.record().error_code == "USER_ERROR"
    assert run.error is not None and run.error.type.endswith("ValueError")
    assert any(charge.name in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)


def test_a_child_workflow_called_without_await_fails_the_run(workflow_kit: KitFactory) -> None:
    run = workflow_kit(app).run(child_forgotten, "o-4")
    assert run.record().error_code == "UNAWAITED_CALL"
    assert "forgetful" in (run.error.message if run.error else "")


def test_calls_awaited_later_or_through_gather_and_wait_are_fine(
    workflow_kit: KitFactory, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="world_aws.runtime"):
        run = workflow_kit(app).run(careful, "o-5")
    assert run.result == ["receipt-o-5", "o-5/0", "o-5/1", "o-5/2", "o-5/9"]
    assert not [r for r in caplog.records if "without awaiting" in r.getMessage()]
