"""Conformance: queue delivery (contract §4.3) and idempotency keys (contract §4.4).

Bodies are real invoke payloads (contract §4.2): a World's consumer may validate
them before the handler sees them, as the SQS event source does. Observed
through ``world.start_consumers(handler)`` and ``wait_idle``: a delayed message
is waited for only once it is due, and with the ``ManualClock`` it falls due
only when the test advances the clock.
"""

from __future__ import annotations

import pytest

from world_aws.contract.clock import ManualClock
from world_aws.contract.limits import IDEMPOTENCY_RETENTION_SECONDS
from world_aws.contract.world import Ack, Delivery, HandlerResult, QueueName, Redeliver, World
from world_aws.testing.conformance.support import Recorder, consuming, message, new_id

IDLE_TIMEOUT = 10.0


def test_published_message_is_delivered_once_with_attempt_one(world: World) -> None:
    recorder = Recorder()
    with consuming(world, recorder) as consumers:
        step_id = world.queue.publish(QueueName.STEP, message("\x00step body"))
        flow_id = world.queue.publish(QueueName.WORKFLOW, message("flow body"))
        assert consumers.wait_idle(IDLE_TIMEOUT)
    got = sorted((d.queue.value, d.message_id, d.attempt, d.body) for d in recorder.deliveries)
    assert got == sorted(
        [
            (QueueName.STEP.value, step_id, 1, message("\x00step body")),
            (QueueName.WORKFLOW.value, flow_id, 1, message("flow body")),
        ]
    )


def test_publish_with_a_retained_idempotency_key_returns_the_first_id(world: World) -> None:
    # GIVEN a message published with an idempotency key
    key = f"{new_id('step')}:0badc0de"
    first = world.queue.publish(QueueName.STEP, message("first"), idempotency_key=key)
    # WHEN the same key is published again
    second = world.queue.publish(QueueName.STEP, message("second"), idempotency_key=key)
    # THEN the first id comes back and only the first message is delivered
    assert second == first
    recorder = Recorder()
    with consuming(world, recorder) as consumers:
        assert consumers.wait_idle(IDLE_TIMEOUT)
    assert [(d.message_id, d.body) for d in recorder.deliveries] == [(first, message("first"))]


def test_distinct_idempotency_keys_publish_distinct_messages(world: World) -> None:
    ids = {world.queue.publish(QueueName.STEP, message("x"), idempotency_key=new_id("key")) for _ in range(3)}
    ids.add(world.queue.publish(QueueName.STEP, message("x")))
    assert len(ids) == 4


def test_idempotency_key_is_forgotten_after_its_retention(world: World, clock: ManualClock) -> None:
    key = new_id("key")
    first = world.queue.publish(QueueName.STEP, message("x"), idempotency_key=key)
    clock.advance(IDEMPOTENCY_RETENTION_SECONDS - 60)
    assert world.queue.publish(QueueName.STEP, message("x"), idempotency_key=key) == first
    clock.advance(120)
    assert world.queue.publish(QueueName.STEP, message("x"), idempotency_key=key) != first


@pytest.mark.queue_follows_clock
def test_redeliver_keeps_the_message_id_and_increments_attempt(world: World, clock: ManualClock) -> None:
    # GIVEN a handler that asks for the message again in 5 s on its first delivery
    def answer(delivery: Delivery) -> HandlerResult:
        return Redeliver(5) if delivery.attempt == 1 else Ack()

    recorder = Recorder(answer)
    with consuming(world, recorder) as consumers:
        message_id = world.queue.publish(QueueName.STEP, message("body"))
        assert consumers.wait_idle(IDLE_TIMEOUT)
        # WHEN the redelivery is not yet due THEN nothing more is delivered
        assert [d.attempt for d in recorder.deliveries] == [1]
        # WHEN 5 s pass THEN the same message comes back as attempt 2
        clock.advance(5)
        assert consumers.wait_idle(IDLE_TIMEOUT)
    assert [(d.message_id, d.attempt, d.body) for d in recorder.deliveries] == [
        (message_id, 1, message("body")),
        (message_id, 2, message("body")),
    ]


@pytest.mark.queue_follows_clock
def test_delayed_message_is_delivered_only_when_due(world: World, clock: ManualClock) -> None:
    recorder = Recorder()
    with consuming(world, recorder) as consumers:
        # GIVEN a message delayed 60 s
        message_id = world.queue.publish(QueueName.WORKFLOW, message("later"), delay_seconds=60)
        # WHEN 59 s pass THEN it is not delivered
        clock.advance(59)
        assert consumers.wait_idle(IDLE_TIMEOUT)
        assert recorder.deliveries == []
        # WHEN the delay is over THEN it is delivered once
        clock.advance(1)
        assert consumers.wait_idle(IDLE_TIMEOUT)
    assert [(d.message_id, d.attempt) for d in recorder.deliveries] == [(message_id, 1)]


@pytest.mark.queue_follows_clock
def test_delays_beyond_the_sqs_cap_are_honoured(world: World, clock: ManualClock) -> None:
    recorder = Recorder()
    with consuming(world, recorder) as consumers:
        world.queue.publish(QueueName.WORKFLOW, message("in two hours"), delay_seconds=7200)
        clock.advance(3600)
        assert consumers.wait_idle(IDLE_TIMEOUT)
        assert recorder.deliveries == []
        clock.advance(3600)
        assert consumers.wait_idle(IDLE_TIMEOUT)
    assert [d.body for d in recorder.deliveries] == [message("in two hours")]
