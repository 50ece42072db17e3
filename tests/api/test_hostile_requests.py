"""Issue 14: the API answers every request with JSON, whatever the request or the stored value holds."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from world_aws import Workflows, create_hook
from world_aws.api import app as api_app
from world_aws.api.app import handle_http
from world_aws.api.http import Response
from world_aws.api.jsonable import to_jsonable
from world_aws.errors import BadInput
from world_aws.runtime.runtime import Runtime
from world_aws.serde.limits import PayloadLimits

from .conftest import Api, http_event


@pytest.mark.parametrize("sign", [1, -1])
def test_an_int_over_the_str_conversion_limit_is_shown_as_hex(api: Api, sign: int) -> None:
    # GIVEN a run whose result holds an int of 20,000 bits (6,021 digits, over Python's 4,300)
    handle = api.runtime.start("power_of_two", 20_000, sign)
    api.drain()
    # WHEN it is read through the API
    answer = api.call("GET", f"/runs/{handle.run_id}")
    # THEN the answer is JSON, the big int its exact hex text, the small one still a number
    assert answer.status == 200
    assert answer.body["result"] == {"n": hex(sign * (1 << 20_000)), "small": 1 << 64}


def test_an_int_just_within_the_limit_stays_a_number() -> None:
    limit = sys.get_int_max_str_digits()
    largest = int("9" * limit)
    assert to_jsonable([largest, -largest]) == [largest, -largest]
    assert to_jsonable(largest * 10) == hex(largest * 10)


def test_lone_surrogates_in_values_are_escaped() -> None:
    rendered = to_jsonable({"k\ud800": ["a\udfff", b"\xff"]})
    assert rendered == {"k\\ud800": ["a\\udfff", "\\xff"]}
    json.dumps(rendered, ensure_ascii=False).encode("utf-8")


@pytest.mark.parametrize(
    ("event_fields", "problem"),
    [
        (
            {"body": "ünïcode", "isBase64Encoded": True},
            "body: isBase64Encoded is set but the body is not valid base64",
        ),
        (
            {"body": '{"workflow": "greet\ud800"}'},
            "body: not valid Unicode (surrogates not allowed at index 19)",
        ),
        ({"rawPath": "/runs/wrun_\ud800"}, "path: not valid Unicode"),
        ({"queryStringParameters": {"status": "\udc80"}}, "query: not valid Unicode"),
    ],
    ids=["base64 non-ascii", "body lone surrogate", "path lone surrogate", "query lone surrogate"],
)
def test_base64_and_unicode_edge_cases_are_400s_naming_the_problem(
    api: Api, event_fields: dict[str, Any], problem: str
) -> None:
    event = {**http_event("POST", "/runs"), **event_fields}
    response = handle_http(event, api.runtime)
    assert response["statusCode"] == 400
    assert json.loads(response["body"])["error"]["message"].startswith(problem)


def test_an_error_message_with_a_lone_surrogate_is_still_utf8_json(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*_args: Any, **_kwargs: Any) -> Any:
        raise BadInput("no such thing: \ud800")

    monkeypatch.setattr(api.world.runs, "get", refuse)
    response = handle_http(http_event("GET", "/runs/wrun_1"), api.runtime)
    assert response["statusCode"] == 400
    body = response["body"].encode("utf-8")  # encodable: what Lambda must send
    assert json.loads(body)["error"]["message"] == "no such thing: \ud800"


def test_an_answer_that_is_not_json_safe_is_a_json_500_not_an_exception(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a route whose answer json cannot write (a set)
    monkeypatch.setattr(api_app, "respond", lambda _event, _runtime: Response(200, {"oops": {1, 2}}))
    # WHEN the request is answered THEN it is a 500 in the usual JSON shape
    response = handle_http(http_event("GET", "/runs"), api.runtime)
    assert response["statusCode"] == 500
    assert json.loads(response["body"]) == {
        "error": {"kind": "Internal", "message": "internal error (request id req-1)"}
    }


def test_an_answer_over_the_response_cap_is_a_413_naming_both_sizes(api: Api) -> None:
    run_id = api.start("greet", "x" * 100)
    api.drain()
    response = handle_http(http_event("GET", f"/runs/{run_id}"), api.runtime, max_response_bytes=200)
    assert response["statusCode"] == 413
    error = json.loads(response["body"])["error"]
    assert (
        error["kind"] == "ResponseTooLarge" and "over the API's 200-byte response limit" in error["message"]
    )


def test_a_hook_payload_over_its_limit_is_a_400(api: Api) -> None:
    small = Workflows(limits=PayloadLimits(hook_payload=100))

    @small.workflow
    async def hold() -> object:
        return await create_hook(token="api:limit")

    runtime = Runtime(api.world, small)
    try:
        runtime.start("hold")
        api.world.memory_queue.drain(runtime.handle)
        event = http_event("POST", "/hooks/api:limit/resume", body={"payload": "p" * 1_000})
        response = handle_http(event, runtime)
    finally:
        runtime.close()
    assert response["statusCode"] == 400
    assert "over the hook payload limit of 100 bytes" in json.loads(response["body"])["error"]["message"]
