"""A missing table, bucket or queue, or refused access is ``Misconfigured``, never ``NotFound`` (contract §3).

Each World here is the test's real moto World with one name wrong (a typo in the
configuration), on the same clients; refused access is injected with a botocore
hook that answers as AWS does. A missing S3 *object* stays ``NotFound``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from botocore.exceptions import ClientError, NoCredentialsError

from world_aws.aws.errors import translate
from world_aws.aws.world import AwsWorld, create_aws_world
from world_aws.contract.records import EventRequest, EventType, RunCreatedData
from world_aws.contract.world import BlobRef, QueueName
from world_aws.errors import Misconfigured, NotFound, RetryLater, Transient
from world_aws.testing.conformance.support import create_run, creation, new_id


def misconfigured_world(world: AwsWorld, **wrong: str) -> AwsWorld:
    """``world``'s configuration with ``wrong`` names, on the same moto clients and clock."""
    return create_aws_world(
        dataclasses.replace(world.config, **wrong), clients=world.clients, clock=world.clock
    )


@contextmanager
def refused(client: Any, service: str, code: str) -> Iterator[None]:
    """Every call of ``client`` answers ``code`` (HTTP 400), as AWS does for refused credentials."""

    def deny(**kwargs: Any) -> None:
        response: Any = {"Error": {"Code": code, "Message": "User is not authorized"}}
        raise ClientError(response, str(kwargs.get("event_name", "")).rsplit(".", 1)[-1])

    client.meta.events.register(f"before-call.{service}", deny)
    try:
        yield
    finally:
        client.meta.events.unregister(f"before-call.{service}", deny)


def test_kind_is_neither_not_found_nor_retry_later() -> None:
    # GIVEN the error the AWS World raises for a misconfiguration
    error = Misconfigured("x", resource="table t", operation="DynamoDB GetItem")
    # THEN no handler of absence or of "retry a little later" can swallow it
    assert not isinstance(error, NotFound | RetryLater)
    assert (error.kind.value, error.code) == ("Misconfigured", 503)


def test_missing_table_is_misconfigured_naming_it_on_reads_and_writes(world: AwsWorld) -> None:
    # GIVEN a run in the real table, and a World whose table name has a typo
    run_id = create_run(world)
    typo = misconfigured_world(world, table_name="workflow-tabel")
    # WHEN it reads the run, lists runs (the index) or writes an event
    reads = [
        lambda: typo.runs.get(run_id),
        lambda: typo.runs.list(),
        lambda: typo.events.list(run_id),
        lambda: typo.steps.any_pending(run_id, besides="step_x"),
    ]
    for read in reads:
        with pytest.raises(Misconfigured) as raised:
            read()
        # THEN each is Misconfigured naming the table and the operation, never NotFound
        assert raised.value.resource.startswith("table workflow-tabel")
        assert "workflow-tabel" in str(raised.value) and raised.value.operation.startswith("DynamoDB ")
    with pytest.raises(Misconfigured, match="workflow-tabel"):
        typo.events.create(
            new_id("wrun"), EventRequest(EventType.RUN_CREATED, data=RunCreatedData(creation=creation()))
        )
    # AND the real run is untouched
    assert [e.type for e in world.events.list(run_id)] == [EventType.RUN_CREATED, EventType.RUN_STARTED]


def test_missing_bucket_is_misconfigured_but_a_missing_object_is_not_found(world: AwsWorld) -> None:
    # GIVEN a World whose bucket name has a typo
    typo = misconfigured_world(world, bucket_name="payload-bukcet")
    # WHEN it stores or fetches a blob THEN it is Misconfigured naming the bucket
    with pytest.raises(Misconfigured, match="payload-bukcet") as put:
        typo.blobs.put(b"x" * 10)
    assert put.value.resource == "bucket payload-bukcet"
    ref = world.blobs.put(b"claim-checked input")
    with pytest.raises(Misconfigured, match="does not exist"):
        typo.blobs.get(ref)
    # AND on the right bucket a claim check whose object is gone is NotFound (domain absence)
    missing = BlobRef(key="blobs/sha256/" + "0" * 64, size=3, sha256="0" * 64)
    with pytest.raises(NotFound, match="not found in bucket"):
        world.blobs.get(missing)


@pytest.mark.parametrize("key", [None, "wake-1"])
def test_missing_queue_is_misconfigured_naming_its_url(world: AwsWorld, key: str | None) -> None:
    # GIVEN a World whose step queue URL has a typo
    wrong_url = world.config.step_queue_url + "-typo"
    typo = misconfigured_world(world, step_queue_url=wrong_url)
    # WHEN it publishes (with or without an idempotency key)
    with pytest.raises(Misconfigured) as raised:
        typo.queue.publish(QueueName.STEP, b"\xa0", idempotency_key=key)
    # THEN the error names the queue URL and the send
    assert raised.value.resource == f"queue {wrong_url}"
    assert raised.value.operation == "SQS SendMessage"
    # AND a keyed publish released its claim: once the URL is fixed, the same key sends at once
    if key is not None:
        world.queue.publish(QueueName.STEP, b"\xa0", idempotency_key=key)
        received = world.clients.sqs.receive_message(QueueUrl=world.config.step_queue_url)
        assert len(received.get("Messages", [])) == 1


@pytest.mark.parametrize(
    ("service", "code"),
    [
        ("dynamodb", "AccessDeniedException"),
        ("dynamodb", "UnrecognizedClientException"),
        ("dynamodb", "ExpiredTokenException"),
        ("s3", "AccessDenied"),
        ("sqs", "InvalidClientTokenId"),
    ],
)
def test_access_denied_is_misconfigured_naming_the_resource(world: AwsWorld, service: str, code: str) -> None:
    # GIVEN a run, and one service refusing the World's credentials
    run_id = create_run(world)
    client = getattr(world.clients, service)
    calls = {
        "dynamodb": (lambda: world.runs.get(run_id), f"table {world.config.table_name}"),
        "s3": (lambda: world.blobs.put(b"payload"), f"bucket {world.config.bucket_name}"),
        "sqs": (
            lambda: world.queue.publish(QueueName.WORKFLOW, b"\xa0"),
            f"queue {world.config.workflow_queue_url}",
        ),
    }
    call, resource = calls[service]
    # WHEN the World calls it
    with refused(client, service, code), pytest.raises(Misconfigured) as raised:
        call()
    # THEN it is Misconfigured, saying access was denied to the resource
    assert raised.value.resource == resource
    assert f"access denied to {resource}" in str(raised.value) and code in str(raised.value)
    # AND once access is back, the same call works (the run was never touched)
    call()
    assert world.runs.get(run_id).run_id == run_id


def test_no_credentials_at_all_is_misconfigured() -> None:
    # GIVEN botocore finding no credentials WHEN translated THEN Misconfigured, not Transient
    error = translate(NoCredentialsError(), operation="DynamoDB GetItem", resource="table t")
    assert isinstance(error, Misconfigured) and not isinstance(error, Transient)
    assert error.resource == "table t"
