"""The API over the AWS World (DynamoDB, SQS, S3 on in-process moto): the happy path end to end."""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Iterator
from typing import Any

import pytest

from world_aws.api.app import handle_http
from world_aws.aws.world import create_aws_world
from world_aws.contract.clock import ManualClock
from world_aws.runtime.runtime import Runtime
from world_aws.testing.aws_factory import aws_world

from .apps import app
from .conftest import http_event

DEADLINE_SECONDS = 30.0
TERMINAL_EVENTS = {"run_completed", "run_failed", "run_cancelled"}


@pytest.fixture
def runtime() -> Iterator[Runtime]:
    with aws_world(ManualClock()) as world:
        runtime = Runtime(world, app)
        consumers = world.start_consumers(runtime.handle)
        try:
            yield runtime
        finally:
            consumers.stop()
            runtime.close()


def call(runtime: Runtime, method: str, path: str, **kwargs: Any) -> tuple[int, Any]:
    response = handle_http(http_event(method, path, **kwargs), runtime)
    return response["statusCode"], json.loads(response["body"])


def wait_for(runtime: Runtime, run_id: str, status: str) -> dict[str, Any]:
    """Poll ``GET /runs/{run_id}`` until the run has ``status`` (the consumers run on real threads)."""
    deadline = time.monotonic() + DEADLINE_SECONDS
    while True:
        code, run = call(runtime, "GET", f"/runs/{run_id}")
        assert code == 200
        if run["status"] == status or time.monotonic() > deadline:
            assert run["status"] == status, run
            return dict(run)
        time.sleep(0.05)


def events_through_the_end(runtime: Runtime, run_id: str) -> list[dict[str, Any]]:
    """``GET /runs/{run_id}/events`` until it holds the run's terminal event.

    The run item turns terminal in the write that reserves the terminal event's
    position, and the event lands in the next write (ARCHITECTURE §8): a read between
    the two sees the run ended and a log one event short, which is still a prefix.
    """
    deadline = time.monotonic() + DEADLINE_SECONDS
    while True:
        code, events = call(runtime, "GET", f"/runs/{run_id}/events")
        assert code == 200
        rows: list[dict[str, Any]] = events["events"]
        if rows[-1]["type"] in TERMINAL_EVENTS or time.monotonic() > deadline:
            return rows
        time.sleep(0.05)


def test_a_run_started_and_resumed_through_the_api_completes_on_the_aws_world(runtime: Runtime) -> None:
    # GIVEN a run started through the API that waits on a hook
    code, started = call(runtime, "POST", "/runs", body={"workflow": "wait_for_approval", "args": ["o-1"]})
    assert code == 201
    run_id = started["run_id"]
    wait_for(runtime, run_id, "running")
    deadline = time.monotonic() + DEADLINE_SECONDS
    while True:  # the hook exists once the first replay suspended
        code, resumed = call(runtime, "POST", "/hooks/approve:o-1/resume", body={"payload": {"ok": True}})
        if code != 404 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    # WHEN it is resumed through the API
    assert code == 202 and resumed["resume_id"].startswith("resume_")
    # THEN it completes with the payload, and the API shows its result, log and listing
    run = wait_for(runtime, run_id, "completed")
    assert run["result"] == {"order": "o-1", "decision": {"ok": True}}
    assert [row["type"] for row in events_through_the_end(runtime, run_id)][-2:] == [
        "hook_received",
        "run_completed",
    ]
    code, listed = call(
        runtime, "GET", "/runs", query={"status": "completed", "workflow": "wait_for_approval"}
    )
    assert code == 200 and [r["run_id"] for r in listed["runs"]] == [run_id]


def test_a_completed_run_with_a_non_json_result_reads_back_on_the_aws_world(runtime: Runtime) -> None:
    code, started = call(runtime, "POST", "/runs", body={"workflow": "greet", "args": ["bob"]})
    assert code == 201
    run = wait_for(runtime, started["run_id"], "completed")
    assert run["result"]["letters"] == ["b", "o"] and run["result"]["raw"] == "bob"
    code, missing = call(runtime, "GET", "/runs/wrun_NOPE")
    assert code == 404 and missing["error"]["message"] == "run 'wrun_NOPE' not found"


@pytest.mark.parametrize("suffix", ["", "/events", "/steps", "/cancel"])
def test_a_run_id_no_table_could_hold_is_a_404_not_a_backend_error(runtime: Runtime, suffix: str) -> None:
    # GIVEN a run id longer than a DynamoDB key may be (2048 bytes)
    run_id = "wrun_" + "x" * 3000
    # WHEN it is asked for THEN it is simply not found: no 500, no backend validation error
    code, answer = call(runtime, "POST" if suffix == "/cancel" else "GET", f"/runs/{run_id}{suffix}", body={})
    assert code == 404 and answer["error"]["kind"] == "NotFound"


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", "/runs/wrun_ANY", None),
        ("GET", "/runs/wrun_ANY/events", None),
        ("POST", "/runs/wrun_ANY/cancel", {}),
        ("POST", "/hooks/approve:o-1/resume", {"payload": {"ok": True}}),
    ],
)
def test_a_missing_table_is_503_naming_it_never_404(
    method: str, path: str, body: dict[str, Any] | None, caplog: pytest.LogCaptureFixture
) -> None:
    # GIVEN the API over an AWS World whose table name has a typo
    with aws_world(ManualClock()) as world:
        typo = create_aws_world(
            dataclasses.replace(world.config, table_name="workflow-tabel"), clients=world.clients
        )
        runtime = Runtime(typo, app)
        try:
            # WHEN a client asks about a run or a hook
            code, answer = call(runtime, method, path, body=body)
        finally:
            runtime.close()
    # THEN the answer is 503 with the reason naming the table, not "not found"
    assert code == 503
    assert answer["error"]["kind"] == "Misconfigured" and "table workflow-tabel" in answer["error"]["message"]
    # AND the request is logged at error, without a traceback
    (record,) = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert "workflow-tabel" in record.getMessage() and record.exc_info is None
