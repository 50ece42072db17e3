"""Schedules in ``world-aws dev``: the scheduler's loop, a tick started and run, ``world-aws schedules``.

The dev stack is the embedded default (moto), serving ``examples.scheduled:app``.
Its scheduler loop runs on a real clock, so the tick is made due by recording the
schedule's last tick five minutes back, and the pass that starts it is called
directly (the loop passes too: it records the schedules it sees first).
"""

from __future__ import annotations

import io
import json
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta

import pytest

from examples.scheduled import app
from world_aws.cli.main import main
from world_aws.contract.schedules import ScheduleState
from world_aws.local.dev import start_dev_stack
from world_aws.worker.config import SchedulerConfig
from world_aws.worker.scheduler import TickOutcome

from .conftest import DEADLINE_SECONDS, Dev, fake_aws_environment


@pytest.fixture
def dev(monkeypatch: pytest.MonkeyPatch) -> Iterator[Dev]:
    fake_aws_environment(monkeypatch)
    stack = start_dev_stack(app, port=0, scheduler_config=SchedulerConfig(period_seconds=0.05))
    try:
        yield Dev(stack)
    finally:
        stack.stop()


def cli(*argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    assert err.getvalue() == ""
    return code, out.getvalue()


def test_dev_starts_a_due_tick_once_and_lists_it_with_the_next_tick(dev: Dev) -> None:
    world = dev.stack.stack.world
    scheduler = dev.stack.stack.scheduler
    assert scheduler is not None
    # GIVEN the dev stack's scheduler loop, which records each schedule when it first sees it
    deadline = time.monotonic() + DEADLINE_SECONDS
    while world.schedules.get("heartbeat-api") is None:
        assert time.monotonic() < deadline, "the scheduler loop never passed"
        time.sleep(0.05)
    # WHEN the heartbeat's last tick is moved five minutes back (a tick is due) and a pass runs
    seen = world.schedules.get("heartbeat-api")
    assert seen is not None
    back = replace(seen, last_tick=seen.last_tick - timedelta(minutes=5))
    assert world.schedules.advance(back, expected_tick=seen.last_tick)
    ticks = [
        t
        for t in scheduler.tick().ticks
        if t.schedule == "heartbeat-api" and t.outcome is not TickOutcome.MISSED
    ]
    # THEN exactly one run was started for it (by this pass or the loop's) and it completes
    assert [t.outcome for t in ticks] in ([TickOutcome.STARTED], [TickOutcome.ALREADY_STARTED], [])
    state = world.schedules.get("heartbeat-api")
    assert isinstance(state, ScheduleState) and state.started == 1 and state.last_run_id is not None
    run = dev.wait_for_status(state.last_run_id, "completed")
    assert run["result"] == "api ok"
    # AND `world-aws schedules` lists both schedules, the heartbeat with its run and next tick
    code, out = cli("schedules", "--api", dev.url, "--json")
    assert code == 0
    listed = {row["name"]: row for row in json.loads(out)["schedules"]}
    assert set(listed) == {"digest", "heartbeat-api"}
    heartbeat = listed["heartbeat-api"]
    assert (heartbeat["expression"], heartbeat["overlap"], heartbeat["last_run_id"]) == (
        "rate(5 minutes)",
        "skip",
        state.last_run_id,
    )
    assert heartbeat["next_tick"] > heartbeat["last_tick"]
    assert listed["digest"]["next_tick"].endswith("T06:00:00Z")
    code, table = cli("schedules", "--api", dev.url)
    assert code == 0 and "heartbeat-api" in table and "cron(0 6 * * ? *)" in table


def test_schedules_of_an_app_are_listed_offline() -> None:
    code, out = cli("schedules", "examples.scheduled:app", "--json")
    assert code == 0
    rows = json.loads(out)["schedules"]
    assert [(r["name"], r["workflow"], r["last_tick"]) for r in rows] == [
        ("digest", "digest", None),
        ("heartbeat-api", "heartbeat", None),
    ]
    heartbeat_next = rows[1]["next_tick"]  # rate(5 minutes): a multiple of 5 minutes, on the minute
    assert int(heartbeat_next[14:16]) % 5 == 0 and heartbeat_next.endswith(":00Z")
