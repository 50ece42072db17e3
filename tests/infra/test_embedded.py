"""EmbeddedAws: moto in-process on loopback, requests serialised, provisioned from the template."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlparse

import pytest

from world_aws.local.embedded import EmbeddedAws
from world_aws.local.serial_wsgi import SerializedApp


@pytest.fixture(scope="module")
def aws() -> Iterator[EmbeddedAws]:
    with EmbeddedAws(name_prefix="t-emb") as embedded:
        yield embedded


def test_server_listens_on_loopback_only(aws: EmbeddedAws) -> None:
    assert urlparse(aws.endpoint_url).hostname == "127.0.0.1"
    assert aws._server.address[0] == "127.0.0.1"


def test_template_resources_are_provisioned_and_reachable(aws: EmbeddedAws) -> None:
    table = aws.clients.dynamodb.describe_table(TableName=aws.resources.table_name)["Table"]
    assert table["TableStatus"] == "ACTIVE"
    for url in (aws.resources.workflow_queue_url, aws.resources.step_queue_url):
        assert aws.clients.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]
    aws.clients.s3.put_object(Bucket=aws.resources.bucket_name, Key="k", Body=b"v")
    assert aws.clients.s3.get_object(Bucket=aws.resources.bucket_name, Key="k")["Body"].read() == b"v"


def test_env_points_a_process_at_the_endpoint_with_fake_credentials(aws: EmbeddedAws) -> None:
    env = aws.env()
    assert env["AWS_ENDPOINT_URL"] == aws.endpoint_url
    assert (env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"]) == ("testing", "testing")
    assert env["AWS_REGION"] == aws.region
    assert env["WORKFLOW_TABLE_NAME"] == aws.resources.table_name
    assert env["WORKFLOW_QUEUE_URL"] == aws.resources.workflow_queue_url
    assert env["STEP_QUEUE_URL"] == aws.resources.step_queue_url
    assert env["WORKFLOW_PAYLOAD_BUCKET"] == aws.resources.bucket_name
    assert env["WORKFLOW_DEPLOYMENT_ID"] == ""  # the template's default (README, Configuration): versions


def test_optimistic_counter_loses_no_update_under_six_threads(aws: EmbeddedAws) -> None:
    # GIVEN one counter item and 6 threads doing read-then-conditional-update
    ddb, table = aws.clients.dynamodb, aws.resources.table_name
    key = {"pk": {"S": "counter"}, "sk": {"S": "counter"}}
    ddb.put_item(TableName=table, Item={**key, "n": {"N": "0"}})
    per_thread = 8

    def increment() -> None:
        for _ in range(per_thread):
            while True:
                n = int(ddb.get_item(TableName=table, Key=key, ConsistentRead=True)["Item"]["n"]["N"])
                try:
                    ddb.update_item(
                        TableName=table,
                        Key=key,
                        UpdateExpression="SET n = :new",
                        ConditionExpression="n = :old",
                        ExpressionAttributeValues={":new": {"N": str(n + 1)}, ":old": {"N": str(n)}},
                    )
                    break
                except ddb.exceptions.ConditionalCheckFailedException:
                    continue

    threads = [threading.Thread(target=increment) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # THEN every increment landed exactly once
    assert ddb.get_item(TableName=table, Key=key, ConsistentRead=True)["Item"]["n"]["N"] == str(
        6 * per_thread
    )


def test_serialized_app_never_runs_two_requests_at_once() -> None:
    # GIVEN an app that notes how many requests are inside it at once
    inside, peak, guard = [0], [0], threading.Lock()

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        with guard:
            inside[0] += 1
            peak[0] = max(peak[0], inside[0])
        time.sleep(0.005)  # give another thread the chance to enter
        with guard:
            inside[0] -= 1
        start_response("200 OK", [])
        return [b"ok"]

    wrapped = SerializedApp(app)
    environ = {"REQUEST_METHOD": "POST", "CONTENT_LENGTH": "0"}
    threads = [
        threading.Thread(target=lambda: [wrapped(dict(environ), lambda *a: None) for _ in range(5)])
        for _ in range(6)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert peak[0] == 1


def test_long_poll_neither_blocks_other_requests_nor_misses_a_message(aws: EmbeddedAws) -> None:
    # GIVEN a receive long-polling an empty queue
    sqs, url = aws.clients.sqs, aws.resources.step_queue_url
    received: list[Any] = []
    poller = threading.Thread(
        target=lambda: received.extend(
            sqs.receive_message(QueueUrl=url, WaitTimeSeconds=5).get("Messages", [])
        )
    )
    poller.start()
    # WHEN another client sends meanwhile
    started = time.monotonic()
    sqs.send_message(QueueUrl=url, MessageBody="aGVsbG8=")
    send_seconds = time.monotonic() - started
    poller.join()
    # THEN the send was not held up by the wait, and the poll returned the message early
    assert send_seconds < 1.0
    assert [m["Body"] for m in received] == ["aGVsbG8="]
    assert time.monotonic() - started < 4.0
    sqs.delete_message(QueueUrl=url, ReceiptHandle=received[0]["ReceiptHandle"])


def _count_receives(aws: EmbeddedAws) -> list[int]:
    """Counts the short polls that reach moto (the wrapped app), from now on."""
    count, inner = [0], aws.app.app

    def counting(environ: dict[str, Any], start_response: Any) -> Any:
        if environ.get("HTTP_X_AMZ_TARGET") == "AmazonSQS.ReceiveMessage":
            count[0] += 1
        return inner(environ, start_response)

    aws.app.app = counting
    return count


def test_an_idle_long_poll_makes_two_short_polls_not_one_every_few_ms(aws: EmbeddedAws) -> None:
    # GIVEN an empty queue
    sqs, url = aws.clients.sqs, aws.resources.workflow_queue_url
    inner = aws.app.app
    polls = _count_receives(aws)
    try:
        # WHEN a receive long-polls it for 1 s and nothing is sent
        got = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1).get("Messages", [])
    finally:
        aws.app.app = inner
    # THEN moto was asked twice: at the start and at the end of the wait
    assert got == [] and polls[0] == 2


def test_release_answers_a_waiting_long_poll_at_once() -> None:
    # GIVEN a receive long-polling an empty queue for 20 s on its own endpoint
    embedded = EmbeddedAws(name_prefix="t-emb-release")
    try:
        sqs, url = embedded.clients.sqs, embedded.resources.step_queue_url
        answered: list[Any] = []
        poller = threading.Thread(
            target=lambda: answered.append(sqs.receive_message(QueueUrl=url, WaitTimeSeconds=20))
        )
        poller.start()
        # WHEN the stack releases its long polls (as it does before stopping its consumers)
        embedded.app.release_long_polls()
        poller.join(15)
        # THEN the poll was answered, empty, long before its 20 s
        assert not poller.is_alive()
        assert answered[0].get("Messages", []) == []
    finally:
        embedded.stop()


def test_a_second_copy_can_be_provisioned_on_the_same_endpoint(aws: EmbeddedAws) -> None:
    copy = aws.provision("t-emb-copy")
    assert copy.table_name != aws.resources.table_name
    assert aws.clients.dynamodb.describe_table(TableName=copy.table_name)["Table"]["TableStatus"] == "ACTIVE"


def test_stop_shuts_the_endpoint_and_is_idempotent() -> None:
    # GIVEN a running embedded endpoint
    embedded = EmbeddedAws(name_prefix="t-emb-stop")
    address = (urlparse(embedded.endpoint_url).hostname, urlparse(embedded.endpoint_url).port)
    socket.create_connection(address, timeout=1).close()
    # WHEN it is stopped (twice)
    embedded.stop()
    embedded.stop()
    # THEN nothing listens there any more
    with pytest.raises(OSError):
        socket.create_connection(address, timeout=1).close()
