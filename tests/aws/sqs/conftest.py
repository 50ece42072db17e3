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

from world_aws.aws.event_source import lambda_sqs_event
from world_aws.aws.infra.provision import ProvisionedResources
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


@pytest.fixture
def release_delayed(embedded: EmbeddedAws) -> ReleaseDelayed:
    """``release(url)``: the delays (s) of the queue's delayed messages, which become visible now."""

    def release(url: str) -> list[int]:
        queue = sqs_backends[DEFAULT_ACCOUNT_ID][embedded.region].queues[url.rsplit("/", 1)[-1]]
        delays = []
        with embedded.app.lock:  # no request runs while we touch the backend
            for message in queue._messages:
                if message.delayed:
                    delays.append(round((message.delayed_until - message.sent_timestamp) / 1000))
                    message.delayed_until = 0
        return delays

    return release


@pytest.fixture
def expire_in_flight(embedded: EmbeddedAws) -> ExpireInFlight:
    """``expire(url)``: the seconds of visibility left to the queue's received messages, now over."""

    def expire(url: str) -> list[int]:
        queue = sqs_backends[DEFAULT_ACCOUNT_ID][embedded.region].queues[url.rsplit("/", 1)[-1]]
        left = []
        with embedded.app.lock:  # no request runs while we touch the backend
            now_ms = unix_time_millis()
            for message in queue._messages:
                if not message.visible:
                    left.append(round((message.visible_at - now_ms) / 1000))
                    message.visible_at = 0
        return left

    return expire


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
