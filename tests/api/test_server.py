"""The local API server: real HTTP on 127.0.0.1 translated into v2.0 events for ``handle_http``."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator

import pytest

from world_aws.api.server import MAX_BODY_BYTES, ApiServer, serve_api, to_event

from .conftest import Api


@pytest.fixture
def server(api: Api) -> Iterator[ApiServer]:
    with serve_api(api.runtime, port=0) as served:
        yield served


def _request(
    server: ApiServer, method: str, target: str, body: bytes | None = None
) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        connection.request(method, target, body=body, headers={"content-type": "application/json"})
        answer = connection.getresponse()
        return answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read()
    finally:
        connection.close()


def test_the_server_listens_on_loopback_only(server: ApiServer) -> None:
    assert server.url == f"http://127.0.0.1:{server.port}"


def test_a_run_started_and_resumed_over_real_http(api: Api, server: ApiServer) -> None:
    body = json.dumps({"workflow": "wait_for_approval", "args": ["eu/1"]}).encode()
    status, headers, raw = _request(server, "POST", "/runs", body)
    assert status == 201 and headers["content-type"] == "application/json"
    run_id = json.loads(raw)["run_id"]
    api.drain()
    status, _, raw = _request(server, "POST", "/hooks/approve%3Aeu%2F1/resume", b'{"payload": "yes"}')
    assert status == 202 and json.loads(raw)["token"] == "approve:eu/1"
    api.drain()
    status, _, raw = _request(server, "GET", f"/runs/{run_id}")
    assert status == 200 and json.loads(raw)["result"] == {"order": "eu/1", "decision": "yes"}


def test_query_parameters_reach_the_api(api: Api, server: ApiServer) -> None:
    api.start("greet", "x")
    status, _, raw = _request(server, "GET", "/runs?status=completed&workflow=greet")
    assert status == 200 and json.loads(raw)["runs"] == []
    status, _, raw = _request(server, "GET", "/runs?limit=zero")
    assert status == 400
    assert json.loads(raw)["error"]["message"].startswith("limit: Input should be a valid integer")


def test_a_body_over_the_lambda_limit_is_a_413(server: ApiServer) -> None:
    status, _, raw = _request(server, "POST", "/runs", b"x" * (MAX_BODY_BYTES + 1))
    assert status == 413 and "too large" in json.loads(raw)["error"]["message"]


def test_head_answers_without_a_body(server: ApiServer) -> None:
    status, headers, raw = _request(server, "HEAD", "/runs")
    assert status == 405 and raw == b"" and headers["allow"] == "POST, GET"


def test_to_event_builds_a_v2_event_like_api_gateway() -> None:
    event = to_event("POST", "/hooks/a%2Fb/resume?x=1&x=2&y=", {"User-Agent": "curl"}, b'{"payload": 1}')
    assert event["version"] == "2.0"
    assert event["rawPath"] == "/hooks/a%2Fb/resume"
    assert event["queryStringParameters"] == {"x": "1,2", "y": ""}  # repeats joined with commas
    assert event["requestContext"]["http"]["method"] == "POST"
    assert event["headers"] == {"user-agent": "curl"}
    assert (event["body"], event["isBase64Encoded"]) == ('{"payload": 1}', False)
    binary = to_event("POST", "/runs", {}, b"\xff\xfe")
    assert (binary["body"], binary["isBase64Encoded"]) == ("//4=", True)


def test_the_root_redirects_to_the_ui_and_the_ui_files_are_served(server: ApiServer) -> None:
    status, headers, _ = _request(server, "GET", "/")
    assert status == 302 and headers["location"] == "/ui/"
    status, headers, raw = _request(server, "GET", "/ui/")
    assert status == 200 and headers["content-type"].startswith("text/html")
    assert b'<script src="/ui/app.js">' in raw
    status, headers, raw = _request(server, "GET", "/ui/app.js")
    assert status == 200 and headers["content-type"].startswith("text/javascript")
    assert b"fetch(" in raw and b"http://" not in raw and b"https://" not in raw  # no network beyond the API


@pytest.mark.parametrize(
    "target", ["/ui/missing.js", "/ui/../app.py", "/ui/static/app.js", "/ui/.hidden.css"]
)
def test_only_the_ui_files_are_served_under_ui(server: ApiServer, target: str) -> None:
    status, headers, raw = _request(server, "GET", target)
    assert status == 404 and headers["content-type"] == "application/json"
    assert json.loads(raw)["error"]["kind"] == "NotFound"


def test_the_api_is_still_answered_beside_the_ui(api: Api, server: ApiServer) -> None:
    status, _, raw = _request(server, "GET", "/workflows")
    assert status == 200 and "greet" in [w["name"] for w in json.loads(raw)["workflows"]]
