"""How world-aws messages sit in SQS: body, attributes, size limit and delay chaining.

Wire format (contract §4.1): the SQS body is ``base64(cbor(invoke payload))`` as
ASCII text; base64 keeps the CBOR bytes inside the characters SQS accepts. Two
optional message attributes travel with it:

* ``wf_due_at`` (Number, epoch milliseconds): the message was published with a
  delay above SQS's 900 s cap; the consumer re-enqueues it until this moment.
* ``wf_origin_id`` (String): the SQS message id that ``publish`` returned, kept on
  every re-enqueued hop so that handlers see one stable message id.

Limits SQS enforces and moto does not (aws-and-moto-notes §0): at most 10
attributes, and body + attribute names, types and values at most the message
size limit, counted in UTF-8 bytes. We hold ourselves to 256 KiB (contract §7.4),
even though new queues accept 1 MiB.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from world_aws.aws.errors import mapped_errors
from world_aws.contract.clock import epoch_ms
from world_aws.contract.limits import MAX_DELAY_SECONDS, SQS_MAX_DELAY_SECONDS, SQS_MAX_VISIBILITY_SECONDS
from world_aws.errors import BadInput

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageAttributeValueTypeDef

DUE_AT_ATTRIBUTE = "wf_due_at"
ORIGIN_ID_ATTRIBUTE = "wf_origin_id"

# contract §7.4: do not rely on more than 256 KiB per message (body + attributes).
SQS_SAFE_MESSAGE_BYTES = 262_144
# https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-messages.html
SQS_MAX_MESSAGE_ATTRIBUTES = 10

Attributes = dict[str, "MessageAttributeValueTypeDef"]


def message_size(body: str, attributes: Mapping[str, Mapping[str, Any]]) -> int:
    """The size SQS charges against its limit: body plus attribute names, types and values, in bytes."""
    size = len(body.encode("utf-8"))
    for name, value in attributes.items():
        size += len(name.encode("utf-8")) + len(str(value.get("DataType", "")).encode("utf-8"))
        if "StringValue" in value:
            size += len(str(value["StringValue"]).encode("utf-8"))
        if "BinaryValue" in value:
            size += len(bytes(value["BinaryValue"]))
    return size


def check_message(body: str, attributes: Mapping[str, Mapping[str, Any]], max_bytes: int) -> None:
    """Refuse a message SQS (real SQS, not moto) would refuse.

    Raises:
        BadInput: empty body, more than 10 attributes, or too large.
    """
    if not body:
        raise BadInput("an SQS message body must not be empty")
    if len(attributes) > SQS_MAX_MESSAGE_ATTRIBUTES:
        raise BadInput(f"{len(attributes)} message attributes; SQS allows {SQS_MAX_MESSAGE_ATTRIBUTES}")
    size = message_size(body, attributes)
    if size > max_bytes:
        raise BadInput(f"message of {size} bytes (body + attributes) exceeds the {max_bytes}-byte limit")


def first_hop(now: datetime, delay_seconds: float) -> tuple[int, int | None]:
    """The SQS ``DelaySeconds`` of a new message and, if chained, its due time (epoch ms).

    Up to 900 s the delay is sent as is (rounded up, so a message never arrives
    early). Beyond it, the first hop waits 900 s and the message carries its
    absolute due time.

    Raises:
        BadInput: a negative or non-finite delay, or one beyond ``MAX_DELAY_SECONDS``.
    """
    check_delay(delay_seconds)
    if delay_seconds <= SQS_MAX_DELAY_SECONDS:
        return math.ceil(delay_seconds), None
    return SQS_MAX_DELAY_SECONDS, epoch_ms(now) + math.ceil(delay_seconds * 1000)


def check_delay(delay_seconds: float) -> None:
    """Refuse a delay that is negative, not finite, or beyond the horizon (limits.MAX_DELAY_SECONDS).

    Raises:
        BadInput: naming the delay.
    """
    if not math.isfinite(delay_seconds) or delay_seconds < 0:
        raise BadInput(f"delay_seconds must be a finite number >= 0, got {delay_seconds}")
    if delay_seconds > MAX_DELAY_SECONDS:
        raise BadInput(f"delay_seconds {delay_seconds} is beyond the {MAX_DELAY_SECONDS} s (366-day) horizon")


def check_due_at(now: datetime, due_at_ms: int) -> None:
    """Refuse a received ``wf_due_at`` beyond the horizon (no producer of ours writes one).

    Raises:
        BadInput: naming the due time.
    """
    if due_at_ms - epoch_ms(now) > MAX_DELAY_SECONDS * 1000:
        raise BadInput(
            f"{DUE_AT_ATTRIBUTE} {due_at_ms} is beyond the {MAX_DELAY_SECONDS} s (366-day) horizon"
        )


def next_hop(now: datetime, due_at_ms: int) -> int | None:
    """The delay of the next hop of a chained message, or None when it is due.

    The remainder is computed from the absolute due time, never from the hop
    that just elapsed, so a late hop does not push the due time back: the
    delivery is at most one (late) hop away from ``due_at``.
    """
    remaining_ms = due_at_ms - epoch_ms(now)
    if remaining_ms <= 0:
        return None
    return min(SQS_MAX_DELAY_SECONDS, math.ceil(remaining_ms / 1000))


def chain_attributes(due_at_ms: int | None, origin_id: str | None) -> Attributes:
    """The world-aws message attributes of a (possibly chained) message."""
    attributes: Attributes = {}
    if due_at_ms is not None:
        attributes[DUE_AT_ATTRIBUTE] = {"DataType": "Number", "StringValue": str(due_at_ms)}
    if origin_id is not None:
        attributes[ORIGIN_ID_ATTRIBUTE] = {"DataType": "String", "StringValue": origin_id}
    return attributes


def visibility_seconds(seconds: float, *, elapsed_seconds: float = 0.0) -> int:
    """A visibility timeout for ``Redeliver(seconds)``: rounded up, within SQS's 12 h.

    SQS caps a message's *total* invisibility at 12 h from its first receive (moto
    counts from its send), so the cap shrinks by ``elapsed_seconds`` since the
    message was sent, plus one second of margin for the time the call takes.
    """
    limit = max(0, SQS_MAX_VISIBILITY_SECONDS - math.ceil(max(0.0, elapsed_seconds)) - 1)
    if not math.isfinite(seconds):
        return limit
    return min(limit, max(0, math.ceil(seconds)))


def send(
    sqs: SQSClient,
    queue_url: str,
    body: str,
    *,
    delay_seconds: int,
    attributes: Attributes,
    max_bytes: int = SQS_SAFE_MESSAGE_BYTES,
) -> str:
    """Send one message after checking SQS's limits; returns the SQS message id.

    Raises:
        BadInput: the message breaks an SQS limit.
        Throttled, Transient: SQS failed.
        Misconfigured: the queue does not exist, or access to it is denied.
    """
    check_message(body, attributes, max_bytes)
    with mapped_errors("SQS SendMessage", resource=f"queue {queue_url}"):
        if attributes:
            response = sqs.send_message(
                QueueUrl=queue_url, MessageBody=body, DelaySeconds=delay_seconds, MessageAttributes=attributes
            )
        else:
            response = sqs.send_message(QueueUrl=queue_url, MessageBody=body, DelaySeconds=delay_seconds)
    return response["MessageId"]
