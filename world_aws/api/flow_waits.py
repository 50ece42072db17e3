"""What a pending step or run under flow control waits for: the API's ``waiting`` of a step or a run.

"waiting for a concurrency slot of `charge` key `cust-7` (2 ahead, 3 of 3 held)" or
"rate limited until 12:00:03" (UTC), read from the World's admission records.
"""

from __future__ import annotations

from datetime import timedelta

from world_aws.contract.admission import TokenState
from world_aws.contract.records import ResolveData, Run, RunStatus, Step, StepStatus
from world_aws.contract.world import World
from world_aws.errors import NotFound, UnknownWorkflow
from world_aws.workflow.flow import call_key, step_scope
from world_aws.workflow.registry import Workflows
from world_aws.workflow.run_flow import run_scope


def flow_waits(world: World, app: Workflows, run: Run, steps: list[Step]) -> dict[str, str]:
    """What each pending step of a live ``run`` waits for, by step id (steps waiting for nothing left out)."""
    if run.status.terminal:
        return {}
    waits = {step.step_id: flow_wait(world, app, step) for step in steps}
    return {step_id: wait for step_id, wait in waits.items() if wait is not None}


def may_wait(app: Workflows, step_name: str, status: str) -> bool:
    """Whether a step of ``step_name`` in ``status`` can be waiting under flow control."""
    fn = app.get_step(step_name)
    return status == StepStatus.PENDING.value and fn is not None and fn.options.flow_controlled


def flow_wait(world: World, app: Workflows, step: Step) -> str | None:
    """What ``step`` waits for under its flow control (None: it is not pending, or waits for nothing)."""
    fn = app.get_step(step.step_name)
    if fn is None or not may_wait(app, step.step_name, step.status.value):
        return None
    try:
        data = world.steps.get(step.run_id, step.step_id, resolve_data=ResolveData.ALL).input or b""
    except NotFound:
        return None
    key = call_key(
        app.serializer.loads,
        fn.options.concurrency,
        fn.options.rate_limit,
        data,
        where=f"{step.run_id}/{step.step_id}",
    )
    scope = step_scope(fn.name, key)
    name = fn.name.rsplit(".", 1)[-1]
    concurrency, rate = fn.options.concurrency, fn.options.rate_limit
    if concurrency is not None:
        slots = world.admission.slots(scope)
        position = slots.position(f"{step.run_id}/{step.step_id}")
        if position is not None:
            held = f"{len(slots.holders)} of {concurrency.limit} held"
            return f"waiting for a concurrency slot of `{name}` key `{key}` ({position} ahead, {held})"
    if rate is not None:
        now = world.clock.now()
        due = world.admission.window(scope).next_due(rate.limit, timedelta(seconds=rate.period_seconds), now)
        if due is not None:
            return f"rate limited until {due:%H:%M:%S}"
    return None


def run_flow_view(world: World, app: Workflows, run: Run) -> tuple[str | None, int | None]:
    """What a pending run waits for under its workflow's flow control, and its priority.

    "waiting for a concurrency slot of workflow `order` key `c1` (position 2, 3 of 3 held)"
    or "rate limited until 12:00:03" (None: not pending, or nothing to wait for); the
    priority is None for a workflow without flow control.
    """
    try:
        flow = app.get_workflow(run.workflow_name).flow
    except UnknownWorkflow:
        return None, None
    if not flow.controlled:
        return None, None
    priority = flow.priority_of(run.attributes)
    if run.status is not RunStatus.PENDING:
        return None, priority
    data = run.input if run.input is not None else world.runs.get(run.run_id).input
    key = flow.key(app.serializer.loads, data or b"", where=run.run_id)
    scope = run_scope(run.workflow_name, key)
    if flow.concurrency is not None:
        slots = world.admission.slots(scope)
        position = slots.position(run.run_id)
        if position is not None:
            held = f"{len(slots.holders)} of {flow.concurrency.limit} held"
            where = f"workflow `{run.workflow_name}` key `{key}`"
            return f"waiting for a concurrency slot of {where} (position {position + 1}, {held})", priority
    if flow.rate_limit is not None:
        window = world.admission.window(scope)
        mine = [s.at for s in window.starts if s.holder == run.run_id and s.state is TokenState.RESERVED]
        now = world.clock.now()
        due = (
            mine[0]
            if mine
            else window.next_due(
                flow.rate_limit.limit, timedelta(seconds=flow.rate_limit.period_seconds), now
            )
        )
        if due is not None and due > now:
            return f"rate limited until {due:%H:%M:%S}", priority
    return None, priority
