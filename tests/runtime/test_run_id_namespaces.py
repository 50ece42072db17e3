"""Run-id takeover over HTTP, on both Worlds: a caller's key names no child's, continuation's or tick's run.

The reproductions send what an attacker allowed to start runs would send to
``POST /runs`` (the real handlers, ``handle_http``): the seed of a child's id, of a
continuation's, of a schedule tick's as ``idempotency_key``. Each now names a run
of its own. The defence behind it is tried by holding the id the old way (a keyed
start of another workflow under exactly that id, as ``POST /runs`` made before the
namespaces): the parent's call fails with ``ChildRunIdTaken`` instead of waiting
forever, and the scheduler refuses the tick instead of recording the held run.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

from harness.spy import Call, Publish
from tests.api.conftest import http_event
from world_aws import WorkflowFailedError, Workflows, create_hook
from world_aws.api.app import handle_http
from world_aws.client.lineage import NOTIFY_ATTEMPTS
from world_aws.client.starting import start_run
from world_aws.contract.records import EventType, HookReceivedData, RunCreation, RunStatus
from world_aws.contract.world import SPEC_VERSION_CURRENT
from world_aws.engine import ids
from world_aws.engine.chain_links import next_run_id
from world_aws.engine.children import CHILD_RUN_ID_TAKEN, child_run_id
from world_aws.errors import Transient
from world_aws.runtime.runtime import Runtime
from world_aws.worker.config import ReconcilerConfig
from world_aws.worker.reconciler import Reconciler
from world_aws.worker.scheduler import Scheduler, TickOutcome
from world_aws.workflow.schedule_expr import iso_tick

from .harness import Harness

START = datetime(2026, 3, 1, 10, 0, 30, tzinfo=UTC)  # rate(5 minutes) ticks at 10:05, 10:10, ...


def family() -> Workflows:
    app = Workflows()

    @app.workflow
    async def child(n: int) -> int:
        return n + 1

    @app.workflow
    async def squatter(n: int) -> int:
        return -n

    @app.workflow
    async def parent(n: int) -> dict[str, Any]:
        await create_hook(token=f"go:{n}")  # waits here, so a test can act before the child call
        try:
            return {"child": await child(n)}
        except WorkflowFailedError as err:
            return {"error_code": err.error_code, "type": err.error_type, "message": err.error_message}

    @app.workflow(name="sched.report", schedule="rate(5 minutes)")
    async def report() -> str:
        return "reported"

    return app


def call(runtime: Runtime, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    response = handle_http(http_event(method, path, body=body), runtime)
    return response["statusCode"], json.loads(response["body"])


def start(runtime: Runtime, workflow: str, *args: Any, key: str | None = None) -> str:
    body: dict[str, Any] = {"workflow": workflow, "args": list(args)}
    if key is not None:
        body["idempotency_key"] = key
    code, answer = call(runtime, "POST", "/runs", body)
    assert code == 201, answer
    return str(answer["run_id"])


def hold(runtime: Runtime, run_id: str, workflow: str, *args: Any, **attributes: str) -> None:
    """A keyed start of ``workflow`` under exactly ``run_id``: what a caller's key could name before."""
    data = runtime.app.serializer.dumps({"args": list(args), "kwargs": {}})
    creation = RunCreation(workflow, runtime.world.deployment_id(), SPEC_VERSION_CURRENT, data, attributes)
    with ThreadPoolExecutor(2) as pool:
        start_run(runtime.world, pool, run_id, creation)


def waiting_parent(harness: Harness, n: int) -> tuple[Runtime, str, str]:
    """A parent started over HTTP and waiting on its hook: its id and its (future) child's id."""
    runtime = harness.runtime_for(family())
    parent = start(runtime, "parent", n)
    harness.drain()
    assert harness.status(parent) is RunStatus.RUNNING
    return runtime, parent, child_run_id(parent, ids.correlation_id("child", parent, 1))


def resume_and_settle(harness: Harness, runtime: Runtime, parent: str, n: int) -> dict[str, Any]:
    code, _ = call(runtime, "POST", f"/hooks/go:{n}/resume", {"payload": "go"})
    assert code == 202
    assert harness.settle(parent) is RunStatus.COMPLETED
    code, run = call(runtime, "GET", f"/runs/{parent}")
    assert code == 200
    return dict(run)


def test_a_callers_key_cannot_name_a_childs_or_a_continuations_run(harness: Harness) -> None:
    runtime, parent, child = waiting_parent(harness, 1)
    call_id = ids.correlation_id("child", parent, 1)
    # WHEN a caller starts runs under the seeds of the parent's child and continuation ids
    squats = [
        start(runtime, "squatter", 1, key=f"{parent}:{call_id}"),
        start(runtime, "squatter", 1, key=f"{parent}:continue"),
    ]
    # THEN each names a run of its own
    assert squats[0] != child and squats[1] != next_run_id(parent)
    assert squats == [ids.run_id_for_key(f"{parent}:{call_id}"), ids.run_id_for_key(f"{parent}:continue")]
    # AND the parent's child is its own: the parent completes with its result
    assert resume_and_settle(harness, runtime, parent, 1)["result"] == {"child": 2}
    code, run = call(runtime, "GET", f"/runs/{child}")
    assert code == 200 and run["workflow"] == "child" and run["result"] == 2


def test_a_child_id_held_by_a_foreign_run_fails_the_call_instead_of_waiting_forever(harness: Harness) -> None:
    runtime, parent, child = waiting_parent(harness, 2)
    # GIVEN the child's id held by a run of another workflow the parent did not start
    hold(runtime, child, "squatter", 2)
    # WHEN the parent reaches its child call
    result = resume_and_settle(harness, runtime, parent, 2)["result"]
    # THEN the workflow sees the call fail, naming the id and the run holding it
    assert result["error_code"] == result["type"] == CHILD_RUN_ID_TAKEN
    assert result["message"].startswith(f"child run id {child} of call ")
    assert "held by a run this parent did not start (workflow 'squatter')" in result["message"]
    received = [e for e in harness.events(parent) if e.type is EventType.HOOK_RECEIVED]
    assert [e.data.resume_id for e in received if isinstance(e.data, HookReceivedData)][
        -1
    ] == f"{child}:taken"
    # AND the foreign run is left alone: it ran its own workflow
    assert harness.settle(child) is RunStatus.COMPLETED
    assert harness.world.runs.get(child).attributes == {}


def test_a_child_id_held_by_a_run_of_the_same_workflow_is_still_foreign(harness: Harness) -> None:
    runtime, parent, child = waiting_parent(harness, 3)
    hold(runtime, child, "child", 3)  # the same workflow and input, but not started by this parent
    result = resume_and_settle(harness, runtime, parent, 3)["result"]
    assert result["error_code"] == CHILD_RUN_ID_TAKEN


def _first_tick(harness: Harness) -> tuple[Runtime, Scheduler, str]:
    runtime = harness.runtime_for(family())
    scheduler = Scheduler(runtime)
    harness.clock.advance((START - harness.clock.now()).total_seconds())
    assert scheduler.tick().ticks == []  # the schedule is recorded; 10:05 is its first tick
    return runtime, scheduler, "schedule:sched.report:2026-03-01T10:05:00Z"


def test_a_callers_key_cannot_name_a_schedule_ticks_run(harness: Harness) -> None:
    runtime, scheduler, tick_key = _first_tick(harness)
    # WHEN a caller starts a run under the tick's key before the tick
    squat = start(runtime, "squatter", 5, key=tick_key)
    assert squat == ids.run_id_for_key(tick_key) != ids.schedule_run_id(tick_key)
    harness.clock.advance(5 * 60)
    (tick,) = scheduler.tick().ticks
    # THEN the tick starts its own run, and records it
    assert (tick.outcome, tick.run_id) == (TickOutcome.STARTED, ids.schedule_run_id(tick_key))
    assert iso_tick(tick.tick) == "2026-03-01T10:05:00Z"
    assert harness.settle(ids.schedule_run_id(tick_key)) is RunStatus.COMPLETED
    code, run = call(runtime, "GET", f"/runs/{tick.run_id}")
    assert code == 200 and (run["workflow"], run["result"]) == ("sched.report", "reported")
    state = harness.world.schedules.get("sched.report")
    assert state is not None and (state.started, state.last_run_id) == (1, tick.run_id)


def test_a_ticks_id_held_by_a_foreign_run_is_not_recorded_as_the_tick(harness: Harness) -> None:
    runtime, scheduler, tick_key = _first_tick(harness)
    held = ids.schedule_run_id(tick_key)
    # GIVEN the tick's id held by a run that is not the tick's (attributes forged, workflow another)
    hold(runtime, held, "squatter", 6, schedule="sched.report", schedule_tick="2026-03-01T10:05:00Z")
    harness.clock.advance(5 * 60)
    (tick,) = scheduler.tick().ticks
    # THEN the tick is refused, and the held run is not recorded as its run
    assert (tick.outcome, tick.run_id) == (TickOutcome.REFUSED, None)
    state = harness.world.schedules.get("sched.report")
    assert state is not None and (state.started, state.last_run_id) == (0, None)
    assert harness.world.runs.get(held).workflow_name == "squatter"
    # AND a held run of the right workflow without the tick's attributes is refused too
    harness.clock.advance(5 * 60)
    hold(runtime, ids.schedule_run_id("schedule:sched.report:2026-03-01T10:10:00Z"), "sched.report")
    (second,) = scheduler.tick().ticks
    assert (second.outcome, second.run_id) == (TickOutcome.REFUSED, None)


def test_the_refusal_of_a_held_child_id_survives_lost_writes(harness: Harness) -> None:
    runtime, parent, child = waiting_parent(harness, 4)
    hold(runtime, child, "squatter", 4)

    def refusal(call: Call) -> bool:
        data = getattr(call.detail, "data", None)
        return isinstance(data, HookReceivedData) and data.resume_id == f"{child}:taken"

    def wake(call: Call) -> bool:
        return isinstance(call.detail, Publish) and call.detail.idempotency_key == f"{child}:taken:wake"

    # GIVEN the refusal's outcome refused for a whole pass (every in-process try): the call's
    # hook is in the log without an outcome, so the next passes have no child to start
    refused = harness.spy.inject(
        "events.create", Transient("throttled"), match=refusal, times=NOTIFY_ATTEMPTS
    )
    code, _ = call(runtime, "POST", "/hooks/go:4/resume", {"payload": "go"})
    assert code == 202 and harness.settle(parent) is RunStatus.RUNNING
    assert refused.fired == NOTIFY_ATTEMPTS
    # WHEN the reconciler wakes the silent parent, and the outcome lands while its writer
    # sees a timeout, and the wake after it is lost for a whole pass
    faults = [
        harness.spy.inject("events.create", Transient("timed out"), match=refusal, after=True),
        harness.spy.inject("queue.publish", Transient("throttled"), match=wake, times=NOTIFY_ATTEMPTS),
    ]
    harness.advance(700)
    config = ReconcilerConfig(after_seconds=600, max_runs_per_tick=10, sweep_lag_seconds=600)
    assert parent in [w.run_id for w in Reconciler(harness.world, config).tick().woken]
    # THEN the call fails once, and the parent completes
    assert harness.settle(parent) is RunStatus.COMPLETED
    assert [f.fired for f in faults] == [1, NOTIFY_ATTEMPTS]
    code, run = call(runtime, "GET", f"/runs/{parent}")
    assert run["result"]["error_code"] == CHILD_RUN_ID_TAKEN
    taken = [e for e in harness.events(parent) if e.type is EventType.HOOK_RECEIVED]
    assert len(taken) == 2  # the hook's "go", and the call's outcome once
