"""``POST /runs/{run_id}/fork`` and the ``forked_from`` of ``GET /runs/{run_id}`` (``Runtime.fork``)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from tests.runtime.test_fork import order_app
from world_aws.api.app import handle_http
from world_aws.contract.clock import ManualClock
from world_aws.local.memory import create_memory_world
from world_aws.runtime.runtime import Runtime

from .conftest import Answer, Api, http_event


class Forking(Api):
    bodies: Counter[str]

    def call_raw(self, method: str, path: str, **kwargs: Any) -> Answer:
        response = handle_http(http_event(method, path, **kwargs), self.runtime)
        return Answer(
            response["statusCode"], json.loads(response["body"]), response["headers"], response["body"]
        )


@pytest.fixture
def forking() -> Iterator[Forking]:
    """A run of ``order`` that failed in its third step; the API then serves the fixed code."""
    clock = ManualClock()
    world = create_memory_world(clock=clock)
    bodies: Counter[str] = Counter()
    broken = Runtime(world, order_app(bodies, fixed=False))
    fixed = Runtime(world, order_app(bodies, fixed=True))
    try:
        api = Forking(broken, world, clock)
        api.bodies = bodies
        api.start("order", "o-api")
        api.drain()
        api.runtime = fixed
        yield api
    finally:
        broken.close()
        fixed.close()
        world.close()


def failed_run(api: Api) -> str:
    [run] = [r for r in api.call("GET", "/runs").body["runs"] if r["status"] == "failed"]
    return str(run["run_id"])


def test_fork_answers_201_with_the_new_run_which_completes_and_links_to_the_original(
    forking: Forking,
) -> None:
    original = failed_run(forking)
    # WHEN the failed run is forked through the API
    answer = forking.call("POST", f"/runs/{original}/fork", body={})
    # THEN the answer names the fork and its original, and where to read it
    assert answer.status == 201
    fork_id = answer.body["run_id"]
    assert answer.body == {"run_id": fork_id, "status": "pending", "forked_from": original}
    assert answer.headers["location"] == f"/runs/{fork_id}"
    # AND once its messages are handled it completes, the first two steps not run again
    forking.drain()
    run = forking.call("GET", f"/runs/{fork_id}").body
    assert run["status"] == "completed" and run["forked_from"] == original
    assert run["result"]["shipped"] == "shipped:o-api"
    assert forking.bodies == Counter(reserve=1, charge=1, ship=2)
    # AND the original shows no fork of its own, and stays failed
    assert forking.call("GET", f"/runs/{original}").body["forked_from"] is None
    assert forking.call("GET", f"/runs/{original}").body["status"] == "failed"


def test_fork_from_a_named_step_with_a_key_is_one_fork(forking: Forking) -> None:
    original = failed_run(forking)
    body = {"from_step": "charge", "idempotency_key": "op-7"}
    first = forking.call("POST", f"/runs/{original}/fork", body=body)
    again = forking.call("POST", f"/runs/{original}/fork", body=body)
    assert first.status == again.status == 201
    assert first.body["run_id"] == again.body["run_id"]
    forking.drain()
    assert forking.bodies == Counter(reserve=1, charge=2, ship=2)


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"from_step": "refund"}, 404, "has no step 'refund'"),
        ({"from_step": "ship#0"}, 400, "from_step: expected a step name or 'name#n'"),
        ({"from_step": 3}, 400, "from_step: Input should be a valid string"),
        ({"step": "ship"}, 400, "step: Extra inputs are not permitted"),
    ],
)
def test_a_bad_fork_request_is_refused_naming_what_is_wrong(
    forking: Forking, body: dict[str, object], status: int, message: str
) -> None:
    original = failed_run(forking)
    answer = forking.call("POST", f"/runs/{original}/fork", body=body)
    assert answer.status == status and message in answer.message, answer.body
    assert len(forking.call("GET", "/runs").body["runs"]) == 1  # nothing started


def test_forking_an_unknown_run_is_a_404_and_a_running_one_a_409(forking: Forking) -> None:
    assert forking.call("POST", "/runs/wrun_NOPE/fork", body={}).status == 404
    running = forking.start("order", "o-running")  # not drained: pending
    answer = forking.call("POST", f"/runs/{running}/fork", body={})
    assert answer.status == 409 and "only an ended run can be forked" in answer.message


def test_fork_takes_json_only(forking: Forking) -> None:
    # GIVEN a request a cross-site form could send (text/plain, or no content type at all)
    original = failed_run(forking)
    event = http_event("POST", f"/runs/{original}/fork", raw_body='{"from_step": "charge"}')
    event["headers"] = {"content-type": "text/plain"}
    answer = handle_http(event, forking.runtime)
    # THEN it is refused, naming the content type, and no run is started
    assert answer["statusCode"] == 400
    assert "takes application/json, got 'text/plain'" in json.loads(answer["body"])["error"]["message"]
    event["headers"] = {}
    assert handle_http(event, forking.runtime)["statusCode"] == 400
    assert len(forking.call("GET", "/runs").body["runs"]) == 1
