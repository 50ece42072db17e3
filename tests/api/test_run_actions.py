"""``POST /runs/{run_id}/cancel`` and ``POST /hooks/{token}/resume``."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from world_aws.contract.records import EventType, ResolveData, RunCancelledData, RunStatus

from .conftest import Api


def test_cancel_stops_a_waiting_run_and_records_the_reason(api: Api) -> None:
    run_id = api.start("wait_for_approval", "o-1")
    api.drain()
    answer = api.call("POST", f"/runs/{run_id}/cancel", body={"reason": "duplicate order"})
    assert answer.status == 200
    assert answer.body == {"run_id": run_id, "status": "cancelled"}
    events = api.world.events.list(run_id, resolve_data=ResolveData.NONE)
    assert (
        events[-1].type is EventType.RUN_CANCELLED
        and events[-1].data_as(RunCancelledData).reason == "duplicate order"
    )


def test_cancel_takes_an_empty_body(api: Api) -> None:
    run_id = api.start("wait_for_approval", "o-2")
    answer = api.call("POST", f"/runs/{run_id}/cancel")
    assert answer.status == 200
    assert api.runtime.get_run(run_id).status() is RunStatus.CANCELLED


def test_cancelling_a_run_that_ended_is_a_409_naming_its_status(api: Api) -> None:
    run_id = api.start("greet", "x")
    api.drain()
    answer = api.call("POST", f"/runs/{run_id}/cancel", body={})
    assert answer.status == 409
    assert answer.body == {
        "error": {"kind": "Conflict", "message": f"run {run_id} has already ended (completed)"}
    }
    assert api.runtime.get_run(run_id).status() is RunStatus.COMPLETED


def test_cancelling_an_unknown_run_is_a_404(api: Api) -> None:
    answer = api.call("POST", "/runs/wrun_NOPE/cancel")
    assert answer.status == 404
    assert answer.message == "run 'wrun_NOPE' not found"


def test_a_bad_cancel_body_is_a_400(api: Api) -> None:
    run_id = api.start("wait_for_approval", "o-3")
    answer = api.call("POST", f"/runs/{run_id}/cancel", body={"reason": 42})
    assert answer.status == 400 and answer.message == "reason: Input should be a valid string"
    assert api.runtime.get_run(run_id).status() is not RunStatus.CANCELLED


def test_resume_delivers_the_payload_and_the_run_completes_with_it(api: Api) -> None:
    run_id = api.start("wait_for_approval", "o-4")
    api.drain()
    answer = api.call("POST", "/hooks/approve:o-4/resume", body={"payload": {"approved": True}})
    assert answer.status == 202
    assert answer.body["token"] == "approve:o-4"
    assert answer.body["resume_id"].startswith("resume_")
    api.drain()
    run = api.call("GET", f"/runs/{run_id}").body
    assert run["status"] == "completed"
    assert run["result"] == {"order": "o-4", "decision": {"approved": True}}


def test_a_resume_retried_with_its_resume_id_is_delivered_once(api: Api) -> None:
    run_id = api.start("wait_for_approval", "o-9")
    api.drain()
    body = {"payload": {"approved": True}, "resume_id": "client-req-1"}
    first = api.call("POST", "/hooks/approve:o-9/resume", body=body)
    again = api.call("POST", "/hooks/approve:o-9/resume", body=body)
    assert first.status == again.status == 202
    assert first.body["resume_id"] == again.body["resume_id"] == "client-req-1"
    received = [
        e
        for e in api.world.events.list(run_id, resolve_data=ResolveData.NONE)
        if e.type is EventType.HOOK_RECEIVED
    ]
    assert len(received) == 1


def test_null_is_a_payload(api: Api) -> None:
    run_id = api.start("wait_for_approval", "o-5")
    api.drain()
    assert api.call("POST", "/hooks/approve:o-5/resume", body={"payload": None}).status == 202
    api.drain()
    assert api.call("GET", f"/runs/{run_id}").body["result"] == {"order": "o-5", "decision": None}


def test_a_token_with_a_slash_is_percent_encoded_in_the_path(api: Api) -> None:
    run_id = api.start("wait_for_approval", "eu/o-6")
    api.drain()
    answer = api.call("POST", f"/hooks/{quote('approve:eu/o-6', safe='')}/resume", body={"payload": 1})
    assert answer.status == 202 and answer.body["token"] == "approve:eu/o-6"
    api.drain()
    assert api.call("GET", f"/runs/{run_id}").body["result"]["decision"] == 1


def test_resuming_an_unknown_token_is_a_404(api: Api) -> None:
    answer = api.call("POST", "/hooks/approve:nobody/resume", body={"payload": 1})
    assert answer.status == 404
    assert answer.body == {
        "error": {"kind": "NotFound", "message": "no live hook holds token 'approve:nobody'"}
    }


def test_resuming_a_hook_of_a_run_that_ended_is_a_404(api: Api) -> None:
    run_id = api.start("wait_for_approval", "o-7")
    api.drain()
    api.call("POST", f"/runs/{run_id}/cancel")
    assert api.call("POST", "/hooks/approve:o-7/resume", body={"payload": 1}).status == 404


@pytest.mark.parametrize(
    ("body", "message"),
    [({}, "payload: Field required"), ({"payload": 1, "extra": 2}, "extra: Extra inputs are not permitted")],
)
def test_a_bad_resume_body_is_a_400(api: Api, body: dict[str, object], message: str) -> None:
    api.start("wait_for_approval", "o-8")
    api.drain()
    answer = api.call("POST", "/hooks/approve:o-8/resume", body=body)
    assert answer.status == 400 and answer.message == message
