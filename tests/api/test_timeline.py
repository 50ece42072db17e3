"""The run's timeline over HTTP: steps with their attempts, sleeps, hooks, stats; payloads; workflows."""

from __future__ import annotations

from typing import Any

from world_aws.cli.render import timeline_rows
from world_aws.contract.records import (
    EventRequest,
    EventType,
    PatchAppliedData,
    StepStartedData,
    owner_of,
    patch_correlation_id,
)

from .apps import app, flaky
from .conftest import Api


def _run_through_retry_and_nap(api: Api, name: str = "ada", blob: str = "") -> str:
    """GIVEN retry_then_nap: attempt 1 of `flaky` retried after 2 s, then a 5 s sleep, then a hook."""
    run_id = api.start("retry_then_nap", name, blob)
    api.drain()  # attempt 1 fails, its retry waits 2 s
    api.clock.advance(2)
    api.drain()  # attempt 2 completes; the sleep begins
    api.clock.advance(5)
    api.drain()  # the sleep ends; the hook waits
    return run_id


def _spans(api: Api, run_id: str) -> dict[str, Any]:
    answer = api.call("GET", f"/runs/{run_id}/timeline")
    assert answer.status == 200, answer.body
    return answer.body  # type: ignore[no-any-return]


def test_a_retried_step_shows_both_attempts_with_the_first_ones_error(api: Api) -> None:
    run_id = _run_through_retry_and_nap(api)
    body = _spans(api, run_id)
    (step,) = [s for s in body["spans"] if s["kind"] == "step"]
    assert step["name"] == flaky.name and step["status"] == "completed"
    first, second = step["attempts"]
    assert (first["attempt"], first["outcome"]) == (1, "retrying")
    assert first["error"]["type"].endswith("RetryableError") and "ada: busy" in first["error"]["message"]
    assert first["error"]["stack"]  # the traceback of the attempt
    assert first["retry_after"] is not None
    assert (second["attempt"], second["outcome"], second["error"]) == (2, "completed", None)
    assert second["started_at"] >= first["ended_at"]


def test_a_sleep_spans_its_five_seconds_and_the_hook_stays_open(api: Api) -> None:
    run_id = _run_through_retry_and_nap(api)
    spans = _spans(api, run_id)["spans"]
    assert [s["kind"] for s in spans] == ["step", "wait", "hook"]
    wait, hook = spans[1], spans[2]
    assert wait["status"] == "completed" and wait["resume_at"] is not None
    assert hook["name"] == "nap:ada" and hook["status"] == "waiting" and hook["ended_at"] is None


def test_the_summary_counts_steps_retries_and_waiting_time_up_to_as_of(api: Api) -> None:
    run_id = _run_through_retry_and_nap(api)
    api.clock.advance(3)  # the hook has waited 3 s
    body = _spans(api, run_id)
    summary = body["summary"]
    assert (summary["steps"], summary["attempts"], summary["retries"], summary["failed_steps"]) == (
        1,
        2,
        1,
        0,
    )
    assert (summary["waits"], summary["hooks"]) == (1, 1)
    assert summary["waiting_s"] == 8.0  # the 5 s sleep, then 3 s on the hook
    assert summary["duration_s"] == 10.0  # 2 s retry + 5 s sleep + 3 s hook, the rest instant
    assert body["status"] == "running" and body["as_of"] == api.clock.now().isoformat().replace("+00:00", "Z")


def test_a_hook_bar_ends_at_its_payload_and_the_run_at_its_end(api: Api) -> None:
    run_id = _run_through_retry_and_nap(api)
    api.clock.advance(1)
    assert api.call("POST", "/hooks/nap:ada/resume", body={"payload": 1}).status == 202
    api.drain()
    body = _spans(api, run_id)
    hook = body["spans"][2]
    assert hook["status"] == "received" and hook["ended_at"] == hook["received_at"][0]
    assert body["status"] == "completed" and body["summary"]["duration_s"] == 8.0


def test_an_attempt_open_when_the_run_is_cancelled_is_abandoned(api: Api) -> None:
    run_id = api.start("retry_then_nap", "bob")
    api.drain()  # attempt 1 retried
    api.clock.advance(2)
    (step,) = api.world.steps.list(run_id)
    # attempt 2 starts (its consumer is still at work) when the run is cancelled
    started = EventRequest(EventType.STEP_STARTED, step.step_id, StepStartedData(step_name=step.step_name))
    api.world.events.create(run_id, started)
    api.clock.advance(1)
    assert api.call("POST", f"/runs/{run_id}/cancel", body={}).status == 200
    (row,) = api.call("GET", f"/runs/{run_id}/steps").body["steps"]
    assert row["status"] == "abandoned"
    assert [a["outcome"] for a in row["attempts"]] == ["retrying", "abandoned"]
    assert row["attempts"][1]["ended_at"] == api.call("GET", f"/runs/{run_id}").body["completed_at"]


def test_steps_carry_their_attempts_and_the_run_summary(api: Api) -> None:
    run_id = _run_through_retry_and_nap(api)
    body = api.call("GET", f"/runs/{run_id}/steps").body
    (step,) = body["steps"]
    assert [a["outcome"] for a in step["attempts"]] == ["retrying", "completed"]
    assert step["attempts"][0]["error"]["message"].startswith("ada: busy")
    assert body["summary"]["retries"] == 1 and body["summary"]["steps"] == 1


def test_an_event_is_answered_with_its_payloads_decoded(api: Api) -> None:
    run_id = _run_through_retry_and_nap(api, blob="x" * 5000)
    rows = api.call("GET", f"/runs/{run_id}/events").body["events"]
    created = next(r for r in rows if r["type"] == "run_created")
    assert created["payload_bytes"] > 5000 and created["data"] is None  # not asked for
    detail = api.call("GET", f"/runs/{run_id}/events/{created['position']}").body
    assert detail["type"] == "run_created"
    assert "x" * 5000 in str(detail["data"]["input"])
    retrying = next(r for r in rows if r["type"] == "step_retrying")
    detail = api.call("GET", f"/runs/{run_id}/events/{retrying['position']}").body
    assert detail["step_name"] == flaky.name
    assert detail["data"]["error"]["type"].endswith("RetryableError") and detail["data"]["retry_after"]


def test_payloads_true_inlines_the_small_payloads_and_leaves_the_large_to_fetch(api: Api) -> None:
    run_id = _run_through_retry_and_nap(api, blob="y" * 5000)
    rows = api.call("GET", f"/runs/{run_id}/events", query={"payloads": "true"}).body["events"]
    created = next(r for r in rows if r["type"] == "run_created")
    assert created["data"] is None and created["payload_bytes"] > 5000  # over the inline size
    step_created = next(r for r in rows if r["type"] == "step_created")
    completed = next(r for r in rows if r["type"] == "step_completed")
    assert step_created["data"] == {"input": {"args": ["ada"], "kwargs": {}}}
    assert completed["data"] == {"output": "ada"}
    started = next(r for r in rows if r["type"] == "step_started")
    assert (started["payload_bytes"], started["data"]) == (0, None)


def test_an_event_position_past_the_log_is_a_404_and_a_bad_one_a_400(api: Api) -> None:
    run_id = _run_through_retry_and_nap(api)
    missing = api.call("GET", f"/runs/{run_id}/events/999")
    assert missing.status == 404 and "position 999" in missing.message
    assert api.call("GET", f"/runs/{run_id}/events/first").status == 400
    assert api.call("GET", "/runs/wrun_nope/events/1").status == 404


def test_workflows_lists_every_registered_workflow_with_its_parameters(api: Api) -> None:
    body = api.call("GET", "/workflows").body
    names = [w["name"] for w in body["workflows"]]
    assert names == sorted(app.workflow_names)
    greet = next(w for w in body["workflows"] if w["name"] == "greet")
    assert greet["parameters"] == ["name: str", "punctuation: str = '!'"]


def test_an_inline_steps_create_is_its_first_attempts_start(api: Api) -> None:
    # GIVEN a step run inline by the workflow's delivery: its step_created names the owner, no step_started
    run_id = _run_through_retry_and_nap(api)
    events = api.world.events.list(run_id)
    created = next(e for e in events if e.type is EventType.STEP_CREATED)
    first_start = next(e for e in events if e.type is EventType.STEP_STARTED)
    retried = next(e for e in events if e.type is EventType.STEP_RETRYING)
    assert owner_of(created.data) and first_start.position > retried.position
    # WHEN its timeline is read THEN attempt 1 ran from the create to the retry, attempt 2 from the start
    (step,) = [s for s in _spans(api, run_id)["spans"] if s["kind"] == "step"]
    first, second = step["attempts"]
    assert (first["started_at"], first["ended_at"]) == (_at(created), _at(retried))
    assert second["started_at"] == _at(first_start)


def _at(event: Any) -> str:
    return str(event.created_at.isoformat().replace("+00:00", "Z"))


def test_a_page_holding_only_a_steps_outcome_still_names_the_step(api: Api) -> None:
    # GIVEN a run whose step completed; WHEN a page of its log holds only the step_completed
    run_id = _run_through_retry_and_nap(api)
    rows = api.call("GET", f"/runs/{run_id}/events").body["events"]
    completed = next(r for r in rows if r["type"] == "step_completed")
    query = {"after": str(completed["position"] - 1), "limit": "1"}
    page = api.call("GET", f"/runs/{run_id}/events", query=query).body
    # THEN its row names the step (outcome events do not carry the name: the step's row does)
    assert [(r["type"], r["step_name"]) for r in page["events"]] == [("step_completed", flaky.name)]
    assert page["next_after"] == completed["position"]


def test_a_patch_decision_shows_as_an_instant_in_the_timeline_and_names_its_change(api: Api) -> None:
    # GIVEN a run waiting on its hook, whose log records a patched() decision
    run_id = api.start("wait_for_approval", "o-1")
    api.drain()
    data = PatchAppliedData(change_id="gift-wrap")
    api.world.events.create(
        run_id, EventRequest(EventType.PATCH_APPLIED, patch_correlation_id("gift-wrap"), data)
    )
    # WHEN its timeline and events are read
    spans = _spans(api, run_id)["spans"]
    events = api.call("GET", f"/runs/{run_id}/events").body["events"]
    # THEN the decision is a "patch" span of no length named by its change, counted as nothing else
    (patch,) = [s for s in spans if s["kind"] == "patch"]
    assert (patch["name"], patch["status"], patch["id"]) == ("gift-wrap", "applied", "patch:gift-wrap")
    assert patch["created_at"] == patch["ended_at"]
    assert _spans(api, run_id)["summary"]["steps"] == 0
    # AND its event row carries the change id, which the CLI's timeline shows in its step column
    (row,) = [e for e in events if e["type"] == "patch_applied"]
    assert row["change_id"] == "gift-wrap"
    assert [r["step"] for r in timeline_rows(events) if r["event"] == "patch_applied"] == ["gift-wrap"]
