"""``POST /runs/{run_id}/delete`` (erasure) and the audit of cancel, resume and fork (issue 42 items 5, 6)."""

from __future__ import annotations

import json
from typing import Any

from world_aws.api.app import handle_http
from world_aws.contract.records import EventType, HookReceivedData, ResolveData, RunCancelledData, RunStatus

from .conftest import Answer, Api, http_event

ALICE = "arn:aws:iam::123456789012:user/alice"
BOB = "arn:aws:sts::123456789012:assumed-role/operator/bob"


def signed(api: Api, method: str, path: str, arn: str, **kwargs: Any) -> Answer:
    """A call as API Gateway's IAM authorizer passes it: the verified caller in the request context."""
    event = http_event(method, path, **kwargs)
    event["requestContext"]["authorizer"] = {"iam": {"userArn": arn, "accountId": "123456789012"}}
    response = handle_http(event, api.runtime)
    return Answer(response["statusCode"], json.loads(response["body"]), response["headers"], response["body"])


def test_delete_erases_an_ended_run_and_a_second_delete_is_a_404(api: Api) -> None:
    run_id = api.start("greet", "x")
    api.drain()
    answer = api.call("POST", f"/runs/{run_id}/delete", body={})
    assert answer.status == 200
    assert answer.body["run_id"] == run_id and answer.body["deleted"] is True
    assert answer.body["records"] >= 5
    assert api.call("GET", f"/runs/{run_id}").status == 404
    assert api.world.events.list(run_id) == []
    assert run_id not in [r["run_id"] for r in api.call("GET", "/runs").body["runs"]]
    again = api.call("POST", f"/runs/{run_id}/delete", body={})
    assert again.status == 404


def test_delete_refuses_a_live_run_with_a_409_and_keeps_it(api: Api) -> None:
    run_id = api.start("wait_for_approval", "o-live")
    api.drain()
    answer = api.call("POST", f"/runs/{run_id}/delete", body={})
    assert answer.status == 409
    assert "is running: only an ended run can be deleted (cancel it first)" in answer.message
    assert api.runtime.get_run(run_id).status() is RunStatus.RUNNING
    assert len(api.world.events.list(run_id)) > 2


def test_delete_takes_only_a_json_body(api: Api) -> None:
    run_id = api.start("greet", "x")
    api.drain()
    event = http_event("POST", f"/runs/{run_id}/delete", raw_body="run_id=x")
    event["headers"]["content-type"] = "application/x-www-form-urlencoded"
    response = handle_http(event, api.runtime)
    assert response["statusCode"] == 400
    assert "application/json" in json.loads(response["body"])["error"]["message"]
    assert api.call("POST", f"/runs/{run_id}/delete", body={"force": True}).status == 400
    assert api.runtime.get_run(run_id).status() is RunStatus.COMPLETED


def test_cancel_records_the_callers_arn_and_the_run_shows_it(api: Api) -> None:
    run_id = api.start("wait_for_approval", "o-1")
    api.drain()
    assert signed(api, "POST", f"/runs/{run_id}/cancel", ALICE, body={"reason": "duplicate"}).status == 200
    [cancelled] = [
        e
        for e in api.world.events.list(run_id, resolve_data=ResolveData.NONE)
        if e.type is EventType.RUN_CANCELLED
    ]
    assert cancelled.data_as(RunCancelledData).actor == ALICE
    audit = api.call("GET", f"/runs/{run_id}").body["audit"]
    assert [(a["action"], a["actor"], a["detail"]) for a in audit] == [("cancel", ALICE, "duplicate")]


def test_resume_records_the_callers_arn_and_an_unsigned_call_is_local(api: Api) -> None:
    first, second = api.start("wait_for_approval", "o-2"), api.start("wait_for_approval", "o-3")
    api.drain()
    assert signed(api, "POST", "/hooks/approve:o-2/resume", BOB, body={"payload": "yes"}).status == 202
    assert api.call("POST", "/hooks/approve:o-3/resume", body={"payload": "no"}).status == 202
    api.drain()
    for run_id, actor in ((first, BOB), (second, "local")):
        [received] = [e for e in api.world.events.list(run_id) if e.type is EventType.HOOK_RECEIVED]
        assert received.data_as(HookReceivedData).actor == actor
        run = api.call("GET", f"/runs/{run_id}").body
        assert run["status"] == "completed"
        assert [(a["action"], a["actor"]) for a in run["audit"]] == [("resume", actor)]


def test_fork_records_the_callers_arn_on_the_fork(api: Api) -> None:
    run_id = api.start("explode", "boom")
    api.drain()
    forked = signed(api, "POST", f"/runs/{run_id}/fork", ALICE, body={})
    assert forked.status == 201
    fork = api.call("GET", f"/runs/{forked.body['run_id']}").body
    assert [(a["action"], a["actor"], a["detail"]) for a in fork["audit"]] == [("fork", ALICE, run_id)]
    assert api.world.runs.get(forked.body["run_id"]).attributes["$forked_by"] == ALICE


def test_an_authorizer_without_an_arn_is_local(api: Api) -> None:
    run_id = api.start("wait_for_approval", "o-4")
    api.drain()
    event = http_event("POST", f"/runs/{run_id}/cancel", body={})
    event["requestContext"]["authorizer"] = {"iam": {"userArn": ""}}
    assert handle_http(event, api.runtime)["statusCode"] == 200
    audit = api.call("GET", f"/runs/{run_id}").body["audit"]
    assert [(a["action"], a["actor"]) for a in audit] == [("cancel", "local")]
