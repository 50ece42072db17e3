"""The HTTP edge: routing, methods, malformed events, stages, and failures that must not leak."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from world_aws.api.app import handle_http
from world_aws.errors import Throttled, Transient

from .conftest import Api, http_event


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("DELETE", "/runs", "POST, GET"),
        ("PUT", "/runs/wrun_1", "GET"),
        ("GET", "/runs/wrun_1/cancel", "POST"),
        ("GET", "/hooks/t/resume", "POST"),
    ],
)
def test_a_method_the_route_does_not_take_is_a_405_with_allow(
    api: Api, method: str, path: str, allowed: str
) -> None:
    answer = api.call(method, path)
    assert answer.status == 405
    assert answer.headers["allow"] == allowed
    assert answer.body["error"]["kind"] == "MethodNotAllowed"


@pytest.mark.parametrize("path", ["/", "/run", "/runs/a/b/c", "/hooks/t"])
def test_an_unknown_path_is_a_404(api: Api, path: str) -> None:
    answer = api.call("GET", path)
    assert answer.status == 404
    assert answer.message.startswith("no such route: GET")


def test_a_named_stage_prefix_and_a_trailing_slash_are_ignored(api: Api) -> None:
    run_id = api.start("greet", "x")
    answer = api.call("GET", f"/prod/runs/{run_id}/", stage="prod")
    assert answer.status == 200 and answer.body["run_id"] == run_id


@pytest.mark.parametrize(
    "event",
    [None, [], {"rawPath": "/runs"}, {"requestContext": {"http": {"method": "GET"}}}],
    ids=["null", "list", "no-method", "no-path"],
)
def test_an_event_that_is_not_an_http_v2_event_is_a_400(api: Api, event: Any) -> None:
    response = handle_http(event, api.runtime)
    assert response["statusCode"] == 400
    assert "payload format 2.0" in response["body"]


def test_a_body_flagged_base64_that_is_not_is_a_400(api: Api) -> None:
    event = http_event("POST", "/runs", raw_body="{not base64!}")
    event["isBase64Encoded"] = True
    response = handle_http(event, api.runtime)
    assert response["statusCode"] == 400
    assert "not valid base64" in response["body"]


def test_an_unexpected_failure_is_a_500_that_names_only_the_request_id(
    api: Api, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # GIVEN a World whose read fails with an unexpected exception carrying internal detail
    def broken(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError("password=hunter2 at /internal/path.py")

    monkeypatch.setattr(api.world.runs, "get", broken)
    # WHEN a run is read
    with caplog.at_level(logging.ERROR, logger="world_aws.api"):
        answer = api.call("GET", "/runs/wrun_1")
    # THEN the answer is a bare 500 with the request id, nothing else
    assert answer.status == 500
    assert answer.body == {"error": {"kind": "Internal", "message": "internal error (request id req-1)"}}
    # AND the traceback is logged server side
    assert "hunter2" in caplog.text and "Traceback" in caplog.text


@pytest.mark.parametrize(
    ("error", "status"), [(Throttled("slow down", retry_after=2.5), 429), (Transient("x"), 503)]
)
def test_a_backend_asking_to_retry_is_a_429_or_503_with_retry_after(
    api: Api, monkeypatch: pytest.MonkeyPatch, error: Exception, status: int
) -> None:
    def busy(*_args: Any, **_kwargs: Any) -> Any:
        raise error

    monkeypatch.setattr(api.world.runs, "list", busy)
    answer = api.call("GET", "/runs")
    assert answer.status == status
    assert int(answer.headers["retry-after"]) >= 1
    assert answer.message == "the backend is busy; try again"
