"""``world-aws inspect``: each step's attempts with their errors, and the run's summary line.

A run of ``retry_then_nap`` (attempt 1 of its step retried after 2 s, a 5 s sleep, a
hook) on the memory World with a manual clock, its API served over real HTTP.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator

import pytest

from tests.api.apps import app
from world_aws.api.server import ApiServer, serve_api
from world_aws.cli.main import main
from world_aws.contract.clock import ManualClock
from world_aws.local.memory import create_memory_world
from world_aws.runtime.runtime import Runtime


@pytest.fixture
def served_run() -> Iterator[tuple[ApiServer, str]]:
    clock = ManualClock()
    world = create_memory_world(clock=clock)
    runtime = Runtime(world, app)
    try:
        handle = runtime.start("retry_then_nap", "ada")
        for seconds in (0, 2, 5):  # attempt 1 retried; attempt 2 completes; the sleep ends
            clock.advance(seconds)
            world.memory_queue.drain(runtime.handle)
        clock.advance(1)  # the hook has waited 1 s
        with serve_api(runtime, port=0) as server:
            yield server, handle.run_id
    finally:
        runtime.close()
        world.close()


def _inspect(server: ApiServer, *argv: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    assert main(["inspect", *argv, "--api", server.url], out=out, err=err) == 0, err.getvalue()
    return out.getvalue()


def test_inspect_lists_each_attempt_under_its_step_with_the_error(served_run: tuple[ApiServer, str]) -> None:
    server, run_id = served_run
    text = _inspect(server, run_id)
    section = text.split("steps:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    attempts = [line for line in section if line.split()[0] == "attempt"]
    assert [a.split()[1:3] for a in attempts] == [["1", "retrying"], ["2", "completed"]]
    assert attempts[0].endswith("  RetryableError: ada: busy") and "Error" not in attempts[1]


def test_inspect_prints_the_summary_line(served_run: tuple[ApiServer, str]) -> None:
    server, run_id = served_run
    (line,) = [line for line in _inspect(server, run_id).splitlines() if line.startswith("summary")]
    assert line.split(None, 1)[1] == (
        "1 step, 2 attempts (1 retry); 8000 ms, 6000 ms of it waiting (1 sleep, 1 hook)"
    )


def test_inspect_json_carries_the_summary_and_the_attempts(served_run: tuple[ApiServer, str]) -> None:
    server, run_id = served_run
    document = json.loads(_inspect(server, run_id, "--json"))
    assert document["summary"]["retries"] == 1 and document["summary"]["waiting_s"] == 6.0
    (step,) = document["steps"]
    assert [a["outcome"] for a in step["attempts"]] == ["retrying", "completed"]
