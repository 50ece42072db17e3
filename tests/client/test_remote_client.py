"""``world_aws.client.connect``: a service starts and follows runs over the HTTP API, for real.

A ``world-aws dev`` stack (moto on loopback, the local consumers, the HTTP API) serves
``examples.approval``; the client reaches it over HTTP like a service reaches a deployed
stack, and what it reads back is the stack's state. Signing is checked against a
loopback server that records the headers it gets.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from examples.children import app as children_app
from tests.cli.conftest import Dev, dev  # noqa: F401 (the module's dev stack)
from world_aws.client import RemoteRun, connect
from world_aws.errors import BadInput, NotFound, ResultTimeout, RetryLater, RunCancelledError
from world_aws.local.dev import start_dev_stack


def test_a_service_starts_a_run_resumes_its_hook_and_reads_the_result(dev: Dev) -> None:  # noqa: F811
    client = connect(dev.url)
    # WHEN a service starts a run that waits on a hook
    run = client.start("approve_order", "svc-1", cents=20_000, idempotency_key="svc-1")
    assert isinstance(run, RemoteRun)
    dev.wait_for_event(run.run_id, "hook_created")
    # THEN it is running, the same key gives the same run, and waiting runs out of time
    assert run.status() == "running"
    assert client.start("approve_order", "svc-1", cents=20_000, idempotency_key="svc-1").run_id == run.run_id
    with pytest.raises(ResultTimeout):
        client.result(run.run_id, timeout=0.3)
    # WHEN it resumes the hook
    resume_id = client.resume("approve:svc-1", {"approved": True, "by": "ada"})
    # THEN the run completes with its value, read back through the API
    assert run.result(timeout=30) == {
        "order": "svc-1",
        "status": "approved",
        "shipping": "order svc-1 approved by ada, shipping",
    }
    assert resume_id and client.get(run.run_id)["status"] == "completed"
    # AND a cancel of an ended run says it had ended
    assert client.cancel(run.run_id) is False


def test_a_cancelled_run_raises_from_result(dev: Dev) -> None:  # noqa: F811
    client = connect(dev.url)
    run = client.start("approve_order", "svc-2")
    dev.wait_for_event(run.run_id, "hook_created")
    assert run.cancel("not needed") is True
    with pytest.raises(RunCancelledError):
        run.result(timeout=30)
    assert client.get(run.run_id)["status"] == "cancelled"


def test_bad_requests_are_the_package_errors(dev: Dev) -> None:  # noqa: F811
    client = connect(dev.url)
    with pytest.raises(BadInput, match="no_such_workflow"):
        client.start("no_such_workflow")
    with pytest.raises(NotFound):
        client.get("wrun_does_not_exist")
    with pytest.raises(NotFound):
        client.resume("approve:nobody-waits", {"approved": True})
    with pytest.raises(RetryLater, match="cannot reach"):
        connect("http://127.0.0.1:9", timeout=2).get("wrun_x")  # the discard port: refused
    with pytest.raises(BadInput):
        connect("ftp://example.com")


def test_result_follows_continue_as_new_to_the_last_run() -> None:
    # GIVEN a dev stack (the in-memory World behind the same HTTP API) serving a workflow that
    # continues as new every three numbers
    with start_dev_stack(children_app, port=0, kind="memory") as running:
        client = connect(running.url)
        run = client.start("count_up", 10)
        # THEN the first run's result is the last run's value, and the first run names its successor
        assert run.result(timeout=30) == {"limit": 10, "total": 55}
        assert client.get(run.run_id)["links"]["continued_as"]


class _Recorder(http.server.BaseHTTPRequestHandler):
    seen: list[dict[str, Any]] = []

    def do_GET(self) -> None:
        self.seen.append(dict(self.headers.items()))
        body = b'{"run_id": "wrun_1", "status": "running"}'
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "AKIDSERVICE",
        "AWS_SECRET_ACCESS_KEY": "secret",
        "AWS_REGION": "eu-west-1",
        "AWS_DEFAULT_REGION": "eu-west-1",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    _Recorder.seen = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_requests_are_signed_with_sigv4_from_the_default_credentials(recorder: str) -> None:
    # WHEN a client that signs reads a run
    assert connect(recorder, sign=True).get("wrun_1")["status"] == "running"
    # THEN the request carried a SigV4 signature for execute-api with the environment's credentials
    (headers,) = _Recorder.seen
    authorization = {k.lower(): v for k, v in headers.items()}["authorization"]
    assert authorization.startswith("AWS4-HMAC-SHA256 Credential=AKIDSERVICE/")
    assert "/eu-west-1/execute-api/aws4_request" in authorization
    # AND a loopback URL is not signed by default (a dev stack)
    connect(recorder).get("wrun_1")
    assert "authorization" not in {k.lower() for k in _Recorder.seen[-1]}
