"""The loopback servers' browser policy over real HTTP: the dev server and the ``ui`` signing proxy alike.

Each rule of :mod:`world_aws.api.web_guard` is tried against both fronts; what a
refused request would have done is read back from the runtime behind them (no
run started, no run cancelled, no hook resumed).
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from world_aws.api.server import serve_api, serve_backend
from world_aws.api.web_guard import CSP, check_request
from world_aws.cli.client import ApiClient
from world_aws.cli.ui import proxy_backend

from .conftest import Api

JSON = {"content-type": "application/json"}


@dataclass
class Front:
    """A server a browser could reach: its port, and the requests that reached the API behind it."""

    port: int
    forwarded: list[str]

    def request(
        self, method: str, target: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str], Any]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            data = None if body is None else json.dumps(body).encode()
            connection.request(method, target, body=data, headers=headers or {})
            answer = connection.getresponse()
            raw = answer.read()
            parsed = json.loads(raw) if raw and answer.getheader("content-type", "").endswith("json") else raw
            return answer.status, {k.lower(): v for k, v in answer.getheaders()}, parsed
        finally:
            connection.close()

    @property
    def own(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@pytest.fixture(params=["dev", "ui"])
def front(request: pytest.FixtureRequest, api: Api) -> Iterator[Front]:
    forwarded: list[str] = []
    with serve_api(api.runtime, port=0) as dev:
        if request.param == "dev":
            yield Front(dev.port, forwarded)
            return
        passing = proxy_backend(ApiClient(dev.url, sign=False))

        def recorded(method: str, target: str, headers: dict[str, str], body: bytes) -> dict[str, Any]:
            forwarded.append(f"{method} {target}")
            return passing(method, target, headers, body)

        with serve_backend(recorded, port=0) as proxy:
            yield Front(proxy.port, forwarded)


def _runs(api: Api) -> list[str]:
    return [run["run_id"] for run in api.call("GET", "/runs").body["runs"]]


START = {"workflow": "greet", "args": ["ada"]}


@pytest.mark.parametrize(
    "content_type",
    [None, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"],
)
def test_a_state_change_without_a_json_body_is_a_415(
    api: Api, front: Front, content_type: str | None
) -> None:
    headers = {} if content_type is None else {"content-type": content_type}
    status, _, body = front.request("POST", "/runs", START, headers)
    assert status == 415 and body["error"]["kind"] == "UnsupportedMediaType"
    assert (
        body["error"]["message"]
        == f"Content-Type must be application/json for POST (got {content_type or 'none'})"
    )
    assert _runs(api) == [] and front.forwarded == []


def test_json_with_a_charset_from_the_own_origin_is_served(api: Api, front: Front) -> None:
    headers = {
        "content-type": "application/json; charset=utf-8",
        "origin": front.own,
        "sec-fetch-site": "same-origin",
    }
    status, _, body = front.request("POST", "/runs", START, headers)
    assert status == 201
    assert _runs(api) == [body["run_id"]]


@pytest.mark.parametrize("site", ["cross-site", "same-site"])
def test_a_state_change_from_another_site_is_a_403(api: Api, front: Front, site: str) -> None:
    run_id = api.start("wait_for_approval", "o-1")
    api.drain()
    attempts = [
        ("/runs", START),
        (f"/runs/{run_id}/cancel", {"reason": "from a web page"}),
        ("/hooks/approve%3Ao-1/resume", {"payload": "yes"}),
    ]
    for target, payload in attempts:
        status, _, body = front.request("POST", target, payload, {**JSON, "sec-fetch-site": site})
        assert status == 403 and body["error"]["kind"] == "Forbidden"
        assert f"cross-site request refused (Sec-Fetch-Site: {site})" in body["error"]["message"]
    assert _runs(api) == [run_id] and api.call("GET", f"/runs/{run_id}").body["status"] == "running"
    assert front.forwarded == []


@pytest.mark.parametrize("origin", ["http://127.0.0.1:9", "http://evil.example", "null"])
def test_a_state_change_with_a_foreign_origin_is_a_403(api: Api, front: Front, origin: str) -> None:
    status, _, body = front.request("POST", "/runs", START, {**JSON, "origin": origin})
    assert status == 403
    assert body["error"]["message"].startswith(f"cross-origin request refused (Origin: {origin})")
    assert _runs(api) == [] and front.forwarded == []


@pytest.mark.parametrize(
    "host", ["evil.example:{port}", "127.0.0.1:1", "localhost.evil.example:{port}", "10.0.0.1"]
)
def test_a_foreign_host_is_refused_on_reads_too(front: Front, host: str) -> None:
    name = host.format(port=front.port)
    for method, target in [("GET", "/runs"), ("GET", "/ui/"), ("POST", "/runs")]:
        status, _, body = front.request(
            method, target, START if method == "POST" else None, {**JSON, "host": name}
        )
        assert status == 403
        assert body["error"]["message"].startswith(f"Host {name!r} is not this server")
    assert front.forwarded == []


@pytest.mark.parametrize("name", ["localhost", "127.0.0.1", "[::1]", "LOCALHOST"])
def test_every_loopback_name_with_the_port_is_served(front: Front, name: str) -> None:
    status, _, body = front.request("GET", "/runs", headers={"host": f"{name}:{front.port}"})
    assert status == 200 and body["runs"] == []


def test_a_read_from_another_site_is_refused_but_a_link_to_the_ui_opens(front: Front) -> None:
    status, _, _ = front.request(
        "GET", "/runs", headers={"sec-fetch-site": "cross-site", "sec-fetch-mode": "cors"}
    )
    assert status == 403
    status, _, _ = front.request(
        "GET", "/runs", headers={"sec-fetch-site": "same-site", "origin": "http://127.0.0.1:9"}
    )
    assert status == 403
    assert front.forwarded == []
    navigation = {"sec-fetch-site": "cross-site", "sec-fetch-mode": "navigate"}
    status, _, page = front.request("GET", "/ui/", headers=navigation)
    assert status == 200 and b"/ui/app.js" in page


def test_the_ui_and_the_api_answer_with_the_security_headers(front: Front) -> None:
    for target in ("/ui/", "/ui/app.js", "/runs", "/ui/nope.js"):
        _, headers, _ = front.request("GET", target)
        assert headers["content-security-policy"] == CSP
        assert "frame-ancestors 'none'" in CSP and "script-src 'self'" in CSP and "unsafe-inline" not in CSP
        assert headers["x-frame-options"] == "DENY"
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["cross-origin-resource-policy"] == "same-origin"
    status, headers, _ = front.request("POST", "/runs", START, {"content-type": "text/plain"})
    assert status == 415 and headers["x-content-type-options"] == "nosniff"


def test_the_policy_alone() -> None:
    own = {"host": "127.0.0.1:8787"}
    assert check_request("GET", own, 8787) is None
    assert check_request("POST", {**own, **JSON}, 8787) is None  # curl, the CLI: no browser headers
    assert check_request("post", {**own, "Content-Type": "Application/JSON"}, 8787) is None
    assert check_request("POST", {**own, **JSON, "sec-fetch-site": "none"}, 8787) is None  # typed by the user
    assert check_request("GET", {"host": "localhost"}, 80) is None  # the default port may be left out
    assert check_request("GET", {"host": "[::1]"}, 80) is None
    refused = [
        check_request("GET", {}, 8787),  # no Host at all
        check_request("GET", {"host": "127.0.0.1"}, 8787),
        check_request("GET", {"host": "[::1]x"}, 8787),
        check_request("DELETE", own, 8787),
        check_request("PUT", {**own, **JSON, "origin": "http://localhost:8787"}, 8787),  # not the Host
    ]
    assert [r.status if r else None for r in refused] == [403, 403, 403, 415, 403]
