"""``POST /runs``: starting runs, idempotency, and every way the body can be wrong."""

from __future__ import annotations

from typing import Any

import pytest

from world_aws.contract.records import RunStatus
from world_aws.errors import Transient

from .conftest import Api


def test_post_runs_starts_a_run_that_completes(api: Api) -> None:
    # GIVEN a start request with positional and keyword arguments
    body = {"workflow": "greet", "args": ["ada"], "kwargs": {"punctuation": "?"}}
    # WHEN it is posted
    answer = api.call("POST", "/runs", body=body)
    # THEN 201 names the new run, pending, and where to find it
    assert answer.status == 201
    run_id = answer.body["run_id"]
    assert answer.body == {"run_id": run_id, "status": "pending"}
    assert answer.headers["location"] == f"/runs/{run_id}"
    # AND the run exists and runs to completion with those arguments
    api.drain()
    run = api.runtime.get_run(run_id)
    assert run.status() is RunStatus.COMPLETED
    assert run.result(timeout=0)["greeting"] == "HELLO ADA?"


def test_post_runs_with_the_same_idempotency_key_names_the_same_run(api: Api) -> None:
    body = {"workflow": "greet", "args": ["bo"], "idempotency_key": "order-1"}
    first = api.call("POST", "/runs", body=body)
    api.drain()
    second = api.call("POST", "/runs", body=body)
    # THEN both answers name one run, and the second reports its current status
    assert first.status == second.status == 201
    assert first.body["run_id"] == second.body["run_id"]
    assert second.body["status"] == "completed"
    assert len(api.world.runs.list().runs) == 1


def test_a_started_run_is_a_201_even_when_reading_its_status_back_fails(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a backend whose run reads fail for a moment (the start's own writes go through)
    def busy(*_args: Any, **_kwargs: Any) -> Any:
        raise Transient("DynamoDB 500")

    monkeypatch.setattr(api.world.runs, "get", busy)
    # WHEN a run is started without an idempotency key
    answer = api.call("POST", "/runs", body={"workflow": "greet", "args": ["cy"]})
    # THEN the answer names the started run: not a 503 "try again", whose retry would
    # start a second run (a start without a key names a new run each time)
    assert answer.status == 201, answer.body
    assert answer.body == {"run_id": answer.body["run_id"], "status": "pending"}
    monkeypatch.undo()
    assert [run.run_id for run in api.world.runs.list().runs] == [answer.body["run_id"]]
    api.drain()
    assert api.runtime.get_run(answer.body["run_id"]).status() is RunStatus.COMPLETED


def test_post_runs_with_a_used_key_and_other_arguments_is_a_409_naming_the_run(api: Api) -> None:
    first = api.call("POST", "/runs", body={"workflow": "greet", "args": ["bo"], "idempotency_key": "k-2"})
    again = api.call("POST", "/runs", body={"workflow": "greet", "args": ["al"], "idempotency_key": "k-2"})
    assert first.status == 201 and again.status == 409
    assert first.body["run_id"] in again.message and "other arguments" in again.message
    assert len(api.world.runs.list().runs) == 1


def test_a_base64_encoded_body_is_decoded(api: Api) -> None:
    # API Gateway base64-encodes bodies it considers binary
    answer = api.call("POST", "/runs", body={"workflow": "greet", "args": ["cy"]}, base64_body=True)
    assert answer.status == 201
    api.drain()
    assert api.runtime.get_run(answer.body["run_id"]).result(timeout=0)["greeting"] == "HELLO CY!"


@pytest.mark.parametrize(
    ("body", "raw", "message"),
    [
        ({"workflow": "greet", "args": "ada"}, None, "args: Input should be a valid list"),
        ({"args": []}, None, "workflow: Field required"),
        ({"workflow": 7}, None, "workflow: Input should be a valid string"),
        ({"workflow": "greet", "kwargs": []}, None, "kwargs: Input should be an object"),
        ({"workflow": "greet", "arg": ["x"]}, None, "arg: Extra inputs are not permitted"),
        ({"workflow": "greet", "idempotency_key": ""}, None, "idempotency_key: String should have at least"),
        (None, "{nope", "body: not valid JSON"),
        (None, "[1, 2]", "body: expected a JSON object"),
        (None, "", "body: a JSON object is required"),
    ],
    ids=[
        "args-not-a-list",
        "workflow-missing",
        "workflow-not-a-string",
        "kwargs-not-an-object",
        "unknown-field",
        "empty-idempotency-key",
        "invalid-json",
        "not-an-object",
        "empty-body",
    ],
)
def test_a_malformed_start_is_a_400_naming_the_field(
    api: Api, body: dict[str, Any] | None, raw: str | None, message: str
) -> None:
    answer = api.call("POST", "/runs", body=body, raw_body=raw)
    assert answer.status == 400
    assert answer.body["error"]["kind"] == "BadInput"
    assert answer.message.startswith(message), answer.message
    # AND nothing was started
    assert api.world.runs.list().runs == []


def test_an_unknown_workflow_is_a_400_listing_the_known_ones(api: Api) -> None:
    answer = api.call("POST", "/runs", body={"workflow": "nope"})
    assert answer.status == 400
    assert (
        answer.message == "workflow: unknown workflow 'nope' "
        "(registered: explode, greet, power_of_two, retry_then_nap, wait_for_approval)"
    )


@pytest.mark.parametrize(
    ("args", "kwargs", "fragment"),
    [
        ([], {}, "missing a required argument: 'name'"),
        (["a", "b", "c"], {}, "too many positional arguments"),
        (["a"], {"colour": "red"}, "unexpected keyword argument 'colour'"),
    ],
)
def test_arguments_that_do_not_fit_the_workflow_are_a_400(
    api: Api, args: list[Any], kwargs: dict[str, Any], fragment: str
) -> None:
    answer = api.call("POST", "/runs", body={"workflow": "greet", "args": args, "kwargs": kwargs})
    assert answer.status == 400
    assert answer.message.startswith("args: arguments do not fit workflow 'greet'")
    assert fragment in answer.message


def test_a_keyword_argument_named_like_a_start_option_is_refused(api: Api) -> None:
    # Runtime.start(workflow, *args, idempotency_key=, attributes=, **kwargs) keeps these names
    answer = api.call("POST", "/runs", body={"workflow": "greet", "kwargs": {"attributes": {}}})
    assert answer.status == 400
    assert answer.message.startswith("kwargs.attributes: this name cannot pass through the API")
