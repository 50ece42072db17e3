"""``Redeliver(s)`` longer than SQS can hide a message (12 h of visibility) through the Lambda adapter.

The step consumer answers a claim refused as TooEarly with ``Redeliver(seconds left)``,
and a step whose retry message could not be published with ``Redeliver(retry delay)``:
a ``RetryableError(retry_after=...)`` may ask for hours or days. A visibility change
cannot hold a message that long, and every early return is one more receive towards
``WORKFLOW_MAX_QUEUE_DELIVERIES`` (48), past which the run is failed
``MAX_DELIVERIES_EXCEEDED``.

The tests move time on moto's SQS itself (``_Timeline``): each message's sent, delay and
visibility times are pushed into the past together with the manual clock, so the
adapter's age of a message (from ``SentTimestamp``) and moto's 12 h rule agree with it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from moto.core import DEFAULT_ACCOUNT_ID
from moto.core.utils import unix_time_millis
from moto.sqs.models import sqs_backends

from world_aws.aws.infra.provision import ProvisionedResources
from world_aws.aws.queue.event_source import lambda_sqs_event
from world_aws.aws.queue.lambda_sqs import process_sqs_event
from world_aws.aws.queue.sqs import SqsQueue
from world_aws.contract.clock import ManualClock
from world_aws.contract.payload import InvokePayload
from world_aws.contract.transport import encode_payload
from world_aws.contract.world import Ack, Delivery, HandlerResult, QueueName, Redeliver
from world_aws.local.embedded import EmbeddedAws

BODY = encode_payload(InvokePayload(run_id="wrun_long", step_id="step_long_1", step_name="charge"))
DELIVERY_CAP = 48  # WORKFLOW_MAX_QUEUE_DELIVERIES' default


@dataclass
class TooEarlyUntil:
    """Stands in for the step consumer of a step whose ``retry_after`` is ``due``: TooEarly before it."""

    clock: ManualClock
    due: datetime
    deliveries: list[tuple[int, datetime]] = field(default_factory=list)

    def __call__(self, delivery: Delivery) -> HandlerResult:
        now = self.clock.now()
        self.deliveries.append((delivery.attempt, now))
        if delivery.attempt > DELIVERY_CAP:
            return Ack()  # Runtime.handle would fail the run MAX_DELIVERIES_EXCEEDED here
        if now < self.due:
            return Redeliver(max(1.0, (self.due - now).total_seconds()))
        return Ack()


class _Timeline:
    """Lambda's event source over one moto queue, on a manual clock that moves SQS's times too."""

    def __init__(self, embedded: EmbeddedAws, resources: ProvisionedResources, clock: ManualClock) -> None:
        self._embedded = embedded
        self._settings = resources.queues[QueueName.STEP]
        self._urls = resources.queue_urls()
        self._queue = sqs_backends[DEFAULT_ACCOUNT_ID][embedded.region].queues[
            self._settings.url.rsplit("/", 1)[-1]
        ]
        self._clock = clock

    def _shift(self, ms: int) -> None:
        with self._embedded.app.lock:
            for message in self._queue._messages:
                message.sent_timestamp -= ms
                message.delayed_until = max(0, message.delayed_until - ms)
                message.visible_at = max(0, message.visible_at - ms)
        self._clock.advance(ms / 1000)

    def _next_ms(self) -> int | None:
        """Milliseconds until the next message can be received (0: one can now), None: the queue is empty."""
        with self._embedded.app.lock:
            now = unix_time_millis()
            times = [max(m.delayed_until, m.visible_at) for m in self._queue._messages]
        return None if not times else max(0, int(min(times) - now) + 1)

    def run(self, handler: TooEarlyUntil, *, max_invocations: int = 400) -> None:
        """Receive and invoke (one record per batch, as the step function) until the queue is empty."""
        sqs = self._embedded.clients.sqs
        for _ in range(max_invocations):
            wait = self._next_ms()
            if wait is None:
                return
            if wait:
                self._shift(wait)
            messages = sqs.receive_message(
                QueueUrl=self._settings.url,
                MaxNumberOfMessages=1,
                MessageSystemAttributeNames=["All"],
                MessageAttributeNames=["All"],
            ).get("Messages", [])
            if not messages:
                continue
            event = lambda_sqs_event(messages, self._settings.arn)
            response = process_sqs_event(event, handler, sqs=sqs, queue_urls=self._urls, clock=self._clock)
            if not response["batchItemFailures"]:  # as Lambda does on success
                sqs.delete_message(QueueUrl=self._settings.url, ReceiptHandle=messages[0]["ReceiptHandle"])
        raise AssertionError(f"still queued after {max_invocations} invocations")


def test_a_redelivery_longer_than_sqs_visibility_comes_back_once_when_due_not_every_few_seconds(
    embedded: EmbeddedAws, resources: ProvisionedResources
) -> None:
    # GIVEN a step message whose step may not start for 13 h (RetryableError(retry_after=13 h),
    # its retry message lost to a failed publish, or a duplicate of the step's message)
    clock = ManualClock()
    handler = TooEarlyUntil(clock, clock.now() + timedelta(hours=13))
    SqsQueue(embedded.clients.sqs, resources.queue_urls(), clock=clock).publish(QueueName.STEP, BODY)
    # WHEN the step function receives it and the consumer asks to see it again when the step is due
    _Timeline(embedded, resources, clock).run(handler)
    # THEN the message came back once, when the step was due, short of the delivery cap
    attempts = [attempt for attempt, _at in handler.deliveries]
    assert max(attempts) <= DELIVERY_CAP, f"delivered {len(attempts)} times: the run would be failed"
    assert len(handler.deliveries) == 2, attempts
    assert handler.deliveries[-1][1] >= handler.due


def test_a_redelivery_of_days_does_not_pile_up_receives_to_the_delivery_cap(
    embedded: EmbeddedAws, resources: ProvisionedResources
) -> None:
    # GIVEN a step message whose step may not start for 2 days: 192 hops of SQS's 15-minute
    # delay, four times the delivery cap (a month's 2,880 hops prove nothing more)
    clock = ManualClock()
    handler = TooEarlyUntil(clock, clock.now() + timedelta(days=2))
    SqsQueue(embedded.clients.sqs, resources.queue_urls(), clock=clock).publish(QueueName.STEP, BODY)
    # WHEN the step function receives it and the consumer asks to see it again when the step is due
    _Timeline(embedded, resources, clock).run(handler, max_invocations=400)
    # THEN it is handled when the step is due, never past the delivery cap on the way
    attempts = [attempt for attempt, _at in handler.deliveries]
    assert max(attempts) <= DELIVERY_CAP, f"delivered {len(attempts)} times: the run would be failed"
    assert handler.deliveries[-1][1] >= handler.due
