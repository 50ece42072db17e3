"""The visibility heartbeat: an invocation's messages are hidden 1.5 periods at a time while it works.

The remaining visibility of each message is read back from moto's queue (same process),
at the moment the handler runs or after the batch returns: no test waits for a timeout.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from moto.core import DEFAULT_ACCOUNT_ID
from moto.core.utils import unix_time_millis
from moto.sqs.models import sqs_backends

from tests.aws.sqs.conftest import ReceiveEvent
from world_aws.aws.config import AwsConfig
from world_aws.aws.infra.provision import ProvisionedResources
from world_aws.aws.queue.heartbeat import HeartbeatConfig
from world_aws.aws.queue.lambda_sqs import process_sqs_event
from world_aws.contract.payload import InvokePayload
from world_aws.contract.transport import encode_body
from world_aws.contract.world import Ack, Delivery, HandlerResult, QueueName, Redeliver
from world_aws.errors import BadInput, Transient
from world_aws.local.embedded import EmbeddedAws

CONFIG = HeartbeatConfig(seconds=10, queue_visibility_seconds=900)


class BeatWatch:
    """An SQS client that passes every call on and signals each visibility batch change."""

    def __init__(self, sqs: Any) -> None:
        self._sqs = sqs
        self.beaten = threading.Event()
        self.entries: list[dict[str, Any]] = []

    def change_message_visibility_batch(self, **kwargs: Any) -> Any:
        answer = self._sqs.change_message_visibility_batch(**kwargs)
        self.entries.extend(kwargs["Entries"])
        self.beaten.set()
        return answer

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sqs, name)


def visibility_left(embedded: EmbeddedAws, url: str) -> list[float]:
    """Seconds each message of the queue stays hidden (0 for a visible one)."""
    queue = sqs_backends[DEFAULT_ACCOUNT_ID][embedded.region].queues[url.rsplit("/", 1)[-1]]
    with embedded.app.lock:
        now_ms = unix_time_millis()
        return [max(0.0, (m.visible_at - now_ms) / 1000) for m in queue._messages]


def _send(sqs: Any, url: str, count: int = 1) -> None:
    for i in range(count):
        sqs.send_message(QueueUrl=url, MessageBody=encode_body(InvokePayload(run_id=f"wrun_hb{i}")))


def _process(
    watch: BeatWatch,
    resources: ProvisionedResources,
    event: dict[str, Any],
    answer: Any,
    config: HeartbeatConfig | None = CONFIG,
) -> tuple[dict[str, Any], list[list[float]]]:
    """Process ``event``; each delivery waits for the first beat, notes the visibility, then answers."""
    seen: list[list[float]] = []

    def handler(_delivery: Delivery) -> HandlerResult:
        if config is not None:
            assert watch.beaten.wait(30), "no heartbeat"
        seen.append(visibility_left(watch.embedded, resources.step_queue_url))  # type: ignore[attr-defined]
        if isinstance(answer, Exception):
            raise answer
        return answer  # type: ignore[no-any-return]

    response = process_sqs_event(
        event,
        handler,
        sqs=watch,
        queue_urls=resources.queue_urls(),
        heartbeat=config,  # type: ignore[arg-type]
    )
    return dict(response), seen


@pytest.fixture
def watch(embedded: EmbeddedAws) -> BeatWatch:
    watched = BeatWatch(embedded.clients.sqs)
    watched.embedded = embedded  # type: ignore[attr-defined]
    return watched


def test_a_working_invocation_keeps_its_whole_batch_hidden_for_a_beat_not_the_queue_timeout(
    watch: BeatWatch, resources: ProvisionedResources, receive_event: ReceiveEvent, embedded: EmbeddedAws
) -> None:
    # GIVEN three messages received in one batch, hidden 60 s by the receive
    _send(embedded.clients.sqs, resources.step_queue_url, 3)
    event = receive_event(QueueName.STEP)
    assert len(event["Records"]) == 3
    # WHEN the batch is handled with a 10 s heartbeat
    response, seen = _process(watch, resources, event, Ack())
    # THEN while the first handler runs, every message of the batch is hidden for 15 s, not 60
    assert response == {"batchItemFailures": []}
    assert all(12 <= left <= 15 for left in seen[0]) and len(seen[0]) == 3
    assert {e["VisibilityTimeout"] for e in watch.entries} == {CONFIG.visibility_seconds} == {15}
    # AND the acked messages stay hidden until the invocation returns (Lambda deletes them then)
    assert all(left > 0 for left in visibility_left(embedded, resources.step_queue_url))


def test_a_failed_record_is_hidden_for_the_queue_timeout_as_before(
    watch: BeatWatch, resources: ProvisionedResources, receive_event: ReceiveEvent, embedded: EmbeddedAws
) -> None:
    # GIVEN a message whose handler fails after the first beat
    _send(embedded.clients.sqs, resources.step_queue_url)
    event = receive_event(QueueName.STEP)
    # WHEN it is handled
    response, _ = _process(watch, resources, event, Transient("table busy"))
    # THEN it is a failure, hidden for the queue's 900 s: a repeating failure reaches the
    # delivery cap over hours, not minutes
    assert [f["itemIdentifier"] for f in response["batchItemFailures"]] == [event["Records"][0]["messageId"]]
    (left,) = visibility_left(embedded, resources.step_queue_url)
    assert 890 <= left <= 900


def test_a_redelivery_keeps_its_own_visibility_and_is_beaten_no_more(
    watch: BeatWatch, resources: ProvisionedResources, receive_event: ReceiveEvent, embedded: EmbeddedAws
) -> None:
    # GIVEN a message whose handler asks to see it again at once, after the first beat
    _send(embedded.clients.sqs, resources.step_queue_url)
    event = receive_event(QueueName.STEP)
    # WHEN it is handled
    response, _ = _process(watch, resources, event, Redeliver(0))
    # THEN it is visible now (no beat landed after the handler's own change)
    assert len(response["batchItemFailures"]) == 1
    assert visibility_left(embedded, resources.step_queue_url) == [0.0]


def test_without_a_heartbeat_the_queue_timeout_stands(
    watch: BeatWatch, resources: ProvisionedResources, receive_event: ReceiveEvent, embedded: EmbeddedAws
) -> None:
    _send(embedded.clients.sqs, resources.step_queue_url)
    event = receive_event(QueueName.STEP)
    _, seen = _process(watch, resources, event, Ack(), config=None)
    assert seen[0][0] > 50 and not watch.entries


def test_the_configuration_is_read_with_the_worlds_and_checked() -> None:
    base = {
        "WORKFLOW_TABLE_NAME": "t",
        "WORKFLOW_QUEUE_URL": "q",
        "STEP_QUEUE_URL": "s",
        "WORKFLOW_PAYLOAD_BUCKET": "b",
        "AWS_REGION": "us-east-1",
    }
    assert AwsConfig.from_env(base).heartbeat == HeartbeatConfig(10, 900)
    tuned = AwsConfig.from_env(
        {**base, "WORKFLOW_HEARTBEAT_SECONDS": "2", "WORKFLOW_QUEUE_VISIBILITY_SECONDS": "150"}
    )
    assert (
        tuned.heartbeat.seconds,
        tuned.heartbeat.visibility_seconds,
        tuned.heartbeat.queue_visibility_seconds,
    ) == (
        2,
        3,
        150,
    )
    assert not AwsConfig.from_env({**base, "WORKFLOW_HEARTBEAT_SECONDS": "0"}).heartbeat.enabled
    with pytest.raises(BadInput, match="WORKFLOW_HEARTBEAT_SECONDS"):
        AwsConfig.from_env({**base, "WORKFLOW_HEARTBEAT_SECONDS": "-1"})
    with pytest.raises(BadInput, match="heartbeat configuration"):
        AwsConfig.from_env({**base, "WORKFLOW_HEARTBEAT_SECONDS": "soon"})
