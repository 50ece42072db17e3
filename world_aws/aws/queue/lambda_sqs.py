"""One Lambda SQS batch -> ``MessageHandler`` calls -> the partial batch response.

``process_sqs_event`` takes the event exactly as Lambda's SQS event source sends
it (``Records[]`` with ``messageId``, ``receiptHandle``, ``body``,
``attributes.ApproximateReceiveCount``, ``messageAttributes``,
``eventSourceARN``) and returns ``{"batchItemFailures": [...]}`` (the function's
event source must have ``FunctionResponseTypes: [ReportBatchItemFailures]``).
Records are processed with Powertools' ``BatchProcessor``, so one failing or
malformed record never fails its neighbours. Per record:

* malformed (body over the size limit, not text or not valid Unicode, not base64,
  not one CBOR item, not a valid invoke payload, attributes that are not maps,
  a ``wf_due_at`` that is not an integer or is beyond the one-year
  horizon) -> ``BadInput``, logged with the reason, counted by ``on_malformed``
  and reported as a failure. It is never acked: after the queue's
  ``maxReceiveCount`` it reaches the dead-letter queue, where it can be inspected;
* a record with no ``messageId`` (or not a map at all) cannot be named in the
  response: it is logged and counted the same way and left out, so its neighbours
  are unaffected (SQS always sets the id: only a hand-made event lacks one);
* chained delay not yet due -> re-enqueued for the remainder (<= 900 s), acked;
* otherwise the handler gets ``Delivery(queue, message_id, attempt, cbor_bytes)``:
  ``Ack`` -> success (Lambda deletes it); ``Redeliver(s)`` -> visibility set to s
  and reported as failure, or, when s is more than SQS can hide the message (12 h
  less its age), re-enqueued as a chained delay due in s (same message id) and
  acked; raised -> logged, failure (visible
  again after the queue's visibility timeout). ``Misconfigured`` (a missing table,
  queue or bucket, refused access) is logged at error naming the resource, one line
  without a traceback, and passed to ``on_misconfigured`` (to count it in a metric);
  so is a record from a queue the configuration does not name.

While the handlers work, a ``VisibilityHeartbeat`` (``heartbeat.py``) keeps every record of
the batch hidden for 1.5 heartbeat periods at a time, so the records of an invocation that
dies come back within seconds, not after the queue's visibility timeout; a record that
failed is hidden for the queue's timeout, as before.

If every record fails, the response lists them all (Powertools' whole-batch
exception is turned off): Lambda then retries exactly those records.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypedDict

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from world_aws.aws.errors import mapped_errors
from world_aws.aws.queue import sqs_wire
from world_aws.aws.queue.heartbeat import HeartbeatConfig, InFlight, VisibilityHeartbeat
from world_aws.contract.clock import Clock, SystemClock, epoch_ms
from world_aws.contract.limits import MAX_DELAY_SECONDS
from world_aws.contract.transport import decode_body_bytes, decode_payload
from world_aws.contract.world import Ack, Delivery, MessageHandler, QueueName, Redeliver
from world_aws.errors import BadInput, Misconfigured, WorldAwsError

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

# A child logger: JSON once the function's entry point creates Logger(service="world_aws").
_default_logger = Logger(service="world_aws", child=True)


class BatchItemFailure(TypedDict):
    itemIdentifier: str


class PartialBatchResponse(TypedDict):
    batchItemFailures: list[BatchItemFailure]


class MalformedMessage(BadInput):
    """A record that can never be processed; it goes to the DLQ after its redrive count."""


class RedeliveryRequested(Exception):
    """Marks a record the handler asked to see again (reported as a batch item failure)."""


def process_sqs_event(
    event: Mapping[str, Any],
    handler: MessageHandler,
    *,
    sqs: SQSClient,
    queue_urls: Mapping[QueueName, str],
    clock: Clock | None = None,
    logger: Logger | None = None,
    max_message_bytes: int = sqs_wire.SQS_SAFE_MESSAGE_BYTES,
    on_malformed: Callable[[str], None] | None = None,
    on_misconfigured: Callable[[Misconfigured], None] | None = None,
    deadline: datetime | None = None,
    heartbeat: HeartbeatConfig | None = None,
) -> PartialBatchResponse:
    """Process one Lambda SQS event; returns the partial batch response.

    Args:
        event: the Lambda SQS event.
        handler: called once per valid, due record.
        sqs: client for visibility changes and re-enqueued hops.
        queue_urls: the URL of each queue (a record's queue is found by the queue
            name at the end of its ``eventSourceARN``).
        clock: "now" for chained delays.
        logger: a Powertools logger (default: a child of ``world_aws``).
        max_message_bytes: bodies above this are malformed.
        on_malformed: called with the reason for each record rejected as malformed
            (e.g. to count rejections in a metric).
        on_misconfigured: called for each record whose handling met a ``Misconfigured``.
        deadline: when the invocation will be stopped (now + the Lambda context's remaining
            time); each ``Delivery`` carries it, so inline work is handed on before it.
        heartbeat: keep the batch's records hidden while they are handled (None: they keep
            the queue's visibility timeout).

    Returns:
        ``{"batchItemFailures": [{"itemIdentifier": <messageId>}, ...]}``.
    """
    consumer = _RecordConsumer(
        handler=handler,
        sqs=sqs,
        queue_urls={QueueName(name): url for name, url in queue_urls.items()},
        clock=clock or SystemClock(),
        logger=logger or _default_logger,
        max_message_bytes=max_message_bytes,
        on_malformed=on_malformed,
        on_misconfigured=on_misconfigured,
        deadline=deadline,
    )
    records = event.get("Records")
    if not isinstance(records, list):
        consumer.reject({}, BadInput(f"event Records must be a list, got {type(records).__name__}"))
        return PartialBatchResponse(batchItemFailures=[])
    named = [record for record in records if _has_message_id(record)]
    for record in records:
        if not _has_message_id(record):
            raw = record if isinstance(record, Mapping) else {}
            consumer.reject(raw, BadInput("record has no messageId (a non-empty string)"))
    if not named:  # Powertools refuses an empty batch as "not an SQS event"
        return PartialBatchResponse(batchItemFailures=[])
    processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)
    with consumer.beating(named, heartbeat):
        response = process_partial_response(
            event={**event, "Records": named}, record_handler=consumer.consume, processor=processor
        )
    failures = [
        BatchItemFailure(itemIdentifier=str(f["itemIdentifier"])) for f in response["batchItemFailures"]
    ]
    return PartialBatchResponse(batchItemFailures=failures)


class _RecordConsumer:
    def __init__(
        self,
        *,
        handler: MessageHandler,
        sqs: SQSClient,
        queue_urls: dict[QueueName, str],
        clock: Clock,
        logger: Logger,
        max_message_bytes: int,
        on_malformed: Callable[[str], None] | None = None,
        on_misconfigured: Callable[[Misconfigured], None] | None = None,
        deadline: datetime | None = None,
    ) -> None:
        self._handler = handler
        self._deadline = deadline
        self._sqs = sqs
        self._urls = queue_urls
        self._by_name = {url.rstrip("/").rsplit("/", 1)[-1]: name for name, url in queue_urls.items()}
        self._clock = clock
        self._logger = logger
        self._max_bytes = max_message_bytes
        self._on_malformed = on_malformed
        self._on_misconfigured = on_misconfigured
        self._heartbeat: VisibilityHeartbeat | None = None

    @contextlib.contextmanager
    def beating(self, records: list[Mapping[str, Any]], config: HeartbeatConfig | None) -> Iterator[None]:
        """Keep ``records`` hidden while the block runs (nothing without a ``config``)."""
        if config is None or not config.enabled:
            yield
            return
        in_flight = []
        for raw in records:
            queue = self._by_name.get(str(raw.get("eventSourceARN", "")).rsplit(":", 1)[-1])
            url = self._urls.get(queue) if queue is not None else None
            handle = raw.get("receiptHandle")
            if url is not None and isinstance(handle, str) and handle:
                in_flight.append(InFlight(str(raw["messageId"]), url, handle))
        with VisibilityHeartbeat(self._sqs, in_flight, config) as heartbeat:
            self._heartbeat = heartbeat
            try:
                yield
            finally:
                self._heartbeat = None

    def consume(self, record: SQSRecord) -> None:
        """Powertools' record handler (the parameter must be called ``record``).

        A record that fails (raises: malformed, a handler's error, a failed hop) is hidden
        for the queue's visibility timeout; one the handler asked to see again is released
        from the heartbeat before its own visibility change.
        """
        message_id = str(record.raw_event.get("messageId", ""))
        try:
            self._consume(record)
        except RedeliveryRequested:
            raise
        except BaseException:
            if self._heartbeat is not None:
                self._heartbeat.fail(message_id)
            raise

    def _consume(self, record: SQSRecord) -> None:
        raw: Mapping[str, Any] = record.raw_event
        message_id = str(raw.get("messageId", ""))
        context = {"message_id": message_id, "receive_count": _receive_count(raw)}
        try:
            delivery, due_at = self._parse(raw)
        except Misconfigured as exc:
            self._misconfigured(exc, context)
            raise
        except BadInput as exc:
            self.reject(raw, exc)
            raise MalformedMessage(str(exc)) from exc
        context["queue"] = delivery.queue.value
        if due_at is not None:
            hop = sqs_wire.next_hop(self._clock.now(), due_at)
            if hop is not None:
                try:
                    self._reenqueue(delivery, raw, hop, due_at)
                except Misconfigured as exc:
                    self._misconfigured(exc, context)
                    raise
                except WorldAwsError as exc:
                    # Not acked: the early message comes back and is re-enqueued then.
                    self._logger.warning(
                        "could not re-enqueue a chained delay", extra={**context, "reason": str(exc)}
                    )
                    raise
                return
        try:
            result = self._handler(delivery)
        except Misconfigured as exc:
            self._misconfigured(exc, context)
            raise
        except Exception:
            self._logger.exception("queue handler raised: the message will be redelivered", extra=context)
            raise
        if isinstance(result, Ack):
            return
        if isinstance(result, Redeliver):
            if self._carry(delivery, raw, result.seconds, context):
                return  # a copy comes back when due, as a chained delay does
            if self._heartbeat is not None:
                self._heartbeat.release(str(raw["messageId"]))
            self._redeliver(delivery, raw, result.seconds, context)
            raise RedeliveryRequested(f"redeliver after {result.seconds} s")
        self._logger.error(
            "queue handler returned neither Ack nor Redeliver", extra={**context, "result": repr(result)}
        )
        raise TypeError(f"a queue handler must return Ack or Redeliver, not {result!r}")

    def reject(self, raw: Mapping[str, Any], exc: BadInput) -> None:
        """Log and count a record that can never be processed."""
        self._logger.error(
            "rejected malformed message: it stays queued and reaches the DLQ after its redrive count",
            extra={
                "message_id": str(raw.get("messageId", "")),
                "receive_count": _receive_count(raw),
                "queue_arn": str(raw.get("eventSourceARN", "")),
                "reason": str(exc),
            },
        )
        if self._on_malformed is not None:
            self._on_malformed(str(exc))

    def _parse(self, raw: Mapping[str, Any]) -> tuple[Delivery, int | None]:
        queue = self._queue_of(str(raw.get("eventSourceARN", "")))
        body = raw.get("body")
        if not isinstance(body, str):
            raise BadInput(f"body must be text, got {type(body).__name__}")
        try:
            size = len(body.encode("utf-8"))
        except UnicodeEncodeError as exc:
            raise BadInput(f"body is not valid Unicode: {exc.reason} at index {exc.start}") from exc
        if size > self._max_bytes:
            raise BadInput(f"body of {size} bytes exceeds the {self._max_bytes}-byte message limit")
        cbor_bytes = decode_body_bytes(body)
        payload = decode_payload(cbor_bytes)  # once, here: it travels parsed (Delivery.payload)
        attributes = _attributes(raw)
        due_at = _number_attribute(attributes, sqs_wire.DUE_AT_ATTRIBUTE)
        if due_at is not None:
            sqs_wire.check_due_at(self._clock.now(), due_at)
        origin = _string_attribute(attributes, sqs_wire.ORIGIN_ID_ATTRIBUTE)
        delivery = Delivery(
            queue=queue,
            message_id=str(origin or raw["messageId"]),
            attempt=_receive_count(raw),
            body=cbor_bytes,
            deadline=self._deadline,
            payload=payload,
        )
        return delivery, due_at

    def _queue_of(self, arn: str) -> QueueName:
        name = arn.rsplit(":", 1)[-1]
        if name not in self._by_name:
            # The function is mapped to a queue its configuration does not name.
            raise Misconfigured(
                f"misconfigured: eventSourceARN {arn!r} is not one of this World's queues "
                f"{sorted(self._urls.values())}",
                resource=f"queue {arn}",
                operation="SQS event source mapping",
            )
        return self._by_name[name]

    def _reenqueue(self, delivery: Delivery, raw: Mapping[str, Any], hop: int, due_at: int) -> None:
        # The body goes back byte for byte; the remainder is measured from due_at.
        sqs_wire.send(
            self._sqs,
            self._urls[delivery.queue],
            str(raw["body"]),
            delay_seconds=hop,
            attributes=sqs_wire.chain_attributes(due_at, delivery.message_id),
            max_bytes=self._max_bytes,
        )

    def _carry(
        self, delivery: Delivery, raw: Mapping[str, Any], seconds: float, context: dict[str, Any]
    ) -> bool:
        """A ``Redeliver`` longer than SQS can hide the message, re-enqueued as a chained delay: True if sent.

        A visibility change holds a message at most 12 h (less its age): asked for longer
        (a step's ``retry_after`` hours or days ahead, met as TooEarly), the message would
        come back early, again and again, each receive counting towards the delivery cap
        (``WORKFLOW_MAX_QUEUE_DELIVERIES``), and once 12 h old at once every time, which
        failed the run. So the body is sent again, due at now + ``seconds`` (capped at the
        horizon), under the same message id, and this receive is acked. If that send
        fails, the capped visibility change is made as before.
        """
        if math.isnan(seconds) or seconds <= sqs_wire.visibility_seconds(
            math.inf, elapsed_seconds=_age_seconds(raw)
        ):
            return False
        now = self._clock.now()
        due_at = epoch_ms(now) + math.ceil(min(seconds, MAX_DELAY_SECONDS) * 1000)
        hop = sqs_wire.next_hop(now, due_at)
        assert hop is not None  # seconds > 0
        try:
            self._reenqueue(delivery, raw, hop, due_at)
        except Misconfigured as exc:
            self._misconfigured(exc, context)
            return False
        except WorldAwsError as exc:
            self._logger.warning(
                "could not re-enqueue a long redelivery; changing its visibility instead",
                extra={**context, "reason": str(exc)},
            )
            return False
        return True

    def _redeliver(
        self, delivery: Delivery, raw: Mapping[str, Any], seconds: float, context: dict[str, Any]
    ) -> None:
        try:
            url = self._urls[delivery.queue]
            with mapped_errors("SQS ChangeMessageVisibility", resource=f"queue {url}"):
                self._sqs.change_message_visibility(
                    QueueUrl=url,
                    ReceiptHandle=str(raw["receiptHandle"]),
                    VisibilityTimeout=sqs_wire.visibility_seconds(seconds, elapsed_seconds=_age_seconds(raw)),
                )
        except Misconfigured as exc:
            self._misconfigured(exc, context)
        except WorldAwsError as exc:
            # Still a failure: the message comes back after the queue's visibility timeout.
            self._logger.warning("could not change visibility", extra={**context, "reason": str(exc)})

    def _misconfigured(self, exc: Misconfigured, context: dict[str, Any]) -> None:
        """One error line naming the resource (no traceback: the reason says it all), and the count."""
        self._logger.error(
            "misconfigured: the message stays queued and is redelivered until the configuration is fixed",
            extra={**context, "resource": exc.resource, "operation": exc.operation, "reason": str(exc)},
        )
        if self._on_misconfigured is not None:
            self._on_misconfigured(exc)


def _age_seconds(raw: Mapping[str, Any]) -> float:
    """Seconds since SQS accepted the message, by the wall clock (SQS's timestamps are wall time)."""
    try:
        sent_ms = int((raw.get("attributes") or {})["SentTimestamp"])
    except (KeyError, TypeError, ValueError):
        return 0.0
    return max(0.0, time.time() - sent_ms / 1000)


def _has_message_id(record: object) -> bool:
    """Whether ``record`` is a map with a non-empty string ``messageId``."""
    if not isinstance(record, Mapping):
        return False
    message_id = record.get("messageId")
    return isinstance(message_id, str) and bool(message_id)


def _receive_count(raw: Mapping[str, Any]) -> int:
    system = raw.get("attributes")
    try:
        return int(system.get("ApproximateReceiveCount", 1)) if isinstance(system, Mapping) else 1
    except (TypeError, ValueError):
        return 1


def _attributes(raw: Mapping[str, Any]) -> Mapping[str, Mapping[str, Any]]:
    """``messageAttributes``, checked: a map of attribute names to maps.

    Raises:
        BadInput: it, or one of its values, is not a map.
    """
    attributes = raw.get("messageAttributes") or {}
    if not isinstance(attributes, Mapping):
        raise BadInput(f"messageAttributes must be a map, got {type(attributes).__name__}")
    for name, value in attributes.items():
        if not isinstance(value, Mapping):
            raise BadInput(f"message attribute {str(name)[:64]!r} must be a map, got {type(value).__name__}")
    return attributes


def _string_attribute(attributes: Mapping[str, Mapping[str, Any]], name: str) -> str | None:
    if name not in attributes:
        return None
    value = attributes[name].get("stringValue")
    if not isinstance(value, str) or not value:
        kind = type(value).__name__
        raise BadInput(f"message attribute {name} must have a non-empty stringValue, got {kind}")
    return value


def _number_attribute(attributes: Mapping[str, Mapping[str, Any]], name: str) -> int | None:
    value = _string_attribute(attributes, name)
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        raise BadInput(f"message attribute {name} must be an integer, got {value[:64]!r}") from None
