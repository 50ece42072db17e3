"""Faults of the tail append (ARCHITECTURE §8 "The tail"), through the runtime on the AWS World.

The sequential inline step commits its outcome and the next create in the run item's
``UpdateItem`` (the tail) and puts the batch item after it, beside the next body. A
delivery that dies between the two, or whose puts keep failing, must leave a run that
completes with every event once: no hole sealed with a ``noop`` inside a batch, no
step body started twice by a takeover, no terminal event missing.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from botocore.exceptions import ClientError

from harness.harness import Harness
from world_aws import Workflows
from world_aws.contract.clock import ManualClock
from world_aws.contract.records import EventType, ResolveData, RunStatus

STEPS = 4


class DiedHere(Exception):
    """The delivery's process died at this call (its outcome is what DynamoDB kept)."""


@pytest.fixture
def aws_harness() -> Iterator[Harness]:
    from harness.sqs_pump import aws_harness as build

    with build(ManualClock()) as built:
        yield built
        built.close()


def sequential_app(bodies: list[int]) -> Workflows:
    app = Workflows()

    @app.step
    def add(i: int) -> int:
        bodies.append(i)
        return i + 1

    @app.workflow
    async def chain(n: int) -> int:
        total = 0
        for i in range(n):
            total += await add(i)
        return total

    return app


def _is_tail_update(params: dict[str, Any]) -> bool:
    return ":tail" in params.get("ExpressionAttributeValues", {})


@contextmanager
def on_dynamodb(harness: Harness, event: str, handler: Any) -> Iterator[None]:
    events = harness.world.clients.dynamodb.meta.events  # type: ignore[attr-defined]
    events.register(event, handler)
    try:
        yield
    finally:
        events.unregister(event, handler)


def _assert_whole(harness: Harness, run_id: str) -> None:
    events = harness.events(run_id, resolve_data=ResolveData.NONE)
    types = [e.type for e in events]
    assert types.count(EventType.STEP_CREATED) == STEPS
    assert types.count(EventType.STEP_COMPLETED) == STEPS
    assert types.count(EventType.RUN_COMPLETED) == 1 and types[-1] is EventType.RUN_COMPLETED
    created = [e.correlation_id for e in events if e.type is EventType.STEP_CREATED]
    assert len(set(created)) == STEPS


@pytest.mark.parametrize("which", [1, 2])
def test_a_delivery_that_dies_between_the_tail_update_and_its_put_leaves_a_whole_run(
    aws_harness: Harness, which: int
) -> None:
    # GIVEN a 4-step sequential workflow whose delivery dies right after its n-th tail
    # update landed (before the batch item's put)
    bodies: list[int] = []
    runtime = aws_harness.runtime_for(sequential_app(bodies))
    died, tails = _died_after_tail(which)
    with (
        on_dynamodb(aws_harness, "before-parameter-build.dynamodb.UpdateItem", _remember),
        on_dynamodb(aws_harness, "after-call.dynamodb.UpdateItem", died),
    ):
        handle = runtime.start("chain", STEPS)
        status = aws_harness.settle(handle)
    # THEN the delivery died there, and the run completed with every event once, its result right
    assert tails["tails"] >= which
    assert status is RunStatus.COMPLETED
    assert handle.result(timeout=0) == sum(range(1, STEPS + 1))
    _assert_whole(aws_harness, handle.run_id)
    # AND each body ran once: the redelivery's replay finds the dead delivery's batch
    # committed (put from the run item's tail), so no body runs again
    assert sorted(set(bodies)) == list(range(STEPS))
    assert len(bodies) == STEPS


def _remember(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
    context["tail"] = _is_tail_update(params)


def _died_after_tail(which: int) -> tuple[Any, dict[str, int]]:
    """An ``after-call`` handler that raises after the ``which``-th tail update; and its count."""
    count = {"tails": 0}

    def handler(context: dict[str, Any], **_: Any) -> None:
        if not context.get("tail"):
            return
        count["tails"] += 1
        if count["tails"] == which:
            raise DiedHere(f"died after tail update {which}")

    return handler, count


@pytest.mark.parametrize("failures", [3, 6])
def test_a_run_whose_batch_puts_keep_failing_for_a_while_completes_whole(
    aws_harness: Harness, failures: int
) -> None:
    # GIVEN a 4-step sequential workflow whose first batch item puts are throttled: 3 are
    # all of run_created's tries (its run item holds it as its tail, and start() answers),
    # 6 go on into the first append's
    bodies: list[int] = []
    runtime = aws_harness.runtime_for(sequential_app(bodies))
    left = {"failures": failures}

    def throttle(params: dict[str, Any], **_: Any) -> None:
        sk = params.get("Item", {}).get("sk", {}).get("S", "")
        if sk.startswith("evt#") and left["failures"] > 0:
            left["failures"] -= 1
            raise ClientError(
                {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "injected"}},
                "PutItem",
            )

    with on_dynamodb(aws_harness, "before-parameter-build.dynamodb.PutItem", throttle):
        handle = runtime.start("chain", STEPS)
        status = aws_harness.settle(handle)
    # THEN it completed with every event once
    assert left["failures"] == 0
    assert status is RunStatus.COMPLETED
    assert handle.result(timeout=0) == sum(range(1, STEPS + 1))
    _assert_whole(aws_harness, handle.run_id)
    assert sorted(set(bodies)) == list(range(STEPS))
