"""Fixtures of the SQS tests: one EmbeddedAws per module, fresh template resources per test.

moto delays messages and times visibility in wall-clock time, which a ``ManualClock``
cannot move. ``release_delayed`` and ``expire_in_flight`` therefore reach into moto's
SQS backend (same process) to read each delayed (or received) message's delay (or
remaining visibility) and make it visible now: the state is read back from the
queue, and no test sleeps for a delay or a visibility timeout.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from moto.core import DEFAULT_ACCOUNT_ID
from moto.core.utils import unix_time_millis
from moto.sqs.models import sqs_backends

from world_aws.aws.infra.provision import ProvisionedResources
from world_aws.aws.queue.event_source import lambda_sqs_event
from world_aws.contract.world import QueueName
from world_aws.local.embedded import EmbeddedAws

ReleaseDelayed = Callable[[str], list[int]]
ExpireInFlight = Callable[[str], list[int]]
ReceiveEvent = Callable[[QueueName], dict[str, Any]]


@pytest.fixture(scope="module")
def embedded() -> Iterator[EmbeddedAws]:
    with EmbeddedAws(name_prefix="t-sqs-base") as aws:
        yield aws


@pytest.fixture
def resources(embedded: EmbeddedAws) -> ProvisionedResources:
    """A fresh copy of the template's table, queues and bucket for this test."""
    return embedded.provision(f"t-{uuid.uuid4().hex[:12]}")


@pytest.fixture
def sqs(embedded: EmbeddedAws) -> Any:
    return embedded.clients.sqs


def _release(embedded: EmbeddedAws, url: str, held: Callable[[Any, float], float | None]) -> list[int]:
    """For each message of the queue that ``held(message, now_ms)`` says is held (for how many ms
    more), make it visible now; returns those seconds. No request runs meanwhile."""
    queue = sqs_backends[DEFAULT_ACCOUNT_ID][embedded.region].queues[url.rsplit("/", 1)[-1]]
    released = []
    with embedded.app.lock:
        now_ms = unix_time_millis()
        for message in queue._messages:
            left_ms = held(message, now_ms)
            if left_ms is not None:
                released.append(round(left_ms / 1000))
                message.delayed_until = message.visible_at = 0
    return released


@pytest.fixture
def release_delayed(embedded: EmbeddedAws) -> ReleaseDelayed:
    """``release(url)``: the delays (s) of the queue's delayed messages, which become visible now."""

    def delay(message: Any, _now_ms: float) -> float | None:
        return message.delayed_until - message.sent_timestamp if message.delayed else None

    return lambda url: _release(embedded, url, delay)


@pytest.fixture
def expire_in_flight(embedded: EmbeddedAws) -> ExpireInFlight:
    """``expire(url)``: the seconds of visibility left to the queue's received messages, now over."""

    def visibility_left(message: Any, now_ms: float) -> float | None:
        return None if message.visible else message.visible_at - now_ms

    return lambda url: _release(embedded, url, visibility_left)


@pytest.fixture
def receive_event(sqs: Any, resources: ProvisionedResources) -> ReceiveEvent:
    """``receive(queue)``: the Lambda SQS event of every visible message of ``queue`` (held 60 s)."""

    def receive(queue: QueueName) -> dict[str, Any]:
        settings = resources.queues[queue]
        messages = sqs.receive_message(
            QueueUrl=settings.url,
            MaxNumberOfMessages=10,
            VisibilityTimeout=60,
            MessageSystemAttributeNames=["All"],
            MessageAttributeNames=["All"],
        ).get("Messages", [])
        return lambda_sqs_event(messages, settings.arn)

    return receive


@pytest.fixture
def count(sqs: Any) -> Callable[[str], int]:
    """``count(url)``: visible + in-flight + delayed messages of a queue."""
    names = [
        "ApproximateNumberOfMessages",
        "ApproximateNumberOfMessagesNotVisible",
        "ApproximateNumberOfMessagesDelayed",
    ]

    def count_messages(url: str) -> int:
        attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=names)["Attributes"]
        return sum(int(attributes[name]) for name in names)

    return count_messages
