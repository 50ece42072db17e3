"""``SqsPump``: delivers the AWS World's SQS messages synchronously, on the harness's manual clock.

Each round receives every visible message of the asked queues (short polls, a
long visibility hold) and hands it to the handler as a ``Delivery``, the way the
Lambda consumer does (body = base64 CBOR, message id = the chain's origin id if
any, attempt = ``ApproximateReceiveCount``). The outcome is honoured:

* ``Ack`` -> ``DeleteMessage``;
* ``Redeliver(s)`` -> kept in flight and made visible again
  (``ChangeMessageVisibility`` 0) once the *manual* clock reaches now + s;
* a raise -> visible again at once (the in-memory World's visibility timeout of 0).

Messages published with ``DelaySeconds`` would be delayed by moto in wall-clock
time, which the manual clock cannot move. So the pump rewrites each delayed send
of the World's client (a ``before-parameter-build`` hook) into an immediate one
carrying its due time on the manual clock (the chained-delay attribute; a
chained send keeps the one it names), and holds such a message until the manual
clock reaches it, as the consumer does with a chained delay.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from harness.harness import Harness
from world_aws.aws.queue import sqs_wire
from world_aws.aws.world import AwsWorld
from world_aws.contract.clock import ManualClock, epoch_ms, from_epoch_ms
from world_aws.contract.transport import decode_body_bytes
from world_aws.contract.world import Ack, Delivery, MessageHandler, QueueName, Redeliver, World
from world_aws.testing.aws_factory import aws_world

# A received SQS message as boto3 returns it (a TypedDict in mypy_boto3_sqs, which
# this layer may not import).
MessageTypeDef = dict[str, Any]

# Real seconds a received message stays invisible while the pump holds it.
HOLD_SECONDS = 3600


@dataclass(frozen=True)
class _Held:
    due: datetime
    queue: QueueName
    receipt_handle: str


class SqsPump:
    def __init__(self, world: AwsWorld) -> None:
        self._sqs = world.clients.sqs
        self._urls = world.queue_urls()
        self._clock = world.clock
        self._held: list[_Held] = []
        self._sqs.meta.events.register("before-parameter-build.sqs.SendMessage", self._due_on_clock)

    def _due_on_clock(self, params: dict[str, Any], **_: Any) -> None:
        delay = int(params.get("DelaySeconds", 0))
        attributes = params.setdefault("MessageAttributes", {})
        if delay <= 0:
            return
        if sqs_wire.DUE_AT_ATTRIBUTE not in attributes:
            due = self._clock.now() + timedelta(seconds=delay)
            attributes.update(sqs_wire.chain_attributes(epoch_ms(due), None))
        # A chained delay (a wait past SQS's 900 s) already names its due time: held to it.
        params["DelaySeconds"] = 0

    def deliver_visible(self, handler: MessageHandler, queues: Iterable[QueueName]) -> int:
        names = tuple(queues)
        count = 0
        while True:
            self._release_due()
            received = 0
            for queue in names:
                for message in self._receive(queue):
                    self._deliver(queue, message, handler)
                    received += 1
            if not received:
                return count
            count += received

    def next_due(self) -> datetime | None:
        if self._held:
            return min(h.due for h in self._held)
        for queue, url in self._urls.items():
            counters = self._sqs.get_queue_attributes(
                QueueUrl=url,
                AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesDelayed"],
            )["Attributes"]
            if int(counters.get("ApproximateNumberOfMessagesDelayed", "0")):
                raise AssertionError(
                    f"a {queue.value} message is delayed in SQS (wall-clock time in moto): "
                    "run this scenario on memory_harness"
                )
            if int(counters.get("ApproximateNumberOfMessages", "0")):
                return self._clock.now()
        return None

    def clock_moved(self) -> None:
        self._release_due()

    # --- internals ------------------------------------------------------------------

    def _receive(self, queue: QueueName) -> list[MessageTypeDef]:
        response = self._sqs.receive_message(
            QueueUrl=self._urls[queue],
            MaxNumberOfMessages=10,
            WaitTimeSeconds=0,
            VisibilityTimeout=HOLD_SECONDS,
            MessageSystemAttributeNames=["All"],
            MessageAttributeNames=["All"],
        )
        return [dict(m) for m in response.get("Messages", [])]

    def _deliver(self, queue: QueueName, message: MessageTypeDef, handler: MessageHandler) -> None:
        attributes: dict[str, Any] = dict(message.get("MessageAttributes", {}))
        origin = attributes.get(sqs_wire.ORIGIN_ID_ATTRIBUTE, {}).get("StringValue")
        due_at = attributes.get(sqs_wire.DUE_AT_ATTRIBUTE, {}).get("StringValue")
        receipt = message["ReceiptHandle"]
        if due_at is not None and from_epoch_ms(int(due_at)) > self._clock.now():
            self._held.append(_Held(from_epoch_ms(int(due_at)), queue, receipt))  # a chained delay
            return
        delivery = Delivery(
            queue=queue,
            message_id=str(origin or message["MessageId"]),
            attempt=int(message.get("Attributes", {}).get("ApproximateReceiveCount", "1")),
            body=decode_body_bytes(message["Body"]),
        )
        try:
            result = handler(delivery)
        except Exception:
            self._visible_now(queue, receipt)
            return
        if isinstance(result, Ack):
            self._sqs.delete_message(QueueUrl=self._urls[queue], ReceiptHandle=receipt)
        elif isinstance(result, Redeliver) and result.seconds > 0:
            due = self._clock.now() + timedelta(seconds=result.seconds)
            self._held.append(_Held(due, queue, receipt))
        else:
            self._visible_now(queue, receipt)

    def _release_due(self) -> None:
        now = self._clock.now()
        due = [h for h in self._held if h.due <= now]
        self._held = [h for h in self._held if h.due > now]
        for held in due:
            self._visible_now(held.queue, held.receipt_handle)

    def _visible_now(self, queue: QueueName, receipt: str) -> None:
        self._sqs.change_message_visibility(
            QueueUrl=self._urls[queue], ReceiptHandle=receipt, VisibilityTimeout=0
        )


@contextmanager
def aws_harness(clock: ManualClock) -> Iterator[Harness]:
    """A harness over a fresh AWS World on in-process moto."""
    with aws_world(clock) as world:
        # cast: AwsWorld's stores are concrete classes, which mypy will not match
        # against the World protocol's (mutable) attributes.
        yield Harness("aws", cast(World, world), clock, SqsPump(world))
