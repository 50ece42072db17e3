"""The API shows why a run failed: the traceback, the step's error as the cause, and each failed attempt."""

from __future__ import annotations

import argparse
import io
from collections.abc import Iterator
from typing import Any

import pytest

from tests.kit import failing
from world_aws.cli import operate
from world_aws.testing.kit import KitRun, WorkflowKit

from .conftest import Api


@pytest.fixture
def failed() -> Iterator[tuple[Api, KitRun]]:
    """A run of ``validate`` that failed after one retry, and the API in front of its World."""
    with WorkflowKit(failing.app) as kit:
        run = kit.run(failing.validate, 5)
        yield Api(kit.runtime, kit.world, kit.clock), run


def test_get_run_shows_the_error_with_its_traceback_and_the_steps_error_as_cause(
    failed: tuple[Api, KitRun],
) -> None:
    api, run = failed
    error = api.call("GET", f"/runs/{run.run_id}").body["error"]
    assert (error["type"], error["code"]) == ("world_aws.errors.StepFailedError", "USER_ERROR")
    assert "in validate" in error["stack"]
    cause = error["cause"]
    assert (cause["type"], cause["message"]) == ("ValueError", "bad value 5")
    assert "in parse_quantity" in cause["stack"] and not any(
        f"world_aws/{layer}/" in cause["stack"] for layer in ("worker", "engine", "workflow")
    )


def test_the_events_show_each_failed_attempts_error(failed: tuple[Api, KitRun]) -> None:
    api, run = failed
    rows = api.call("GET", f"/runs/{run.run_id}/events").body["events"]
    failures = [(r["type"], r["error"]["message"]) for r in rows if r["error"] is not None]
    assert failures == [("step_retrying", "bad value 5"), ("step_failed", "bad value 5")]
    assert all("in parse_quantity" in r["error"]["stack"] for r in rows if r["error"] is not None)


class _ApiClient:
    """The reads ``inspect`` makes, answered by the API handler itself."""

    def __init__(self, api: Api) -> None:
        self._api = api

    def get_run(self, run_id: str) -> Any:
        return self._api.call("GET", f"/runs/{run_id}").body

    def events(self, run_id: str) -> list[Any]:
        return list(self._api.call("GET", f"/runs/{run_id}/events").body["events"])

    def step_list(self, run_id: str) -> Any:
        return self._api.call("GET", f"/runs/{run_id}/steps").body


def test_inspect_prints_the_cause_with_its_traceback_and_each_failed_attempt(
    failed: tuple[Api, KitRun],
) -> None:
    api, run = failed
    out = io.StringIO()
    operate._inspect(_ApiClient(api), argparse.Namespace(run_id=run.run_id, json=False), out)  # type: ignore[arg-type]
    text = out.getvalue()
    assert "caused by ValueError: bad value 5" in text
    assert "failed attempts:" in text and "check attempt 1: ValueError: bad value 5" in text
    assert text.count("in parse_quantity") == 3  # the cause, and each attempt
