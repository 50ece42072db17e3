"""process_sqs_event: one Lambda SQS batch to a MessageHandler and back to a partial batch response."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import cbor2
import pytest

from infra.events.make_events import EVENTS_DIR, QUEUE_NAMES, build_events, render
from world_aws.aws.infra.provision import ProvisionedResources
from world_aws.aws.queue import sqs_wire
from world_aws.aws.queue.lambda_sqs import process_sqs_event
from world_aws.aws.queue.sqs import SqsQueue
from world_aws.contract.clock import ManualClock, epoch_ms, from_epoch_ms
from world_aws.contract.limits import MAX_DELAY_SECONDS
from world_aws.contract.payload import InvokePayload
from world_aws.contract.transport import decode_payload, encode_payload
from world_aws.contract.world import Ack, Delivery, HandlerResult, QueueName, Redeliver
from world_aws.local.embedded import EmbeddedAws

ReceiveEvent = Callable[[QueueName], dict[str, Any]]
BODY = encode_payload(InvokePayload(run_id="wrun_chain"))


class Recorder:
    """A handler that notes each delivery and answers with ``result``."""

    def __init__(self, result: HandlerResult | Exception | None = None) -> None:
        self.result = result if result is not None else Ack()
        self.deliveries: list[Delivery] = []

    def __call__(self, delivery: Delivery) -> HandlerResult:
        self.deliveries.append(delivery)
        if isinstance(self.result, Exception):
            raise self.result
        return self.result


def _failures(response: Any) -> set[str]:
    return {failure["itemIdentifier"] for failure in response["batchItemFailures"]}


# ---------------------------------------------------------------- sample events


def test_committed_sample_events_are_what_make_events_writes() -> None:
    for name, event in build_events().items():
        assert (EVENTS_DIR / name).read_text(encoding="utf-8") == render(event), name


@pytest.mark.parametrize(
    ("file_name", "queue"),
    [("sqs_workflow_event.json", QueueName.WORKFLOW), ("sqs_step_event.json", QueueName.STEP)],
)
def test_sample_events_are_delivered_as_valid_payloads(
    embedded: EmbeddedAws, file_name: str, queue: QueueName
) -> None:
    # GIVEN a sample Lambda event, and queue URLs whose names match its ARN
    event = json.loads(Path(EVENTS_DIR / file_name).read_text(encoding="utf-8"))
    urls = {
        QueueName(q): f"https://sqs.us-east-1.amazonaws.com/123456789012/{name}"
        for q, name in QUEUE_NAMES.items()
    }
    handler = Recorder()
    # WHEN processed
    response = process_sqs_event(event, handler, sqs=embedded.clients.sqs, queue_urls=urls)
    # THEN the handler got the CBOR bytes of a valid payload, from the right queue, attempt 1
    assert response == {"batchItemFailures": []}
    (delivery,) = handler.deliveries
    assert (delivery.queue, delivery.attempt) == (queue, 1)
    assert delivery.message_id == event["Records"][0]["messageId"]
    payload = decode_payload(delivery.body)
    assert isinstance(payload, InvokePayload) and payload.run_id.startswith("wrun_")


# ---------------------------------------------------------------- outcomes


def test_every_record_failing_still_returns_the_partial_response(
    sqs: Any, resources: ProvisionedResources, receive_event: ReceiveEvent
) -> None:
    for _ in range(3):
        sqs.send_message(QueueUrl=resources.step_queue_url, MessageBody="not base64!")
    event = receive_event(QueueName.STEP)
    response = process_sqs_event(event, Recorder(), sqs=sqs, queue_urls=resources.queue_urls())
    assert _failures(response) == {r["messageId"] for r in event["Records"]}


def test_a_handler_that_raises_fails_only_its_record(
    sqs: Any, resources: ProvisionedResources, receive_event: ReceiveEvent
) -> None:
    queue = SqsQueue(sqs, resources.queue_urls())
    good = queue.publish(QueueName.STEP, encode_payload(InvokePayload(run_id="good")))
    bad = queue.publish(QueueName.STEP, encode_payload(InvokePayload(run_id="bad")))

    def handler(delivery: Delivery) -> HandlerResult:
        payload = decode_payload(delivery.body)
        if isinstance(payload, InvokePayload) and payload.run_id == "bad":
            raise RuntimeError("boom")
        return Ack()

    response = process_sqs_event(
        receive_event(QueueName.STEP), handler, sqs=sqs, queue_urls=resources.queue_urls()
    )
    assert _failures(response) == {bad}
    assert good not in _failures(response)


def test_a_handler_returning_neither_ack_nor_redeliver_fails_its_record(
    sqs: Any, resources: ProvisionedResources, receive_event: ReceiveEvent
) -> None:
    message_id = SqsQueue(sqs, resources.queue_urls()).publish(QueueName.STEP, BODY)
    response = process_sqs_event(
        receive_event(QueueName.STEP),
        lambda d: None,
        sqs=sqs,
        queue_urls=resources.queue_urls(),  # type: ignore[arg-type,return-value]
    )
    assert _failures(response) == {message_id}


def test_redeliver_sets_the_visibility_and_reports_a_failure(
    sqs: Any, resources: ProvisionedResources, receive_event: ReceiveEvent
) -> None:
    # GIVEN a message held invisible for 60 s by its receive
    message_id = SqsQueue(sqs, resources.queue_urls()).publish(QueueName.STEP, BODY)
    event = receive_event(QueueName.STEP)
    # WHEN the handler asks for it again now
    response = process_sqs_event(event, Recorder(Redeliver(0)), sqs=sqs, queue_urls=resources.queue_urls())
    # THEN it is not deleted (failure) and is visible again at once, as the same message, attempt 2
    assert _failures(response) == {message_id}
    (record,) = receive_event(QueueName.STEP)["Records"]
    assert (record["messageId"], record["attributes"]["ApproximateReceiveCount"]) == (message_id, "2")


def test_redeliver_beyond_twelve_hours_is_carried_by_a_chained_copy_not_capped(
    sqs: Any,
    resources: ProvisionedResources,
    receive_event: ReceiveEvent,
    release_delayed: Callable[[str], list[int]],
    caplog: pytest.LogCaptureFixture,
) -> None:
    # GIVEN a received message whose handler asks to see it again far beyond SQS's 12 h of visibility
    clock = ManualClock()
    message_id = SqsQueue(sqs, resources.queue_urls()).publish(QueueName.STEP, BODY)
    event = receive_event(QueueName.STEP)
    response = process_sqs_event(
        event, Recorder(Redeliver(10**9)), sqs=sqs, queue_urls=resources.queue_urls(), clock=clock
    )
    # THEN it is acked, no visibility change was tried, and a copy (same message id) is re-enqueued,
    # chained up to the one-year horizon: SQS could not hold the message that long
    assert _failures(response) == set()
    assert not [r for r in caplog.records if "visibility" in r.getMessage()]
    sqs.delete_message(QueueUrl=resources.step_queue_url, ReceiptHandle=event["Records"][0]["receiptHandle"])
    assert release_delayed(resources.step_queue_url) == [900]
    (record,) = receive_event(QueueName.STEP)["Records"]
    attributes = record["messageAttributes"]
    assert attributes[sqs_wire.ORIGIN_ID_ATTRIBUTE]["stringValue"] == message_id
    due_at = int(attributes[sqs_wire.DUE_AT_ATTRIBUTE]["stringValue"])
    assert due_at == epoch_ms(clock.now()) + MAX_DELAY_SECONDS * 1000


def test_redeliver_visibility_is_capped_at_twelve_hours_less_the_message_age() -> None:
    assert sqs_wire.visibility_seconds(10**9) == 43_199
    assert sqs_wire.visibility_seconds(10**9, elapsed_seconds=100.2) == 43_200 - 101 - 1
    assert sqs_wire.visibility_seconds(2.1) == 3
    assert sqs_wire.visibility_seconds(-5) == 0


# ---------------------------------------------------------------- chained delays


def _advance_and_process(
    clock: ManualClock,
    seconds: float,
    sqs: Any,
    resources: ProvisionedResources,
    receive_event: ReceiveEvent,
    release_delayed: Callable[[str], list[int]],
    handler: Recorder,
) -> int | None:
    """Let the pending hop arrive ``seconds`` later; returns the next hop's delay (None: delivered)."""
    url = resources.workflow_queue_url
    clock.advance(seconds)
    event = receive_event(QueueName.WORKFLOW)
    (record,) = event["Records"]
    response = process_sqs_event(event, handler, sqs=sqs, queue_urls=resources.queue_urls(), clock=clock)
    assert response == {"batchItemFailures": []}
    sqs.delete_message(QueueUrl=url, ReceiptHandle=record["receiptHandle"])  # as Lambda does on success
    delays = release_delayed(url)
    return delays[0] if delays else None


def test_a_one_hour_delay_hops_900s_at_a_time_and_arrives_when_due(
    sqs: Any,
    resources: ProvisionedResources,
    receive_event: ReceiveEvent,
    release_delayed: Callable[[str], list[int]],
) -> None:
    # GIVEN a message published for one hour from now
    clock = ManualClock()
    due = clock.now() + timedelta(hours=1)
    message_id = SqsQueue(sqs, resources.queue_urls(), clock=clock).publish(
        QueueName.WORKFLOW, BODY, delay_seconds=3600
    )
    hop = release_delayed(resources.workflow_queue_url)[0]
    handler = Recorder()
    hops = [hop]
    # WHEN each hop arrives exactly when SQS releases it
    while hop is not None:
        hop = _advance_and_process(clock, hop, sqs, resources, receive_event, release_delayed, handler)
        if hop is not None:
            hops.append(hop)
    # THEN it took four 900 s hops, and the handler saw it once, at the due time, as the published message
    assert hops == [900, 900, 900, 900]
    (delivery,) = handler.deliveries
    assert clock.now() == due
    assert (delivery.message_id, delivery.body) == (message_id, BODY)


def test_a_three_day_delay_computes_each_hop_from_the_due_time_so_late_hops_do_not_drift(
    sqs: Any,
    resources: ProvisionedResources,
    receive_event: ReceiveEvent,
    release_delayed: Callable[[str], list[int]],
) -> None:
    clock = ManualClock()
    due_ms = epoch_ms(clock.now()) + 3 * 86_400_000
    message_id = SqsQueue(sqs, resources.queue_urls(), clock=clock).publish(
        QueueName.WORKFLOW, BODY, delay_seconds=3 * 86_400
    )
    assert release_delayed(resources.workflow_queue_url) == [900]
    handler = Recorder()

    def arrive(after: float) -> int | None:
        return _advance_and_process(clock, after, sqs, resources, receive_event, release_delayed, handler)

    # a hop on time, then one that arrives 37 s late: the next hops still aim at the due time
    assert arrive(900) == 900
    assert arrive(937) == 900
    # the consumer was down for two days: one hop later it is back on course
    assert arrive(2 * 86_400) == 900
    left_ms = due_ms - epoch_ms(clock.now()) - 900_000
    # skip ahead to the last stretch: the final hop is exactly the remainder
    assert arrive(900 + left_ms / 1000 - 250) == 250
    assert handler.deliveries == []
    assert arrive(250) is None
    # THEN it is delivered once, at its due time, no later than one hop
    (delivery,) = handler.deliveries
    assert clock.now() == from_epoch_ms(due_ms)
    assert delivery.message_id == message_id
    assert cbor2.loads(delivery.body) == cbor2.loads(BODY)


def test_a_hop_arriving_after_its_due_time_is_delivered_not_re_enqueued(
    sqs: Any,
    resources: ProvisionedResources,
    receive_event: ReceiveEvent,
    release_delayed: Callable[[str], list[int]],
) -> None:
    clock = ManualClock()
    SqsQueue(sqs, resources.queue_urls(), clock=clock).publish(QueueName.WORKFLOW, BODY, delay_seconds=1000)
    release_delayed(resources.workflow_queue_url)
    handler = Recorder()
    assert _advance_and_process(clock, 5000, sqs, resources, receive_event, release_delayed, handler) is None
    assert len(handler.deliveries) == 1
