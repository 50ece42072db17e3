"""SqsQueue: the wire format, delays, idempotency keys (contract §4.4), SQS limits moto does not enforce."""

from __future__ import annotations

import base64
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import cbor2
import pytest

from world_aws.aws.codec import keys
from world_aws.aws.infra.provision import ProvisionedResources
from world_aws.aws.queue import sqs_wire
from world_aws.aws.queue.sqs import CLAIM_LEASE_SECONDS, SqsQueue
from world_aws.contract.clock import ManualClock, SystemClock, epoch_ms
from world_aws.contract.limits import IDEMPOTENCY_RETENTION_SECONDS
from world_aws.contract.world import QueueName
from world_aws.errors import BadInput, WorldAwsError
from world_aws.local.embedded import EmbeddedAws

BODY = cbor2.dumps({"run_id": "wrun_1"})


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def queue(embedded: EmbeddedAws, resources: ProvisionedResources, clock: ManualClock) -> SqsQueue:
    return SqsQueue(
        embedded.clients.sqs,
        resources.queue_urls(),
        dynamodb=embedded.clients.dynamodb,
        table_name=resources.table_name,
        clock=clock,
    )


def _receive_all(sqs: Any, url: str) -> list[dict[str, Any]]:
    response = sqs.receive_message(
        QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=60, MessageAttributeNames=["All"]
    )
    return list(response.get("Messages", []))


def test_body_is_the_base64_text_of_the_cbor_bytes(
    queue: SqsQueue, sqs: Any, resources: ProvisionedResources
) -> None:
    # WHEN CBOR bytes are published
    message_id = queue.publish(QueueName.STEP, BODY)
    # THEN the SQS body is their base64 text, with no attributes, under the returned id
    (message,) = _receive_all(sqs, resources.step_queue_url)
    assert message["MessageId"] == message_id
    assert message["Body"] == base64.b64encode(BODY).decode("ascii")
    assert "MessageAttributes" not in message


def test_delay_within_the_sqs_cap_is_sent_as_is_and_rounded_up(
    queue: SqsQueue, resources: ProvisionedResources, release_delayed: Callable[[str], list[int]]
) -> None:
    queue.publish(QueueName.WORKFLOW, BODY, delay_seconds=30)
    queue.publish(QueueName.WORKFLOW, BODY, delay_seconds=0.2)
    queue.publish(QueueName.WORKFLOW, BODY, delay_seconds=900)
    assert sorted(release_delayed(resources.workflow_queue_url)) == [1, 30, 900]


def test_delay_beyond_the_cap_waits_900s_and_carries_its_due_time(
    queue: SqsQueue,
    sqs: Any,
    clock: ManualClock,
    resources: ProvisionedResources,
    release_delayed: Callable[[str], list[int]],
) -> None:
    queue.publish(QueueName.WORKFLOW, BODY, delay_seconds=3600)
    assert release_delayed(resources.workflow_queue_url) == [900]
    (message,) = _receive_all(sqs, resources.workflow_queue_url)
    due = message["MessageAttributes"][sqs_wire.DUE_AT_ATTRIBUTE]
    assert due == {"DataType": "Number", "StringValue": str(epoch_ms(clock.now()) + 3_600_000)}


def test_second_publish_with_the_same_key_returns_the_first_id_and_sends_nothing(
    queue: SqsQueue, resources: ProvisionedResources, count: Callable[[str], int]
) -> None:
    first = queue.publish(QueueName.STEP, BODY, idempotency_key="step_1:abcd1234")
    second = queue.publish(QueueName.STEP, BODY, idempotency_key="step_1:abcd1234")
    assert second == first
    assert count(resources.step_queue_url) == 1


def test_keys_are_scoped_per_queue(
    queue: SqsQueue, resources: ProvisionedResources, count: Callable[[str], int]
) -> None:
    on_step = queue.publish(QueueName.STEP, BODY, idempotency_key="k")
    on_workflow = queue.publish(QueueName.WORKFLOW, BODY, idempotency_key="k")
    assert on_step != on_workflow
    assert (count(resources.step_queue_url), count(resources.workflow_queue_url)) == (1, 1)


def test_a_key_publishes_again_once_its_retention_is_over(
    queue: SqsQueue, clock: ManualClock, resources: ProvisionedResources, count: Callable[[str], int]
) -> None:
    # GIVEN a key published a day ago (its dedup item is expired but, like TTL, not yet deleted)
    first = queue.publish(QueueName.STEP, BODY, idempotency_key="k")
    clock.advance(IDEMPOTENCY_RETENTION_SECONDS + 1)
    # WHEN it is published again THEN it is a new message
    assert queue.publish(QueueName.STEP, BODY, idempotency_key="k") != first
    assert count(resources.step_queue_url) == 2


def _dedup_item(embedded: EmbeddedAws, resources: ProvisionedResources, queue: QueueName, key: str) -> Any:
    item_key = keys.dedup_key(f"{queue.value}:{key}")
    return embedded.clients.dynamodb.get_item(
        TableName=resources.table_name,
        Key={name: {"S": value} for name, value in item_key.items()},
        ConsistentRead=True,
    ).get("Item")


def _put_pending_claim(
    embedded: EmbeddedAws, resources: ProvisionedResources, clock: ManualClock, key: str
) -> None:
    """What a publisher that died between its claim and its send leaves behind."""
    now_ms = epoch_ms(clock.now())
    item_key = keys.dedup_key(f"step:{key}")
    embedded.clients.dynamodb.put_item(
        TableName=resources.table_name,
        Item={
            **{name: {"S": value} for name, value in item_key.items()},
            "claim": {"S": "dead-holder"},
            "lease_until": {"N": str(now_ms + int(CLAIM_LEASE_SECONDS * 1000))},
            keys.TTL_ATTRIBUTE: {"N": str(now_ms // 1000 + IDEMPOTENCY_RETENTION_SECONDS)},
        },
    )


def test_a_claim_left_by_a_dead_publisher_is_taken_over_after_its_lease(
    queue: SqsQueue,
    embedded: EmbeddedAws,
    resources: ProvisionedResources,
    clock: ManualClock,
    count: Callable[[str], int],
) -> None:
    # GIVEN a claim without a message id whose holder never comes back
    _put_pending_claim(embedded, resources, clock, "k")
    started = clock.now()
    # WHEN the key is published (the wait advances the manual clock)
    message_id = queue.publish(QueueName.STEP, BODY, idempotency_key="k")
    # THEN it waited out the lease, then published once and recorded its id
    assert clock.now() - started >= timedelta(seconds=CLAIM_LEASE_SECONDS)
    assert count(resources.step_queue_url) == 1
    assert _dedup_item(embedded, resources, QueueName.STEP, "k")["message_id"] == {"S": message_id}


class _HolderFinishesWhileWeWait(ManualClock):
    """A clock whose first sleep is the moment the live holder records its message id."""

    def __init__(self, on_first_sleep: Callable[[], None]) -> None:
        super().__init__()
        self._hook: Callable[[], None] | None = on_first_sleep

    def sleep(self, seconds: float) -> None:
        hook, self._hook = self._hook, None
        if hook is not None:
            hook()
        super().sleep(seconds)


def test_a_publish_racing_a_live_claim_returns_the_holders_id_without_sending(
    embedded: EmbeddedAws, resources: ProvisionedResources, count: Callable[[str], int]
) -> None:
    # GIVEN another publisher holding the key, mid-send
    def holder_records() -> None:
        embedded.clients.dynamodb.update_item(
            TableName=resources.table_name,
            Key={name: {"S": value} for name, value in keys.dedup_key("step:k").items()},
            UpdateExpression="SET message_id = :id REMOVE lease_until",
            ExpressionAttributeValues={":id": {"S": "holders-message-id"}},
        )

    clock = _HolderFinishesWhileWeWait(holder_records)
    _put_pending_claim(embedded, resources, clock, "k")
    queue = SqsQueue(
        embedded.clients.sqs,
        resources.queue_urls(),
        dynamodb=embedded.clients.dynamodb,
        table_name=resources.table_name,
        clock=clock,
    )
    # WHEN we publish the same key THEN we get the holder's id once it lands, and send nothing
    assert queue.publish(QueueName.STEP, BODY, idempotency_key="k") == "holders-message-id"
    assert count(resources.step_queue_url) == 0


def test_a_failed_send_releases_the_claim_so_a_retry_publishes(
    embedded: EmbeddedAws, resources: ProvisionedResources, clock: ManualClock, count: Callable[[str], int]
) -> None:
    # GIVEN a queue whose step queue URL is wrong, so every send fails
    broken = SqsQueue(
        embedded.clients.sqs,
        {**resources.queue_urls(), QueueName.STEP: resources.step_queue_url + "-missing"},
        dynamodb=embedded.clients.dynamodb,
        table_name=resources.table_name,
        clock=clock,
    )
    # WHEN a keyed publish fails
    with pytest.raises(WorldAwsError):
        broken.publish(QueueName.STEP, BODY, idempotency_key="k")
    # THEN the key is free again: a retry on the right queue publishes at once
    assert _dedup_item(embedded, resources, QueueName.STEP, "k") is None
    working = SqsQueue(
        embedded.clients.sqs,
        resources.queue_urls(),
        dynamodb=embedded.clients.dynamodb,
        table_name=resources.table_name,
        clock=clock,
    )
    working.publish(QueueName.STEP, BODY, idempotency_key="k")
    assert count(resources.step_queue_url) == 1


def test_concurrent_publishes_of_one_key_send_one_message(
    embedded: EmbeddedAws, resources: ProvisionedResources, count: Callable[[str], int]
) -> None:
    queue = SqsQueue(
        embedded.clients.sqs,
        resources.queue_urls(),
        dynamodb=embedded.clients.dynamodb,
        table_name=resources.table_name,
        clock=SystemClock(),
    )
    ids: list[str] = []
    threads = [
        threading.Thread(target=lambda: ids.append(queue.publish(QueueName.STEP, BODY, idempotency_key="k")))
        for _ in range(6)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(ids) == 6 and len(set(ids)) == 1
    assert count(resources.step_queue_url) == 1


def test_a_message_over_256_kib_is_refused_before_anything_is_sent(
    queue: SqsQueue, resources: ProvisionedResources, count: Callable[[str], int]
) -> None:
    # base64 makes 196,609 bytes of CBOR into 262,148 characters: just over the limit
    with pytest.raises(BadInput, match="exceeds"):
        queue.publish(QueueName.STEP, b"\x00" * 196_609, idempotency_key="big")
    assert count(resources.step_queue_url) == 0


def test_message_size_counts_attribute_names_types_and_values_in_bytes() -> None:
    attributes = {
        "é": {"DataType": "String", "StringValue": "ü"},
        "b": {"DataType": "Binary", "BinaryValue": b"xyz"},
    }
    # body "aé" (3 bytes) + "é"(2) "String"(6) "ü"(2) + "b"(1) "Binary"(6) b"xyz"(3)
    assert sqs_wire.message_size("aé", attributes) == 3 + 10 + 10


def test_more_than_ten_attributes_are_refused() -> None:
    attributes = {f"a{i}": {"DataType": "String", "StringValue": "v"} for i in range(11)}
    with pytest.raises(BadInput, match="attributes"):
        sqs_wire.check_message("aGk=", attributes, sqs_wire.SQS_SAFE_MESSAGE_BYTES)


def test_bad_delays_and_unknown_queues_are_refused(queue: SqsQueue) -> None:
    with pytest.raises(BadInput):
        queue.publish(QueueName.STEP, BODY, delay_seconds=-1)
    with pytest.raises(BadInput):
        queue.publish(QueueName.STEP, BODY, delay_seconds=float("nan"))
    with pytest.raises(BadInput):
        queue.publish("nope", BODY)  # type: ignore[arg-type]
    with pytest.raises(BadInput):
        queue.publish(QueueName.STEP, b"")
