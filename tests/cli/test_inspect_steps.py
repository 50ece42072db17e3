"""``world-aws inspect`` and ``GET /runs/{run_id}/steps``: a run's steps, and those its end abandoned.

A step without an outcome when its run ends never runs again (contract §3.1: every
later start is refused), even when it recorded a retry after the end (accepted,
as an outcome would be) and its row says pending. Both the API and ``inspect``
show such a step as ``abandoned``. Checked on every World, served over real HTTP.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from examples.approval import app
from world_aws.api.server import ApiServer, serve_api
from world_aws.cli.main import main
from world_aws.contract.clock import ManualClock
from world_aws.contract.records import EventType, StepCompletedData, StepRetryingData
from world_aws.contract.world import World
from world_aws.runtime.runtime import Runtime
from world_aws.testing.conformance.support import STEP, create_run, create_step, end_run, running_step, write
from world_aws.testing.factories import world_factories


@dataclass
class Served:
    world: World
    server: ApiServer

    def inspect(self, *argv: str) -> str:
        out, err = io.StringIO(), io.StringIO()
        assert main(["inspect", *argv, "--api", self.server.url], out=out, err=err) == 0, err.getvalue()
        return out.getvalue()


@pytest.fixture(params=list(world_factories()))
def served(request: pytest.FixtureRequest) -> Iterator[Served]:
    with world_factories()[request.param](ManualClock()) as world:
        runtime = Runtime(world, app)
        try:
            with serve_api(runtime, port=0) as server:
                yield Served(world, server)
        finally:
            runtime.close()


def _ended_run_with_a_step_in_each_state(world: World) -> tuple[str, dict[str, tuple[str, int]]]:
    """A cancelled run, and step id → (the status the API must show, attempts) of its steps."""
    run_id = create_run(world)
    completed = running_step(world, run_id)
    write(world, run_id, EventType.STEP_COMPLETED, completed, StepCompletedData(output=b"done"))
    pending = create_step(world, run_id)
    running = running_step(world, run_id)
    retried = running_step(world, run_id)
    end_run(world, run_id, EventType.RUN_CANCELLED)
    # The body that was running when the run ended failed, and its retry was accepted.
    write(world, run_id, EventType.STEP_RETRYING, retried, StepRetryingData(error=b"late"))
    return run_id, {
        completed: ("completed", 1),
        pending: ("abandoned", 0),
        running: ("abandoned", 1),
        retried: ("abandoned", 1),
    }


def test_inspect_shows_the_steps_an_ended_run_abandoned(served: Served) -> None:
    # GIVEN a cancelled run with a completed step, and a pending, a running and a retried one
    run_id, expected = _ended_run_with_a_step_in_each_state(served.world)
    # WHEN it is inspected
    text = served.inspect(run_id)
    # THEN the steps section shows each step's status, the three without outcome as abandoned
    section = text.split("steps:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert section[0].split() == ["step", "status", "attempt", "step", "id"]
    step_lines = [row for row in section[1:] if row.split()[0] != "attempt"]
    shown = {row.split()[-1]: (row.split()[1], int(row.split()[2])) for row in step_lines}
    assert shown == expected
    # AND each attempt is listed under its step: the one running when the run ended is abandoned
    attempts = sorted(row.split()[1:3] for row in section[1:] if row.split()[0] == "attempt")
    assert attempts == [["1", "abandoned"], ["1", "completed"], ["1", "retrying"]]
    # AND --json carries the same rows, as GET /runs/{run_id}/steps answers them
    document = json.loads(served.inspect(run_id, "--json"))
    rows = {row["step_id"]: (row["step_name"], row["status"]) for row in document["steps"]}
    assert rows == {step_id: (STEP, status) for step_id, (status, _) in expected.items()}


def test_the_steps_of_a_running_run_show_their_own_status(served: Served) -> None:
    # GIVEN a running run with a pending and a running step
    run_id = create_run(served.world)
    pending = create_step(served.world, run_id)
    running = running_step(served.world, run_id)
    # WHEN it is inspected THEN neither is abandoned
    document = json.loads(served.inspect(run_id, "--json"))
    assert {row["step_id"]: row["status"] for row in document["steps"]} == {
        pending: "pending",
        running: "running",
    }
