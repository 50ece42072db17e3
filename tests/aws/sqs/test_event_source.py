"""LocalEventSource: Lambda's SQS event source played locally (batches, deletes, DLQ, concurrency, stop)."""

from __future__ import annotations

import base64
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import cbor2
import pytest

from world_aws.aws.infra.provision import ProvisionedResources
from world_aws.aws.queue.event_source import EventSourceOptions, LocalEventSource
from world_aws.aws.queue.sqs import SqsQueue
from world_aws.contract.payload import InvokePayload
from world_aws.contract.transport import decode_payload, encode_payload
from world_aws.contract.world import Ack, Delivery, HandlerResult, QueueName, Redeliver

Handler = Callable[[Delivery], HandlerResult]
GOOD = [encode_payload(InvokePayload(run_id=f"wrun_good_{i}")) for i in range(2)]
VALID = encode_payload(InvokePayload(run_id="wrun_x", step_id="step_1", step_name="charge"))

# Each bad body (as SQS text) and what its logged reason must mention.
BAD_CORPUS = {
    "not base64": ("%%% not base64 %%%", "not base64"),
    "not CBOR": (base64.b64encode(b"\xff\xfe\xfd").decode(), "malformed CBOR"),
    "trailing bytes": (base64.b64encode(VALID + b"\x00").decode(), "trailing"),
    "truncated": (base64.b64encode(VALID[:-3]).decode(), "truncated"),
    "wrong type": (base64.b64encode(cbor2.dumps({"run_id": 42})).decode(), "run_id"),
    "step input as str": (
        base64.b64encode(
            cbor2.dumps({"run_id": "r", "step_id": "s", "step_name": "n", "step_input": {"input": "text"}})
        ).decode(),
        "step_input",
    ),
    "missing run_id": (base64.b64encode(cbor2.dumps({"step_id": "s"})).decode(), "run_id"),
    "over the size limit": ("A" * 262_148, "exceeds"),
}


class Recorder:
    """Notes every delivery; answers with ``decide(delivery)`` (Ack by default)."""

    def __init__(self, decide: Handler | None = None) -> None:
        self.decide = decide or (lambda _d: Ack())
        self.deliveries: list[Delivery] = []
        self._lock = threading.Lock()

    def __call__(self, delivery: Delivery) -> HandlerResult:
        with self._lock:
            self.deliveries.append(delivery)
        return self.decide(delivery)

    def run_ids(self) -> list[str]:
        ids = []
        for delivery in self.deliveries:
            payload = decode_payload(delivery.body)
            assert isinstance(payload, InvokePayload)
            ids.append(payload.run_id)
        return ids


@pytest.fixture
def start(sqs: Any, resources: ProvisionedResources) -> Iterator[Callable[..., LocalEventSource]]:
    started: list[LocalEventSource] = []

    def start_source(handler: Handler, **options: Any) -> LocalEventSource:
        # Short polls: stop() then never waits out a long poll (tests stop often).
        options.setdefault("wait_time_seconds", 0)
        source = LocalEventSource(sqs, resources.queue_urls(), handler, EventSourceOptions(**options))
        started.append(source)
        return source

    yield start_source
    for source in started:
        source.stop()


def _drain(sqs: Any, url: str) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    while True:
        batch = sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=60, MessageSystemAttributeNames=["All"]
        ).get("Messages", [])
        if not batch:
            return messages
        messages.extend(batch)


def test_bad_messages_reach_the_dlq_after_their_redrive_count_and_good_ones_run_once(
    sqs: Any,
    resources: ProvisionedResources,
    start: Callable[..., LocalEventSource],
    caplog: pytest.LogCaptureFixture,
) -> None:
    # GIVEN the bad-message corpus and two good messages in one queue (so in the same batches)
    url = resources.step_queue_url
    bad_ids = {
        sqs.send_message(QueueUrl=url, MessageBody=body)["MessageId"]: (name, reason)
        for name, (body, reason) in BAD_CORPUS.items()
    }
    queue = SqsQueue(sqs, resources.queue_urls())
    for body in GOOD:
        queue.publish(QueueName.STEP, body)
    handler = Recorder()
    # WHEN the event source consumes (visibility 0 so a failure comes straight back; one batch at a time)
    source = start(handler, visibility_timeout=0, max_concurrency=1)
    assert source.wait_idle(60)
    # THEN every good message was handled exactly once, and none of the bad ones reached the handler
    assert sorted(handler.run_ids()) == ["wrun_good_0", "wrun_good_1"]
    # AND every bad message is in the DLQ
    dead = {m["MessageId"] for m in _drain(sqs, resources.step_dlq_url)}
    assert dead == set(bad_ids)
    # AND was rejected, with a reason naming what is wrong, on each of its maxReceiveCount deliveries
    max_receives = resources.max_receive_count(QueueName.STEP)
    for message_id, (name, reason) in bad_ids.items():
        logged = [r for r in caplog.records if getattr(r, "message_id", None) == message_id]
        assert len(logged) == max_receives, name
        assert all(reason in r.reason for r in logged), (name, {r.reason for r in logged})  # type: ignore[attr-defined]


def test_a_failed_delivery_comes_back_after_the_visibility_timeout_as_attempt_two(
    sqs: Any,
    resources: ProvisionedResources,
    start: Callable[..., LocalEventSource],
    expire_in_flight: Callable[[str], list[int]],
) -> None:
    # GIVEN a handler that fails the first delivery
    failed = threading.Event()

    def decide(delivery: Delivery) -> HandlerResult:
        if delivery.attempt == 1:
            failed.set()
            raise RuntimeError("transient trouble")
        return Ack()

    handler = Recorder(decide)
    url = resources.workflow_queue_url
    message_id = SqsQueue(sqs, resources.queue_urls()).publish(QueueName.WORKFLOW, GOOD[0])
    source = start(handler)
    assert failed.wait(30)
    # WHEN the queue's visibility timeout (the template's 900 s, not waited for) has passed
    [left] = expire_in_flight(url)
    assert 800 < left <= 900  # the failed message was left in flight, not deleted or made visible
    # THEN the same message came back as attempt 2, and was deleted once it succeeded
    assert source.wait_idle(30)
    assert [(d.message_id, d.attempt) for d in handler.deliveries] == [(message_id, 1), (message_id, 2)]


def test_redeliver_brings_the_message_back_after_the_asked_seconds(
    sqs: Any, resources: ProvisionedResources, start: Callable[..., LocalEventSource]
) -> None:
    # GIVEN a queue whose visibility timeout is long (the template's 900 s)
    handler = Recorder(lambda d: Redeliver(1) if d.attempt == 1 else Ack())
    message_id = SqsQueue(sqs, resources.queue_urls()).publish(QueueName.STEP, GOOD[0])
    source = start(handler)
    # WHEN the handler asks for a redelivery in 1 s THEN it gets it, long before 900 s
    assert source.wait_idle(30)
    assert [(d.message_id, d.attempt) for d in handler.deliveries] == [(message_id, 1), (message_id, 2)]


def test_wait_idle_is_not_fooled_by_one_counter_read_that_misses_a_message(
    sqs: Any, resources: ProvisionedResources, start: Callable[..., LocalEventSource]
) -> None:
    # GIVEN a message that the handler sends back for 1 s, and one queue-counter read
    # during that second that counts it nowhere (moto computes each counter at its own
    # instant: a message whose visibility ends between two of them is in none)
    handler = Recorder(lambda d: Redeliver(1) if d.attempt == 1 else Ack())
    sent_back: list[float] = []
    missed: list[bool] = []

    def note_sent_back(**_: Any) -> None:
        sent_back.append(time.monotonic())

    def miss_once(parsed: dict[str, Any], **_: Any) -> None:
        counters = parsed.get("Attributes", {})
        # Well after the invocation ended (its end is not what is tested), before the 1 s.
        late = bool(sent_back) and time.monotonic() - sent_back[0] > 0.3
        if late and not missed and any(v != "0" for v in counters.values()):
            missed.append(True)
            parsed["Attributes"] = {name: "0" for name in counters}

    SqsQueue(sqs, resources.queue_urls()).publish(QueueName.STEP, GOOD[0])
    hooks = [
        ("after-call.sqs.ChangeMessageVisibility", note_sent_back),
        ("after-call.sqs.GetQueueAttributes", miss_once),
    ]
    for event, hook in hooks:
        sqs.meta.events.register(event, hook)
    try:
        source = start(handler)
        # WHEN the caller waits for the queues to be idle
        assert source.wait_idle(30)
    finally:
        for event, hook in hooks:
            sqs.meta.events.unregister(event, hook)
    # THEN it waited for the redelivery, past the read that missed the message
    assert missed and [d.attempt for d in handler.deliveries] == [1, 2]


def test_invocations_per_queue_never_exceed_max_concurrency(
    sqs: Any, resources: ProvisionedResources, start: Callable[..., LocalEventSource]
) -> None:
    # GIVEN handlers that block until released, and more messages than slots
    gate, lock = threading.Event(), threading.Lock()
    active, peak = [0], [0]

    def decide(_delivery: Delivery) -> HandlerResult:
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        gate.wait(10)
        with lock:
            active[0] -= 1
        return Ack()

    handler = Recorder(decide)
    queue = SqsQueue(sqs, resources.queue_urls())
    for i in range(5):
        queue.publish(QueueName.STEP, encode_payload(InvokePayload(run_id=f"wrun_{i}")))
    source = start(handler, batch_size=1, max_concurrency=2)
    # WHEN two invocations are running
    deadline = time.monotonic() + 10
    while active[0] < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.3)  # room for a third to start, if the cap were broken
    # THEN no third one started; released, all five run once
    assert active[0] == 2
    gate.set()
    assert source.wait_idle(30)
    assert peak[0] == 2
    assert sorted(handler.run_ids()) == [f"wrun_{i}" for i in range(5)]


def test_stop_loses_nothing_in_flight_batches_finish_the_rest_stay_queued(
    sqs: Any, resources: ProvisionedResources, start: Callable[..., LocalEventSource]
) -> None:
    # GIVEN a handler stuck in its first delivery, and more messages behind it
    gate, entered = threading.Event(), threading.Event()

    def decide(_delivery: Delivery) -> HandlerResult:
        entered.set()
        gate.wait(10)
        return Ack()

    handler = Recorder(decide)
    queue = SqsQueue(sqs, resources.queue_urls())
    published = {
        queue.publish(QueueName.STEP, encode_payload(InvokePayload(run_id=f"wrun_{i}"))) for i in range(4)
    }
    source = start(handler, batch_size=1, max_concurrency=1)
    assert entered.wait(10)
    # WHEN stop is called while the delivery is in flight, and the delivery then finishes
    stopper = threading.Thread(target=source.stop)
    stopper.start()
    gate.set()
    stopper.join(10)
    assert not stopper.is_alive()
    # THEN what was handled is deleted, and everything else is still in the queue, unhandled
    handled = {d.message_id for d in handler.deliveries}
    remaining = {m["MessageId"] for m in _drain(sqs, resources.step_queue_url)}
    assert handled and not (handled & remaining)
    assert handled | remaining == published
    assert len(handler.deliveries) == len(handled)


def test_wait_idle_counts_delayed_messages(
    sqs: Any, resources: ProvisionedResources, start: Callable[..., LocalEventSource]
) -> None:
    SqsQueue(sqs, resources.queue_urls()).publish(QueueName.WORKFLOW, GOOD[0], delay_seconds=60)
    source = start(Recorder())
    assert not source.wait_idle(0.3)


def test_options_outside_the_sqs_limits_are_refused(sqs: Any, resources: ProvisionedResources) -> None:
    with pytest.raises(ValueError, match="batch_size"):
        LocalEventSource(sqs, resources.queue_urls(), Recorder(), EventSourceOptions(batch_size=11))
    with pytest.raises(ValueError, match="max_concurrency"):
        LocalEventSource(sqs, resources.queue_urls(), Recorder(), EventSourceOptions(max_concurrency=0))
