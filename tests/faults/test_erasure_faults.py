"""Erasure racing the run's own messages (issue 42 item 5): nothing brings a half run back, nothing crashes.

A run's messages can outlive it: SQS delivers at least once, a delayed wake-up or a
retry's message may still be queued, a first message can come back after its run
ended. Each is delivered again once the run is erased, and once while the erasure is
under way (between the handler's run read and its writes).
"""

from __future__ import annotations

from typing import Any, cast

import pytest

from harness.harness import Harness
from world_aws import Workflows, create_hook
from world_aws.aws.codec import keys
from world_aws.aws.world import AwsWorld
from world_aws.contract.payload import InvokePayload
from world_aws.contract.records import RunStatus
from world_aws.contract.transport import encode_payload
from world_aws.contract.world import Ack, Delivery, HandlerResult, MessageHandler, QueueName
from world_aws.errors import NotFound
from world_aws.worker.config import RuntimeConfig

BIG = 150 * 1024  # the input goes by claim check (contract §4.2)


def app() -> Workflows:
    app = Workflows()

    @app.step
    def double(n: int) -> int:
        return 2 * n

    @app.workflow
    async def flow(data: bytes) -> int:
        first = await double(len(data))
        second = await double(first)
        await create_hook(token="erase:go")
        return second

    return app


def _ended_run(h: Harness) -> tuple[str, list[tuple[QueueName, InvokePayload]]]:
    """A run ended by a cancel while it waits on its hook (all its steps dispatched), and its messages."""
    runtime = h.runtime_for(app(), RuntimeConfig(max_inline_steps=0))
    handle = runtime.start("flow", b"x" * BIG)
    h.settle()
    assert h.status(handle.run_id) is RunStatus.RUNNING
    assert handle.cancel("done with it")
    h.settle()
    sent = [
        (record.queue, record.payload)
        for record in h.deliveries
        if isinstance(record.payload, InvokePayload) and record.payload.run_id == handle.run_id
    ]
    assert any(p.run_input is not None for _q, p in sent)  # its first message, creation data and all
    assert any(p.step_input is not None for _q, p in sent)  # step messages carrying their input
    return handle.run_id, sent


def _assert_gone(h: Harness, run_id: str) -> None:
    with pytest.raises(NotFound):
        h.world.runs.get(run_id)
    assert h.world.events.list(run_id) == []
    assert h.world.steps.list(run_id) == []
    world: Any = h.world
    if isinstance(world, AwsWorld):
        left = list(cast(AwsWorld, world).table.query_all("pk = :pk", {":pk": keys.run_pk(run_id)}))
        assert [item[keys.SK] for item in left] == [keys.RUN_SK]  # the tombstone alone
        assert keys.ERASED_AT in left[0] and "seq" not in left[0]


def test_messages_of_an_erased_run_delivered_again_are_acked_and_create_nothing(harness: Harness) -> None:
    # GIVEN an ended run, erased
    h = harness
    run_id, sent = _ended_run(h)
    h.runtime.delete_run(run_id)
    # WHEN every message it ever had comes back (its first one with the creation data too)
    before = len(h.deliveries)
    for queue, payload in sent:
        h.world.queue.publish(queue, encode_payload(payload))
    h.drain()
    # THEN each is acked, none raised, and the run stays gone
    again = h.deliveries[before:]
    assert len(again) == len(sent)
    assert all(record.error is None and isinstance(record.result, Ack) for record in again)
    assert h.drain() == 0  # nothing came back to be delivered again
    _assert_gone(h, run_id)


def test_an_erasure_landing_between_a_handlers_run_read_and_its_writes_leaves_no_half_run(
    harness: Harness,
) -> None:
    # GIVEN an ended run whose messages come back
    h = harness
    run_id, sent = _ended_run(h)
    for queue, payload in sent:
        h.world.queue.publish(queue, encode_payload(payload))
    # WHEN the run is erased while the first of them is being handled, after its first read
    erased: list[str] = []
    real_get = h.world.runs.get

    def erase_after_read(run: str, **kwargs: Any) -> Any:
        found = real_get(run, **kwargs)
        if run == run_id and not erased:
            erased.append(h.runtime.delete_run(run_id).run_id)
        return found

    def intercept(delivery: Delivery, handle: MessageHandler) -> HandlerResult:
        return handle(delivery)

    h.world.runs.get = erase_after_read  # type: ignore[method-assign]
    try:
        before = len(h.deliveries)
        h.drain(intercept=intercept)
    finally:
        del h.world.runs.get  # type: ignore[method-assign]
    # THEN the erasure happened mid-way, every delivery was acked, nothing raised
    assert erased == [run_id]
    again = h.deliveries[before:]
    assert again and all(record.error is None and isinstance(record.result, Ack) for record in again)
    # AND the run is not back, not even in part
    _assert_gone(h, run_id)
