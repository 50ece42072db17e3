"""``LoopbackMotoServer``: one kept-alive connection serves a client's requests, answered as before."""

from __future__ import annotations

import http.client
import os
import threading
from collections.abc import Iterator

import boto3
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from world_aws.local.moto_server import LoopbackMotoServer


@pytest.fixture
def server() -> Iterator[LoopbackMotoServer]:
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    started = LoopbackMotoServer()
    yield started
    started.stop()


def _signed_list_queues_headers(connection: http.client.HTTPConnection) -> dict[str, str]:
    """The headers of an SQS ListQueues form POST to ``connection``, signed with SigV4 for ``sqs``.

    Signed, so the request names its service: what is tested is how ``LoopbackMotoServer`` holds
    and answers a connection, not how moto routes an unsigned request (moto 5.2.6 sends an
    unsigned form POST to ``/`` to S3, which answers 500).
    """
    url = f"http://{connection.host}:{connection.port}/"
    form = {"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"}
    request = AWSRequest(method="POST", url=url, data=b"Action=ListQueues", headers=form)
    SigV4Auth(Credentials("testing", "testing"), "sqs", "us-east-1").add_auth(request)
    return dict(request.headers.items())


def _answer_to_list_queues(
    connection: http.client.HTTPConnection, **headers: str
) -> http.client.HTTPResponse:
    """One signed ListQueues on ``connection``: its answer (status 200 asserted), body read."""
    form = {**_signed_list_queues_headers(connection), **headers}
    connection.request("POST", "/", body=b"Action=ListQueues", headers=form)
    response = connection.getresponse()
    assert response.status == 200
    assert b"ListQueues" in response.read()
    return response


def _list_queues(connection: http.client.HTTPConnection, **headers: str) -> bool:
    """One signed ListQueues on ``connection``, answered 200 with SQS's answer."""
    return _answer_to_list_queues(connection, **headers) is not None


def test_a_clients_requests_share_one_connection_and_keep_their_answers(server: LoopbackMotoServer) -> None:
    # GIVEN a client of the server (its own connection pool)
    sqs = boto3.client("sqs", region_name="us-east-1", endpoint_url=server.endpoint_url)
    url = sqs.create_queue(QueueName="kept")["QueueUrl"]
    # WHEN it makes many requests with bodies of different sizes, one after the other
    sent = [f"message {i} " + "x" * (i * 97) for i in range(25)]
    for body in sent:
        sqs.send_message(QueueUrl=url, MessageBody=body)
    received: list[str] = []
    while len(received) < len(sent):
        answer = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0)
        batch = answer.get("Messages", [])
        assert batch, "a message went missing"
        received += [m["Body"] for m in batch]
    # THEN every answer is the right one, and the server held one connection for them
    assert sorted(received) == sorted(sent)
    assert len(server._server.open_connections) == 1  # type: ignore[attr-defined]


def test_head_get_and_put_of_an_object_on_a_kept_connection(server: LoopbackMotoServer) -> None:
    s3 = boto3.client("s3", region_name="us-east-1", endpoint_url=server.endpoint_url)
    s3.create_bucket(Bucket="kept")
    s3.put_object(Bucket="kept", Key="k", Body=b"0123456789" * 1000)
    # A HEAD answer has the object's length and no body; the next answer on the connection is whole.
    assert s3.head_object(Bucket="kept", Key="k")["ContentLength"] == 10_000
    assert s3.get_object(Bucket="kept", Key="k")["Body"].read() == b"0123456789" * 1000
    assert len(server._server.open_connections) == 1  # type: ignore[attr-defined]


def test_a_request_that_asks_to_close_gets_its_answer_and_the_close(server: LoopbackMotoServer) -> None:
    host, port = server.address
    connection = http.client.HTTPConnection(host, port, timeout=5)
    assert _list_queues(connection, Connection="close")
    # The server lets go of it after the answer.
    released = threading.Event()
    for _ in range(200):
        if not server._server.open_connections:  # type: ignore[attr-defined]
            released.set()
            break
        released.wait(0.01)
    assert released.is_set()
    connection.close()


def test_stop_ends_the_kept_connections() -> None:
    # GIVEN a server holding a kept-alive connection
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    server = LoopbackMotoServer()
    host, port = server.address
    connection = http.client.HTTPConnection(host, port, timeout=5)
    assert _list_queues(connection)
    assert len(server._server.open_connections) == 1  # type: ignore[attr-defined]
    # WHEN it stops
    server.stop()
    # THEN the connection is closed from its side: the next request on it fails
    with pytest.raises((ConnectionError, http.client.HTTPException, OSError)):
        _list_queues(connection)


def test_answers_write_no_access_log_line_and_a_proper_date(
    server: LoopbackMotoServer, caplog: pytest.LogCaptureFixture
) -> None:
    # GIVEN the server's requests logged at INFO
    caplog.set_level("INFO", logger="werkzeug")
    sqs = boto3.client("sqs", region_name="us-east-1", endpoint_url=server.endpoint_url)
    # WHEN answered normally, and with an error of the client's (a missing queue: a 400)
    sqs.list_queues()
    with pytest.raises(sqs.exceptions.QueueDoesNotExist):
        sqs.get_queue_url(QueueName="missing")
    # THEN no access line was written for either
    assert not [r for r in caplog.records if r.name == "werkzeug" and "POST" in r.getMessage()]
    # AND the Date header is a proper HTTP date
    host, port = server.address
    connection = http.client.HTTPConnection(host, port, timeout=5)
    response = _answer_to_list_queues(connection)
    assert response.getheader("Date", "").endswith(" GMT")
    connection.close()
