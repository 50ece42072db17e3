"""Fuzz the HTTP API (issue 14): every event gets a JSON answer, and hostile input is never a 5xx.

For any event (a method, a path of any text, any query, a body of any text or bytes,
flagged base64 or not), ``handle_http``:

* never raises, and answers ``{statusCode, headers, body}`` with a JSON body that
  encodes as UTF-8 (what Lambda must send);
* answers a client error, never a 5xx: nothing a caller sends is a server error.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from world_aws import Workflows, create_hook
from world_aws.api.app import handle_http
from world_aws.contract.clock import ManualClock
from world_aws.local.memory import create_memory_world
from world_aws.runtime.runtime import Runtime

from .strategies import HTTP_PATHS

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


app = Workflows()


@app.workflow
async def greet(name: str) -> dict[str, object]:
    return {"hello": name, "letters": set(name), "raw": name.encode("utf-8", "surrogatepass")}


@app.workflow
async def power_of_two(bits: int) -> int:
    return 1 << min(max(bits, 0), 40_000)


@app.workflow
async def approve(token: str) -> object:
    return await create_hook(token=token)


@pytest.fixture(scope="module")
def runtime() -> Iterator[Runtime]:
    world = create_memory_world(clock=ManualClock())
    bound = Runtime(world, app)
    try:
        yield bound
    finally:
        bound.close()
        world.close()


json_bodies = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=10)),
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=8,
)
starts = st.fixed_dictionaries(
    {"workflow": st.sampled_from(["greet", "nope", "power_of_two", "approve"])},
    optional={"args": json_bodies, "kwargs": json_bodies, "idempotency_key": json_bodies},
).map(json.dumps)


@st.composite
def events(draw: st.DrawFn) -> dict[str, Any]:
    path = draw(st.one_of(st.sampled_from(HTTP_PATHS), st.text(max_size=30).map(lambda t: "/" + t)))
    body = draw(st.one_of(st.none(), starts, st.text(max_size=40), json_bodies.map(json.dumps)))
    flagged = draw(st.booleans())
    if flagged and body is not None and draw(st.booleans()):
        body = base64.b64encode(body.encode("utf-8", "surrogatepass")).decode()
    return {
        "version": "2.0",
        "rawPath": path,
        "queryStringParameters": draw(
            st.one_of(
                st.none(),
                st.dictionaries(st.sampled_from(["limit", "status", "after", "x"]), st.text(max_size=8)),
            )
        ),
        "requestContext": {
            "http": {"method": draw(st.sampled_from(["GET", "POST", "PUT", "DELETE", "get", ""]))},
            "requestId": "fuzz",
            "stage": draw(st.sampled_from(["$default", "prod"])),
        },
        "body": body,
        "isBase64Encoded": flagged,
    }


@FUZZ
@given(event=events())
def test_every_request_gets_a_json_answer_and_none_is_a_server_error(
    runtime: Runtime, event: dict[str, Any]
) -> None:
    response = handle_http(event, runtime)
    assert isinstance(response["statusCode"], int)
    body = json.loads(response["body"].encode("utf-8"))
    assert response["statusCode"] < 500, body
    if response["statusCode"] >= 400:
        assert set(body["error"]) == {"kind", "message"}
