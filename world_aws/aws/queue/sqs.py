"""``SqsQueue``: the World's ``Queue`` on SQS standard queues, with idempotency keys in DynamoDB.

Bodies sit in SQS as ``base64(cbor)`` text; delays above 900 s are chained with a
``wf_due_at`` attribute (see ``world_aws.aws.queue.sqs_wire`` for the wire format).

Idempotency keys (contract §4.4). SQS standard queues cannot deduplicate, so a key
is claimed with a conditional ``PutItem`` of a dedup item in the World's table::

    pk = "dedup#<queue>:<key>", sk = "dedup",
    claim = <random token>, lease_until = now + 15 s (epoch ms),
    expires_at = now + 24 h (epoch s, the table's TTL attribute)
    condition: attribute_not_exists(pk)                       -- never claimed
               OR expires_at < :now                            -- retention over (TTL deletes lazily)
               OR (attribute_not_exists(message_id) AND lease_until < :now_ms)  -- holder died

then the message is sent, then ``message_id`` is recorded (conditional on the
claim token, which also removes the lease). A second publish whose claim fails
gets the old item back (``ReturnValuesOnConditionCheckFailure=ALL_OLD``): with a
``message_id`` it returns that id and sends nothing; while the holder is still
sending (no id, live lease) it waits, briefly, for the outcome.

Crash windows: a holder that dies after its claim and before its send leaves an
item without ``message_id``; after the 15 s lease it counts as never published,
so the next publisher takes over and sends (nothing is lost). A holder that dies
after its send and before recording the id leaves the same item, and the next
publisher sends a second copy: a duplicate, never a loss, and duplicates are
already part of at-least-once delivery (the step claim dedupes them). If the send
fails, the claim is deleted so that a retry can publish at once.

Cost per publish, in round trips: no key 1 (SendMessage); first publish of a key
3 (PutItem claim, SendMessage, UpdateItem record), +1 DeleteItem if the send
fails; a duplicate publish 1 (the refused PutItem, which carries the first id).
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from botocore.exceptions import BotoCoreError, ClientError

from world_aws.aws.codec import keys
from world_aws.aws.errors import error_code, translate
from world_aws.aws.queue import sqs_wire
from world_aws.contract.clock import Clock, SystemClock, epoch_ms
from world_aws.contract.limits import IDEMPOTENCY_RETENTION_SECONDS
from world_aws.contract.transport import encode_body_bytes
from world_aws.contract.world import QueueName
from world_aws.errors import BadInput, Transient

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sqs import SQSClient

logger = logging.getLogger(__name__)

# How long a claim without a message id protects its holder (SendMessage takes ms;
# boto3's own retries take seconds). After it, the key counts as never published.
CLAIM_LEASE_SECONDS = 15.0
# Waiting for another publisher's outcome: first pause, doubled up to the cap.
_WAIT_FIRST_SECONDS = 0.02
_WAIT_MAX_SECONDS = 0.5
_MAX_CLAIM_ATTEMPTS = 200


class SqsQueue:
    """The ``Queue`` protocol on the workflow and step SQS queues.

    Args:
        sqs: a boto3 SQS client.
        queue_urls: the URL of each queue.
        dynamodb: a boto3 DynamoDB client; needed only for idempotency keys.
        table_name: the World's table (holds the dedup items); with ``dynamodb``.
        clock: source of "now" for due times and key retention.
        max_message_bytes: refuse bigger messages (body + attributes).
        retention_seconds: how long a key deduplicates (contract §4.4: 24 h).
    """

    def __init__(
        self,
        sqs: SQSClient,
        queue_urls: Mapping[QueueName, str],
        *,
        dynamodb: DynamoDBClient | None = None,
        table_name: str | None = None,
        clock: Clock | None = None,
        max_message_bytes: int = sqs_wire.SQS_SAFE_MESSAGE_BYTES,
        retention_seconds: float = IDEMPOTENCY_RETENTION_SECONDS,
    ) -> None:
        self._sqs = sqs
        self._urls = {QueueName(name): url for name, url in queue_urls.items()}
        self._dynamodb = dynamodb
        self._table = table_name
        self._clock = clock or SystemClock()
        self._max_bytes = max_message_bytes
        self._retention = retention_seconds

    def url(self, queue: QueueName) -> str:
        """The URL of ``queue``.

        Raises:
            BadInput: not one of this World's queues.
        """
        try:
            return self._urls[QueueName(queue)]
        except (KeyError, ValueError):
            raise BadInput(f"unknown queue {queue!r}") from None

    def publish(
        self,
        queue: QueueName,
        body: bytes,
        *,
        delay_seconds: float = 0,
        idempotency_key: str | None = None,
    ) -> str:
        """Send ``body`` (CBOR bytes) to ``queue``; returns the SQS message id.

        Args:
            queue: the workflow or the step queue.
            body: an encoded invoke payload; sent as base64 text.
            delay_seconds: delivered no earlier than this; above 900 s chained.
            idempotency_key: a retained key makes this a no-op returning the first id.

        Returns:
            The message id (for a duplicate key: the first publish's id).

        Raises:
            BadInput: unknown queue, bad delay, empty or oversize message, key without a table.
            Throttled, Transient: SQS or DynamoDB failed; safe to retry.
        """
        url = self.url(queue)
        text = encode_body_bytes(bytes(body))
        hop_delay, due_at = sqs_wire.first_hop(self._clock.now(), delay_seconds)
        attributes = sqs_wire.chain_attributes(due_at, None)
        sqs_wire.check_message(text, attributes, self._max_bytes)
        if idempotency_key is None:
            return self._send(url, text, hop_delay, attributes)
        return self._publish_once(QueueName(queue), url, text, hop_delay, attributes, idempotency_key)

    def _send(self, url: str, text: str, delay: int, attributes: sqs_wire.Attributes) -> str:
        return sqs_wire.send(
            self._sqs, url, text, delay_seconds=delay, attributes=attributes, max_bytes=self._max_bytes
        )

    # ---------------------------------------------------------------- idempotency keys

    def _publish_once(
        self,
        queue: QueueName,
        url: str,
        text: str,
        delay: int,
        attributes: sqs_wire.Attributes,
        idempotency_key: str,
    ) -> str:
        if self._dynamodb is None or self._table is None:
            raise BadInput("an idempotency key needs SqsQueue(dynamodb=..., table_name=...)")
        item_key = keys.dedup_key(f"{queue.value}:{idempotency_key}")
        token = secrets.token_hex(16)
        first_id = self._claim(item_key, token)
        if first_id is not None:
            return first_id
        try:
            message_id = self._send(url, text, delay, attributes)
        except BaseException:
            self._release(item_key, token)
            raise
        self._record(item_key, token, message_id)
        return message_id

    def _claim(self, item_key: keys.Key, token: str) -> str | None:
        """Claim the key: None if we now hold it, else the message id of the first publish."""
        assert self._dynamodb is not None and self._table is not None
        pause = _WAIT_FIRST_SECONDS
        for _ in range(_MAX_CLAIM_ATTEMPTS):
            now = self._clock.now()
            now_ms = epoch_ms(now)
            try:
                self._dynamodb.put_item(
                    TableName=self._table,
                    Item={
                        keys.PK: {"S": item_key[keys.PK]},
                        keys.SK: {"S": item_key[keys.SK]},
                        "claim": {"S": token},
                        "lease_until": {"N": str(now_ms + int(CLAIM_LEASE_SECONDS * 1000))},
                        keys.TTL_ATTRIBUTE: {"N": str(now_ms // 1000 + int(self._retention))},
                    },
                    # Free when never claimed, when its retention is over (TTL deletes
                    # lazily, so an expired item may still be here), or when its holder
                    # never recorded a message id and its lease ran out (it died).
                    ConditionExpression=(
                        "attribute_not_exists(#pk) OR #exp < :now_s"
                        " OR (attribute_not_exists(message_id) AND lease_until < :now_ms)"
                    ),
                    ExpressionAttributeNames={"#pk": keys.PK, "#exp": keys.TTL_ATTRIBUTE},
                    ExpressionAttributeValues={
                        ":now_s": {"N": str(now_ms // 1000)},
                        ":now_ms": {"N": str(now_ms)},
                    },
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
                return None
            except ClientError as exc:
                if error_code(exc) != "ConditionalCheckFailedException":
                    raise translate(
                        exc, operation="DynamoDB PutItem (idempotency claim)", resource=f"table {self._table}"
                    ) from exc
                # ALL_OLD: the item that refused us comes back with the error.
                old: dict[str, Any] = dict(cast("Mapping[str, Any]", exc.response).get("Item") or {})
            except BotoCoreError as exc:
                raise translate(
                    exc, operation="DynamoDB PutItem (idempotency claim)", resource=f"table {self._table}"
                ) from exc
            if "message_id" in old:
                return str(old["message_id"]["S"])
            if old:
                # Another publisher holds a live claim and is sending: wait for its id
                # (or for its lease to run out), never past the lease.
                lease_left = (int(old["lease_until"]["N"]) - now_ms + 1) / 1000
                self._clock.sleep(max(0.001, min(pause, lease_left)))
                pause = min(pause * 2, _WAIT_MAX_SECONDS)
            # An empty ALL_OLD image: the item vanished between the check and now; retry.
        raise Transient(f"idempotency key {item_key[keys.PK]!r} stayed claimed by another publisher")

    def _record(self, item_key: keys.Key, token: str, message_id: str) -> None:
        assert self._dynamodb is not None and self._table is not None
        try:
            self._dynamodb.update_item(
                TableName=self._table,
                Key={keys.PK: {"S": item_key[keys.PK]}, keys.SK: {"S": item_key[keys.SK]}},
                UpdateExpression="SET message_id = :id REMOVE lease_until",
                # Only our own claim: if a slow send let another publisher take over,
                # its record stands (both messages exist; a duplicate, not a loss).
                ConditionExpression="claim = :token",
                ExpressionAttributeValues={":id": {"S": message_id}, ":token": {"S": token}},
            )
        except (ClientError, BotoCoreError) as exc:
            # The message is sent, so the publish succeeded. Without the record a
            # later publish of this key sends a duplicate after the lease: harmless.
            logger.warning("could not record message id for %s: %s", item_key[keys.PK], exc)

    def _release(self, item_key: keys.Key, token: str) -> None:
        assert self._dynamodb is not None and self._table is not None
        try:
            self._dynamodb.delete_item(
                TableName=self._table,
                Key={keys.PK: {"S": item_key[keys.PK]}, keys.SK: {"S": item_key[keys.SK]}},
                ConditionExpression="claim = :token",
                ExpressionAttributeValues={":token": {"S": token}},
            )
        except (ClientError, BotoCoreError) as exc:
            # The lease frees the key anyway; a retry just waits for it.
            logger.warning("could not release the claim on %s: %s", item_key[keys.PK], exc)
