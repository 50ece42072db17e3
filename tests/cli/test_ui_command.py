"""``world-aws ui --api URL``: the UI on loopback, every API request passed through (and signed) to URL.

The "deployed" API here is a real API server over the memory World (or, to see
what arrives, a server that records each request), on another loopback port.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.api.apps import app
from world_aws.api.server import ApiServer, serve_api, serve_backend
from world_aws.cli.client import ApiClient
from world_aws.cli.ui import proxy_backend
from world_aws.contract.clock import ManualClock
from world_aws.local.memory import MemoryWorld, create_memory_world
from world_aws.runtime.runtime import Runtime

from .test_dev_command import FAKE_AWS_ENV, REPO, START_DEADLINE_SECONDS


@pytest.fixture
def deployed() -> Iterator[tuple[ApiServer, Runtime, MemoryWorld]]:
    world = create_memory_world(clock=ManualClock())
    runtime = Runtime(world, app)
    try:
        with serve_api(runtime, port=0) as server:
            yield server, runtime, world
    finally:
        runtime.close()
        world.close()


def _request(port: int, method: str, target: str, body: Any = None) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        data = None if body is None else json.dumps(body).encode()
        connection.request(method, target, body=data, headers={"content-type": "application/json"})
        answer = connection.getresponse()
        return answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read()
    finally:
        connection.close()


def test_the_proxy_passes_requests_and_answers_through(
    deployed: tuple[ApiServer, Runtime, MemoryWorld],
) -> None:
    server, runtime, world = deployed
    with serve_backend(proxy_backend(ApiClient(server.url, sign=False)), port=0) as proxy:
        status, headers, raw = _request(proxy.port, "POST", "/runs", {"workflow": "greet", "args": ["ada"]})
        assert status == 201 and headers["location"].startswith("/runs/wrun_")
        run_id = json.loads(raw)["run_id"]
        world.memory_queue.drain(runtime.handle)
        status, _, raw = _request(proxy.port, "GET", f"/runs/{run_id}/timeline")
        assert status == 200 and json.loads(raw)["status"] == "completed"
        status, headers, raw = _request(proxy.port, "GET", "/runs/wrun_nope")  # an error passes as it is
        assert status == 404 and headers["content-type"] == "application/json"
        assert json.loads(raw)["error"]["message"] == "run 'wrun_nope' not found"
        status, headers, raw = _request(proxy.port, "GET", "/ui/")  # the UI is the proxy's own
        assert status == 200 and b"/ui/app.js" in raw


def test_the_proxy_signs_what_it_passes_on(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in FAKE_AWS_ENV.items():
        monkeypatch.setenv(name, value)
    seen: list[dict[str, str]] = []

    def record(method: str, target: str, headers: dict[str, str], body: bytes) -> dict[str, Any]:
        seen.append({k.lower(): v for k, v in headers.items()} | {"target": target, "body": body.decode()})
        return {"statusCode": 200, "headers": {"content-type": "application/json"}, "body": "{}"}

    with (
        serve_backend(record, port=0) as api,
        serve_backend(proxy_backend(ApiClient(api.url, sign=True)), port=0) as proxy,
    ):
        status, _, _ = _request(proxy.port, "POST", "/runs/r1/cancel?x=1", {"reason": "r"})
    assert status == 200
    (sent,) = seen
    assert sent["target"] == "/runs/r1/cancel?x=1" and json.loads(sent["body"]) == {"reason": "r"}
    assert sent["authorization"].startswith("AWS4-HMAC-SHA256 Credential=testing/")
    assert "/us-east-1/execute-api/aws4_request" in sent["authorization"]


def test_an_unreachable_api_is_a_502_naming_it() -> None:
    with serve_backend(proxy_backend(ApiClient("http://127.0.0.1:9", sign=False)), port=0) as proxy:
        status, _, raw = _request(proxy.port, "GET", "/runs")
    assert status == 502
    assert "cannot reach http://127.0.0.1:9" in json.loads(raw)["error"]["message"]


def test_world_aws_ui_serves_until_sigint(deployed: tuple[ApiServer, Runtime, MemoryWorld]) -> None:
    server, _, _ = deployed
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "WORLD_AWS_"))} | FAKE_AWS_ENV
    code = "import sys; from world_aws.cli.main import main; sys.exit(main(sys.argv[1:]))"
    argv = [sys.executable, "-c", code, "ui", "--api", server.url, "--port", "0"]
    proc = subprocess.Popen(
        argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # "world-aws ui: http://127.0.0.1:<port>/ui/ for <api>"
        assert first.startswith("world-aws ui: http://127.0.0.1:") and first.rstrip().endswith(server.url)
        port = int(first.split("http://127.0.0.1:", 1)[1].split("/", 1)[0])
        status, _, raw = _request(port, "GET", "/workflows")
        assert status == 200 and "greet" in raw.decode()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=START_DEADLINE_SECONDS) == 0
        assert "world-aws ui: stopped" in proc.stdout.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
