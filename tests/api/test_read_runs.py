"""``GET /runs/{run_id}``, ``GET /runs`` and ``GET /runs/{run_id}/events``."""

from __future__ import annotations

import pytest

from .apps import shout
from .conftest import Api


def test_a_completed_run_shows_its_result_rendered_as_json(api: Api) -> None:
    # GIVEN a completed run whose result holds values JSON cannot (a set, bytes, a date, ...)
    run_id = api.start("greet", "abba")
    api.drain()
    # WHEN it is read
    answer = api.call("GET", f"/runs/{run_id}")
    # THEN the run, its times and its result are there, each value in the nearest JSON shape
    assert answer.status == 200
    run = answer.body
    assert (run["run_id"], run["workflow"], run["status"], run["error"]) == (
        run_id,
        "greet",
        "completed",
        None,
    )
    assert run["created_at"] == "2026-01-01T00:00:00Z"
    assert run["started_at"] and run["completed_at"]
    assert run["result"] == {
        "greeting": "HELLO ABBA!",
        "letters": ["a", "b"],
        "raw": "abba",
        "when": "2026-01-02",
        "price": "1.10",
        "pair": [1, 2],
    }


def test_a_failed_run_shows_its_error_with_the_steps_error_as_cause(api: Api) -> None:
    # The API is IAM-signed (operators only): it shows the traceback, the user's frames (issue 13).
    run_id = api.start("explode", "card declined")
    api.drain()
    answer = api.call("GET", f"/runs/{run_id}")
    assert answer.status == 200
    assert answer.body["status"] == "failed" and answer.body["result"] is None
    error = answer.body["error"]
    assert set(error) == {"type", "message", "code", "stack", "cause"}
    assert error["type"] == "world_aws.errors.StepFailedError"
    assert "card declined" in error["message"]
    assert error["cause"]["type"] == "world_aws.errors.FatalError" and "in refuse" in error["cause"]["stack"]


def test_a_cancelled_run_shows_the_reason(api: Api) -> None:
    run_id = api.start("wait_for_approval", "o-1")
    api.drain()
    assert api.call("POST", f"/runs/{run_id}/cancel", body={"reason": "customer left"}).status == 200
    run = api.call("GET", f"/runs/{run_id}").body
    assert run["status"] == "cancelled"
    assert run["error"] == {
        "type": "RunCancelledError",
        "message": "the run was cancelled: customer left",
        "code": None,
        "stack": "",
        "cause": None,
    }


def test_a_running_run_has_neither_result_nor_error(api: Api) -> None:
    run_id = api.start("wait_for_approval", "o-2")
    api.drain()
    run = api.call("GET", f"/runs/{run_id}").body
    assert (run["status"], run["result"], run["error"], run["completed_at"]) == ("running", None, None, None)


@pytest.mark.parametrize("suffix", ["", "/events"])
def test_an_unknown_run_is_a_404(api: Api, suffix: str) -> None:
    answer = api.call("GET", f"/runs/wrun_NOPE{suffix}")
    assert answer.status == 404
    assert answer.body == {"error": {"kind": "NotFound", "message": "run 'wrun_NOPE' not found"}}


def _three_runs(api: Api) -> tuple[str, str, str]:
    done = api.start("greet", "a")
    api.drain()
    failed = api.start("explode", "no")
    api.drain()
    waiting = api.start("wait_for_approval", "o-3")
    api.drain()
    return done, failed, waiting


def test_runs_are_listed_newest_first_with_filters(api: Api) -> None:
    done, failed, waiting = _three_runs(api)
    everything = api.call("GET", "/runs")
    assert everything.status == 200
    assert [r["run_id"] for r in everything.body["runs"]] == [waiting, failed, done]
    assert everything.body["cursor"] is None
    assert set(everything.body["runs"][0]) == {
        "run_id",
        "workflow",
        "status",
        "created_at",
        "started_at",
        "completed_at",
        "parent_run_id",  # None: these are top-level runs (tests/api/test_child_runs.py has children)
        "deployment_id",  # the deployment the run is pinned to
        "blocked",  # set while the run is held (README "Deploying changes")
        "attributes",  # the caller's (none here)
    }
    assert everything.body["runs"][0]["blocked"] is None
    assert everything.body["runs"][0]["attributes"] == {}
    by_status = api.call("GET", "/runs", query={"status": "failed"}).body["runs"]
    assert [r["run_id"] for r in by_status] == [failed]
    by_workflow = api.call("GET", "/runs", query={"workflow": "greet"}).body["runs"]
    assert [r["run_id"] for r in by_workflow] == [done]
    both = api.call("GET", "/runs", query={"workflow": "greet", "status": "running"}).body["runs"]
    assert both == []


def test_runs_are_listed_page_by_page_with_the_cursor(api: Api) -> None:
    done, failed, waiting = _three_runs(api)
    first = api.call("GET", "/runs", query={"limit": "2"}).body
    assert [r["run_id"] for r in first["runs"]] == [waiting, failed]
    second = api.call("GET", "/runs", query={"limit": "2", "cursor": first["cursor"]}).body
    assert [r["run_id"] for r in second["runs"]] == [done]
    assert second["cursor"] is None


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (
            {"status": "done"},
            "status: Input should be 'pending', 'running', 'completed', 'failed' or 'cancelled'",
        ),
        ({"limit": "0"}, "limit: Input should be greater than or equal to 1"),
        ({"limit": "many"}, "limit: Input should be a valid integer"),
        ({"limit": "5000"}, "limit: Input should be less than or equal to 1000"),
        ({"sort": "asc"}, "sort: Extra inputs are not permitted"),
    ],
)
def test_a_bad_list_query_is_a_400_naming_the_parameter(
    api: Api, query: dict[str, str], message: str
) -> None:
    answer = api.call("GET", "/runs", query=query)
    assert answer.status == 400
    assert answer.message.startswith(message), answer.message


def test_a_cursor_the_api_did_not_make_is_a_400(api: Api) -> None:
    answer = api.call("GET", "/runs", query={"cursor": "bm90LWEtY3Vyc29y"})
    assert answer.status == 400
    assert "cursor" in answer.message


def test_the_events_are_the_timeline_rows_without_payloads(api: Api) -> None:
    run_id = api.start("wait_for_approval", "o-4")
    api.drain()
    api.call("POST", "/hooks/approve:o-4/resume", body={"payload": {"secret": "s3cr3t"}})
    api.drain()
    answer = api.call("GET", f"/runs/{run_id}/events")
    assert answer.status == 200
    body = answer.body
    assert body["run_id"] == run_id and body["next_after"] is None
    types = [row["type"] for row in body["events"]]
    assert types == [
        "run_created",
        "run_started",
        "hook_created",
        "hook_received",
        "run_completed",
    ]
    assert [row["position"] for row in body["events"]] == list(range(1, 6))
    received = body["events"][3]
    assert received["token"] == "approve:o-4" and received["correlation_id"].startswith("hook_")
    assert received["created_at"] == "2026-01-01T00:00:00Z"
    # no payload leaves through the log view
    assert "s3cr3t" not in answer.text


def test_events_name_the_step_of_every_step_event(api: Api) -> None:
    run_id = api.start("greet", "x")
    api.drain()
    rows = api.call("GET", f"/runs/{run_id}/events").body["events"]
    step_rows = [row for row in rows if row["type"].startswith("step_")]
    # an inline step: its create names the delivery that ran it and is also its start
    assert [row["type"] for row in step_rows] == ["step_created", "step_completed"]
    assert step_rows[0]["owner"] is not None and step_rows[1]["owner"] == step_rows[0]["owner"]
    assert {row["step_name"] for row in step_rows} == {shout.name}
    assert rows[0]["step_name"] is None and rows[0]["correlation_id"] is None


def test_events_come_in_pages_that_still_name_their_steps(api: Api) -> None:
    run_id = api.start("greet", "x")
    api.drain()
    first = api.call("GET", f"/runs/{run_id}/events", query={"limit": "3"}).body
    assert [row["position"] for row in first["events"]] == [1, 2, 3]
    assert first["next_after"] == 3
    rest = api.call("GET", f"/runs/{run_id}/events", query={"after": "3"}).body
    assert [row["position"] for row in rest["events"]] == [4, 5]
    assert rest["next_after"] is None
    # the step_completed on the second page is still named, though its step_created is on the first
    assert rest["events"][0]["type"] == "step_completed"
    assert rest["events"][0]["step_name"] == shout.name
    bad = api.call("GET", f"/runs/{run_id}/events", query={"after": "-1"})
    assert bad.status == 400 and bad.message.startswith("after: Input should be greater than or equal to 0")
